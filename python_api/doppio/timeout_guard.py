"""Caffe2's timeout_guard: stop a process whose call does not finish in time.

    with timeout_guard.CompleteInTimeOrDie(60.0):
        workspace.RunNet(net)

If the block is still running after `timeout_secs`, the guard logs an error
with the process id, prints every thread's stack, and interrupts the main
thread (SIGINT, so `finally` blocks and KeyboardInterrupt handlers run). A
process that has not ended 10 seconds later exits with status 1 (Caffe2
aborts there; an exit status says the same without a core file).
"""
import contextlib
import logging
import os
import signal
import sys
import threading
import time
import traceback

_FORCE_EXIT_AFTER_SECS = 10.0


def _thread_stacks(only_ident=None):
    lines = []
    for ident, frame in sys._current_frames().items():
        if only_ident is not None and ident != only_ident:
            continue
        lines.append('\n# ThreadID: {}'.format(ident))
        for filename, lineno, name, line in traceback.extract_stack(frame):
            lines.append('File: "{}", line {}, in {}'.format(filename, lineno, name))
            if line:
                lines.append('  ' + line.strip())
    return '\n'.join(lines)


class WatcherThread(threading.Thread):
    """Waits `timeout_secs` for `completed`; then interrupts the process."""

    def __init__(self, timeout_secs):
        super(WatcherThread, self).__init__(daemon=True)
        self.timeout_secs = timeout_secs
        self.completed = False
        self.condition = threading.Condition()
        self.caller_thread = threading.current_thread()

    def run(self):
        deadline = time.time() + self.timeout_secs
        with self.condition:
            while not self.completed and time.time() < deadline:
                self.condition.wait(deadline - time.time())
        if self.completed:
            return
        log = logging.getLogger('timeout_guard')
        log.error('Call did not finish in time. Timeout:%ss PID: %d', self.timeout_secs,
                  os.getpid())
        threading.Thread(target=self._force_exit, daemon=True).start()
        print('Caller thread was: {}'.format(self.caller_thread))
        print('-----Before forcing------')
        print(_thread_stacks())
        os.kill(os.getpid(), signal.SIGINT)

    def _force_exit(self):
        time.sleep(_FORCE_EXIT_AFTER_SECS)
        print('-----After force------')
        print(_thread_stacks(self.caller_thread.ident))
        logging.getLogger('timeout_guard').error(
            'Process did not terminate cleanly in %s s, forcing', _FORCE_EXIT_AFTER_SECS)
        os._exit(1)

    def finish(self):
        with self.condition:
            self.completed = True
            self.condition.notify()


@contextlib.contextmanager
def CompleteInTimeOrDie(timeout_secs):
    watcher = WatcherThread(timeout_secs)
    watcher.start()
    try:
        yield
    finally:
        # Also when the block raised: the guard is for hangs, not errors.
        watcher.finish()


def EuthanizeIfNecessary(timeout_secs=120):
    """Ends the process if it is still alive `timeout_secs` from now (for a
    process that can hang at shutdown)."""
    WatcherThread(timeout_secs).start()
