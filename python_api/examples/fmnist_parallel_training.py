"""fmnist_train.py's training model (uint8 pixels -> preprocessing ->
reference CNN or MLP -> loss, momentum SGD) under Parallelize_CPU, with its
input either read by TensorProtosDBInput from a minidb or fed per
iteration, and the minidb it reads. Shared by the steady-state allocation test and memory_bench's
--report_allocations, which count the allocator calls of its iterations.

Imported as python_api.examples.fmnist_parallel_training or with this
folder on sys.path, like fmnist_train.py.
"""
import struct

import numpy as np

from caffe2.proto import caffe2_pb2
from caffe2.python import data_parallel_model, model_helper, optimizer, workspace

if __package__:
    from .fmnist_models import MODELS, add_loss_and_accuracy, add_preprocessing
else:
    from fmnist_models import MODELS, add_loss_and_accuracy, add_preprocessing

# Init-net and fed-input seeds: fixed so that runs compare.
INIT_SEED = 7
FEED_SEED = 0


def write_random_minidb(path, records, seed=1):
    """`records` random Fashion-MNIST-shaped records (uint8 [1, 28, 28]
    image, int32 label) in the minidb format of core/db_minidb.cc: int32 key
    length, int32 value length (little endian), key, value. Pixel values do
    not change what a training iteration allocates."""
    rng = np.random.RandomState(seed)
    with open(path, 'wb') as f:
        for i in range(records):
            record = caffe2_pb2.TensorProtos()
            image = record.protos.add()
            image.data_type = caffe2_pb2.TensorProto.UINT8
            image.dims.extend([1, 28, 28])
            image.byte_data = rng.randint(0, 256, size=784).astype(np.uint8).tobytes()
            label = record.protos.add()
            label.data_type = caffe2_pb2.TensorProto.INT32
            label.int32_data.append(int(rng.randint(0, 10)))
            key = '{:08d}'.format(i).encode()
            value = record.SerializeToString()
            f.write(struct.pack('<ii', len(key), len(value)))
            f.write(key)
            f.write(value)


def build_parallel_training(model_name, devices, use_memonger, source, db, global_batch,
                            threads_per_device=1, name_prefix='alloc'):
    """Builds and initializes the training model on CPU `devices`; `source`
    is 'db' (the minidb at `db`) or 'fed'. Returns the model and the
    per-iteration feed, a no-op for DB input (FeedBlob makes a fresh tensor
    per call, so callers counting allocations call it outside RunNet)."""
    train = model_helper.ModelHelper(name='{}_{}_{}_{}_{}'.format(
        name_prefix, model_name, len(devices), int(use_memonger), source))
    per_device_batch = global_batch // len(devices)
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
        op.device_option.random_seed = INIT_SEED
    rng = np.random.RandomState(FEED_SEED)

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
