#!/usr/bin/python3
"""Trains the reference CNN or MLP (docs/DESIGN.md section 8, --model; the
models are in fmnist_models.py) on Fashion-MNIST, the way
a Caffe2 user would, data-parallel on CPU devices: DBs of TensorProtos made
by tools/make_db, one shared DB reader, builder callbacks handed to
data_parallel_model.Parallelize_CPU (as Caffe2's resnet50_trainer does),
build_sgd; then device 0's minidb checkpoint, a loss curve, and a predict
net + init net that run_net scores on the test set.

    tools/python python_api/examples/fmnist_train.py [--epochs 3] [--devices 2]
        [--model cnn|mlp] [--workdir DIR]

Every device ("cpu_0/", "cpu_1/" ...) takes batch_size / devices images per
step from the one reader, so together they read each record once per epoch;
the gradients are summed by Allreduce (each device's loss is scaled by
1 / devices) and every replica applies the same update. SpatialBN
normalizes each device's own share of the batch (32 images on 2 devices),
Caffe2's default; --combine_spatial_bn pools the batch statistics across
devices instead. The running mean/variance kept for testing are device 0's.

Threads: each device gets --num_threads_per_device dag workers (default 1)
and each op the cores divided among all workers, so 2 devices run one op
per core and 1 device runs each op on both cores. On the 2-core machine
2 devices x 1 thread trained the CNN 1.6-1.9x faster than 1 device x 2
threads (tools/bench/fmnist_bench.sh), hence the default --devices 2.
--devices auto times a few steps of each split of the cores first
(doppio.auto_split: N devices x 1 thread, 1 device x N threads, 1 device x
N workers), prints the rates and trains with the fastest.

Everything it writes goes to --workdir: the DBs, checkpoint.minidb (device
0's blobs, "cpu_0/" names), predict_net.pb and init_net.pb (plain names:
data_uint8 in, softmax out), loss.png and summary.json (the numbers, for
scripts and tests).

Several processes: started by tools/launch.py (DOPPIO_WORLD_SIZE > 1), each
process is one shard of the run. It reads its own shard of the training DB
(CreateDB num_shards / shard_id: every world_size-th record), takes
batch_size / (shards x devices) images per device per step, and joins the
others through the launcher's store (Parallelize's rendezvous): gradients
are summed across every device of every shard. Shard 0 alone evaluates,
prints, checkpoints, exports and scores; the others train silently.
Unless --intra_op_threads says otherwise, each op gets the host's cores
divided among all the launcher's processes, devices and workers; with
--num_threads_per_device 2 a shard's allreduces overlap the rest of its
backward pass (tools/bench/README.md, fmnist_bench).

    tools/python tools/launch.py --nprocs 2 python_api/examples/fmnist_train.py \
        --devices 1 [--epochs 1]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from caffe2.python import (brew, core, data_parallel_model, model_helper, optimizer,
                           workspace)
from caffe2.python.predictor import mobile_exporter
from doppio import auto_split, distributed, net_pruning

# The data and the models live beside this script, which is imported as
# python_api.examples.fmnist_train or run with its folder on sys.path.
# Re-exported: tests and other examples reach them through this module.
if __package__:
    from .fmnist_data import make_db, read_idx, record_count, tool  # noqa: F401
    from .fmnist_models import (MODELS, PIXEL_MEAN, PIXEL_STD, add_loss_and_accuracy,  # noqa: F401
                                add_preprocessing, add_reference_classifier,
                                add_reference_cnn, add_reference_conv_tower,
                                add_reference_mlp, uniform_init)
else:
    from fmnist_data import make_db, read_idx, record_count, tool  # noqa: F401
    from fmnist_models import (MODELS, PIXEL_MEAN, PIXEL_STD, add_loss_and_accuracy,  # noqa: F401
                               add_preprocessing, add_reference_classifier,
                               add_reference_cnn, add_reference_conv_tower,
                               add_reference_mlp, uniform_init)
DEFAULT_DATA_DIR = '/usr/share/datasets/fashion-mnist'
# Blob prefix of the replica whose params are tested, saved and exported.
DEVICE0 = 'cpu_0/'
# A shard waits for shard 0 at the first allreduce of every epoch while
# shard 0 evaluates (and at the rendezvous while it builds the test DB), so
# the cross-process limit is minutes, not the default 30 s.
SHARD_TIMEOUT_MS = 600000
# --devices auto: warm-up and timed steps per candidate split and round.
AUTO = 'auto'
AUTO_WARMUP_STEPS = 10
AUTO_TIMED_STEPS = 20
AUTO_MIN_SECONDS = 0.25
# Rounds alternate the candidates; each one's best round counts, so a burst
# of load from other processes (this machine is shared) rarely decides.
AUTO_ROUNDS = 3
REPO_ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                          '..', '..'))


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--epochs', type=int, default=3)
    parser.add_argument('--model', default='cnn', choices=sorted(MODELS),
                        help='the reference CNN or the reference MLP (FC 784-256-128-10)')
    parser.add_argument('--batch_size', type=int, default=64,
                        help='global batch: the devices share it equally')
    parser.add_argument('--devices', type=devices_arg, default=2,
                        help='CPU devices (replicas) to train on, or "auto": time a few '
                        'steps of each way to split the cores (devices, intra-op threads, '
                        'workers; doppio.auto_split) and train with the fastest')
    parser.add_argument('--combine_spatial_bn', action='store_true',
                        help='SpatialBN statistics over all devices\' images, as on one '
                        'device (default: per device, as Caffe2)')
    parser.add_argument('--num_threads_per_device', type=int, default=1,
                        help='dag executor workers per device (ops of one device that may '
                        'run at once)')
    parser.add_argument('--intra_op_threads', type=int, default=0,
                        help='threads each op may use (0: the cores divided among all '
                        'workers)')
    parser.add_argument('--bucket_cap_mb', type=float, default=25,
                        help='with several processes: gradients cross them in buckets of '
                             'about this many MiB (0: one allreduce per gradient)')
    parser.add_argument('--test_batch_size', type=int, default=100)
    parser.add_argument('--base_lr', type=float, default=0.05)
    parser.add_argument('--momentum', type=float, default=0.9)
    parser.add_argument('--lr_decay_epochs', type=int, default=2,
                        help='multiply the learning rate by --lr_gamma every N epochs '
                        '(0: constant learning rate)')
    parser.add_argument('--lr_gamma', type=float, default=0.1)
    parser.add_argument('--data_dir', default=DEFAULT_DATA_DIR,
                        help='folder with the four Fashion-MNIST IDX files (.gz)')
    parser.add_argument('--workdir', default=os.path.join(os.getcwd(), 'fmnist_run'))
    parser.add_argument('--db_type', default='lmdb', choices=['lmdb', 'minidb'])
    parser.add_argument('--train_limit', type=int, default=-1,
                        help='use only the first N training images (-1: all)')
    parser.add_argument('--test_limit', type=int, default=-1,
                        help='use only the first N test images (-1: all)')
    parser.add_argument('--tools_dir', default=os.environ.get(
        'DOPPIO_TOOLS_DIR', os.path.join(REPO_ROOT, 'bazel-bin', 'tools')),
        help='where the make_db and run_net binaries are')
    parser.add_argument('--plot', default='',
                        help='PNG for the loss and test-accuracy curves '
                             '(default: WORKDIR/loss.png; "none": no plot)')
    parser.add_argument('--no_progress', action='store_true',
                        help='no progress bars (one line per epoch instead)')
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--precision', default='fp32', choices=['fp32', 'bf16', 'fp16'],
                        help='mixed precision: convolutions and FCs in bfloat16 or float16, '
                             'float32 master weights (Parallelize precision=)')
    parser.add_argument('--loss_scale', default='auto', choices=['auto', 'dynamic', 'none'],
                        help='dynamic loss scaling (auto: on for fp16)')
    parser.add_argument('--checkpoint_every_shard', action='store_true',
                        help='several processes: shards other than 0 also save their '
                        'replica as checkpoint_shard<N>.minidb (to compare the replicas)')
    args = parser.parse_args(argv)
    args.shard_id, args.num_shards = shard_from_env()
    args.auto_split = None
    if args.epochs < 1 or args.batch_size < 1 or args.test_batch_size < 1:
        parser.error('--epochs, --batch_size and --test_batch_size must be positive')
    if args.devices == AUTO:
        if args.num_shards > 1:
            parser.error('--devices auto picks a split within one process; with several '
                         'processes give --devices N')
        # Placeholders until choose_split() has measured.
        args.auto_split, args.devices = {}, 1
    if args.devices < 1 or args.num_threads_per_device < 1 or args.intra_op_threads < 0:
        parser.error('--devices and --num_threads_per_device must be positive, '
                     '--intra_op_threads >= 0')
    if args.batch_size % (args.devices * args.num_shards):
        parser.error('--batch_size {} must be a multiple of --devices {} x {} process(es)'
                     .format(args.batch_size, args.devices, args.num_shards))
    if args.shard_id > 0:
        args.no_progress = True
    return args


def devices_arg(text):
    if text == AUTO:
        return AUTO
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError('expected a number of devices or "auto", got {!r}'
                                         .format(text))


def shard_from_env():
    """(shard id, number of shards): (rank, world size) under tools/launch.py,
    (0, 1) when run by itself."""
    if int(os.environ.get(distributed.WORLD_SIZE_ENV) or '1') <= 1:
        return 0, 1
    try:
        return distributed.rank(), distributed.world_size()
    except RuntimeError as e:
        raise SystemExit('fmnist_train: {}'.format(e))


def log(args, *what, **kwargs):
    """Prints on shard 0 only: the other shards train silently."""
    if args.shard_id == 0:
        print(*what, **kwargs)


def shard_records(args, train_count):
    """How many training records this shard's reader walks over: every
    num_shards-th one, starting at shard_id."""
    return (train_count - args.shard_id + args.num_shards - 1) // args.num_shards


def build_train_model(args, train_db, train_count, shuffle_buffer=None):
    """The training model, parallelized: per-device blobs are "cpu_<d>/...".
    `shuffle_buffer` (records per device) overrides the default, the
    shard's records divided among the devices."""
    train = model_helper.ModelHelper(name='fmnist_train')
    # Made before Parallelize, so one reader (a shared, unprefixed blob)
    # serves every device of this shard: each of the shard's records goes to
    # exactly one of them.
    reader = train.param_init_net.CreateDB([], 'dbreader_' + train_db, db=train_db,
                                           db_type=args.db_type, num_shards=args.num_shards,
                                           shard_id=args.shard_id)
    per_device_batch = args.batch_size // (args.devices * args.num_shards)
    if shuffle_buffer is None:
        shuffle_buffer = max(1, shard_records(args, train_count) // args.devices)

    def add_input(model):
        model.param_init_net.ConstantFill([], 'pixel_shift', shape=[1],
                                          value=-PIXEL_MEAN / PIXEL_STD)
        # Together the devices' shuffle buffers hold the whole training set
        # and so mix every epoch, as the PyTorch peer's per-epoch permutation
        # does (fixed order costs ~4 points of test accuracy here).
        data_uint8, _ = model.net.TensorProtosDBInput(
            [reader], ['data_uint8', 'label'], batch_size=per_device_batch,
            shuffle_buffer=shuffle_buffer, shuffle_seed=args.seed + args.shard_id)
        add_preprocessing(model, data_uint8)

    def add_forward(model, loss_scale):
        softmax = MODELS[args.model](model, 'data', is_test=0)
        loss = add_loss_and_accuracy(model, softmax, 'label')
        # Allreduce sums the devices' gradients: scaled, the sum is the
        # gradient of the mean loss over the global batch (Parallelize's
        # loss_scale counts the devices of every shard).
        return [model.net.Scale(loss, 'scaled_loss', scale=loss_scale)]

    def add_optimizer(model):
        # Plain momentum SGD (not Caffe2's default Nesterov), as in the
        # PyTorch peer; the step decay applies after whole epochs (the
        # iteration counter is shared, one tick per global step).
        if args.lr_decay_epochs > 0:
            stepsize = args.lr_decay_epochs * (train_count // args.batch_size)
            schedule = dict(policy='step', stepsize=stepsize, gamma=args.lr_gamma)
        else:
            schedule = dict(policy='fixed')
        return optimizer.build_sgd(model, base_learning_rate=args.base_lr,
                                   momentum=args.momentum, nesterov=False, **schedule)

    data_parallel_model.Parallelize_CPU(
        train, input_builder_fun=add_input, forward_pass_builder_fun=add_forward,
        optimizer_builder_fun=add_optimizer, devices=list(range(args.devices)),
        rendezvous=rendezvous(args), num_threads_per_device=args.num_threads_per_device,
        combine_spatial_bn=args.combine_spatial_bn, precision=args.precision,
        dynamic_loss_scale={'auto': None, 'dynamic': True, 'none': False}[args.loss_scale])
    configure_threads(args, train.net.Proto())
    # The MLP's first FCGradient would also compute data's gradient, which
    # nothing reads (data comes through StopGradient).
    net_pruning.prune_unread_gradient_outputs(train.net.Proto())
    # Seeds every random fill of the init net (the replicas' fills are
    # replaced by device 0's values, broadcast at the end of the init net).
    for op in train.param_init_net.Proto().op:
        op.device_option.random_seed = args.seed
    return train


def rendezvous(args):
    """None for one process; else Parallelize's rendezvous through the store
    tools/launch.py named, whose handler blob is created here and now."""
    if args.num_shards == 1:
        return None
    try:
        handler = distributed.store_handler_from_env()
    except RuntimeError as e:
        raise SystemExit('fmnist_train: {}'.format(e))
    return dict(kv_handler=handler, shard_id=args.shard_id, num_shards=args.num_shards,
                engine='GLOO', transport='tcp', interface='lo', exit_nets=None,
                timeout_ms=SHARD_TIMEOUT_MS, bucket_cap_mb=args.bucket_cap_mb)


def set_net_arg(net_proto, name, value):
    for arg in net_proto.arg:
        if arg.name == name:
            arg.i = value
            return
    net_proto.arg.add(name=name, i=value)


def configure_threads(args, net_proto):
    """The dag executor runs num_threads_per_device workers per device and
    gives each op the cores divided among all workers unless
    "intra_op_threads" says otherwise. So 2 devices x 1 worker run one op
    per core, and 1 device x 1 worker runs each op on both cores."""
    threads = args.intra_op_threads
    if threads == 0 and args.num_shards > 1:
        # The executor divides the cores among this process's workers only;
        # the launcher's other processes on this host share those cores too.
        local_processes = int(os.environ.get('LOCAL_WORLD_SIZE') or args.num_shards)
        threads = max(1, (os.cpu_count() or 1) //
                      (local_processes * args.devices * args.num_threads_per_device))
    if threads > 0:
        set_net_arg(net_proto, 'intra_op_threads', threads)


def choose_split(args, train_db, train_count):
    """--devices auto: builds the training model for each candidate split of
    the cores (doppio.auto_split), times a few steps of each in a scratch
    workspace, and sets args.devices, num_threads_per_device and
    intra_op_threads to the fastest. Not part of the timed epochs."""
    splits = auto_split.candidate_splits(os.cpu_count() or 1, args.batch_size)

    def measure(split):
        trial = argparse.Namespace(**vars(args))
        trial.devices, trial.num_threads_per_device, trial.intra_op_threads = split
        workspace.SwitchWorkspace('fmnist_auto_split', True)
        try:
            # A small shuffle buffer: filling the full one would cost more
            # than the steps being timed.
            model = build_train_model(trial, train_db, train_count,
                                      shuffle_buffer=4 * args.batch_size)
            data_parallel_model.RunInitNet(model)
            name = model.net.Proto().name
            steps, seconds = auto_split.time_steps(
                lambda: workspace.RunNet(name), steps=AUTO_TIMED_STEPS,
                warmup=AUTO_WARMUP_STEPS, min_seconds=AUTO_MIN_SECONDS)
            return steps * args.batch_size / seconds
        finally:
            # Closes the trial's DB reader before the next one opens the DB.
            workspace.ResetWorkspace()
            workspace.SwitchWorkspace('default')

    best, rates = auto_split.pick_split(splits, measure, rounds=AUTO_ROUNDS)
    log(args, auto_split.describe(best, rates), flush=True)
    args.devices, args.num_threads_per_device, args.intra_op_threads = best
    args.auto_split = dict(picked=auto_split.split_name(best),
                           img_per_s={auto_split.split_name(split): [round(r) for r in values]
                                      for split, values in rates.items()})


def build_eval_models(args, test_db):
    """The test and deploy models read device 0's trained blobs: built under
    NameScope('cpu_0'), their blob names are the training replica's."""
    with core.NameScope(DEVICE0.rstrip('/')):
        test = model_helper.ModelHelper(name='fmnist_test', init_params=False)
        data_uint8, label = brew.db_input(test, ['data_uint8', 'label'],
                                          batch_size=args.test_batch_size, db=test_db,
                                          db_type=args.db_type)
        softmax = MODELS[args.model](test, add_preprocessing(test, data_uint8), is_test=1)
        add_loss_and_accuracy(test, softmax, label)

        deploy = model_helper.ModelHelper(name='fmnist_deploy', init_params=False)
        MODELS[args.model](deploy, add_preprocessing(deploy, 'data_uint8'), is_test=1)
    return test, deploy


# ---- running ----

def progress_bar(iterable, enabled, **kwargs):
    if enabled:
        try:
            from tqdm import tqdm
            return tqdm(iterable, **kwargs)
        except ImportError:
            pass
    return None


# Non-finite losses in a row that end a float16 run with loss scaling.
MAX_SKIPPED_IN_A_ROW = 20


def train_one_epoch(args, train, epoch, iters, losses):
    """One pass over the data; `losses` gets each step's loss, the mean of
    the devices' (unscaled) losses, i.e. the global batch's mean."""
    loss_blobs = ['cpu_{}/loss'.format(d) for d in data_parallel_model.GetDevices(train)]
    bar = progress_bar(range(iters), not args.no_progress, unit='batch',
                       desc='epoch {}/{}'.format(epoch + 1, args.epochs))
    # With a loss scale, a float16 overflow skips its step: only a run of
    # them means training diverged.
    tolerated = MAX_SKIPPED_IN_A_ROW if data_parallel_model.LossScaleState(train) else 1
    start = time.perf_counter()
    for i in range(iters):
        data_parallel_model.RunNet(train, 1)
        losses.append(float(np.mean([workspace.FetchBlob(b) for b in loss_blobs])))
        if not np.isfinite(losses[-tolerated:]).any():
            raise SystemExit('fmnist_train: loss is {} at epoch {} iteration {}'.format(
                losses[-1], epoch + 1, i))
        if bar is not None:
            bar.update(1)
            if i % 10 == 0 or i == iters - 1:
                elapsed = time.perf_counter() - start
                bar.set_postfix(loss='{:.4f}'.format(np.mean(losses[-10:])),
                                img_s='{:.0f}'.format((i + 1) * args.batch_size / elapsed),
                                **loss_scale_postfix(train))
    if bar is not None:
        bar.close()
    return time.perf_counter() - start


def loss_scale_postfix(train):
    """The loss scale and the steps it skipped, for the progress bar, when
    the model scales its loss."""
    state = data_parallel_model.LossScaleState(train).get(DEVICE0)
    if state is None:
        return {}
    return dict(scale='{:g}'.format(state['scale']), skipped=state['skipped_steps'])


def evaluate(test, iters):
    correct = 0.0
    for _ in range(iters):
        workspace.RunNet(test.net.Proto().name)
        correct += float(workspace.FetchBlob(DEVICE0 + 'accuracy'))
    return correct / iters


def save_checkpoint(train, path):
    """Device 0's params, BN statistics, momentum and pixel_shift, and the
    shared iteration counter (GetCheckpointParams; not the DB reader)."""
    blobs = sorted(str(b) for b in data_parallel_model.GetCheckpointParams(train))
    workspace.RunOperatorOnce(core.CreateOperator(
        'Save', blobs, [], db=path, db_type='minidb', absolute_path=1))
    return blobs


def strip_prefix(net_proto, prefix):
    """Renames every blob `prefix + name` of a NetDef to `name`."""
    def plain(name):
        return name[len(prefix):] if name.startswith(prefix) else name
    for op in net_proto.op:
        op.input[:] = [plain(b) for b in op.input]
        op.output[:] = [plain(b) for b in op.output]
    for field in (net_proto.external_input, net_proto.external_output):
        field[:] = [plain(b) for b in field]


def export_and_score(args, deploy, x_test, y_test):
    """Writes predict_net.pb + init_net.pb from device 0's params, under
    plain names for serving, and scores them with run_net on the raw test
    images; returns run_net's accuracy."""
    params = [str(p) for p in deploy.GetParams()] + \
        [str(p) for p in deploy.GetComputedParams()] + [DEVICE0 + 'pixel_shift']
    init_net, predict_net = mobile_exporter.Export(workspace, deploy.net, params)
    del predict_net.external_output[:]
    predict_net.external_output.extend([DEVICE0 + 'softmax'])
    strip_prefix(init_net, DEVICE0)
    strip_prefix(predict_net, DEVICE0)
    init_path = os.path.join(args.workdir, 'init_net.pb')
    predict_path = os.path.join(args.workdir, 'predict_net.pb')
    with open(init_path, 'wb') as f:
        f.write(init_net.SerializeToString())
    with open(predict_path, 'wb') as f:
        f.write(predict_net.SerializeToString())
    with tempfile.TemporaryDirectory() as scratch:
        images = os.path.join(scratch, 'images.npy')
        probs = os.path.join(scratch, 'softmax.npy')
        np.save(images, x_test)
        subprocess.run([tool(args, 'run_net'), '--init_net', init_path,
                        '--net', predict_path, '--input', 'data_uint8=' + images,
                        '--output', 'softmax=' + probs], check=True,
                       stdout=subprocess.DEVNULL)
        prediction = np.load(probs).argmax(axis=1)
    return float(np.mean(prediction == y_test))


def plot_losses(path, losses, iters_per_epoch, accuracies, devices, model_name):
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 4.5))
    steps = np.arange(1, len(losses) + 1)
    ax.plot(steps, losses, color='0.75', linewidth=0.6, label='loss per batch')
    window = min(50, len(losses))
    smooth = np.convolve(losses, np.ones(window) / window, mode='valid')
    ax.plot(steps[window - 1:], smooth, color='C0', label='mean of {}'.format(window))
    ax.set_xlabel('iteration (batch)')
    ax.set_ylabel('cross-entropy loss')
    ax.set_yscale('log')
    twin = ax.twinx()
    twin.plot([iters_per_epoch * (e + 1) for e in range(len(accuracies))], accuracies,
              'o-', color='C3', label='test accuracy')
    twin.set_ylabel('test accuracy')
    lines = ax.get_legend_handles_labels()
    more = twin.get_legend_handles_labels()
    ax.legend(lines[0] + more[0], lines[1] + more[1], loc='center right')
    ax.set_title('Doppio: reference {} on Fashion-MNIST, {} device(s)'.format(
        model_name.upper(), devices))
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    os.makedirs(args.workdir, exist_ok=True)
    workspace.ResetWorkspace()
    workspace.GlobalInit(['fmnist_train', '--caffe2_log_level=1'])

    start = time.perf_counter()
    train_db, train_count = make_db(args, 'train', args.train_limit)
    if args.shard_id == 0:
        test_db, test_count = make_db(args, 'test', args.test_limit)
    else:
        test_db, test_count = None, record_count(args, 'test', args.test_limit)
    log(args, 'data: {} training and {} test images in {} DBs ({:.1f} s)'.format(
        train_count, test_count, args.db_type, time.perf_counter() - start))
    # Every shard checks, so a bad argument stops them all alike.
    if train_count < args.batch_size:
        raise SystemExit('fmnist_train: {} training images are fewer than one batch'
                         .format(train_count))
    if test_count % args.test_batch_size:
        raise SystemExit('fmnist_train: --test_batch_size {} must divide the {} test '
                         'images'.format(args.test_batch_size, test_count))

    if args.auto_split is not None:
        choose_split(args, train_db, train_count)
    train = build_train_model(args, train_db, train_count)
    test = deploy = None
    if args.shard_id == 0:
        test, deploy = build_eval_models(args, test_db)
    data_parallel_model.RunInitNet(train)
    if test is not None:
        workspace.RunNetOnce(test.param_init_net)
        workspace.CreateNet(test.net, overwrite=True)
    log(args, 'training on {} process(es) x {} CPU device(s), {} image(s) each per step; '
        '{}'.format(
            args.num_shards, args.devices, args.batch_size // (args.devices * args.num_shards),
            data_parallel_model.ExecutionPlan(train)['text']), flush=True)

    # The same on every shard: each step is one global batch.
    iters = train_count // args.batch_size
    test_iters = test_count // args.test_batch_size
    losses, accuracies, epochs = [], [], []
    for epoch in range(args.epochs):
        seconds = train_one_epoch(args, train, epoch, iters, losses)
        if test is None:
            continue
        accuracies.append(evaluate(test, test_iters))
        epochs.append(dict(epoch=epoch + 1, seconds=round(seconds, 4),
                           img_per_s=round(iters * args.batch_size / seconds),
                           train_loss=round(float(np.mean(losses[-iters:])), 4),
                           test_acc=round(accuracies[-1], 4)))
        print('epoch {}: loss {train_loss:.4f}, {img_per_s} images/s, '
              'test accuracy {test_acc:.4f}'.format(epoch + 1, **epochs[-1]), flush=True)

    if args.shard_id > 0:
        if args.checkpoint_every_shard:
            save_checkpoint(train, os.path.join(
                args.workdir, 'checkpoint_shard{}.minidb'.format(args.shard_id)))
        return None
    return finish(args, train, deploy, losses, accuracies, epochs,
                  dict(train_images=train_count, test_images=test_count, iters=iters))


