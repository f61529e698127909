#!/usr/bin/env bash
# Both ways to install the Python packages work and give importable `ctk` and `cntk`:
#   cmake --install BUILD --component python (into a temporary prefix), and
#   python3 -m pip install . (offline, no index, into a virtual environment; the in-tree backend reuses BUILD).
# Usage: packaging_test.sh BUILD_DIR SOURCE_DIR PYTHON_INSTALL_DIR(relative to the prefix)
set -euo pipefail
build=$(cd "$1" && pwd)
source=$(cd "$2" && pwd)
site=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cmake --install "$build" --prefix "$tmp/prefix" --component python > /dev/null
(cd "$tmp" && PYTHONPATH="$tmp/prefix/$site" /usr/bin/python3 -c "
import cntk as C, ctk, numpy as np
assert ctk.__file__.startswith('$tmp/prefix/'), ctk.__file__
x = C.input_variable(3)
np.testing.assert_allclose(C.relu(x).eval({x: np.array([[-1, 0, 2]], np.float32)}), [[0, 0, 2]])
import cntk.layers.typing, cntk.train.training_session, cntk.internal.utils, _cntk_py
assert _cntk_py.__file__.startswith('$tmp/prefix/'), _cntk_py.__file__
print('cmake --install: ok', ctk.__version__)
")

/usr/bin/python3 -m venv --system-site-packages "$tmp/venv"
CTK_BUILD_DIR="$build" "$tmp/venv/bin/python" -m pip install --no-index --quiet "$source" 2> "$tmp/pip.log" || {
    cat "$tmp/pip.log"; exit 1; }
(cd "$tmp" && "$tmp/venv/bin/python" -c "
import cntk as C, ctk
assert ctk.__file__.startswith('$tmp/venv/'), ctk.__file__
import cntk.layers.typing, cntk.io.transforms, _cntk_py
assert _cntk_py.__file__.startswith('$tmp/venv/'), _cntk_py.__file__
print('pip install .: ok', C.__version__)
")
"$tmp/venv/bin/python" -m pip uninstall --yes --quiet ctk
echo ok
