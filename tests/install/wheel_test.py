"""The wheel, end to end: tools/build_wheel.sh packs the built packages (from
this test's runfiles), pip installs the wheel offline into a fresh virtual
environment made from Debian's python3, and a Caffe2-style training script
(wheel_example.py: caffe2 imports, Parallelize_CPU on 2 devices, checkpoint
Save / Load) runs there. Its parameters must match numpy's SGD; doppio,
its extension and the libraries the wheel carries must come from the venv.
"""
import base64
import csv
import hashlib
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest
import zipfile

import numpy as np

from mlp_reference import numpy_sgd

RUNFILES = os.path.join(os.environ.get('TEST_SRCDIR', ''), 'doppio')
BUILD_WHEEL = os.path.join(RUNFILES, 'tools', 'build_wheel.sh')
PACKAGE_ROOT = os.path.join(RUNFILES, 'python_api')
EXAMPLE = os.path.join(RUNFILES, 'tests', 'install', 'wheel_example.py')
TAG = 'cp311-cp311-linux_x86_64'

D_IN, HIDDEN, D_OUT, BATCH, STEPS, STEPS_BEFORE = 5, 7, 3, 8, 10, 6
PARAMS = ['fc1_w', 'fc1_b', 'fc2_w', 'fc2_b']
# Libraries the wheel must carry (a subset: the list depends on Debian's
# builds) and ones it must leave to the system.
MUST_CARRY = ['libdnnl.so.2', 'libprotobuf.so.32', 'liblmdb.so.0', 'libgloo.so.0',
              'libopenblas.so.0', 'libgomp.so.1']
MUST_NOT_CARRY = ['libc.so.6', 'libstdc++.so.6', 'libcudart.so.13', 'libcublas.so.13',
                  'libcudnn.so.9', 'libnccl.so.2']


