"""One shard of schedule_check_test.py: python3 schedule_check_worker.py
SPEC_JSON OUT_JSON. Builds the MLP of the distributed tests, changed as
the spec's 'variant' says, parallelizes it over a file store, and runs its
init net in two parts: up to the rendezvous (CreateCommonWorld), then the
rest, which starts with the schedule check. Writes how long each part took
and the error, if any, to OUT_JSON."""
import json
import sys
import time

import numpy as np

from doppio import brew, core, data_parallel_model, model_helper, optimizer, utils, workspace
from doppio.proto import doppio_pb2

D_IN, HIDDEN, D_OUT = 5, 7, 3


def forward_for(variant):
    def forward(model, loss_scale):
        hidden = brew.relu(model, brew.fc(model, 'data', 'fc1', D_IN, HIDDEN), 'relu1')
        if variant == 'extra_layer':
            hidden = brew.relu(model, brew.fc(model, hidden, 'fc_extra', HIDDEN, HIDDEN),
                               'relu_extra')
        logits = brew.fc(model, hidden, 'fc2', HIDDEN, D_OUT)
        if variant == 'double_bias':
            # The bias made as float64: its broadcast and gradient change dtype.
            for op in model.param_init_net.Proto().op:
                if list(op.output) == ['fc2_b']:
                    op.arg.add().CopyFrom(
                        utils.MakeArgument('dtype', core.DataType.DOUBLE))
        _, loss = model.net.SoftmaxWithLoss([logits, 'label'], ['softmax', 'avg_loss'])
        return [model.net.Scale(loss, 'scaled_loss', scale=loss_scale)]
    return forward


def main():
    spec = json.loads(sys.argv[1])
    result = {}
    try:
        workspace.RunOperatorOnce(core.CreateOperator(
            'FileStoreHandlerCreate', [], ['store_handler'], path=spec['store'],
            prefix=spec['prefix']))
        model = model_helper.ModelHelper(name='schedule_mlp')
        rendezvous = dict(kv_handler='store_handler', shard_id=spec['shard_id'],
                          num_shards=spec['num_shards'], engine='GLOO', transport='tcp',
                          interface='lo', exit_nets=None, timeout_ms=spec['timeout_ms'],
                          bucket_cap_mb=spec.get('bucket_cap_mb', 25))
        if spec['variant'] == 'bmuf':
            data_parallel_model.Parallelize_CPU_BMUF(
                model, input_builder_fun=lambda m: None,
                forward_pass_builder_fun=forward_for('base'),
                param_update_builder_fun=lambda m: optimizer.build_sgd(m, 0.1),
                devices=[0], rendezvous=rendezvous)
        else:
            data_parallel_model.Parallelize_CPU(
                model, input_builder_fun=lambda m: None,
                forward_pass_builder_fun=forward_for(spec['variant']),
                optimizer_builder_fun=lambda m: optimizer.build_sgd(m, 0.1),
                devices=[0], rendezvous=rendezvous,
                accumulate_steps=spec.get('accumulate_steps', 1))
        if spec.get('extra_sync'):
            data_parallel_model.AddDistributedBlobSync(model, ['cpu_0/fc1_b'])
        ops = list(model.param_init_net.Proto().op)
        create = [i for i, op in enumerate(ops) if op.type == 'CreateCommonWorld'][0]
        result['check_op'] = ops[create + 1].type
        head = doppio_pb2.NetDef(name='head')
        head.op.extend(ops[:create + 1])
        rest = doppio_pb2.NetDef(name='rest')
        rest.op.extend(ops[create + 1:])
        start = time.time()
        workspace.RunNetOnce(head)
        result['rendezvous_s'] = time.time() - start
        start = time.time()
        try:
            workspace.RunNetOnce(rest)
        finally:
            result['rest_s'] = time.time() - start
        if spec['variant'] == 'bmuf':
            # The global model starts from the (broadcast) initial params.
            workspace.RunNetOnce(model._global_model_init_net)
        # One step: the collectives after the check still meet.
        rng = np.random.RandomState(spec['shard_id'])
        workspace.FeedBlob('cpu_0/data', rng.randn(4, D_IN).astype(np.float32))
        workspace.FeedBlob('cpu_0/label', rng.randint(0, D_OUT, size=4).astype(np.int32))
        workspace.RunNetOnce(model.net)
        if spec['variant'] == 'bmuf':
            workspace.RunNetOnce(model.net)
            result['local_fc1_w'] = workspace.FetchBlob('cpu_0/fc1_w').tolist()
            workspace.RunNetOnce(model._global_model_param_updates_net)
        result['fc1_w'] = workspace.FetchBlob('cpu_0/fc1_w').tolist()
        result['ok'] = True
    except RuntimeError as error:
        result['error'] = str(error)
    with open(sys.argv[2], 'w') as out:
        json.dump(result, out)


if __name__ == '__main__':
    main()
