"""One rank under tools/launch.py --max_restarts, for elastic_restart_test.py:
    launch.py --nprocs 2 [--max_restarts R --checkpoint_dir D ...]
              elastic_worker.py STEPS KILL_OFFSETS_JSON OUT.npz [NPROCS_FILE]

With ELASTIC_DB=PATH (a minidb of TensorProtos records: features, label)
the batches come from the DB instead: each rank's CreateDB reads its shard
(num_shards = world, shard_id = rank) through TensorProtosDBInput with a
shuffle buffer, so resuming exactly needs the readers' state. With
ELASTIC_DROPOUT=1 a seeded Dropout follows the hidden layer, so it needs the
ops' random generators too.

Trains the MLP of the distributed tests with momentum SGD and a stepped
learning rate (so the optimizer state and the iteration counter matter)
for STEPS iterations on a global batch of 8 that is a function of the
iteration, split evenly over the ranks (DOPPIO_WORLD_SIZE: 1, 2, 4 or 8).
doppio.distributed.Checkpointer resumes it after a restart. On attempt a
(DOPPIO_RESTART_COUNT), KILL_OFFSETS_JSON[a], if present, makes rank
a % world SIGKILL itself that many iterations after where it resumed; an
entry [offset, n] first writes n to NPROCS_FILE (the process count the
launcher's next start takes, as a scheduler would). Rank 0 writes the final
params and iteration counter to OUT.npz."""
import json
import os
import signal
import sys

import numpy as np

from doppio import brew, data_parallel_model, distributed, model_helper, optimizer
from doppio import workspace

D_IN, HIDDEN, D_OUT, GLOBAL_BATCH = 5, 7, 3, 8


def forward(model, loss_scale):
    hidden = brew.relu(model, brew.fc(model, 'data', 'fc1', D_IN, HIDDEN), 'relu1')
    if os.environ.get('ELASTIC_DROPOUT'):
        # A seeded dropout: its masks come from the op's generator, which a
        # checkpoint must carry for a resumed run to draw the same masks.
        hidden, _ = model.net.Dropout(hidden, ['dropped', 'dropout_mask'], ratio=0.4, is_test=0)
        model.net.Proto().op[-1].device_option.random_seed = 9
    logits = brew.fc(model, hidden, 'fc2', HIDDEN, D_OUT)
    _, loss = model.net.SoftmaxWithLoss([logits, 'label'], ['softmax', 'avg_loss'])
    return [model.net.Scale(loss, 'scaled_loss', scale=loss_scale)]


def db_input(rank, size):
    """The input builder reading ELASTIC_DB, or None to feed batches."""
    path = os.environ.get('ELASTIC_DB')
    if not path:
        return lambda m: None

    def add_input(m):
        reader = m.param_init_net.CreateDB([], 'reader', db=path, db_type='minidb',
                                           num_shards=size, shard_id=rank)
        m.net.TensorProtosDBInput([reader], ['data', 'label'],
                                  batch_size=GLOBAL_BATCH // size, shuffle_buffer=7,
                                  shuffle_seed=3)
    return add_input


def batch(iteration, rank, world):
    rng = np.random.RandomState(1000 + iteration)
    x = rng.randn(GLOBAL_BATCH, D_IN).astype(np.float32)
    y = rng.randint(0, D_OUT, size=GLOBAL_BATCH).astype(np.int32)
    rows = slice(rank * GLOBAL_BATCH // world, (rank + 1) * GLOBAL_BATCH // world)
    return x[rows], y[rows]


def main():
    steps, offsets, out = int(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3]
    nprocs_file = sys.argv[4] if len(sys.argv) > 4 else None
    rank, size = distributed.rank(), distributed.world_size()
    distributed.store_handler_from_env()
    model = model_helper.ModelHelper(name='elastic_mlp')
    data_parallel_model.Parallelize_CPU(
        model, input_builder_fun=db_input(rank, size), forward_pass_builder_fun=forward,
        optimizer_builder_fun=lambda m: optimizer.build_sgd(
            m, 0.2, momentum=0.9, policy='step', stepsize=5, gamma=0.5),
        devices=[0], rendezvous=dict(kv_handler='store_handler', shard_id=rank,
                                     num_shards=size, interface='lo', timeout_ms=5000))
    for index, op in enumerate(model.param_init_net.Proto().op):
        if op.type.endswith('Fill'):
            op.device_option.random_seed = 17 + index
    data_parallel_model.RunInitNet(model)
    checkpointer = distributed.Checkpointer(model)
    first = checkpointer.restore()
    attempt = distributed.restart_count()
    plan = offsets[attempt] if attempt < len(offsets) else None
    offset, next_nprocs = plan if isinstance(plan, list) else (plan, None)
    kill_at = first + offset if offset is not None else None
    for iteration in range(first, steps):
        if iteration == kill_at and rank == attempt % size:
            if next_nprocs is not None:
                with open(nprocs_file, 'w') as f:
                    f.write('%d\n' % next_nprocs)
            os.kill(os.getpid(), signal.SIGKILL)
        if not os.environ.get('ELASTIC_DB'):
            x, y = batch(iteration, rank, size)
            workspace.FeedBlob('cpu_0/data', x)
            workspace.FeedBlob('cpu_0/label', y)
        data_parallel_model.RunNet(model, 1)
        checkpointer.after_iteration(iteration)
    if rank == 0:
        iters = [str(b) for b in data_parallel_model.GetCheckpointParams(model)
                 if not str(b).startswith('cpu_')]
        np.savez(out, restarts=attempt, resumed_at=first, world=size,
                 **{name.replace('/', '__'): workspace.FetchBlob(name)
                    for name in ['cpu_0/fc1_w', 'cpu_0/fc1_b', 'cpu_0/fc2_w', 'cpu_0/fc2_b']
                    + iters})
    data_parallel_model.Synchronize(model)


if __name__ == '__main__':
    main()