def finish(args, train, deploy, losses, accuracies, epochs, counts):
    """Shard 0's output: checkpoint, loss curve, export, run_net's score and
    summary.json."""
    checkpoint = os.path.join(args.workdir, 'checkpoint.minidb')
    saved = save_checkpoint(train, checkpoint)
    plot_path = args.plot or os.path.join(args.workdir, 'loss.png')
    if plot_path == 'none':
        plot_path = '(none)'
    else:
        plot_losses(plot_path, losses, counts['iters'], accuracies, args.devices, args.model)
    x_test, y_test = read_idx(args, 'test', args.test_limit)
    served_accuracy = export_and_score(args, deploy, x_test, y_test)
    print('checkpoint: {} ({} blobs); loss curve: {}'.format(checkpoint, len(saved),
                                                              plot_path))
    print('run_net on predict_net.pb + init_net.pb: test accuracy {:.4f} '
          '(in training: {:.4f})'.format(served_accuracy, accuracies[-1]))
    summary = dict(epochs=epochs, final_test_accuracy=accuracies[-1],
                   run_net_test_accuracy=served_accuracy, losses=losses,
                   checkpoint=checkpoint, checkpoint_blobs=saved,
                   train_images=counts['train_images'], test_images=counts['test_images'],
                   model=args.model, devices=args.devices, processes=args.num_shards,
                   batch_size=args.batch_size,
                   num_threads_per_device=args.num_threads_per_device,
                   intra_op_threads=args.intra_op_threads, auto_split=args.auto_split,
                   precision=args.precision,
                   loss_scale=data_parallel_model.LossScaleState(train).get(DEVICE0))
    with open(os.path.join(args.workdir, 'summary.json'), 'w') as f:
        json.dump(summary, f, indent=1)
    return summary


if __name__ == '__main__':
    main()
