"""memory_bench.py --report_allocations: how often one steady-state training
iteration of the reference CNN and MLP (docs/DESIGN.md section 8; momentum SGD,
Parallelize_CPU with one dag worker per device as fmnist_train.py runs them,
built by python_api/examples/fmnist_parallel_training.py) calls the CPU
allocator, and with how many bytes (workspace.GetCPUAllocatorStats()).
Issue 13's target is 0 after the first iterations.

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
import sys
import tempfile

REPO_ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                          '..', '..'))
EXAMPLES = os.path.join(REPO_ROOT, 'python_api', 'examples')
RECORDS = 256


def training_builders():
    """fmnist_parallel_training, imported from the examples folder (the
    doppio package must be importable first, hence not at module level)."""
    if EXAMPLES not in sys.path:
        sys.path.insert(0, EXAMPLES)
    import fmnist_parallel_training
    return fmnist_parallel_training


def build(model_name, devices, use_memonger, source, db, batch, threads_per_device):
    """fmnist_train.py's training model on `devices` in a fresh workspace;
    returns the model and the per-iteration feed (a no-op for DB input)."""
    from doppio import workspace
    workspace.ResetWorkspace()
    return training_builders().build_parallel_training(
        model_name, devices, use_memonger, source, db, batch,
        threads_per_device=threads_per_device)


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
        training_builders().write_random_minidb(db, RECORDS)
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
