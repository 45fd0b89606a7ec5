"""Running the integration tests' worker processes: each worker gets a JSON
spec and writes its report as JSON to a path it is given. One place starts
them, waits on one deadline, reads the reports and leaves no process behind,
so a hung worker fails the test instead of hanging it."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import pytest


def python_path_env():
    """This process's environment with its sys.path as PYTHONPATH, so the
    workers import the same doppio build."""
    return dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))


def run_workers(commands, wall_limit_s, tag='doppio_workers_'):
    """`commands`: one function per worker, taking the report path it must
    pass its worker and returning the argv to start. Returns (reports,
    seconds from the start until each worker exited). A report is the
    worker's JSON, or {'exit': code, 'output': text} when it wrote none.
    Fails the test if any worker outlives wall_limit_s."""
    out_dir = tempfile.mkdtemp(prefix=tag)
    env = python_path_env()
    processes = []
    start = time.time()
    try:
        for index, command in enumerate(commands):
            out = os.path.join(out_dir, 'worker%d.json' % index)
            processes.append((out, subprocess.Popen(command(out), env=env,
                                                    stdout=subprocess.PIPE,
                                                    stderr=subprocess.STDOUT)))
        deadline = start + wall_limit_s
        reports, exit_s = [], []
        for index, (out, process) in enumerate(processes):
            try:
                output, _ = process.communicate(timeout=max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                pytest.fail('worker %d hung past %d s' % (index, wall_limit_s))
            exit_s.append(time.time() - start)
            if os.path.exists(out):
                with open(out) as f:
                    reports.append(json.load(f))
            else:
                reports.append({'exit': process.returncode,
                                'output': output.decode(errors='replace')})
        return reports, exit_s
    finally:
        for _, process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
        shutil.rmtree(out_dir, ignore_errors=True)
