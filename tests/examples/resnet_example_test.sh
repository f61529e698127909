#!/usr/bin/env bash
# Smoke test of the ResNet CIFAR-10 example: a tiny IDX image set written here, turned into CNTK's CIFAR-10
# layout by `ctk data images`, one short epoch of ResNet-20 through the image reader, and CNTK's log lines.
# Usage: resnet_example_test.sh <ctk> <TrainResNet_CIFAR10>
set -euo pipefail
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/idx"
python3 - "$dir/idx" <<'PY'
import os, random, struct, sys
random.seed(1)
for name, n in (('train', 96), ('t10k', 32)):
    labels = [i % 10 for i in range(n)]
    pixels = bytes(random.randrange(256) if (p % 10) == labels[i] else 0 for i in range(n) for p in range(784))
    with open(os.path.join(sys.argv[1], name + '-images-idx3-ubyte'), 'wb') as f:
        f.write(struct.pack('>IIII', 2051, n, 28, 28) + pixels)
    with open(os.path.join(sys.argv[1], name + '-labels-idx1-ubyte'), 'wb') as f:
        f.write(struct.pack('>II', 2049, n) + bytes(labels))
PY
"$1" data images "$dir/idx" "$dir/cifar" --layout cifar >/dev/null
"$2" --data "$dir/cifar" --epochs 2 --epoch-size 64 --test-size 32 --seed 1 >"$dir/resnet.log" 2>&1 || {
    cat "$dir/resnet.log"; exit 1; }
grep -q "^Training 272474 parameters in 65 parameter tensors.$" "$dir/resnet.log"
grep -Eq "^Finished Epoch\[2 of 2\]: \[Training\] loss = [0-9.]+ \* 64, metric = [0-9.]+% \* 64 [0-9.]+s \( *[0-9.]+ samples/s\);$" "$dir/resnet.log"
grep -Eq "^Finished Evaluation \[1\]: Minibatch\[1-2\]: metric = [0-9.]+% \* 32;$" "$dir/resnet.log"
grep -Eq "^Error: [0-9.]+$" "$dir/resnet.log"
echo "ResNet example ran"
