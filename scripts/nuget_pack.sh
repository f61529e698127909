#!/usr/bin/env bash
# Packs the C# binding as a NuGet package: lib/net45/Cntk.Core.Managed.dll (the assembly mcs built) and
# runtimes/linux-x64/native/libctk_c.so (the C ABI). CUDA, cuDNN and NCCL are not in the package: they
# are the machine's (see docs/csharp.md). Uses Debian's nuget (apt-get install nuget).
# Usage: scripts/nuget_pack.sh BUILD_DIR OUT_DIR   (writes OUT_DIR/Ctk.CNTK.<version>.nupkg)
set -euo pipefail
build=$(realpath "$1")
out=$(realpath -m "$2")
root=$(cd "$(dirname "$0")/.." && pwd)
version=$(sed -n 's/^project(ctk VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")
assembly=$build/csharp/Cntk.Core.Managed.dll
native=$build/lib/libctk_c.so
for f in "$assembly" "$native"; do
    [[ -e $f ]] || { echo "nuget_pack.sh: $f is missing (build the ctk_csharp target first)" >&2; exit 1; }
done
command -v nuget > /dev/null || { echo "nuget_pack.sh: nuget not found (apt-get install nuget)" >&2; exit 1; }
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/lib/net45" "$stage/runtimes/linux-x64/native" "$out"
cp "$assembly" "$stage/lib/net45/"
cp -L "$native" "$stage/runtimes/linux-x64/native/libctk_c.so"
cp "$root/README.md" "$stage/README.md"
cat > "$stage/Ctk.CNTK.nuspec" <<NUSPEC
<?xml version="1.0"?>
<package>
  <metadata>
    <id>Ctk.CNTK</id>
    <version>$version</version>
    <title>ctk: CNTK's C# API on today's machines</title>
    <authors>ctk</authors>
    <requireLicenseAcceptance>false</requireLicenseAcceptance>
    <description>CNTK 2.7's C# API (namespace CNTK, Cntk.Core.Managed) over ctk's C ABI: model evaluation and training on the CPU, and on NVIDIA GPUs where CUDA 13, cuDNN 9 and NCCL are installed (they are not in this package). Linux x64.</description>
    <tags>cntk deep-learning neural-networks</tags>
  </metadata>
  <files>
    <file src="lib/net45/Cntk.Core.Managed.dll" target="lib/net45" />
    <file src="runtimes/linux-x64/native/libctk_c.so" target="runtimes/linux-x64/native" />
    <file src="README.md" target="" />
  </files>
</package>
NUSPEC
(cd "$stage" && nuget pack Ctk.CNTK.nuspec -OutputDirectory "$out" -NoPackageAnalysis -NonInteractive > /dev/null)
pkg=$out/Ctk.CNTK.$version.nupkg
echo "$pkg ($(du -k "$pkg" | cut -f1) KiB)"
