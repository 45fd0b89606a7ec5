"""tools/caffe2_compat.py against a scratch Caffe2 checkout holding test
files written here: the counts per file and in total come from real pytest
runs, `import caffe2` resolves to Doppio's package even though the checkout
has its own caffe2/__init__.py, and a missing checkout says where to get
one."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from tool_paths import runfile

TOOL = runfile('tools/caffe2_compat.py')

PASSING = '''
    import unittest
    import numpy as np
    from caffe2.python import core, workspace
    import doppio.workspace

    class TestRelu(unittest.TestCase):
        def test_relu(self):
            assert workspace is doppio.workspace  # Doppio's, not the checkout's
            workspace.FeedBlob('x', np.array([-1.0, 2.0], np.float32))
            workspace.RunOperatorOnce(core.CreateOperator('Relu', ['x'], ['y']))
            np.testing.assert_array_equal(workspace.FetchBlob('y'), [0.0, 2.0])

        def test_wrong(self):
            self.assertEqual(1, 2)

        @unittest.skipIf(True, 'needs a GPU')
        def test_gpu(self):
            pass
'''

BROKEN = '''
    from caffe2.python import no_such_module
'''


@pytest.fixture
def checkout(tmp_path):
    python = tmp_path / 'caffe2' / 'python'
    (python / 'operator_test').mkdir(parents=True)
    # The checkout's own package must never be imported.
    (tmp_path / 'caffe2' / '__init__.py').write_text('raise ImportError("checkout caffe2")\n')
    (python / '__init__.py').write_text('')
    (python / 'operator_test' / 'relu_test.py').write_text(textwrap.dedent(PASSING))
    (python / 'broken_test.py').write_text(textwrap.dedent(BROKEN))
    return tmp_path


def _run(*args):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    return subprocess.run([sys.executable, TOOL] + list(args), capture_output=True, text=True,
                          env=env, timeout=300)


def test_counts_per_file_and_total(checkout, tmp_path):
    report = tmp_path / 'report.json'
    result = _run(str(checkout), 'operator_test/relu_test.py', 'broken_test.py',
                  'absent_test.py', '--json', str(report))
    assert result.returncode == 0, result.stderr
    table = json.loads(report.read_text())
    assert table['files']['operator_test/relu_test.py'] == dict(
        passed=1, failed=1, skipped=1, note='')
    broken = table['files']['broken_test.py']
    assert (broken['passed'], broken['failed']) == (0, 1)
    assert table['files']['absent_test.py']['note'] == 'not in the checkout'
    assert table['totals'] == dict(passed=1, failed=2, skipped=1)
    lines = result.stdout.splitlines()
    assert lines[-1].startswith('TOTAL') and '33.3% of the cases that ran passed' in lines[-1]


def test_a_missing_checkout_says_where_to_get_one(tmp_path):
    result = _run(str(tmp_path / 'nothing'))
    assert result.returncode != 0
    assert 'facebookarchive/caffe2' in result.stderr


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q', '-p', 'no:cacheprovider']))
