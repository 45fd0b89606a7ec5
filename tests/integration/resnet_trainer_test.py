"""python_api/examples/resnet_trainer.py, the program written against
Caffe2's API the way Caffe2's resnet50_trainer.py is: ResNet-50 trains on 2
CPU devices (replicas bit-identical, loss falling), its predictor export
holds device 0's checkpoint and resumes where it stopped, and 2 processes
rendezvous through a file store or a real redis-server to the same
parameters."""
import gzip
import io
import os
import subprocess
import sys
import uuid

import lmdb
from PIL import Image

import numpy as np
import pytest

import resnet_trainer
from caffe2.python import data_parallel_model, optimizer, workspace
from caffe2.python.predictor import predictor_exporter, predictor_py_utils
from caffe2.python.predictor_constants import predictor_constants
from doppio.proto import doppio_pb2
from redis_server import running_redis_server
from tool_paths import runfile

TRAINER = resnet_trainer.__file__
WALL_LIMIT_S = 300


@pytest.fixture(autouse=True)
def fresh_workspace():
    workspace.ResetWorkspace()
    optimizer.reset_optimizer_instance_count()
    yield
    workspace.ResetWorkspace()


def _args(workdir, *extra):
    return resnet_trainer.parse_args(['--workdir', str(workdir), '--devices', '2',
                                      '--image_size', '32', '--batch_size', '8',
                                      '--epoch_size', '32'] + list(extra))


def _saved_blobs(path):
    """{name: value} of every blob an export holds, loaded into a scratch
    workspace."""
    current = workspace.CurrentWorkspace()
    workspace.SwitchWorkspace('saved_' + uuid.uuid4().hex, True)
    try:
        meta = predictor_exporter.load_from_db(path, 'minidb')
        workspace.RunNetOnce(predictor_py_utils.GetNet(
            meta, predictor_constants.GLOBAL_INIT_NET_TYPE))
        names = predictor_py_utils.GetBlobs(meta, predictor_constants.PARAMETERS_BLOB_TYPE)
        return {name: workspace.FetchBlob(name) for name in names}
    finally:
        workspace.SwitchWorkspace(current)


def test_trains_saves_and_resumes(tmp_path):
    args = _args(tmp_path, '--num_epochs', '1')
    model = resnet_trainer.build_model(args)
    workspace.RunNetOnce(model.param_init_net)
    workspace.CreateNet(model.net)
    losses = []
    for _ in range(4):
        workspace.RunNet(model.net.Proto().name)
        losses.append(float(workspace.FetchBlob('cpu_0/loss')))
    assert losses[-1] < losses[0] and all(np.isfinite(losses))
    for param in model.GetParams('cpu_0/'):
        name = data_parallel_model.stripBlobName(param)
        np.testing.assert_array_equal(workspace.FetchBlob('cpu_1/' + name),
                                      workspace.FetchBlob(str(param)), err_msg=name)
    path = resnet_trainer.save_model(args, model, 1)
    saved = _saved_blobs(path)
    checkpoint = set(str(b) for b in data_parallel_model.GetCheckpointParams(model))
    assert set(saved) == checkpoint
    assert 'cpu_0/conv1_w_momentum' in saved and saved['optimizer_iteration'].tolist() == [4]
    assert not any(name.startswith('cpu_1/') for name in saved)

    # A new run from the export: device 0's blobs come back, and
    # FinalizeAfterCheckpoint hands them to device 1.
    workspace.ResetWorkspace()
    optimizer.reset_optimizer_instance_count()
    resumed = resnet_trainer.build_model(args)
    workspace.RunNetOnce(resumed.param_init_net)
    workspace.CreateNet(resumed.net)
    assert resnet_trainer.load_model(path) == 1
    data_parallel_model.FinalizeAfterCheckpoint(resumed)
    for name, value in saved.items():
        np.testing.assert_array_equal(workspace.FetchBlob(name), value, err_msg=name)
        if name.startswith('cpu_0/'):
            np.testing.assert_array_equal(workspace.FetchBlob('cpu_1/' + name[6:]), value,
                                          err_msg=name)
    workspace.RunNet(resumed.net.Proto().name)
    assert workspace.FetchBlob('optimizer_iteration').tolist() == [5]


@pytest.mark.parametrize('float16_compute', [False, True])
def test_float16_training_as_caffe2s_trainer(tmp_path, float16_compute):
    """--dtype float16 [--float16_compute]: float16 params with float32
    masters (PseudoFP16Initializer), float16 data, the logits cast to float32
    for the loss; build_multi_precision_sgd or build_fp16_sgd."""
    extra = ['--dtype', 'float16'] + (['--float16_compute'] if float16_compute else [])
    args = _args(tmp_path, '--num_epochs', '1', *extra)
    model = resnet_trainer.build_model(args)
    ops = [op.type for op in model.net.Proto().op]
    update = 'FP16MomentumSGDUpdate' if float16_compute else 'MomentumSGDUpdate'
    assert update in ops and 'HalfToFloat' in ops
    workspace.RunNetOnce(model.param_init_net)
    workspace.CreateNet(model.net)
    before = workspace.FetchBlob('cpu_0/conv1_w').copy()
    losses = []
    for _ in range(3):
        workspace.RunNet(model.net.Proto().name)
        losses.append(float(workspace.FetchBlob('cpu_0/loss')))
    assert all(np.isfinite(losses)), losses
    w = workspace.FetchBlob('cpu_0/conv1_w')
    assert w.dtype == np.float16 and workspace.FetchBlob('cpu_0/data').dtype == np.float16
    assert not np.array_equal(w, before)
    if not float16_compute:
        # The float16 param is its float32 master rounded.
        np.testing.assert_array_equal(w, workspace.FetchBlob('cpu_0/conv1_w_fp32').astype(
            np.float16))
    # SpatialBN keeps float32 scale and statistics next to float16 data.
    assert workspace.FetchBlob('cpu_0/conv1_spatbn_relu_s').dtype == np.float32
    for param in model.GetParams('cpu_0/'):
        name = data_parallel_model.stripBlobName(param)
        np.testing.assert_array_equal(workspace.FetchBlob('cpu_1/' + name),
                                      workspace.FetchBlob(str(param)), err_msg=name)


