"""Packs the built doppio and caffe2 packages into a wheel (tools/build_wheel.sh).

  /usr/bin/python3 tools/build_wheel.py --package-root DIR --out DIST [--version V]

DIR holds doppio/ (with the extension _C.so and the generated
proto/doppio_pb2.py) and caffe2/, as Bazel lays them out in a runfiles tree.

The wheel carries the shared libraries _C.so needs beyond the base system, in
doppio.libs/ beside the packages, the way auditwheel repairs a wheel: _C.so's
RUNPATH leads there ($ORIGIN/../doppio.libs) and each carried library's
RUNPATH is $ORIGIN, so they find one another. Left to the system:
  - glibc's libraries, libstdc++ and libgcc_s (every Debian has them, and a
    second copy of libstdc++ in one process is a classic source of crashes),
    and zlib (Priority: required in Debian);
  - the CUDA toolkit under /usr/local/cuda (cuBLAS, cuBLASLt, cuDNN, NCCL,
    cudart): close to 800 MB, more with the engine libraries cuDNN loads at
    run time, and tied to the machine's driver, which no wheel can carry.
    _C.so keeps the toolkit's directory in its RUNPATH.
The wheel is built by hand (a zip with a dist-info) since pip cannot build
one offline from a Bazel tree; patchelf (Debian package) edits the RUNPATHs.
"""

import argparse
import base64
import csv
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile

PACKAGES = ('doppio', 'caffe2')
LIBS_DIR = 'doppio.libs'
EXTENSION = 'doppio/_C.so'

# Sonames never carried (see the module doc).
SYSTEM_SONAMES = {
    'linux-vdso.so.1', 'ld-linux-x86-64.so.2', 'libc.so.6', 'libm.so.6', 'libdl.so.2',
    'librt.so.1', 'libpthread.so.0', 'libutil.so.1', 'libresolv.so.2',
    'libstdc++.so.6', 'libgcc_s.so.1', 'libz.so.1',
}
SYSTEM_DIRS = ('/usr/local/cuda',)


class WheelError(Exception):
    pass


def run(args):
    result = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            universal_newlines=True)
    if result.returncode != 0:
        raise WheelError('{} failed: {}'.format(' '.join(args), result.stderr.strip()))
    return result.stdout


