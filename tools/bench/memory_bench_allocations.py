"""memory_bench.py --report_allocations: how often one steady-state training
iteration of the reference CNN and MLP (DESIGN.md section 8, the builders of
python_api/examples/fmnist_models.py, momentum SGD, Parallelize_CPU with one
dag worker per device as fmnist_train.py runs them) calls the CPU allocator,
and with how many bytes (workspace.GetCPUAllocatorStats()). Issue 13's
target is 0 after the first iterations.

Configurations: 1 and --devices CPU devices, with and without
optimize_gradient_memory (memonger), input from TensorProtosDBInput on a
minidb of random Fashion-MNIST-shaped records (written here; pixel values do
not change what is allocated) and from fed blobs (FeedBlob itself, outside
RunNet, makes a fresh tensor per call and is not counted). Where an
iteration does allocate, each op of the net is run again as a one-op net of
its own, in order, and the ops whose runs allocate are listed.
"""
import collections
import json
import os
import shutil
import struct
import sys
import tempfile

REPO_ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                          '..', '..'))
EXAMPLES = os.path.join(REPO_ROOT, 'python_api', 'examples')
RECORDS = 256


def write_minidb(path, records, seed=1):
    """`records` (uint8 [1, 28, 28] image, int32 label) records in the
    minidb format of core/db_minidb.cc: int32 key length, int32 value
    length (little endian), key, value."""
    import numpy as np
    from doppio.proto import doppio_pb2
    rng = np.random.RandomState(seed)
    with open(path, 'wb') as f:
        for i in range(records):
            record = doppio_pb2.TensorProtos()
            image = record.protos.add()
            image.data_type = doppio_pb2.TensorProto.UINT8
            image.dims.extend([1, 28, 28])
            image.byte_data = rng.randint(0, 256, size=784).astype(np.uint8).tobytes()
            label = record.protos.add()
            label.data_type = doppio_pb2.TensorProto.INT32
            label.int32_data.append(int(rng.randint(0, 10)))
            key = '{:08d}'.format(i).encode()
            value = record.SerializeToString()
            f.write(struct.pack('<ii', len(key), len(value)))
            f.write(key)
            f.write(value)


def build(model_name, devices, use_memonger, source, db, batch, threads_per_device):
    """fmnist_train.py's training model on `devices`; returns the model and
    the per-iteration feed (a no-op for DB input)."""
    sys.path.insert(0, EXAMPLES)
    import numpy as np
    from doppio import data_parallel_model, model_helper, optimizer, workspace
    from fmnist_models import MODELS, add_loss_and_accuracy, add_preprocessing

    workspace.ResetWorkspace()
    train = model_helper.ModelHelper(name='alloc_{}_{}_{}_{}'.format(
        model_name, len(devices), int(use_memonger), source))
    per_device_batch = batch // len(devices)
    if source == 'db':
        reader = train.param_init_net.CreateDB([], 'reader', db=db, db_type='minidb')

    def add_input(model):
        model.param_init_net.ConstantFill([], 'pixel_shift', shape=[1], value=-0.81)
        if source == 'db':
            pixels, _ = model.net.TensorProtosDBInput(
                [reader], ['data_uint8', 'label'], batch_size=per_device_batch,
                shuffle_buffer=32, shuffle_seed=1)
        else:
            pixels = 'data_uint8'
        add_preprocessing(model, pixels)

    def add_forward(model, loss_scale):
        loss = add_loss_and_accuracy(model, MODELS[model_name](model, 'data', is_test=0),
                                     'label')
        return [model.net.Scale(loss, 'scaled_loss', scale=loss_scale)]

    def add_optimizer(model):
        return optimizer.build_sgd(model, base_learning_rate=0.05, momentum=0.9,
                                   nesterov=False, policy='fixed')

    data_parallel_model.Parallelize_CPU(
        train, input_builder_fun=add_input, forward_pass_builder_fun=add_forward,
        optimizer_builder_fun=add_optimizer, devices=devices,
        num_threads_per_device=threads_per_device, optimize_gradient_memory=use_memonger)
    for op in train.param_init_net.Proto().op:
        op.device_option.random_seed = 7
    rng = np.random.RandomState(0)

    def feed():
        if source != 'fed':
            return
        for device in devices:
            workspace.FeedBlob('cpu_{}/data_uint8'.format(device), rng.randint(
                0, 256, size=(per_device_batch, 1, 28, 28)).astype(np.uint8))
            workspace.FeedBlob('cpu_{}/label'.format(device), rng.randint(
                0, 10, size=per_device_batch).astype(np.int32))

    feed()
    data_parallel_model.RunInitNet(train)
    return train, feed


def counts():
    from doppio import workspace
    stats = workspace.GetCPUAllocatorStats()
    return stats['allocations'], stats['allocated_bytes']


def run_iterations(net_name, feed, iterations):
    from doppio import workspace
    made = []
    for _ in range(iterations):
        feed()
        calls, nbytes = counts()
        workspace.RunNet(net_name)
        after_calls, after_bytes = counts()
        made.append((after_calls - calls, after_bytes - nbytes))
    return made


