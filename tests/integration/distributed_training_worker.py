"""One shard of the scale and failure tests, run as its own process:
python3 distributed_training_worker.py SPEC_JSON OUT_JSON.

Models: 'mlp' (the MLP of parallelize_distributed_worker, one device per
shard, a slice of every global batch of 8) or 'cnn' (the example's full
reference CNN with per-shard BN, one device per shard, a slice of every
global batch of CNN_BATCH continuous random images). The spec may ask the
shard to checkpoint after every step (minidb), to start from a checkpoint
at a given step, to SIGKILL itself before a given step, or to bind Gloo to
another interface than loopback ('interface'). Writes device
0's params after init and at the end, or the error, the step it hit and
how long that step ran."""
import json
import os
import signal
import sys
import time

import numpy as np

from doppio import core, data_parallel_model, model_helper, optimizer, workspace

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import parallelize_distributed_worker as mlp  # noqa: E402

CNN_BATCH, CNN_STEPS = 8, 4
CNN_PARAMS = ['conv1_w', 'conv1_b', 'bn1_s', 'bn1_b', 'conv2_w', 'conv2_b', 'bn2_s', 'bn2_b',
              'fc3_w', 'fc3_b', 'pred_w', 'pred_b']
CNN_STATS = ['bn1_rm', 'bn1_riv', 'bn2_rm', 'bn2_riv']


def cnn_forward(model, loss_scale):
    from python_api.examples import fmnist_train as example
    softmax = example.add_reference_cnn(model, 'data', is_test=0)
    loss = example.add_loss_and_accuracy(model, softmax, 'label')
    return [model.net.Scale(loss, 'scaled_loss', scale=loss_scale)]


def cnn_sgd(model):
    return optimizer.build_sgd(model, 0.01, momentum=0.9, nesterov=False, policy='fixed')


def cnn_batches():
    # Continuous inputs: max pooling then has no ties whose pick could hinge
    # on summation order.
    rng = np.random.RandomState(3)
    return [(rng.randn(CNN_BATCH, 1, 28, 28).astype(np.float32),
             rng.randint(0, 10, size=CNN_BATCH).astype(np.int32)) for _ in range(CNN_STEPS)]


MODELS = {
    'mlp': dict(forward=mlp.forward, sgd=mlp.build_sgd, batches=mlp.batches,
                params=mlp.PARAMS, stats=[]),
    'cnn': dict(forward=cnn_forward, sgd=cnn_sgd, batches=cnn_batches,
                params=CNN_PARAMS, stats=CNN_STATS),
}


def parallelize(spec, model_kind):
    model = model_helper.ModelHelper(name='distributed_' + model_kind)
    rendezvous = dict(kv_handler='store_handler', shard_id=spec['shard_id'],
                      num_shards=spec['num_shards'], engine='GLOO', transport='tcp',
                      interface=spec.get('interface', 'lo'), exit_nets=None,
                      timeout_ms=spec['timeout_ms'])
    data_parallel_model.Parallelize_CPU(
        model, input_builder_fun=lambda m: None,
        forward_pass_builder_fun=MODELS[model_kind]['forward'],
        optimizer_builder_fun=MODELS[model_kind]['sgd'], devices=[0],
        rendezvous=rendezvous, num_threads_per_device=1)
    # Each shard draws its own init, so only shard 0's broadcast makes the
    # shards agree; fixed seeds make every run of a test start the same.
    for index, op in enumerate(model.param_init_net.Proto().op):
        if op.type.endswith('Fill'):
            op.device_option.random_seed = 1000 * (spec['shard_id'] + 1) + index
    return model


def fetch(names):
    return {p: workspace.FetchBlob('cpu_0/' + p).tolist() for p in names}


def save_checkpoint(model, path):
    blobs = sorted(str(b) for b in data_parallel_model.GetCheckpointParams(model))
    partial = path + '.partial'  # a reader never sees a half-written db
    workspace.RunOperatorOnce(core.CreateOperator(
        'Save', blobs, [], db=partial, db_type='minidb', absolute_path=1))
    os.replace(partial, path)


def train(spec, result):
    kind = spec['model']
    shard_id, num_shards = spec['shard_id'], spec['num_shards']
    model = parallelize(spec, kind)
    data_parallel_model.RunInitNet(model)
    first_step = 0
    if spec.get('resume_from'):
        workspace.RunOperatorOnce(core.CreateOperator(
            'Load', [], [], db=spec['resume_from'], db_type='minidb', load_all=1,
            absolute_path=1))
        data_parallel_model.FinalizeAfterCheckpoint(model)
        first_step = spec['resume_step']
    result['init'] = fetch(MODELS[kind]['params'])
    per_shard = None
    for step, (x, y) in enumerate(MODELS[kind]['batches']()):
        if step < first_step:
            continue
        if step == spec.get('kill_at_step') and shard_id == spec.get('kill_rank'):
            # Let the peers consume this shard's last messages of the previous
            # step first: Gloo fails a receive whose data arrives together
            # with the connection's end (parallel/gloo/gloo_common.h), which
            # would fail that step instead of this one.
            time.sleep(0.5)
            os.kill(os.getpid(), signal.SIGKILL)
        per_shard = per_shard or len(x) // num_shards
        if per_shard == 0:
            # More shards than rows: shards 2k and 2k + 1 of 16 both take row
            # k of 8; each row's gradient then counts twice at half the loss
            # scale (1 / num_shards), which sums to the one-row-per-shard run.
            first = shard_id * len(x) // num_shards
            rows = slice(first, first + 1)
        else:
            rows = slice(shard_id * per_shard, (shard_id + 1) * per_shard)
        workspace.FeedBlob('cpu_0/data', x[rows])
        workspace.FeedBlob('cpu_0/label', y[rows])
        result['step'] = step
        result['step_start'] = time.time()
        data_parallel_model.RunNet(model, 1)
        if spec.get('checkpoint') and shard_id == 0:
            save_checkpoint(model, spec['checkpoint'])
            result['checkpointed_steps'] = step + 1
    result['final'] = fetch(MODELS[kind]['params'] + MODELS[kind]['stats'])


def main():
    spec = json.loads(sys.argv[1])
    result = {}
    start = time.time()
    try:
        store = spec['store']
        if store['kind'] == 'file':
            handler = core.CreateOperator('FileStoreHandlerCreate', [], ['store_handler'],
                                          path=store['path'], prefix=spec['prefix'])
        else:
            handler = core.CreateOperator('RedisStoreHandlerCreate', [], ['store_handler'],
                                          host=store['host'], port=store['port'],
                                          prefix=spec['prefix'])
        workspace.RunOperatorOnce(handler)
        train(spec, result)
    except RuntimeError as error:
        result['error'] = str(error)
        result['elapsed'] = time.time() - start
        # How long the failing step waited; the step ran only once every
        # earlier one had finished on every shard.
        result['step_elapsed'] = time.time() - result.get('step_start', start)
    with open(sys.argv[2], 'w') as out:
        json.dump(result, out)


if __name__ == '__main__':
    main()