def resolved_dependencies(path):
    """soname -> resolved path for every library `path` loads, directly or not,
    as the dynamic loader resolves them (ldd), without LD_LIBRARY_PATH."""
    env = dict(os.environ)
    env.pop('LD_LIBRARY_PATH', None)
    result = subprocess.run(['ldd', path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            universal_newlines=True, env=env)
    if result.returncode != 0:
        raise WheelError('ldd {} failed: {}'.format(path, result.stderr.strip()))
    libraries = {}
    for line in result.stdout.splitlines():
        match = re.match(r'\s*(\S+) => (.*?)(?: \(0x[0-9a-f]+\))?$', line)
        if not match:
            continue
        soname, target = match.groups()
        if target == 'not found':
            raise WheelError('{} needs {}, which the loader does not find'.format(path, soname))
        libraries[soname] = target
    return libraries


def is_system(soname, path):
    if soname in SYSTEM_SONAMES:
        return True
    real = os.path.realpath(path)
    return any(p.startswith(d + '/') for d in SYSTEM_DIRS for p in (path, real))


def copy_packages(package_root, staging):
    for package in PACKAGES:
        source = os.path.join(package_root, package)
        if not os.path.isfile(os.path.join(source, '__init__.py')):
            raise WheelError('no package {} under {}'.format(package, package_root))
        # Runfiles trees are symlinks into the source and output trees.
        shutil.copytree(source, os.path.join(staging, package), symlinks=False,
                        ignore=shutil.ignore_patterns('__pycache__', '*.pyc', '*.params',
                                                      '*.runfiles*'))
    for required in (EXTENSION, 'doppio/proto/doppio_pb2.py', 'caffe2/__init__.py'):
        if not os.path.isfile(os.path.join(staging, required)):
            raise WheelError('{} is missing from {}'.format(required, package_root))


def carry_libraries(staging):
    """Copies _C.so's non-system libraries into doppio.libs and points the
    RUNPATHs there. Returns the carried sonames and what was left to the system."""
    extension = os.path.join(staging, EXTENSION)
    os.chmod(extension, 0o755)
    libs_dir = os.path.join(staging, LIBS_DIR)
    os.makedirs(libs_dir)
    carried, left = [], []
    for soname, path in sorted(resolved_dependencies(extension).items()):
        if is_system(soname, path):
            left.append((soname, path))
            continue
        target = os.path.join(libs_dir, soname)
        shutil.copyfile(os.path.realpath(path), target)
        os.chmod(target, 0o755)
        run(['patchelf', '--set-rpath', '$ORIGIN', target])
        carried.append(soname)
    # The toolkit's directory stays after ours (see the module doc).
    system_runpath = [entry for entry in run(['patchelf', '--print-rpath', extension]).strip()
                      .split(':') if entry and entry.startswith(SYSTEM_DIRS)]
    run(['patchelf', '--set-rpath', ':'.join(['$ORIGIN/../' + LIBS_DIR] + system_runpath),
         extension])
    # The loader must now find every carried library in the wheel's copy.
    for soname, path in resolved_dependencies(extension).items():
        if soname in carried and os.path.dirname(os.path.realpath(path)) != os.path.realpath(libs_dir):
            raise WheelError('{} resolves to {} instead of the carried copy'.format(soname, path))
    return carried, left


def wheel_tag():
    """cp311-cp311-linux_x86_64 for Debian 12's python3: the extension is
    built against this interpreter's headers and ABI."""
    python = 'cp{}{}'.format(*sys.version_info[:2])
    platform = sysconfig.get_platform().replace('-', '_').replace('.', '_')
    return '{0}-{0}-{1}'.format(python, platform)


def dist_info_files(version, tag):
    metadata = '\n'.join([
        'Metadata-Version: 2.1',
        'Name: doppio',
        'Version: ' + version,
        'Summary: Caffe2-compatible dataflow framework: NetDefs of registered operators '
        'over a blob Workspace, data-parallel training, Caffe2 checkpoints',
        'Requires-Python: =={}.{}.*'.format(*sys.version_info[:2]),
        'Requires-Dist: numpy',
        'Requires-Dist: protobuf',
        '',
        'The doppio package and the caffe2 alias package (caffe2.python.*, '
        'caffe2.proto.*) over the doppio._C extension.',
        '',
    ])
    wheel = '\n'.join([
        'Wheel-Version: 1.0',
        'Generator: doppio tools/build_wheel.py',
        'Root-Is-Purelib: false',
        'Tag: ' + tag,
        '',
    ])
    return {'METADATA': metadata, 'WHEEL': wheel, 'top_level.txt': '\n'.join(PACKAGES) + '\n'}


def record_hash(data):
    digest = hashlib.sha256(data).digest()
    return 'sha256=' + base64.urlsafe_b64encode(digest).decode('ascii').rstrip('=')


def write_wheel(staging, out_dir, version):
    tag = wheel_tag()
    dist_info = 'doppio-{}.dist-info'.format(version)
    wheel_path = os.path.join(out_dir, 'doppio-{}-{}.whl'.format(version, tag))
    entries = []
    for directory, subdirs, files in os.walk(staging):
        subdirs.sort()
        for name in sorted(files):
            path = os.path.join(directory, name)
            entries.append((os.path.relpath(path, staging), path))
    os.makedirs(out_dir, exist_ok=True)
    records = []
    partial = wheel_path + '.partial'
    with zipfile.ZipFile(partial, 'w', zipfile.ZIP_DEFLATED, compresslevel=6) as wheel:
        for arcname, path in entries:
            with open(path, 'rb') as f:
                data = f.read()
            info = zipfile.ZipInfo(arcname, date_time=(2020, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = (0o755 if os.access(path, os.X_OK) else 0o644) << 16
            wheel.writestr(info, data)
            records.append((arcname, record_hash(data), str(len(data))))
        for name, text in sorted(dist_info_files(version, tag).items()):
            data = text.encode('utf-8')
            arcname = dist_info + '/' + name
            wheel.writestr(zipfile.ZipInfo(arcname, date_time=(2020, 1, 1, 0, 0, 0)), data,
                           zipfile.ZIP_DEFLATED)
            records.append((arcname, record_hash(data), str(len(data))))
        record = io.StringIO()
        writer = csv.writer(record, lineterminator='\n')
        writer.writerows(records)
        writer.writerow((dist_info + '/RECORD', '', ''))
        wheel.writestr(zipfile.ZipInfo(dist_info + '/RECORD', date_time=(2020, 1, 1, 0, 0, 0)),
                       record.getvalue().encode('utf-8'), zipfile.ZIP_DEFLATED)
    os.replace(partial, wheel_path)
    return wheel_path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--package-root', required=True,
                        help='directory holding the built doppio/ and caffe2/ packages')
    parser.add_argument('--out', required=True, help='directory to write the wheel to')
    parser.add_argument('--version', required=True)
    args = parser.parse_args(argv)
    if not re.match(r'^\d+(\.\d+)*$', args.version):
        parser.error('--version: {!r} is not a release version like 0.1.0'.format(args.version))
    try:
        if shutil.which('patchelf') is None:
            raise WheelError('patchelf is not installed (Debian package patchelf; '
                             'tools/deps.sh installs it)')
        with tempfile.TemporaryDirectory(prefix='doppio_wheel_') as staging:
            copy_packages(args.package_root, staging)
            carried, left = carry_libraries(staging)
            wheel_path = write_wheel(staging, args.out, args.version)
    except (WheelError, OSError) as error:
        print('build_wheel: {}'.format(error), file=sys.stderr)
        return 1
    print('carried in {}/: {}'.format(LIBS_DIR, ' '.join(carried)))
    print('left to the system: {}'.format(' '.join(
        '{} ({})'.format(soname, os.path.dirname(path)) for soname, path in left)))
    print('wrote {} ({:.1f} MB)'.format(wheel_path, os.path.getsize(wheel_path) / 1e6))
    return 0


if __name__ == '__main__':
    sys.exit(main())
