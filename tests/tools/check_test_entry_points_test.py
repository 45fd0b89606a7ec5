"""tools/check_test_entry_points.sh on scratch trees: a Python test file
without a __main__ block (which Bazel's py_test would run as a program that
checks nothing) fails the check and is named; files with one pass."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from tool_paths import runfile

SCRIPT = runfile('tools/check_test_entry_points.sh')


class CheckTestEntryPointsTest(unittest.TestCase):

    def setUp(self):
        self.root = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.root)

    def write(self, path, text):
        full = os.path.join(self.root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, 'w') as f:
            f.write(text)

    def check(self):
        return subprocess.run(['bash', SCRIPT, self.root], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, universal_newlines=True)

    def test_files_with_entry_points_pass(self):
        self.write('tests/a/one_test.py', 'def test_x():\n    pass\n\n\n'
                   "if __name__ == '__main__':\n    pytest.main([__file__])\n")
        self.write('tests/b/two_test.py', 'if __name__ == "__main__":\n    unittest.main()\n')
        self.write('tests/b/helper.py', 'x = 1\n')  # not a test file
        result = self.check()
        self.assertEqual(result.returncode, 0, result.stderr)

    def test_a_file_without_one_fails_and_is_named(self):
        self.write('tests/a/one_test.py', "if __name__ == '__main__':\n    pass\n")
        self.write('tests/c/silent_test.py', 'def test_x():\n    assert False\n')
        self.write('tests/c/commented_test.py', "# if __name__ == '__main__':\n")
        result = self.check()
        self.assertNotEqual(result.returncode, 0)
        self.assertIn('tests/c/silent_test.py', result.stderr)
        self.assertIn('tests/c/commented_test.py', result.stderr)
        self.assertNotIn('one_test.py', result.stderr)


if __name__ == '__main__':
    sys.exit(unittest.main())
