"""tools/check_function_length.sh on a scratch git repository: a function
one line over the limit of its place (80 lines in parallel/, 120 elsewhere,
tests/ exempt) fails the check and is named; one at the limit passes."""
import os
import shutil
import subprocess
import tempfile
import unittest

from tool_paths import runfile

SCRIPT = runfile('tools/check_function_length.sh')


def cc_function(name, lines):
    """A C++ function spanning exactly `lines` lines."""
    body = ['  int x = 0;'] * (lines - 3)
    return '\n'.join(['int %s() {' % name] + body + ['  return x;', '}']) + '\n'


def py_function(name, lines):
    body = ['    x = 0'] * (lines - 2)
    return '\n'.join(['def %s():' % name] + body + ['    return x']) + '\n'


class CheckFunctionLengthTest(unittest.TestCase):

    def setUp(self):
        self.root = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.root)
        os.makedirs(os.path.join(self.root, 'tools'))
        shutil.copy(SCRIPT, os.path.join(self.root, 'tools'))
        subprocess.run(['git', 'init', '-q', self.root], check=True)

    def write(self, path, text):
        full = os.path.join(self.root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, 'w') as f:
            f.write(text)
        subprocess.run(['git', '-C', self.root, 'add', path], check=True)

    def check(self):
        return subprocess.run([os.path.join(self.root, 'tools', 'check_function_length.sh')],
                              capture_output=True, text=True)

    def test_functions_at_their_limits_pass(self):
        self.write('parallel/pass.cc', cc_function('Phase', 80))
        self.write('operators/op.cc', cc_function('Kernel', 120))
        self.write('python_api/m.py', py_function('build', 120))
        self.write('tests/long_test.cc', cc_function('LongTest', 400))
        result = self.check()
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn('none over 80 lines in parallel/', result.stdout)

    def test_one_line_over_fails_and_names_the_function(self):
        self.write('parallel/pass.cc', cc_function('Phase', 81))
        self.write('operators/op.cc', cc_function('Kernel', 120))
        self.write('python_api/m.py', py_function('build', 121))
        result = self.check()
        self.assertEqual(result.returncode, 1)
        self.assertIn('81\tparallel/pass.cc:1\tPhase', result.stderr)
        self.assertIn('121\tpython_api/m.py:1\tbuild', result.stderr)
        self.assertNotIn('Kernel', result.stderr)


if __name__ == '__main__':
    unittest.main()
