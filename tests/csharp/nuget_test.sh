#!/usr/bin/env bash
# The NuGet package end to end: pack it (scripts/nuget_pack.sh), install it from a scratch local feed
# with Debian's nuget, build a fresh program against the installed package with mcs, put the package's
# native library beside it (what .NET's build does from runtimes/linux-x64/native), and run it with mono.
# Usage: nuget_test.sh BUILD_DIR SCRATCH MONO MCS
set -euo pipefail
build=$1 scratch=$2 mono=$3 mcs=$4
root=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$scratch" && mkdir -p "$scratch/feed" "$scratch/app"
"$root/scripts/nuget_pack.sh" "$build" "$scratch/feed"
cd "$scratch/app"
nuget install Ctk.CNTK -Source "$scratch/feed" -OutputDirectory packages -NonInteractive > /dev/null
pkg=$(echo packages/Ctk.CNTK.*)
"$mcs" -nologo -out:app.exe -r:"$pkg/lib/net45/Cntk.Core.Managed.dll" "$root/tests/csharp/nuget_app.cs"
cp "$pkg/lib/net45/Cntk.Core.Managed.dll" "$pkg/runtimes/linux-x64/native/libctk_c.so" .
env -u LD_LIBRARY_PATH "$mono" app.exe
