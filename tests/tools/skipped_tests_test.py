"""tools/skipped_tests.py finds the skipped cases in real runners' logs:
pytest (with -rs) and unittest are run here on small test files, and the
GoogleTest log is the form GoogleTest prints for GTEST_SKIP()."""
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

from tool_paths import runfile

SCRIPT = runfile('tools/skipped_tests.py')

PYTEST_FILE = '''
import pytest

def test_runs():
    pass

@pytest.mark.skipif(True, reason="no CUDA device: none here")
def test_gpu_a():
    pass

def test_gpu_b():
    pytest.skip("no CUDA device: none here")

@pytest.mark.parametrize("n", [1, 2])
def test_needs_two_devices(n):
    pytest.skip("needs 2 devices")
'''

UNITTEST_FILE = '''
import unittest

class T(unittest.TestCase):
    def test_runs(self):
        pass

    @unittest.skip("needs redis")
    def test_redis(self):
        pass

if __name__ == "__main__":
    unittest.main()
'''

GTEST_LOG = textwrap.dedent('''\
    [==========] Running 3 tests from 1 test suite.
    [ RUN      ] CudaTest.Streams
    tests/core/cuda_net_streams_test.cc:40: Skipped
    no CUDA device: CUDA driver version is insufficient
    [  SKIPPED ] CudaTest.Streams (0 ms)
    [ RUN      ] CudaTest.Events
    tests/core/cuda_net_streams_test.cc:55: Skipped
    no CUDA device: CUDA driver version is insufficient
    [  SKIPPED ] CudaTest.Events (0 ms)
    [ RUN      ] CudaTest.NoGpuIsAClearError
    [       OK ] CudaTest.NoGpuIsAClearError (1 ms)
    [==========] 3 tests from 1 test suite ran. (1 ms total)
    [  PASSED  ] 1 test.
    [  SKIPPED ] 2 tests, listed below:
    [  SKIPPED ] CudaTest.Streams
    [  SKIPPED ] CudaTest.Events
    ''')


def run(command, cwd):
    return subprocess.run(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True).stdout


class SkippedTestsTest(unittest.TestCase):

    def setUp(self):
        self.scratch = tempfile.TemporaryDirectory()
        self.logs = os.path.join(self.scratch.name, 'testlogs')

    def tearDown(self):
        self.scratch.cleanup()

    def write_log(self, label, text):
        package, name = label.lstrip('/').split(':')
        folder = os.path.join(self.logs, package, name)
        os.makedirs(folder)
        with open(os.path.join(folder, 'test.log'), 'w') as f:
            f.write(text)

    def source(self, name, text):
        with open(os.path.join(self.scratch.name, name), 'w') as f:
            f.write(text)

    def lister(self, *labels):
        return run([sys.executable, SCRIPT, self.logs] + list(labels), self.scratch.name)

    def test_counts_and_reasons_from_each_runner(self):
        self.source('sample_pytest.py', PYTEST_FILE)
        self.source('sample_unittest.py', UNITTEST_FILE)
        self.write_log('//tests/a:py_test', run(
            [sys.executable, '-m', 'pytest', '-q', '-rs', '-p', 'no:cacheprovider',
             'sample_pytest.py'], self.scratch.name))
        self.write_log('//tests/b:unit_test', run(
            [sys.executable, 'sample_unittest.py'], self.scratch.name))
        self.write_log('//tests/c:cc_test', GTEST_LOG)
        self.write_log('//tests/d:all_pass', run(
            [sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider',
             'sample_pytest.py::test_runs'], self.scratch.name))
        lines = self.lister().splitlines()
        by_target = {line.split()[1]: line for line in lines[:-1]}
        self.assertEqual(set(by_target), {'//tests/a:py_test', '//tests/b:unit_test',
                                          '//tests/c:cc_test'})
        self.assertIn(' 4 case(s)', by_target['//tests/a:py_test'])
        self.assertIn('no CUDA device: none here x2', by_target['//tests/a:py_test'])
        self.assertIn('needs 2 devices x2', by_target['//tests/a:py_test'])
        self.assertIn(' 1 case(s)', by_target['//tests/b:unit_test'])
        self.assertIn(' 2 case(s)', by_target['//tests/c:cc_test'])
        self.assertIn('no CUDA device: CUDA driver version is insufficient x2',
                      by_target['//tests/c:cc_test'])
        self.assertEqual(lines[-1], 'skipped: 7 test case(s) in 3 target(s)')

    def test_long_reasons_are_shortened(self):
        reason = 'no CUDA device: ' + 'x' * 200
        self.write_log('//tests/c:cc_test', GTEST_LOG.replace(
            'no CUDA device: CUDA driver version is insufficient', reason))
        line = self.lister().splitlines()[0]
        self.assertIn('no CUDA device: xxx', line)
        self.assertIn('... x2', line)
        self.assertLess(len(line), 200)

    def test_only_the_named_targets(self):
        self.write_log('//tests/c:cc_test', GTEST_LOG)
        self.write_log('//tests/e:other', GTEST_LOG)
        output = self.lister('//tests/e:other', '//tests/missing:target')
        self.assertNotIn('//tests/c:cc_test', output)
        self.assertIn('skipped: 2 test case(s) in 1 target(s)', output)

    def test_nothing_skipped(self):
        self.write_log('//tests/c:cc_test', '[  PASSED  ] 3 tests.\n')
        self.assertEqual(self.lister().strip(), 'skipped: 0 test case(s) in 0 target(s)')


if __name__ == '__main__':
    unittest.main()
