"""One rank of flight_recorder_test.py: python3 flight_recorder_worker.py
SPEC_JSON OUT_JSON. Rendezvouses over a file store, runs `steps` Allreduces
of a 1000-element float32 tensor, then as the scenario says: 'die' (rank 1
kills itself with SIGKILL; rank 0 tries one more Allreduce), 'stall' (rank
1 sleeps; rank 0 blocks in one more Allreduce until the timeout, or until
the test has dumped its recorder with SIGUSR1). Writes the error (or None)
to OUT_JSON."""
import json
import os
import signal
import sys
import time

import numpy as np

from doppio import core, workspace


def run(op_type, inputs, outputs, **kwargs):
    workspace.RunOperatorOnce(core.CreateOperator(op_type, inputs, outputs, **kwargs))


def allreduce(rank):
    workspace.FeedBlob('x', np.full((1000,), rank + 1.0, np.float32))
    run('Allreduce', ['world', 'x'], ['x'], engine='GLOO', name='allreduce_x')


def main():
    spec = json.loads(sys.argv[1])
    rank = spec['rank']
    result = {'error': None}
    run('FileStoreHandlerCreate', [], ['store'], path=spec['store'], prefix=spec['prefix'])
    run('CreateCommonWorld', ['store'], ['world'], size=2, rank=rank,
        timeout_ms=spec['timeout_ms'], interface='lo')
    for _ in range(spec['steps']):
        allreduce(rank)
    ready = os.path.join(spec['dump_dir'], 'ready_%d' % rank)
    open(ready, 'w').close()
    try:
        if spec['scenario'] == 'die' and rank == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        if spec['scenario'] == 'stall' and rank == 1:
            time.sleep(spec['timeout_ms'] / 1000.0 + 5)
            return
        allreduce(rank)
    except RuntimeError as error:
        result['error'] = str(error)
    with open(sys.argv[2], 'w') as out:
        json.dump(result, out)


if __name__ == '__main__':
    main()
