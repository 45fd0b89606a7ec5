"""The C++ install layout, end to end: tools/install.sh PREFIX (from this
test's runfiles), then what a user does with it: compile against the headers
and libdoppio with plain g++ and pkg-config, run the program, run the
installed run_net. Numbers are checked against numpy.
"""
import glob
import os
import shlex
import subprocess
import tempfile
import unittest

import numpy as np

RUNFILES = os.path.join(os.environ.get('TEST_SRCDIR', ''), 'doppio')
INSTALL = os.path.join(RUNFILES, 'tools', 'install.sh')
EXAMPLE = os.path.join(RUNFILES, 'tools', 'examples', 'cpp', 'mlp_predict.cc')


def run(args, env=None, cwd=None, check=True):
    result = subprocess.run(args, env=env, cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, universal_newlines=True, timeout=600)
    if check and result.returncode != 0:
        raise AssertionError('{} exited {}:\n{}\n{}'.format(
            args, result.returncode, result.stdout, result.stderr))
    return result


def sin_parameter(shape, scale, phase):
    """mlp_predict's weights, recomputed: element k is scale * sin(k + phase)."""
    count = int(np.prod(shape))
    values = scale * np.sin(np.arange(count, dtype=np.float64) + phase)
    return values.astype(np.float32).astype(np.float64).reshape(shape)


def numpy_mlp(x):
    w1, b1 = sin_parameter((5, 4), 0.5, 0.0), sin_parameter((5,), 0.1, 1.0)
    w2, b2 = sin_parameter((3, 5), 0.7, 2.0), sin_parameter((3,), 0.2, 3.0)
    hidden = np.maximum(x @ w1.T + b1, 0)
    logits = hidden @ w2.T + b2
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


class InstallTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix='install_test_', dir=os.environ.get('TEST_TMPDIR'))
        cls.prefix = os.path.join(cls.tmp, 'prefix')
        env = dict(os.environ, DOPPIO_INSTALL_FROM=RUNFILES)
        cls.install_output = run(['bash', INSTALL, cls.prefix], env=env).stdout
        cls.pkg_env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(cls.prefix, 'lib', 'pkgconfig'))
        cls.pkg_env.pop('LD_LIBRARY_PATH', None)
        flags = run(['pkg-config', '--cflags', '--libs', 'doppio'], env=cls.pkg_env).stdout
        cls.flags = shlex.split(flags)

    def test_layout(self):
        include = os.path.join(self.prefix, 'include', 'doppio')
        for header in ['core/workspace.h', 'core/operator.h', 'core/net.h', 'core/tensor.h',
                       'transforms/optimize_inference.h',
                       'proto/doppio.pb.h', 'operators/fc_op.h', 'parallel/data_parallel.h']:
            self.assertTrue(os.path.isfile(os.path.join(include, header)), header)
        headers = glob.glob(os.path.join(include, '**', '*.h'), recursive=True)
        # CUDA, Gloo and NCCL headers need those libraries' headers: left out.
        self.assertFalse([h for h in headers if h.endswith('_gpu.h') or '/cuda/' in h
                          or '/gloo/' in h or '/nccl/' in h])
        lib = os.path.join(self.prefix, 'lib')
        self.assertEqual(os.readlink(os.path.join(lib, 'libdoppio.so')), 'libdoppio.so.0')
        dynamic = run(['readelf', '-d', os.path.join(lib, 'libdoppio.so.0')]).stdout
        self.assertIn('Library soname: [libdoppio.so.0]', dynamic)
        # The registered ops come along (alwayslink): their registrars are
        # exported from the library.
        symbols = run(['nm', '-D', '--defined-only', os.path.join(lib, 'libdoppio.so.0')]).stdout
        self.assertIn('FCOp', symbols)
        self.assertTrue(os.access(os.path.join(self.prefix, 'bin', 'run_net'), os.X_OK))

    def test_pkg_config(self):
        pc = os.path.join(self.prefix, 'lib', 'pkgconfig', 'doppio.pc')
        with open(pc) as f:
            text = f.read()
        self.assertIn('prefix={}\n'.format(self.prefix), text)
        self.assertIn('Requires: protobuf\n', text)
        self.assertIn('Version: 0.1.0\n', text)
        self.assertIn('-I{}/include/doppio'.format(self.prefix), self.flags)
        self.assertIn('-L{}/lib'.format(self.prefix), self.flags)
        self.assertIn('-ldoppio', self.flags)
        self.assertIn('-lprotobuf', self.flags)

    def test_every_installed_header_compiles_from_the_install(self):
        include = os.path.join(self.prefix, 'include', 'doppio')
        headers = sorted(os.path.relpath(h, include) for h in
                         glob.glob(os.path.join(include, '**', '*.h'), recursive=True))
        source = os.path.join(self.tmp, 'all_headers.cc')
        with open(source, 'w') as f:
            f.write(''.join('#include "{}"\n'.format(h) for h in headers))
        cflags = shlex.split(run(['pkg-config', '--cflags', 'doppio'], env=self.pkg_env).stdout)
        # -nostdinc++ is not used: the system's headers are fair game; the
        # repository is not on the include path, only the install.
        run(['g++', '-std=c++17', '-fsyntax-only', source] + cflags, cwd=self.tmp)

    def build_example(self):
        binary = os.path.join(self.tmp, 'mlp_predict')
        if not os.path.exists(binary):
            run(['g++', '-std=c++17', '-O1', EXAMPLE, '-o', binary] + self.flags, cwd=self.tmp)
        return binary

    def test_example_program_matches_numpy(self):
        binary = self.build_example()
        needed = run(['readelf', '-d', binary]).stdout
        self.assertIn('[libdoppio.so.0]', needed)
        x = np.array([[0.5, -1.0, 2.0, 0.25], [1.5, 0.0, -0.75, 3.0], [-2.0, 1.0, 0.5, -0.5]],
                     dtype=np.float32)
        env = dict(os.environ)
        env.pop('LD_LIBRARY_PATH', None)
        out = run([binary] + ['{:.9g}'.format(v) for v in x.flat], env=env, cwd=self.tmp).stdout
        lines = out.strip().splitlines()
        self.assertEqual(lines[0], 'softmax 3 3')
        got = np.array([[float(v) for v in line.split()] for line in lines[1:]])
        np.testing.assert_allclose(got, numpy_mlp(x.astype(np.float64)), rtol=1e-5, atol=1e-6)
        # The rows differ, so a program ignoring its input would fail here.
        self.assertGreater(np.abs(got[0] - got[1]).max(), 1e-3)

    def test_example_program_rejects_bad_input(self):
        binary = self.build_example()
        for args in (['abc'], ['1', '2', '3'], []):
            result = run([binary] + args, cwd=self.tmp, check=False)
            self.assertEqual(result.returncode, 2, args)
            self.assertIn('usage: mlp_predict', result.stderr)

    def test_installed_run_net(self):
        net = os.path.join(self.tmp, 'relu_scale.pbtxt')
        with open(net, 'w') as f:
            f.write('name: "relu_scale"\nexternal_input: "x"\nexternal_output: "y"\n'
                    'op { input: "x" output: "r" type: "Relu" }\n'
                    'op { input: "r" output: "y" type: "Scale" arg { name: "scale" f: 3 } }\n')
        x = np.array([[-1.0, 0.5], [2.0, -0.25]], dtype=np.float32)
        np.save(os.path.join(self.tmp, 'x.npy'), x)
        run_net = os.path.join(self.prefix, 'bin', 'run_net')
        run([run_net, '--net', net, '--input', 'x=' + os.path.join(self.tmp, 'x.npy'),
             '--output', 'y=' + os.path.join(self.tmp, 'y.npy')], cwd=self.tmp)
        np.testing.assert_allclose(np.load(os.path.join(self.tmp, 'y.npy')),
                                   3 * np.maximum(x, 0), rtol=1e-6)
        bad = run([run_net, '--net', os.path.join(self.tmp, 'missing.pbtxt')],
                  cwd=self.tmp, check=False)
        self.assertNotEqual(bad.returncode, 0)
        self.assertIn('missing.pbtxt', bad.stderr)


if __name__ == '__main__':
    unittest.main()
