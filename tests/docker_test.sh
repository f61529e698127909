#!/usr/bin/env bash
# The container recipes stay true to the build: every project script docker/Dockerfile* runs exists and
# parses, runtime_packages.sh names the packages of what `cmake --install` puts in the image (this
# build's), and the image's PYTHONPATH is where the install puts the Python package. (Building the images
# needs a Docker engine; see docs/distributed.md.) Usage: docker_test.sh BUILD_DIR SOURCE_DIR PYTHON_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
source=$(cd "$2" && pwd)
site=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for dockerfile in "$source"/docker/Dockerfile*; do
    scripts=$(grep -o 'scripts/[A-Za-z0-9_]*\.sh' "$dockerfile" | sort -u)
    [[ -n $scripts ]] || { echo "FAIL: $dockerfile runs none of the project's scripts"; exit 1; }
    for s in $scripts; do
        [[ -f $source/$s ]] || { echo "FAIL: $dockerfile runs $s, which does not exist"; exit 1; }
        bash -n "$source/$s" || { echo "FAIL: $s does not parse"; exit 1; }
    done
    grep -q "PYTHONPATH=/opt/ctk/$site\b" "$dockerfile" ||
        { echo "FAIL: $dockerfile's PYTHONPATH is not /opt/ctk/$site, where cmake --install puts ctk"; exit 1; }
done

cmake --install "$build" --prefix "$tmp/opt" >/dev/null
files=("$tmp/opt/bin/ctk" "$tmp/opt/lib/libctk_c.so" "$tmp/opt/$site"/ctk/_ctk*.so)
for f in "${files[@]}"; do [[ -f $f ]] || { echo "FAIL: cmake --install did not write $f"; exit 1; }; done
bash "$source/scripts/runtime_packages.sh" "${files[@]}" >"$tmp/packages.txt"
for p in libdnnl2 libopenblas0-openmp libopenmpi3 libprotobuf32 python3-numpy openmpi-bin; do
    grep -qx "$p" "$tmp/packages.txt" || { cat "$tmp/packages.txt"; echo "FAIL: $p is not listed"; exit 1; }
done
# Every library package listed is one this machine has installed (the list comes from what is linked).
while read -r p; do
    [[ $p == python3* || $p == openmpi-bin || $p == openssh-client ]] && continue
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
        { echo "FAIL: $p is listed but not installed"; exit 1; }
done <"$tmp/packages.txt"
echo "docker recipes: ok ($(wc -l <"$tmp/packages.txt") runtime packages)"
