#!/usr/bin/python3
"""Data-parallel ResNet-50 training written against Caffe2's Python API
only (`caffe2.python.*`), the API surface Caffe2's examples/
resnet50_trainer.py uses: dyndep, ModelHelper with an arg scope,
brew.arg_scope with Initializer classes, models.resnet, add_weight_decay +
build_multi_precision_sgd, data_parallel_model.Parallelize with a
post-sync builder, OptimizeGradientMemory, file or Redis rendezvous,
timeout_guard, experiment_util, and a predictor export per epoch that
--load_model_path resumes from. It is Doppio's own program (no Caffe2 code),
run by tests/examples/resnet_trainer_test.py; Caffe2's script itself runs
unchanged too (docs/coming_from.md).

    tools/python python_api/examples/resnet_trainer.py --devices 2 \\
        --image_size 32 --batch_size 8 --epoch_size 32 --num_epochs 1 \\
        --workdir /tmp/resnet [--load_model_path /tmp/resnet/resnet_1.mdl]
        [--num_shards 2 --shard_id K --run_id ID [--redis_host H --redis_port P]]

Input: `--train_data null` (Caffe2's synthetic input: each step every
device draws a Gaussian image batch, with a constant label), or a DB of
JPEG images read by ImageInput through brew.image_input, one reader shared
by the devices (and sharded across processes), e.g. Fashion-MNIST as Caffe
Datums made by `tools/make_db --record_format jpeg_datum`.
"""
import argparse
import logging
import os
import time

from caffe2.proto import caffe2_pb2
from caffe2.python import (brew, core, data_parallel_model, dyndep, experiment_util,
                           model_helper, optimizer, timeout_guard, workspace)
from caffe2.python.models import resnet
from caffe2.python.modeling.initializers import Initializer, PseudoFP16Initializer
from caffe2.python.predictor import predictor_exporter
from caffe2.python.predictor import predictor_py_utils
from caffe2.python.predictor_constants import predictor_constants

log = logging.getLogger('resnet_trainer')

for _library in ('@/caffe2/caffe2/distributed:file_store_handler_ops',
                 '@/caffe2/caffe2/distributed:redis_store_handler_ops'):
    dyndep.InitOpsLibrary(_library)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--devices', type=int, default=2, help='CPU devices per process')
    parser.add_argument('--train_data', type=str, default='null',
                        help="a DB of images for ImageInput, or 'null' for synthetic input")
    parser.add_argument('--db_type', type=str, default='lmdb')
    parser.add_argument('--use_caffe_datum', type=int, default=1,
                        help='1: the DB holds Caffe Datums; 0: TensorProtos')
    parser.add_argument('--scale', type=int, default=None,
                        help='ImageInput scale (shorter side); default image_size')
    parser.add_argument('--image_size', type=int, default=32)
    parser.add_argument('--num_labels', type=int, default=10)
    parser.add_argument('--label', type=int, default=1, help='the synthetic label')
    parser.add_argument('--batch_size', type=int, default=8, help='per process, all devices')
    parser.add_argument('--epoch_size', type=int, default=32, help='images per epoch, all shards')
    parser.add_argument('--num_epochs', type=int, default=1)
    parser.add_argument('--dtype', default='float', choices=['float', 'float16'],
                        help="float16: Caffe2's float16 training (float16 params with "
                             "float32 masters, float16 data)")
    parser.add_argument('--float16_compute', action='store_true',
                        help='float16 FC compute and build_fp16_sgd (with --dtype float16)')
    parser.add_argument('--base_learning_rate', type=float, default=0.01)
    parser.add_argument('--weight_decay', type=float, default=1e-4)
    parser.add_argument('--num_shards', type=int, default=1)
    parser.add_argument('--shard_id', type=int, default=0)
    parser.add_argument('--run_id', type=str, default='resnet')
    parser.add_argument('--redis_host', type=str)
    parser.add_argument('--redis_port', type=int, default=6379)
    parser.add_argument('--workdir', type=str, required=True,
                        help='rendezvous files, models and the experiment log')
    parser.add_argument('--save_model_name', type=str, default='resnet')
    parser.add_argument('--load_model_path', type=str)
    return parser.parse_args(argv)


