"""One shard of a multi-process Parallelize test, run as its own process by
parallelize_distributed_test.py: python3 parallelize_distributed_worker.py
SPEC_JSON OUT_JSON.

It trains the MLP of the data-parallel tests with momentum SGD on its own
local devices, each fed its slice of every global batch, and writes what it
saw to OUT_JSON: its own random init (before the cross-shard broadcast),
the params after init and after training per device, a blob synced with
AddDistributedBlobSync, how long Synchronize waited; or the error and how
long the failing step took."""
import json
import sys
import time

import numpy as np

from doppio import brew, core, data_parallel_model, model_helper, optimizer, workspace
from doppio.proto import doppio_pb2

D_IN, HIDDEN, D_OUT, BATCH, STEPS = 5, 7, 3, 8, 10
PARAMS = ['fc1_w', 'fc1_b', 'fc2_w', 'fc2_b']
LR, MOMENTUM = 0.1, 0.9
SYNC_BLOB = 'shard_counter'
SYNCHRONIZE_DELAY_S = 1.0  # how late the last shard enters Synchronize


def batches():
    rng = np.random.RandomState(7)
    return [(rng.randn(BATCH, D_IN).astype(np.float32),
             rng.randint(0, D_OUT, size=BATCH).astype(np.int32)) for _ in range(STEPS)]


def forward(model, loss_scale):
    hidden = brew.fc(model, 'data', 'fc1', D_IN, HIDDEN)
    hidden = brew.relu(model, hidden, 'relu1')
    logits = brew.fc(model, hidden, 'fc2', HIDDEN, D_OUT)
    _, loss = model.net.SoftmaxWithLoss([logits, 'label'], ['softmax', 'avg_loss'])
    return [model.net.Scale(loss, 'scaled_loss', scale=loss_scale)]


def build_sgd(model):
    return optimizer.build_sgd(model, LR, momentum=MOMENTUM)


def counter_value(shard_id, step):
    """What shard `shard_id` feeds SYNC_BLOB before step `step`."""
    return np.array([(shard_id + 1.0) * (step + 1.0)], np.float32)


def create_store(spec):
    store = spec['store']
    if store['kind'] == 'file':
        op = core.CreateOperator('FileStoreHandlerCreate', [], ['store_handler'],
                                 path=store['path'], prefix=spec['prefix'])
    else:
        op = core.CreateOperator('RedisStoreHandlerCreate', [], ['store_handler'],
                                 host=store['host'], port=store['port'], prefix=spec['prefix'])
    workspace.RunOperatorOnce(op)


def parallelize(spec):
    model = model_helper.ModelHelper(name='distributed_mlp')
    rendezvous = dict(kv_handler='store_handler', shard_id=spec['shard_id'],
                      num_shards=spec['num_shards'], engine='GLOO', transport='tcp',
                      interface='lo', exit_nets=None, timeout_ms=spec['timeout_ms'])
    data_parallel_model.Parallelize_CPU(
        model, input_builder_fun=lambda m: None, forward_pass_builder_fun=forward,
        optimizer_builder_fun=build_sgd, devices=list(range(spec['devices'])),
        rendezvous=rendezvous, num_threads_per_device=2)
    # Every shard draws different initial params, so only the init net's
    # cross-shard broadcast can make them agree.
    for index, op in enumerate(model.param_init_net.Proto().op):
        if op.type.endswith('Fill'):
            op.device_option.random_seed = 1000 * (spec['shard_id'] + 1) + index
    return model


def own_init(model):
    """Device 0's params as this shard's fill ops alone make them, in a
    scratch workspace (the init net without its collectives)."""
    probe = doppio_pb2.NetDef(name='own_init_probe')
    for op in model.param_init_net.Proto().op:
        if op.type.endswith('Fill') and op.output[0].startswith('cpu_0/'):
            probe.op.add().CopyFrom(op)
    main = workspace.CurrentWorkspace()
    workspace.SwitchWorkspace('own_init_probe', True)
    try:
        workspace.RunNetOnce(probe)
        return {p: workspace.FetchBlob('cpu_0/' + p).tolist() for p in PARAMS}
    finally:
        workspace.SwitchWorkspace(main)


def device_params(devices):
    return {str(d): {p: workspace.FetchBlob('cpu_{}/{}'.format(d, p)).tolist() for p in PARAMS}
            for d in range(devices)}


def train(spec, result):
    shard_id, num_shards, devices = spec['shard_id'], spec['num_shards'], spec['devices']
    model = parallelize(spec)
    result['own_init'] = own_init(model)
    data_parallel_model.AddDistributedBlobSync(model, [SYNC_BLOB])
    workspace.FeedBlob(SYNC_BLOB, counter_value(shard_id, 0))
    data_parallel_model.RunInitNet(model)
    result['init'] = device_params(devices)
    per_device = BATCH // (num_shards * devices)
    for step, (x, y) in enumerate(batches()):
        for device in range(devices):
            first = (shard_id * devices + device) * per_device
            rows = slice(first, first + per_device)
            workspace.FeedBlob('cpu_{}/data'.format(device), x[rows])
            workspace.FeedBlob('cpu_{}/label'.format(device), y[rows])
        workspace.FeedBlob(SYNC_BLOB, counter_value(shard_id, step))
        data_parallel_model.RunNet(model, 1)
    result['final'] = device_params(devices)
    result['synced'] = workspace.FetchBlob(SYNC_BLOB).tolist()
    if shard_id == num_shards - 1:
        time.sleep(SYNCHRONIZE_DELAY_S)
    start = time.time()
    data_parallel_model.Synchronize(model)
    result['synchronize_s'] = time.time() - start


def main():
    spec = json.loads(sys.argv[1])
    result = {}
    start = time.time()
    try:
        create_store(spec)
        if spec['scenario'] == 'train':
            train(spec, result)
        elif spec['scenario'] == 'init_only':
            data_parallel_model.RunInitNet(parallelize(spec))
        else:
            raise ValueError('unknown scenario ' + spec['scenario'])
    except RuntimeError as error:
        result['error'] = str(error)
        result['elapsed'] = time.time() - start
    with open(sys.argv[2], 'w') as out:
        json.dump(result, out)


if __name__ == '__main__':
    main()
