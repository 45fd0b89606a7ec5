"""doppio.legacy_env: what Caffe2-era code needs from today's numpy and
hypothesis, present once `caffe2` (and its hypothesis_test_util) are
imported, in a fresh interpreter each time (the module changes process
state)."""
import subprocess
import sys

import pytest


def _run(code):
    result = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_plain_doppio_leaves_numpy_alone():
    out = _run('import doppio.workspace, numpy as np\n'
               'print("asscalar" in np.__dict__, "float" in np.__dict__)')
    assert out.split() == ['False', 'False']


def test_importing_caffe2_restores_numpy_names():
    out = _run('import caffe2, sys, numpy as np\n'
               'print(np.asscalar(np.array([[7]])), np.float is float, np.bool is bool,\n'
               '      np.int is int, np.object is object)\n'
               'np.set_printoptions(threshold=np.nan)\n'
               'print(np.get_printoptions()["threshold"] == sys.maxsize)')
    assert out.split() == ['7', 'True', 'True', 'True', 'True', 'True']


def test_hypothesis_test_util_accepts_hypothesis_3_arguments():
    out = _run('import caffe2.python.hypothesis_test_util as hu\n'
               'import hypothesis, hypothesis.strategies as st\n'
               'from hypothesis import given, settings\n'
               '@given(xs=st.lists(st.integers(), average_size=3, max_size=4))\n'
               '@settings(timeout=10, min_satisfying_examples=1, max_examples=5)\n'
               'def check(xs):\n'
               '    assert len(xs) <= 4\n'
               'check()\n'
               'print("ok")')
    assert out.strip() == 'ok'


def test_float_strategies_are_rounded_to_the_array_dtype():
    out = _run('import caffe2.python.hypothesis_test_util as hu, numpy as np\n'
               'import hypothesis.strategies as st\n'
               'from hypothesis import given, settings\n'
               '@given(x=hu.arrays([5], np.float32, elements=st.floats(-1, 1)))\n'
               '@settings(max_examples=20)\n'
               'def check(x):\n'
               '    assert x.dtype == np.float32\n'
               'check()\n'
               'print("ok")')
    assert out.strip() == 'ok'


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q', '-p', 'no:cacheprovider']))