def _rendezvous(args):
    """Caffe2's rendezvous dict over a store handler blob, or None."""
    if args.num_shards == 1:
        return None
    if args.redis_host is not None:
        store = core.CreateOperator('RedisStoreHandlerCreate', [], ['store_handler'],
                                    host=args.redis_host, port=args.redis_port,
                                    prefix=args.run_id)
    else:
        store = core.CreateOperator('FileStoreHandlerCreate', [], ['store_handler'],
                                    path=args.workdir, prefix=args.run_id)
    workspace.RunOperatorOnce(store)
    return dict(kv_handler='store_handler', shard_id=args.shard_id,
                num_shards=args.num_shards, engine='GLOO', transport='tcp',
                interface='', exit_nets=None)


def _input_builder(args, model):
    """Adds the per-device input ops (the reader, when there is one, is made
    here, once, and shared by every device)."""
    per_device = args.batch_size // args.devices
    float16 = args.dtype == 'float16'
    if args.train_data == 'null':
        def add_null_input(model):
            # A fresh batch every step, made by the net (so it is not a blob
            # of the checkpoint, which holds what param_init_net makes).
            model.net.GaussianFill([], 'data_fp32' if float16 else 'data',
                                   shape=[per_device, 3, args.image_size, args.image_size])
            if float16:
                model.net.FloatToHalf('data_fp32', 'data')
            model.net.ConstantFill([], 'label', shape=[per_device], value=args.label,
                                   dtype=core.DataType.INT32)
        return add_null_input
    reader = model.CreateDB('reader', db=args.train_data, db_type=args.db_type,
                            num_shards=args.num_shards, shard_id=args.shard_id)

    def add_image_input(model):
        data, _ = brew.image_input(
            model, reader, ['data', 'label'], batch_size=per_device, output_type=args.dtype,
            use_gpu_transform=False, use_caffe_datum=args.use_caffe_datum, mean=128.,
            std=128., scale=args.scale or args.image_size, crop=args.image_size, mirror=1,
            is_test=False)
        model.StopGradient(data, data)
    return add_image_input


def build_model(args):
    """The parallelized training model."""

    float16 = args.dtype == 'float16'

    def add_forward(model, loss_scale):
        initializer = PseudoFP16Initializer if float16 else Initializer
        with brew.arg_scope([brew.conv, brew.fc], WeightInitializer=initializer,
                            BiasInitializer=initializer, enable_tensor_core=False,
                            float16_compute=args.float16_compute):
            logits = resnet.create_resnet50(model, 'data', num_input_channels=3,
                                            num_labels=args.num_labels, no_bias=True,
                                            no_loss=True)
        if float16:
            logits = model.net.HalfToFloat(logits, logits + '_fp32')
        softmax, loss = model.SoftmaxWithLoss([logits, 'label'], ['softmax', 'loss'])
        brew.accuracy(model, [softmax, 'label'], 'accuracy')
        return [model.Scale(loss, scale=loss_scale)]

    def add_optimizer(model):
        if args.float16_compute:
            return optimizer.build_fp16_sgd(
                model, args.base_learning_rate, momentum=0.9, nesterov=1,
                weight_decay=args.weight_decay, policy='step', stepsize=1000, gamma=0.1)
        optimizer.add_weight_decay(model, args.weight_decay)
        return optimizer.build_multi_precision_sgd(
            model, args.base_learning_rate, momentum=0.9, nesterov=1, policy='step',
            stepsize=1000, gamma=0.1)

    def refresh_float32_copies(model):
        # After device 0's parameters reach every device: float32 masters
        # of float16 parameters (--dtype float16), as Caffe2's trainer.
        for info in model.GetOptimizationParamInfo(model.GetParams()):
            if info.blob_copy is not None:
                model.param_init_net.HalfToFloat(info.blob,
                                                 info.blob_copy[core.DataType.FLOAT])

    model = model_helper.ModelHelper(
        name='resnet50', arg_scope={'order': 'NCHW', 'use_cudnn': False})
    data_parallel_model.Parallelize(
        model, input_builder_fun=_input_builder(args, model), forward_pass_builder_fun=add_forward,
        optimizer_builder_fun=add_optimizer, post_sync_builder_fun=refresh_float32_copies,
        devices=list(range(args.devices)), rendezvous=_rendezvous(args),
        optimize_gradient_memory=False, cpu_device=True, num_threads_per_device=1)
    data_parallel_model.OptimizeGradientMemory(model, {}, set(), False)
    return model


