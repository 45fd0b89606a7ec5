"""One rank under tools/launch.py, for mixed_precision_test.py:
    launch.py --nprocs N mixed_precision_worker.py SPEC_JSON OUT_PREFIX

SPEC: {"steps": S, "precision": "fp16" | "bf16", "init_scale": float,
       "overflow_step": K, "overflow_rank": R, "shard": bool,
       "model": "mlp" | "linear"}.
Trains a small MLP under Parallelize(precision=...) on a global batch that
is a function of the iteration, split over the ranks; at step K rank R
alone feeds values beyond float16's range. "linear" is loss = FC(x) with one output
(its weight w_w of 16 elements), and the overflow is one element of x: the
only non-finite element of w_w's gradient, at index 12, in the second
shard's block. Each
rank writes OUT_PREFIX<rank>.npz: after every step, its loss scale, its
skipped-step count and its first weights."""
import json
import sys

import numpy as np

from doppio import brew, data_parallel_model, distributed, model_helper, optimizer
from doppio import workspace

D_IN, HIDDEN, D_OUT, GLOBAL_BATCH = 6, 8, 3, 8


def forward(model, loss_scale):
    hidden = brew.relu(model, brew.fc(model, 'data', 'fc1', D_IN, HIDDEN), 'relu1')
    logits = brew.fc(model, hidden, 'fc2', HIDDEN, D_OUT)
    _, loss = model.net.SoftmaxWithLoss([logits, 'label'], ['softmax', 'avg_loss'])
    return [model.net.Scale(loss, 'scaled_loss', scale=loss_scale)]


LINEAR_SIZE, LINEAR_OVERFLOW_AT = 16, 12


def linear_forward(model, loss_scale):
    # FC runs in float16; the gradient of its [1, 16] weight is dY * x.
    y = brew.fc(model, 'data', 'w', LINEAR_SIZE, 1)
    total = model.net.SumElements(y, 'total')
    return [model.net.Scale(total, 'scaled_loss', scale=loss_scale)]


def linear_batch(iteration, rank, spec):
    x = np.random.RandomState(900 + 10 * iteration + rank).randn(1, LINEAR_SIZE).astype(
        np.float32)
    if iteration == spec.get('overflow_step') and rank == spec.get('overflow_rank'):
        x[0, LINEAR_OVERFLOW_AT] = 1e6
    return x


def batch(iteration, rank, world, spec):
    rng = np.random.RandomState(500 + iteration)
    x = rng.randn(GLOBAL_BATCH, D_IN).astype(np.float32)
    y = rng.randint(0, D_OUT, size=GLOBAL_BATCH).astype(np.int32)
    rows = slice(rank * GLOBAL_BATCH // world, (rank + 1) * GLOBAL_BATCH // world)
    x, y = x[rows], y[rows]
    if iteration == spec.get('overflow_step') and rank == spec.get('overflow_rank'):
        x = x * 1e6  # past 65504 once cast to float16: infinities
    return x, y


def main():
    spec, out = json.loads(sys.argv[1]), sys.argv[2]
    rank, size = distributed.rank(), distributed.world_size()
    distributed.store_handler_from_env()
    linear = spec.get('model') == 'linear'
    model = model_helper.ModelHelper(name='mp_' + spec.get('model', 'mlp'))
    data_parallel_model.Parallelize_CPU(
        model, input_builder_fun=lambda m: None,
        forward_pass_builder_fun=linear_forward if linear else forward,
        optimizer_builder_fun=lambda m: optimizer.build_sgd(m, 0.1, momentum=0.9),
        devices=[0], precision=spec['precision'], init_loss_scale=spec.get('init_scale', 65536.0),
        shard_optimizer_state=spec.get('shard', False),
        rendezvous=dict(kv_handler='store_handler', shard_id=rank, num_shards=size,
                        interface='lo', timeout_ms=10000))
    for index, op in enumerate(model.param_init_net.Proto().op):
        if op.type.endswith('Fill'):
            op.device_option.random_seed = 7 + index
    data_parallel_model.RunInitNet(model)
    scales, skipped, weights = [], [], []
    for iteration in range(spec['steps']):
        if linear:
            workspace.FeedBlob('cpu_0/data', linear_batch(iteration, rank, spec))
        else:
            x, y = batch(iteration, rank, size, spec)
            workspace.FeedBlob('cpu_0/data', x)
            workspace.FeedBlob('cpu_0/label', y)
        data_parallel_model.RunNet(model, 1)
        state = data_parallel_model.LossScaleState(model).get('cpu_0/')
        scales.append(state['scale'] if state else np.nan)
        skipped.append(state['skipped_steps'] if state else -1)
        weights.append(workspace.FetchBlob('cpu_0/w_w' if linear else 'cpu_0/fc1_w'))
    np.savez(out + '%d.npz' % rank, scales=np.array(scales), skipped=np.array(skipped),
             weights=np.array(weights))


if __name__ == '__main__':
    main()
