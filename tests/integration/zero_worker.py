"""One rank under tools/launch.py, for zero_test.py (issue 26, ZeRO stage 1):
    launch.py --nprocs N [--checkpoint_dir D --checkpoint_every K]
              zero_worker.py SPEC_JSON OUT_PREFIX

SPEC: {"steps": S, "optimizer": "momentum" | "adam", "shard": bool}.
Trains a small MLP (two hidden layers, so params of several sizes, one of
them with fewer elements than some shard counts would like) for S
iterations on a global batch of 12 that is a function of the iteration,
split evenly over the ranks, resuming from a checkpoint when there is one
(doppio.distributed.Checkpointer). Each rank writes OUT_PREFIX<rank>.npz:
device 0's checkpoint blobs as this rank holds them (with sharding, its
blocks of the optimizer state), the blocks' ranges, the bytes of optimizer
state it holds, and where it resumed."""
import json
import sys

import numpy as np

from doppio import brew, data_parallel_model, distributed, model_helper, optimizer
from doppio import workspace

D_IN, HIDDEN, D_OUT, GLOBAL_BATCH = 6, 9, 4, 12


def forward(model, loss_scale):
    hidden = brew.relu(model, brew.fc(model, 'data', 'fc1', D_IN, HIDDEN), 'relu1')
    hidden = brew.relu(model, brew.fc(model, hidden, 'fc2', HIDDEN, HIDDEN), 'relu2')
    logits = brew.fc(model, hidden, 'fc3', HIDDEN, D_OUT)
    _, loss = model.net.SoftmaxWithLoss([logits, 'label'], ['softmax', 'avg_loss'])
    return [model.net.Scale(loss, 'scaled_loss', scale=loss_scale)]


def batch(iteration, rank, world):
    rng = np.random.RandomState(2000 + iteration)
    x = rng.randn(GLOBAL_BATCH, D_IN).astype(np.float32)
    y = rng.randint(0, D_OUT, size=GLOBAL_BATCH).astype(np.int32)
    rows = slice(rank * GLOBAL_BATCH // world, (rank + 1) * GLOBAL_BATCH // world)
    return x[rows], y[rows]


def build_optimizer(kind):
    if kind == 'adam':
        return lambda m: optimizer.build_adam(m, 0.05)
    return lambda m: optimizer.build_sgd(m, 0.2, momentum=0.9, policy='step', stepsize=3,
                                         gamma=0.5)


def main():
    spec, out = json.loads(sys.argv[1]), sys.argv[2]
    rank, size = distributed.rank(), distributed.world_size()
    distributed.store_handler_from_env()
    model = model_helper.ModelHelper(name='zero_mlp')
    data_parallel_model.Parallelize_CPU(
        model, input_builder_fun=lambda m: None, forward_pass_builder_fun=forward,
        optimizer_builder_fun=build_optimizer(spec['optimizer']), devices=[0],
        rendezvous=dict(kv_handler='store_handler', shard_id=rank, num_shards=size,
                        interface='lo', timeout_ms=10000),
        shard_optimizer_state=spec['shard'])
    for index, op in enumerate(model.param_init_net.Proto().op):
        if op.type.endswith('Fill'):
            op.device_option.random_seed = 31 + index
    data_parallel_model.RunInitNet(model)
    checkpointer = distributed.Checkpointer(model)
    first = checkpointer.restore()
    for iteration in range(first, spec['steps']):
        x, y = batch(iteration, rank, size)
        workspace.FeedBlob('cpu_0/data', x)
        workspace.FeedBlob('cpu_0/label', y)
        data_parallel_model.RunNet(model, 1)
        checkpointer.after_iteration(iteration)
    blobs = {str(b): workspace.FetchBlob(str(b))
             for b in data_parallel_model.GetCheckpointParams(model)}
    # build_sgd's <param>_momentum, build_adam's <param>_first_moment and
    # <param>_second_moment.
    state = [name for name in blobs if name.startswith('cpu_0/') and '_moment' in name]
    np.savez(out + '%d.npz' % rank, resumed_at=first, world=size,
             state_names=np.array(sorted(state)),
             state_bytes=sum(blobs[name].nbytes for name in state),
             sharded=np.array([json.dumps([b, d, t, lo, hi])
                               for b, d, t, lo, hi in getattr(model, '_sharded_blobs', [])]),
             **{'blob:' + name: value for name, value in blobs.items()})
    data_parallel_model.Synchronize(model)


if __name__ == '__main__':
    main()