def _prefix(model):
    return '{}_{}'.format(model._device_prefix, model._devices[0])


def save_model(args, model, epoch):
    prefix = _prefix(model)
    meta = predictor_exporter.PredictorExportMeta(
        predict_net=model.net.Proto(),
        parameters=data_parallel_model.GetCheckpointParams(model),
        inputs=[prefix + '/data'], outputs=[prefix + '/softmax'],
        shapes={prefix + '/softmax': (1, args.num_labels),
                prefix + '/data': (3, args.image_size, args.image_size)})
    path = model_path(args, epoch)
    predictor_exporter.save_to_db(db_type='minidb', db_destination=path,
                                  predictor_export_meta=meta)
    return path


def model_path(args, epoch):
    return os.path.join(args.workdir, '{}_{}.mdl'.format(args.save_model_name, epoch))


def load_model(path):
    """Device 0's blobs from an export; returns the epoch in its name."""
    meta_net_def = predictor_exporter.load_from_db(path, 'minidb')
    for kind in (predictor_constants.PREDICT_INIT_NET_TYPE,
                 predictor_constants.GLOBAL_INIT_NET_TYPE):
        net = core.Net(predictor_py_utils.GetNet(meta_net_def, kind))
        net.RunAllOnGPU()  # stays on the CPU where there is no GPU
        workspace.RunNetOnce(net)
    # The counter may have been saved from a GPU run: it lives on the host.
    iteration = workspace.FetchBlob('optimizer_iteration')
    workspace.FeedBlob('optimizer_iteration', iteration,
                       device_option=core.DeviceOption(caffe2_pb2.CPU, 0))
    return int(os.path.basename(path).rsplit('_', 1)[1][:-len('.mdl')])


def run_epoch(args, model, epoch, explog):
    iterations = args.epoch_size // (args.batch_size * args.num_shards)
    prefix = _prefix(model)
    for i in range(iterations):
        with timeout_guard.CompleteInTimeOrDie(600.0 if i == 0 else 120.0):
            started = time.time()
            workspace.RunNet(model.net.Proto().name)
            elapsed = time.time() - started
        log.info('epoch %d iteration %d/%d: %.1f images/s, loss %s', epoch, i + 1,
                 iterations, args.batch_size / elapsed,
                 workspace.FetchBlob(prefix + '/loss'))
    learning_rate = workspace.FetchBlob(
        data_parallel_model.GetLearningRateBlobNames(model)[0])
    explog.log(input_count=(epoch + 1) * iterations * args.batch_size,
               batch_count=(epoch + 1) * iterations,
               additional_values={'loss': float(workspace.FetchBlob(prefix + '/loss')),
                                  'accuracy': float(workspace.FetchBlob(prefix + '/accuracy')),
                                  'learning_rate': float(learning_rate), 'epoch': epoch})


def train(args):
    """Trains; returns the paths of the models saved (one per epoch)."""
    os.makedirs(args.workdir, exist_ok=True)
    model = build_model(args)
    workspace.RunNetOnce(model.param_init_net)
    workspace.CreateNet(model.net)
    epoch = 0
    if args.load_model_path is not None:
        epoch = load_model(args.load_model_path)
        data_parallel_model.FinalizeAfterCheckpoint(model)
    cwd = os.getcwd()
    os.chdir(args.workdir)  # ModelTrainerLog writes into the current directory
    try:
        explog = experiment_util.ModelTrainerLog('resnet50_cpu{}'.format(args.devices), args)
    finally:
        os.chdir(cwd)
    explog.filename = os.path.join(args.workdir, explog.filename)
    saved = []
    while epoch < args.num_epochs:
        run_epoch(args, model, epoch, explog)
        epoch += 1
        saved.append(save_model(args, model, epoch))
    return saved


if __name__ == '__main__':
    logging.basicConfig(level=logging.INFO)
    workspace.GlobalInit(['caffe2', '--caffe2_log_level=2'])
    train(parse_args())
