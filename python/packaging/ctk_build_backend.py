"""An in-tree PEP 517 build backend for `python3 -m pip install .`.

It needs nothing from PyPI (pyproject.toml lists no build requirements), so the install works offline:
CMake builds the `_ctk` extension (Debian's compilers and libraries, as for every other ctk target) and
this module zips the `ctk` and `cntk` packages from the build tree into a wheel.

The build directory is, in order: the config setting `build-dir` (`pip install . --config-settings
build-dir=DIR`), the environment variable CTK_BUILD_DIR, or `build-python` in the source tree. An
existing, configured build directory is reused (only `_ctk` and what it needs are rebuilt).
"""
import base64
import hashlib
import os
import re
import subprocess
import sys
import zipfile

SOURCE = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))


def _version():
    with open(os.path.join(SOURCE, 'CMakeLists.txt'), encoding='utf-8') as f:
        match = re.search(r'project\(ctk VERSION ([0-9.]+)', f.read())
    if not match:
        raise RuntimeError('cannot find the version in CMakeLists.txt')
    return match.group(1)


def _build_dir(config_settings):
    given = (config_settings or {}).get('build-dir') or os.environ.get('CTK_BUILD_DIR')
    return os.path.abspath(given) if given else os.path.join(SOURCE, 'build-python')


def _run(cmd):
    print('ctk build backend:', ' '.join(cmd), file=sys.stderr, flush=True)
    subprocess.run(cmd, check=True, stdout=sys.stderr)


def _build(config_settings):
    build = _build_dir(config_settings)
    if not os.path.exists(os.path.join(build, 'CMakeCache.txt')):
        _run(['cmake', '-S', SOURCE, '-B', build, '-G', 'Ninja', '-DCMAKE_BUILD_TYPE=Release',
              '-DCTK_BUILD_PYTHON=ON', '-DCTK_BUILD_TESTS=OFF', '-DCTK_BUILD_BENCH=OFF'])
    # An existing build directory is used as it is configured (it must have CTK_BUILD_PYTHON=ON).
    _run(['cmake', '--build', build, '--target', '_ctk'])
    return os.path.join(build, 'python')


def _tag():
    import sysconfig
    impl = 'cp{}{}'.format(*sys.version_info[:2])
    platform = sysconfig.get_platform().replace('-', '_').replace('.', '_')
    return '{}-{}-{}'.format(impl, impl, platform)


def _metadata(version):
    return ('Metadata-Version: 2.1\n'
            'Name: ctk\n'
            'Version: {}\n'
            'Summary: CNTK 2.7 revived: the ctk package and `cntk`, which runs CNTK 2.7 scripts unchanged\n'
            'License: MIT\n'
            'Requires-Python: >=3.9\n'
            'Requires-Dist: numpy\n').format(version)


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()
    return '{},sha256={},{}\n'.format(name, digest, len(data))


def get_requires_for_build_wheel(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    version = _version()
    dist_info = 'ctk-{}.dist-info'.format(version)
    os.makedirs(os.path.join(metadata_directory, dist_info), exist_ok=True)
    with open(os.path.join(metadata_directory, dist_info, 'METADATA'), 'w', encoding='utf-8') as f:
        f.write(_metadata(version))
    return dist_info


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    version = _version()
    tree = _build(config_settings)
    tag = _tag()
    name = 'ctk-{}-{}.whl'.format(version, tag)
    dist_info = 'ctk-{}.dist-info'.format(version)
    record = []
    with zipfile.ZipFile(os.path.join(wheel_directory, name), 'w', zipfile.ZIP_DEFLATED) as wheel:
        def add(arcname, data):
            wheel.writestr(arcname, data)
            record.append(_record_line(arcname, data))

        for package in ('ctk', 'cntk'):
            for root, dirs, files in os.walk(os.path.join(tree, package)):
                dirs[:] = sorted(d for d in dirs if d != '__pycache__')
                for file in sorted(files):
                    if not (file.endswith('.py') or file.endswith('.so')):
                        continue
                    path = os.path.join(root, file)
                    with open(path, 'rb') as f:
                        add(os.path.relpath(path, tree), f.read())
        # CNTK's native module name, which some scripts import at the top level.
        with open(os.path.join(tree, '_cntk_py.py'), 'rb') as f:
            add('_cntk_py.py', f.read())
        add(dist_info + '/METADATA', _metadata(version).encode())
        add(dist_info + '/WHEEL', ('Wheel-Version: 1.0\nGenerator: ctk_build_backend\n'
                                   'Root-Is-Purelib: false\nTag: {}\n').format(tag).encode())
        record.append(dist_info + '/RECORD,,\n')
        wheel.writestr(dist_info + '/RECORD', ''.join(record))
    return name
