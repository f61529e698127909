#!/usr/bin/env bash
# The main job: installs what it needs (Debian's Fashion-MNIST included), builds ctk, converts the IDX
# files into CNTK's MNIST text format and trains CNTK's ConvNet_MNIST on them, printing CNTK's log and
# ending with the test error. CTK_EPOCHS (default 5; CNTK's example runs 40) sets the epochs of 60000
# samples; extra arguments go to the example (e.g. --log FILE).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "${CTK_JOBS:-$(nproc)}" --target ctk_cli ConvNet_MNIST
data=data/fashion-mnist
if [[ ! -f $data/Train-28x28_cntk_text.txt || ! -f $data/Test-28x28_cntk_text.txt ]]; then
    build/cli/ctk data mnist /usr/share/datasets/fashion-mnist "$data"
fi
build/examples/Image/Classification/MNIST/ConvNet_MNIST --data "$data" --epochs "${CTK_EPOCHS:-5}" "$@"
