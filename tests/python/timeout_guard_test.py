"""caffe2.python.timeout_guard: a block that overruns its limit is
interrupted (in a real child process), one that finishes or raises is not."""
import os
import subprocess
import sys
import textwrap
import time

import pytest

from caffe2.python import timeout_guard

_CHILD = textwrap.dedent('''
    import sys, time
    from caffe2.python import timeout_guard
    try:
        with timeout_guard.CompleteInTimeOrDie(0.3):
            time.sleep(float(sys.argv[1]))
    except KeyboardInterrupt:
        print('interrupted')
        sys.exit(3)
    print('finished')
''')


def _run_child(sleep_secs):
    return subprocess.run([sys.executable, '-c', _CHILD, str(sleep_secs)],
                          capture_output=True, text=True, timeout=60, env=dict(os.environ))


def test_an_overrunning_block_is_interrupted():
    result = _run_child(20)
    assert result.returncode == 3, result.stderr
    assert result.stdout.splitlines()[-1] == 'interrupted'
    assert 'Call did not finish in time. Timeout:0.3s' in result.stderr
    # The stacks show where the process was stuck.
    assert 'time.sleep' in result.stdout


def test_a_block_that_finishes_in_time_is_left_alone():
    result = _run_child(0.01)
    assert result.returncode == 0 and result.stdout.strip() == 'finished', result.stderr


def test_the_watcher_ends_with_the_block_even_when_it_raises():
    with pytest.raises(ValueError):
        with timeout_guard.CompleteInTimeOrDie(0.2):
            raise ValueError('inner')
    time.sleep(0.4)  # past the limit: no interrupt arrives


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q', '-p', 'no:cacheprovider']))