def clean_env():
    """The environment minus everything that would let Python import the
    source tree or the runfiles (Bazel sets PYTHONPATH for the test)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(('PYTHON', 'RUNFILES', 'LD_LIBRARY_PATH'))}
    env['PIP_NO_INDEX'] = '1'
    env['PIP_DISABLE_PIP_VERSION_CHECK'] = '1'
    env['PIP_NO_CACHE_DIR'] = '1'
    return env


def run(args, cwd):
    result = subprocess.run(args, cwd=cwd, env=clean_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, universal_newlines=True, timeout=600)
    if result.returncode != 0:
        raise AssertionError('{} exited {}:\n{}'.format(args, result.returncode, result.stdout))
    return result.stdout


def example_inputs():
    rng = np.random.RandomState(11)
    params = {
        'fc1_w': rng.randn(HIDDEN, D_IN).astype(np.float32) * 0.5,
        'fc1_b': rng.randn(HIDDEN).astype(np.float32) * 0.1,
        'fc2_w': rng.randn(D_OUT, HIDDEN).astype(np.float32) * 0.5,
        'fc2_b': rng.randn(D_OUT).astype(np.float32) * 0.1,
    }
    xs = rng.randn(STEPS, BATCH, D_IN).astype(np.float32)
    ys = rng.randint(0, D_OUT, size=(STEPS, BATCH)).astype(np.int32)
    return params, xs, ys


class WheelTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix='wheel_test_', dir=os.environ.get('TEST_TMPDIR'))
        dist = os.path.join(cls.tmp, 'dist')
        cls.build_output = run(['bash', BUILD_WHEEL, '--package-root', PACKAGE_ROOT, dist],
                               cwd=cls.tmp)
        wheels = os.listdir(dist)
        assert len(wheels) == 1, wheels
        cls.wheel = os.path.join(dist, wheels[0])
        cls.venv = os.path.join(cls.tmp, 'venv')
        run(['/usr/bin/python3', '-m', 'venv', '--system-site-packages', cls.venv], cwd=cls.tmp)
        cls.python = os.path.join(cls.venv, 'bin', 'python')
        cls.pip_output = run([cls.python, '-m', 'pip', 'install', '--no-index', cls.wheel],
                             cwd=cls.tmp)
        cls.site_packages = run(
            [cls.python, '-c', 'import sysconfig; print(sysconfig.get_paths()["platlib"])'],
            cwd=cls.tmp).strip()

    def test_wheel_name_and_metadata(self):
        self.assertEqual(os.path.basename(self.wheel), 'doppio-0.1.0-{}.whl'.format(TAG))
        with zipfile.ZipFile(self.wheel) as wheel:
            wheel_file = wheel.read('doppio-0.1.0.dist-info/WHEEL').decode()
            metadata = wheel.read('doppio-0.1.0.dist-info/METADATA').decode()
        self.assertIn('Tag: {}\n'.format(TAG), wheel_file)
        self.assertIn('Root-Is-Purelib: false\n', wheel_file)
        self.assertIn('Name: doppio\n', metadata)
        self.assertIn('Version: 0.1.0\n', metadata)
        self.assertIn('Requires-Dist: numpy\n', metadata)
        self.assertIn('Requires-Dist: protobuf\n', metadata)

    def test_wheel_contents_and_record(self):
        with zipfile.ZipFile(self.wheel) as wheel:
            names = set(wheel.namelist())
            record = wheel.read('doppio-0.1.0.dist-info/RECORD').decode()
            rows = list(csv.reader(io.StringIO(record)))
            # Every file is in RECORD with its hash and size, and only those.
            self.assertEqual(set(row[0] for row in rows), names)
            for path, digest, size in rows:
                if path.endswith('RECORD'):
                    self.assertEqual((digest, size), ('', ''))
                    continue
                data = wheel.read(path)
                expected = base64.urlsafe_b64encode(
                    hashlib.sha256(data).digest()).decode().rstrip('=')
                self.assertEqual(digest, 'sha256=' + expected, path)
                self.assertEqual(int(size), len(data), path)
        for required in ['doppio/__init__.py', 'doppio/_C.so', 'doppio/core.py',
                         'doppio/data_parallel_model.py', 'doppio/proto/doppio_pb2.py',
                         'doppio/proto/caffe2_pb2.py', 'doppio/proto/metanet_pb2.py',
                         # caffe2.python.X / caffe2.proto.X are doppio's modules
                         # through the import hook in caffe2/__init__.py.
                         'caffe2/__init__.py', 'caffe2/python/__init__.py',
                         'caffe2/proto/__init__.py']:
            self.assertIn(required, names)
        carried = sorted(n.split('/', 1)[1] for n in names if n.startswith('doppio.libs/'))
        for soname in MUST_CARRY:
            self.assertIn(soname, carried)
        for soname in MUST_NOT_CARRY:
            self.assertNotIn(soname, carried)
        self.assertFalse([n for n in names if '__pycache__' in n or n.endswith('.pyc')])

    def test_installed_runpaths_point_into_the_wheel(self):
        extension = os.path.join(self.site_packages, 'doppio', '_C.so')
        dynamic = run(['readelf', '-d', extension], cwd=self.tmp)
        self.assertIn('[$ORIGIN/../doppio.libs:/usr/local/cuda/lib64]', dynamic)
        # The loader, with no help from the environment, resolves each
        # carried library to the installed copy.
        libs_dir = os.path.join(self.site_packages, 'doppio.libs')
        resolved = {}
        for line in run(['ldd', extension], cwd=self.tmp).splitlines():
            parts = line.split()
            if len(parts) >= 3 and parts[1] == '=>':
                resolved[parts[0]] = parts[2]
        for soname in os.listdir(libs_dir):
            if soname in resolved:
                self.assertEqual(os.path.realpath(resolved[soname]),
                                 os.path.realpath(os.path.join(libs_dir, soname)), soname)
        for soname in MUST_CARRY:
            self.assertIn(soname, resolved)

    def test_training_example_in_the_venv(self):
        params, xs, ys = example_inputs()
        inputs = os.path.join(self.tmp, 'inputs.npz')
        results = os.path.join(self.tmp, 'results.npz')
        np.savez(inputs, xs=xs, ys=ys, steps_before=STEPS_BEFORE, **params)
        workdir = os.path.join(self.tmp, 'run')
        os.mkdir(workdir)
        run([self.python, EXAMPLE, inputs, results], cwd=workdir)
        self.assertTrue(os.path.isfile(os.path.join(workdir, 'mlp_checkpoint.minidb')))
        got = np.load(results)
        info = json.loads(str(got['info']))

        venv = os.path.realpath(self.venv) + os.sep
        self.assertTrue(os.path.realpath(info['doppio_file']).startswith(venv), info)
        self.assertTrue(os.path.realpath(info['extension_file']).startswith(venv), info)
        self.assertTrue(info['caffe2_core_is_doppio_core'])
        self.assertEqual(info['iteration'], STEPS)
        # What the import mapped: the extension, and the libraries it needs
        # from the wheel (or from the system for the ones it does not carry).
        libs_dir = os.path.realpath(os.path.join(self.site_packages, 'doppio.libs')) + os.sep
        new_libraries = [os.path.realpath(p) for p in info['new_libraries']]
        from_wheel = set(os.path.basename(p) for p in new_libraries if p.startswith(libs_dir))
        for soname in ['libdnnl.so.2', 'liblmdb.so.0', 'libgloo.so.0']:
            self.assertIn(soname, from_wheel, new_libraries)
        for path in new_libraries:
            self.assertFalse(path.startswith(os.path.realpath(RUNFILES)), path)

        expected = numpy_sgd(params, zip(xs, ys), lr=0.1)
        for p in PARAMS:
            self.assertFalse(np.allclose(expected[p], params[p]), p)  # it trained
            for device in (0, 1):
                np.testing.assert_allclose(got['cpu_{}/{}'.format(device, p)], expected[p],
                                           rtol=1e-4, atol=1e-5,
                                           err_msg='cpu_{}/{}'.format(device, p))


if __name__ == '__main__':
    unittest.main()