def test_main_loop_writes_one_export_per_epoch(tmp_path):
    saved = resnet_trainer.train(_args(tmp_path, '--num_epochs', '2'))
    assert [os.path.basename(p) for p in saved] == ['resnet_1.mdl', 'resnet_2.mdl']
    logs = [f for f in os.listdir(str(tmp_path)) if f.endswith('.log')]
    assert len(logs) == 1
    rows = (tmp_path / logs[0]).read_text().splitlines()
    assert rows[0].startswith('# Namespace(') and len(rows) == 4  # args, header, 2 epochs
    assert _saved_blobs(saved[1])['optimizer_iteration'].tolist() == [8]


FASHION = '/usr/share/datasets/fashion-mnist'


def _fashion_labels(count):
    """The first `count` training labels, read from the IDX file itself."""
    with gzip.open(os.path.join(FASHION, 'train-labels-idx1-ubyte.gz')) as f:
        return np.frombuffer(f.read(), np.uint8)[8:8 + count]


def test_trains_on_an_lmdb_of_jpeg_datums(tmp_path):
    db = str(tmp_path / 'fashion_jpeg.lmdb')
    subprocess.run([runfile('tools/make_db'), '--db', 'lmdb', '--record_format', 'jpeg_datum',
                    '--data_limit', '64', '--output_file', db,
                    '--image_file', os.path.join(FASHION, 'train-images-idx3-ubyte.gz'),
                    '--label_file', os.path.join(FASHION, 'train-labels-idx1-ubyte.gz')],
                   check=True, capture_output=True)
    args = resnet_trainer.parse_args(['--workdir', str(tmp_path), '--devices', '1',
                                      '--image_size', '28', '--batch_size', '4',
                                      '--train_data', db])
    model = resnet_trainer.build_model(args)
    assert 'ImageInput' in [op.type for op in model.net.Proto().op]
    workspace.RunNetOnce(model.param_init_net)
    workspace.CreateNet(model.net)
    workspace.RunNet(model.net.Proto().name)
    # The first batch is the DB's first four records, decoded independently.
    np.testing.assert_array_equal(workspace.FetchBlob('cpu_0/label'), _fashion_labels(4))
    data = workspace.FetchBlob('cpu_0/data')
    assert data.shape == (4, 3, 28, 28) and np.isfinite(workspace.FetchBlob('cpu_0/loss'))
    env = lmdb.open(db, readonly=True)
    with env.begin() as txn:
        datums = [doppio_pb2.Datum.FromString(value) for _, value in txn.cursor()][:4]
    for image, datum in zip(data, datums):
        gray = np.asarray(Image.open(io.BytesIO(datum.data)).convert('L'), np.float32)
        want = (gray - 128.0) / 128.0
        # Every channel is the gray image, mirrored or not (mirror=1).
        assert any(np.abs(image[c] - w).max() <= 1.0 / 128 for c in range(3)
                   for w in (want, want[:, ::-1]))


def _two_shards(tmp_path, extra):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    processes = []
    run_id = uuid.uuid4().hex  # fresh keys: Redis keeps those of earlier tests
    for shard in (0, 1):
        command = [sys.executable, TRAINER, '--workdir', str(tmp_path), '--devices', '1',
                   '--image_size', '32', '--batch_size', '4', '--epoch_size', '16',
                   '--num_shards', '2', '--shard_id', str(shard), '--run_id', run_id,
                   '--save_model_name', 'shard{}'.format(shard)] + extra
        processes.append(subprocess.Popen(command, env=env, stdout=subprocess.PIPE,
                                          stderr=subprocess.STDOUT))
    outputs = []
    for process in processes:
        try:
            out, _ = process.communicate(timeout=WALL_LIMIT_S)
        except subprocess.TimeoutExpired:
            for other in processes:
                other.kill()
            pytest.fail('a shard ran past {} s'.format(WALL_LIMIT_S))
        outputs.append(out.decode())
        assert process.returncode == 0, out.decode()
    first = _saved_blobs(str(tmp_path / 'shard0_1.mdl'))
    second = _saved_blobs(str(tmp_path / 'shard1_1.mdl'))
    assert set(first) == set(second)
    # Each shard keeps its own batch-norm running statistics (computed from
    # its own batches; as in Caffe2, they are not synced across shards);
    # everything trained is identical.
    trained = [n for n in first if not n.endswith(('_rm', '_riv'))]
    assert len(trained) > 200
    for name in trained:
        np.testing.assert_array_equal(first[name], second[name], err_msg=name)
    assert not np.array_equal(first['cpu_0/conv1_spatbn_relu_rm'],
                              second['cpu_0/conv1_spatbn_relu_rm'])
    assert first['optimizer_iteration'].tolist() == [2]


def test_two_processes_with_a_file_store(tmp_path):
    _two_shards(tmp_path, [])


def test_two_processes_with_redis(tmp_path):
    with running_redis_server() as port:
        _two_shards(tmp_path, ['--redis_host', '127.0.0.1', '--redis_port', str(port)])


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q', '-p', 'no:cacheprovider']))
