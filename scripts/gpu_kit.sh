#!/usr/bin/env bash
# Packs what a GPU machine needs to run ctk's GPU checks into gpukit/kit.tar.xz (ignored by git): the
# gpu-labelled test binaries, the MPI test with a relocatable OpenMPI (for NCCL), ctk_bench, the ctk CLI,
# the MNIST examples, and the shared libraries they load that a bare CUDA image lacks (oneDNN, OpenBLAS,
# protobuf, OpenCV and their runtimes). Debian's Fashion-MNIST files (dataset-fashion-mnist, 30 MB), when
# installed here, go beside it in gpukit/fashion-mnist for the examples (the machine cannot fetch them).
# The device tool carries it with `carry: ["gpukit"]`; scripts/gpu_kit_run.sh unpacks and runs it there.
# Both must stay under the tool's 64 MiB (checked at the end): the programs share most of their bytes and
# one solid xz stream stores them once, and OpenCV's optional codec libraries get stand-ins (below).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
if [ ! -f "$BUILD/build.ninja" ]; then
    cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCTK_WARNINGS_AS_ERRORS=ON
fi
binaries=(tests/cuda_test tests/op_harness_gpu_test tests/graph_harness_gpu_test tests/learners/learner_gpu_test
          tests/train/train_gpu_test tests/train/mixed_precision_gpu_test tests/train/cuda_graph_gpu_test
          bench/ctk_bench cli/ctk examples/Image/Classification/MNIST/ConvNet_MNIST
          examples/Image/Classification/MNIST/SimpleMNIST tests/distributed/distributed_mpi_test)
targets=()
for b in "${binaries[@]}"; do targets+=("$(basename "$b")"); done
ninja -C "$BUILD" "${targets[@]}"
grep -q 'CTK_USE_CUDA:BOOL=ON' "$BUILD/CMakeCache.txt" || { echo "gpu_kit: $BUILD has no CUDA backend" >&2; exit 1; }

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
for b in "${binaries[@]}"; do cp "$BUILD/$b" "$stage/"; done
strip --strip-unneeded "$stage"/*
# Copies every library FILE... loads into the stage, except glibc's, the C++ runtime (the image's are
# newer) and CUDA's (the machine's driver and toolkit, or PyTorch's wheels, provide cuDNN; cudart and
# cuBLAS are static).
copy_libraries() {
    for f in "$@"; do ldd "$f"; done | awk '$3 ~ /^\// {print $3}' | sort -u |
        grep -Ev '/(libc|libm|libdl|librt|libpthread|libgcc_s|libstdc\+\+|libz)\.so|/usr/local/cuda' |
        while read -r lib; do cp -L "$lib" "$stage/"; done
}
copy_libraries "$stage"/*
# OpenMPI for the distributed GPU test (NCCL bootstraps through MPI): Debian's mpiexec, its components
# and help texts under ompi/, found there through OPAL_PREFIX (gpu_kit_run.sh), with the libraries they
# load. Components for fabrics a one-machine run does not use (UCX, libfabric, verbs, PSM) and OpenSHMEM
# stay out: their libraries are large, and OpenMPI skips a component it cannot load.
ompi_components=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
if [ -d "$ompi_components" ] && [ -x /usr/bin/orterun ]; then
    ompi=$stage/ompi
    mkdir -p "$ompi/bin" "$ompi/lib/x86_64-linux-gnu/openmpi/lib/openmpi3" "$ompi/share"
    cp /usr/bin/orterun "$ompi/bin/mpiexec"
    cp -r /usr/share/openmpi "$ompi/share/"
    for c in "$ompi_components"/mca_*.so; do
        ldd "$c" | grep -Eq 'lib(ucp|uct|ucs|fabric|ibverbs|psm|psm2|psm_infinipath|oshmem|nl-3)\.so' ||
            cp "$c" "$ompi/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/"
    done
    copy_libraries "$ompi"/bin/mpiexec "$ompi"/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/*.so
fi
# OpenCV's image codecs link GDAL, GDCM (DICOM) and OpenEXR for formats the GPU checks never read, and
# those bring about 100 libraries (ICU, HDF5, x265, ...: over 100 MB) that would take the kit past the
# device tool's 64 MiB. The kit carries stand-ins for them instead: the functions the kit's files import
# from each, returning 0 (GDALOpen: no dataset, so OpenCV's decoder declines; the others are called only
# when such a file is read); then every library no longer reached is dropped.
# (what the files outside these libraries' own families import from them)
wanted=$(find "$stage" -type f ! -regex '.*/lib\(gdal\|gdcm\|OpenEXR\|Iex\|IlmThread\|Imath\).*' |
         while read -r f; do readelf --dyn-syms -W "$f" 2>/dev/null; done |
         awk '$7 == "UND" {print $8}' | sed 's/@.*//' | sort -u)
for real in "$stage"/libgdal.so.* "$stage"/libgdcmMSFF.so.* "$stage"/libgdcmDSED.so.* "$stage"/libOpenEXR-*.so.*; do
    [ -f "$real" ] || continue
    soname=$(basename "$real")
    used=$(comm -12 <(nm -D --defined-only "$real" | awk '{print $3}' | sort -u) <(echo "$wanted"))
    data=$(comm -12 <(echo "$used") <(nm -D --defined-only "$real" | awk '$2 ~ /^[BDGRSV]$/ {print $3}' | sort -u))
    [ -z "$data" ] || { echo "gpu_kit: the kit imports data from $soname ($data): no stand-in" >&2; exit 1; }
    echo "$used" | sed 's/.*/long &(void) { return 0; }/' >"$stage/stub.c"
    rm "$real"
    cc -shared -fPIC -O1 -o "$stage/$soname" -Wl,-soname,"$soname" "$stage/stub.c"
    rm "$stage/stub.c"
done
# (ldd lists the whole closure of each program and OpenMPI component: those are the roots)
reached=$(find "$stage" -type f ! -name 'lib*.so*' | while read -r f; do LD_LIBRARY_PATH=$stage ldd "$f" 2>/dev/null; done |
          awk -v s="$stage/" 'index($3, s) == 1 {print substr($3, length(s) + 1)}' | sort -u)
for lib in "$stage"/lib*.so*; do
    grep -qxF "$(basename "$lib")" <<<"$reached" || rm "$lib"
done
mkdir -p gpukit
git rev-parse HEAD >"$stage/GIT_SHA"
# The programs first and side by side, in one window (512 MiB) large enough for xz to store their shared
# bytes once.
(cd "$stage" && tar -cf - $(find . -maxdepth 1 -type f ! -name 'lib*.so*' | sort) $(ls -d lib*.so* ompi 2>/dev/null)) |
    xz --lzma2=preset=9e,dict=512MiB -T1 >gpukit/kit.tar.xz
if [ -d /usr/share/datasets/fashion-mnist ]; then
    mkdir -p gpukit/fashion-mnist && cp /usr/share/datasets/fashion-mnist/*-ubyte.gz gpukit/fashion-mnist/
fi
total=$(du -sb gpukit | cut -f1)
echo "gpu_kit: gpukit/kit.tar.xz, $(du -h gpukit/kit.tar.xz | cut -f1), $(ls "$stage" | wc -l) files, HEAD $(cut -c1-8 "$stage/GIT_SHA"); gpukit/ $((total / 1048576)) MiB"
# What the device tool carries: 64 MiB at most.
(( total <= 64 * 1048576 )) || { echo "gpu_kit: gpukit/ is over the device tool's 64 MiB" >&2; exit 1; }
