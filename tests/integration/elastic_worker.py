"""One rank under tools/launch.py --max_restarts, for elastic_restart_test.py:
    launch.py --nprocs 2 [--max_restarts R --checkpoint_dir D ...]
              elastic_worker.py STEPS KILL_OFFSETS_JSON OUT.npz

Trains the MLP of the distributed tests with momentum SGD and a stepped
learning rate (so the optimizer state and the iteration counter matter)
for STEPS iterations, each rank fed batches that are a function of the
iteration. doppio.distributed.Checkpointer resumes it after a restart. On
attempt a (DOPPIO_RESTART_COUNT), KILL_OFFSETS_JSON[a], if present, makes
rank a % 2 SIGKILL itself that many iterations after where it resumed.
Rank 0 writes the final params and iteration counter to OUT.npz."""
import json
import os
import signal
import sys

import numpy as np

from doppio import brew, core, data_parallel_model, distributed, model_helper, optimizer
from doppio import workspace

D_IN, HIDDEN, D_OUT, PER_RANK = 5, 7, 3, 4


def forward(model, loss_scale):
    hidden = brew.relu(model, brew.fc(model, 'data', 'fc1', D_IN, HIDDEN), 'relu1')
    logits = brew.fc(model, hidden, 'fc2', HIDDEN, D_OUT)
    _, loss = model.net.SoftmaxWithLoss([logits, 'label'], ['softmax', 'avg_loss'])
    return [model.net.Scale(loss, 'scaled_loss', scale=loss_scale)]


def batch(iteration, rank):
    rng = np.random.RandomState(1000 * iteration + rank)
    return (rng.randn(PER_RANK, D_IN).astype(np.float32),
            rng.randint(0, D_OUT, size=PER_RANK).astype(np.int32))


def main():
    steps, offsets, out = int(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3]
    rank, size = distributed.rank(), distributed.world_size()
    distributed.store_handler_from_env()
    model = model_helper.ModelHelper(name='elastic_mlp')
    data_parallel_model.Parallelize_CPU(
        model, input_builder_fun=lambda m: None, forward_pass_builder_fun=forward,
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
    kill_at = first + offsets[attempt] if attempt < len(offsets) else None
    for iteration in range(first, steps):
        if iteration == kill_at and rank == attempt % 2:
            os.kill(os.getpid(), signal.SIGKILL)
        x, y = batch(iteration, rank)
        workspace.FeedBlob('cpu_0/data', x)
        workspace.FeedBlob('cpu_0/label', y)
        data_parallel_model.RunNet(model, 1)
        checkpointer.after_iteration(iteration)
    if rank == 0:
        iters = [str(b) for b in data_parallel_model.GetCheckpointParams(model)
                 if not str(b).startswith('cpu_')]
        np.savez(out, restarts=attempt, resumed_at=first,
                 **{name.replace('/', '__'): workspace.FetchBlob(name)
                    for name in ['cpu_0/fc1_w', 'cpu_0/fc1_b', 'cpu_0/fc2_w', 'cpu_0/fc2_b']
                    + iters})
    data_parallel_model.Synchronize(model)


if __name__ == '__main__':
    main()