def allocating_ops(train, feed, iterations):
    """The ops that allocate in steady state: each op as a one-op net (the
    same op instance every iteration), run in the net's order; counted from
    the third iteration on."""
    from doppio import workspace
    from doppio.proto import doppio_pb2
    proto = train.net.Proto()
    names = []
    for index, op in enumerate(proto.op):
        single = doppio_pb2.NetDef(name='alloc_probe_{}'.format(index))
        single.op.extend([op])
        if proto.HasField('device_option'):
            single.device_option.CopyFrom(proto.device_option)
        single.arg.extend([a for a in proto.arg if a.name == 'intra_op_threads'])
        workspace.CreateNet(single, overwrite=True)
        names.append(single.name)
    found = collections.Counter()
    for iteration in range(max(iterations, 3)):
        feed()
        for index, name in enumerate(names):
            before, _ = counts()
            workspace.RunNet(name)
            calls = counts()[0] - before
            if iteration >= 2 and calls:
                op = proto.op[index]
                found['{} -> {}'.format(op.type, ', '.join(op.output))] += calls
    steady = max(iterations, 3) - 2
    return {what: calls / steady for what, calls in found.items()}


def child(args):
    """Every configuration in this process; one JSON line per row."""
    folder = tempfile.mkdtemp(prefix='memory_bench_alloc_')
    try:
        db = os.path.join(folder, 'train.minidb')
        write_minidb(db, RECORDS)
        device_sets = [[0]] + ([list(range(args.devices))] if args.devices > 1 else [])
        for model_name in ('cnn', 'mlp'):
            for devices in device_sets:
                for use_memonger in (False, True):
                    for source in ('db', 'fed'):
                        train, feed = build(model_name, devices, use_memonger, source, db,
                                            args.batch_alloc, args.threads_per_device)
                        made = run_iterations(train.net.Proto().name, feed,
                                              args.warmup + args.iterations)
                        steady = made[args.warmup:]
                        row = dict(model=model_name, devices=len(devices),
                                   memonger=use_memonger, input=source,
                                   first_iteration_allocations=made[0][0],
                                   first_iteration_bytes=made[0][1],
                                   steady_allocations_per_iteration=(
                                       sum(c for c, _ in steady) / len(steady)),
                                   steady_bytes_per_iteration=(
                                       sum(b for _, b in steady) / len(steady)),
                                   steady_max_allocations=max(c for c, _ in steady))
                        if row['steady_max_allocations']:
                            row['allocating_ops'] = allocating_ops(train, feed, args.iterations)
                        print(json.dumps(row), flush=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def table(rows):
    lines = ['| model | devices | memonger | input | 1st iteration: allocations (MiB) '
             '| steady state: allocations / iteration | bytes / iteration | max |',
             '|---|---:|---|---|---:|---:|---:|---:|']
    for r in rows:
        lines.append('| {} | {} | {} | {} | {} ({:.2f}) | {:g} | {:g} | {} |'.format(
            r['model'], r['devices'], 'yes' if r['memonger'] else 'no', r['input'],
            r['first_iteration_allocations'], r['first_iteration_bytes'] / 2.0**20,
            r['steady_allocations_per_iteration'], r['steady_bytes_per_iteration'],
            r['steady_max_allocations']))
    return '\n'.join(lines)


def report(args, run_child):
    """Runs child() in a fresh process, prints the table (and any op that
    allocates in steady state), writes the JSON; 1 if any row allocates."""
    import datetime
    import platform
    rows, error = run_child()
    if error:
        print('memory_bench --report_allocations failed: ' + error, file=sys.stderr)
        return 1
    out = args.out_alloc
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, 'w') as f:
        json.dump(dict(bench='memory_bench --report_allocations',
                       date=datetime.datetime.now().isoformat(timespec='seconds'),
                       machine=dict(processor=platform.processor() or platform.machine(),
                                    cores=os.cpu_count()),
                       config=dict(global_batch=args.batch_alloc, warmup=args.warmup,
                                   iterations=args.iterations,
                                   threads_per_device=args.threads_per_device),
                       rows=rows), f, indent=1)
    print('memory_bench --report_allocations: reference CNN and MLP training, global batch '
          '{}, {} warm-up + {} counted iterations, {} dag worker(s) per device'.format(
              args.batch_alloc, args.warmup, args.iterations, args.threads_per_device))
    print()
    print(table(rows))
    allocating = [r for r in rows if r['steady_max_allocations']]
    for r in allocating:
        print('{model} on {devices} device(s), memonger {memonger}, {input} input: '
              'ops allocating per steady iteration:'.format(**r))
        for what, calls in sorted(r.get('allocating_ops', {}).items()):
            print('  {:g}  {}'.format(calls, what))
        if not r.get('allocating_ops'):
            print('  none when run one op at a time on one thread: the net allocates on '
                  'worker threads that met an op for the first time')
    print('steady-state allocations per iteration: {}'.format(
        'NOT 0 in {} configuration(s)'.format(len(allocating)) if allocating
        else '0 in every configuration (target met)'))
    print('results: {}'.format(out))
    return 1 if allocating else 0
