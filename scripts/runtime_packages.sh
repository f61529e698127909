#!/usr/bin/env bash
# Prints the Debian packages that ctk's installed programs need at run time, one per line: the packages
# holding the shared libraries they link (read from their ELF headers, so the list follows the build),
# and what the Python package and multi-host jobs use besides (NumPy, mpiexec, ssh). Libraries that ctk
# opens itself when it needs them (CUDA's, cuDNN, NCCL) are not linked and not listed.
# Usage: scripts/runtime_packages.sh FILE...   (e.g. the installed _ctk*.so, bin/ctk, lib/libctk_c.so)
set -euo pipefail
(( $# )) || { echo "usage: $0 FILE..." >&2; exit 2; }
libs=$(for f in "$@"; do objdump -p "$f" | awk '/NEEDED/ {print $2}'; done | sort -u)
for lib in $libs; do
    path=""
    for dir in /usr/lib/x86_64-linux-gnu /lib/x86_64-linux-gnu /usr/lib /lib; do
        [[ -e $dir/$lib ]] && { path=$(readlink -f "$dir/$lib"); break; }
    done
    [[ -n $path ]] || { echo "runtime_packages: $lib (needed by $*) is not installed" >&2; exit 1; }
    # dpkg knows a file under the name its package shipped (merged /usr: /lib is /usr/lib).
    owner=$(dpkg -S "$path" 2>/dev/null || dpkg -S "${path#/usr}" 2>/dev/null || true)
    [[ -n $owner ]] || { echo "runtime_packages: no package owns $path ($lib)" >&2; exit 1; }
    echo "${owner%%:*}"
done | sort -u
printf '%s\n' python3 python3-numpy openmpi-bin openssh-client
