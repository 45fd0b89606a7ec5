"""ImageInput against an independent reference: images JPEG-encoded by PIL
into a real LMDB (python-lmdb, as Caffe2 users write them), decoded by PIL,
put in OpenCV's BGR order, resized by a separable area/bilinear numpy
resize written here, cropped and normalized in numpy. Training mode is
checked by finding each output among all crops and mirrors of the
reference; Caffe datums, raw records, labels, extra outputs, bounding
boxes, NCHW/float16 output, seeding and every error path too."""
import io
import os
import tempfile

import lmdb
import numpy as np
import pytest
from PIL import Image

import op_harness as h
from doppio import brew, core, model_helper, workspace
from doppio.proto import doppio_pb2

# ---------------------------------------------------------------- the reference


def resize_matrix(n_in, n_out):
    """[n_out, n_in] weights of one axis: area averaging when shrinking,
    bilinear with pixel centres at +0.5 when growing (cv::INTER_AREA)."""
    m = np.zeros((n_out, n_in))
    if n_out <= n_in:
        scale = n_in / n_out
        for i in range(n_out):
            lo, hi = i * scale, (i + 1) * scale
            for j in range(int(np.floor(lo)), min(int(np.ceil(hi)), n_in)):
                m[i, j] = (min(j + 1, hi) - max(j, lo)) / scale
    else:
        for i in range(n_out):
            x = min(max((i + 0.5) * n_in / n_out - 0.5, 0), n_in - 1)
            j = int(x)
            m[i, j] += 1 - (x - j)
            m[i, min(j + 1, n_in - 1)] += x - j
    return m


def resize(img, height, width):
    if img.shape[:2] == (height, width):
        return img
    if height > img.shape[0] or width > img.shape[1]:
        assert height >= img.shape[0] and width >= img.shape[1]
    out = np.einsum('ij,jkc,lk->ilc', resize_matrix(img.shape[0], height), img.astype(np.float64),
                    resize_matrix(img.shape[1], width))
    return np.clip(np.floor(out + 0.5), 0, 255).astype(np.uint8)


def decode(jpeg, color=True):
    image = Image.open(io.BytesIO(jpeg))
    if not color:
        image.draft('L', image.size)  # libjpeg's own grayscale output
        return np.asarray(image.convert('L'))[:, :, None]
    return np.asarray(image.convert('RGB'))[:, :, ::-1]  # OpenCV's BGR


def scaled(img, scale):
    h_, w_ = img.shape[:2]
    if h_ > w_:
        return resize(img, int(h_ * scale / w_), scale)
    return resize(img, scale, int(w_ * scale / h_))


def reference_test_image(jpeg, scale, crop, mean, std, color=True):
    img = scaled(decode(jpeg, color), scale)
    y, x = (img.shape[0] - crop) // 2, (img.shape[1] - crop) // 2
    return (img[y:y + crop, x:x + crop].astype(np.float32) - mean) / std


# ---------------------------------------------------------------- records

def jpeg_bytes(rng, height, width, mode='RGB'):
    # Smooth gradients plus noise: realistic to compress, varied to check.
    yy, xx = np.mgrid[0:height, 0:width]
    channels = [(yy * 255 // max(height - 1, 1) + rng.randint(0, 40, (height, width))) % 256,
                (xx * 255 // max(width - 1, 1)) % 256,
                rng.randint(0, 256, (height, width))]
    pixels = np.stack(channels, axis=-1).astype(np.uint8)
    if mode == 'L':
        pixels = pixels[:, :, 0]
    out = io.BytesIO()
    Image.fromarray(pixels, mode).save(out, format='JPEG', quality=95)
    return out.getvalue()


def tensor_protos(image, label, extras=(), box=None):
    protos = doppio_pb2.TensorProtos()
    p = protos.protos.add()
    if isinstance(image, bytes):
        p.data_type = doppio_pb2.TensorProto.STRING
        p.string_data.append(image)
    else:
        p.data_type = doppio_pb2.TensorProto.BYTE
        p.dims.extend(image.shape)
        p.byte_data = image.tobytes()
    label_proto = protos.protos.add()
    values = np.atleast_1d(label)
    if values.dtype.kind == 'f':
        label_proto.data_type = doppio_pb2.TensorProto.FLOAT
        label_proto.float_data.extend(values.tolist())
    else:
        label_proto.data_type = doppio_pb2.TensorProto.INT32
        label_proto.int32_data.extend(values.tolist())
    for extra in extras:
        e = protos.protos.add()
        e.data_type = doppio_pb2.TensorProto.FLOAT
        e.float_data.extend(np.atleast_1d(extra).tolist())
    if box is not None:
        b = protos.protos.add()
        b.data_type = doppio_pb2.TensorProto.INT32
        b.int32_data.extend(box)
    return protos.SerializeToString()


def write_lmdb(values):
    path = tempfile.mkdtemp(prefix='image_input_')
    env = lmdb.open(path, map_size=1 << 28)
    with env.begin(write=True) as txn:
        for i, value in enumerate(values):
            txn.put('{:05d}'.format(i).encode(), value)
    env.close()
    return path


@pytest.fixture(autouse=True)
def fresh_workspace():
    workspace.ResetWorkspace()
    yield
    workspace.ResetWorkspace()


def run_image_input(path, n_outputs=2, runs=1, seed=None, **args):
    workspace.RunOperatorOnce(core.CreateOperator('CreateDB', [], ['reader'], db=path,
                                                  db_type='lmdb'))
    outputs = ['data', 'label'] + ['extra{}'.format(i) for i in range(n_outputs - 2)]
    device = core.DeviceOption(0, 0, random_seed=seed) if seed is not None else None
    net = core.Net('read_{}'.format(np.random.randint(1 << 30)))
    net.ImageInput(['reader'], outputs, device_option=device, **args)
    workspace.CreateNet(net)
    batches = []
    for _ in range(runs):
        workspace.RunNet(net.Name())
        batches.append([workspace.FetchBlob(o) for o in outputs])
    return batches if runs > 1 else batches[0]


SIZES = [(40, 30), (24, 50), (33, 33), (20, 26)]


def test_test_mode_matches_the_reference():
    rng = np.random.RandomState(0)
    jpegs = [jpeg_bytes(rng, *size) for size in SIZES]
    path = write_lmdb([tensor_protos(j, i * 3) for i, j in enumerate(jpegs)])
    data, label = run_image_input(path, batch_size=4, scale=24, crop=20, mean=128.0, std=64.0,
                                  is_test=1)
    assert data.shape == (4, 20, 20, 3) and data.dtype == np.float32
    np.testing.assert_array_equal(label, [0, 3, 6, 9])
    for i, jpeg in enumerate(jpegs):
        want = reference_test_image(jpeg, 24, 20, 128.0, 64.0)
        np.testing.assert_allclose(data[i], want, atol=1.01 / 64, err_msg='image %d' % i)
        assert np.mean(np.abs(data[i] - want) < 1e-6) > 0.99


def test_grayscale_per_channel_normalization_and_minsize():
    rng = np.random.RandomState(1)
    jpegs = [jpeg_bytes(rng, 30, 40), jpeg_bytes(rng, 18, 18, mode='L')]
    path = write_lmdb([tensor_protos(j, 1) for j in jpegs])
    data, _ = run_image_input(path, batch_size=2, minsize=20, crop=16, color=0, is_test=1,
                              mean_per_channel=[10.0], std_per_channel=[2.0])
    assert data.shape == (2, 16, 16, 1)
    # minsize only enlarges: the 30x40 image keeps its size, the 18x18 grows.
    for i, (jpeg, grow) in enumerate(zip(jpegs, [False, True])):
        img = decode(jpeg, color=False)
        if grow:
            img = resize(img, 20, 20)
        y, x = (img.shape[0] - 16) // 2, (img.shape[1] - 16) // 2
        want = (img[y:y + 16, x:x + 16].astype(np.float32) - 10.0) / 2.0
        np.testing.assert_allclose(data[i], want, atol=0.51)


def test_color_from_gray_and_bgr_means():
    rng = np.random.RandomState(2)
    jpeg = jpeg_bytes(rng, 20, 20, mode='L')
    path = write_lmdb([tensor_protos(jpeg, 0)])
    data, _ = run_image_input(path, batch_size=1, scale=20, crop=20, is_test=1,
                              mean_per_channel=[1.0, 2.0, 3.0], std_per_channel=[1.0, 1.0, 1.0])
    gray = decode(jpeg, color=False)[:, :, 0].astype(np.float32)
    for c, mean in enumerate([1.0, 2.0, 3.0]):
        np.testing.assert_array_equal(data[0, :, :, c], gray - mean)


def test_training_mode_crops_and_mirrors_within_the_image():
    rng = np.random.RandomState(3)
    jpegs = [jpeg_bytes(rng, 30, 36) for _ in range(6)]
    path = write_lmdb([tensor_protos(j, 0) for j in jpegs])
    batches = run_image_input(path, runs=2, seed=7, batch_size=6, scale=30, crop=20, mirror=1,
                              is_test=0)
    mirrored = 0
    for data, _ in batches:
        for i, jpeg in enumerate(jpegs):
            img = scaled(decode(jpeg), 30).astype(np.float32)
            found = None
            for y in range(img.shape[0] - 19):
                for x in range(img.shape[1] - 19):
                    window = img[y:y + 20, x:x + 20]
                    for flip in (False, True):
                        candidate = window[:, ::-1] if flip else window
                        if np.max(np.abs(candidate - data[i])) <= 1.0:
                            found = flip
            assert found is not None, 'image %d is no crop of the scaled image' % i
            mirrored += found
    assert 0 < mirrored < 12  # both orientations occur
    # The same seed gives the same batches, whatever the decode threads.
    again = run_image_input(path, runs=2, seed=7, batch_size=6, scale=30, crop=20, mirror=1,
                            is_test=0, decode_threads=1)
    for (a, _), (b, _) in zip(batches, again):
        np.testing.assert_array_equal(a, b)
    other = run_image_input(path, seed=8, batch_size=6, scale=30, crop=20, mirror=1, is_test=0)
    assert not np.array_equal(other[0], batches[0][0])


def test_a_saved_reader_resumes_the_random_crops_exactly(tmp_path):
    """Training-mode crops and mirrors depend on the batch count: a reader
    saved after 3 batches and loaded into a fresh reader (the op already
    created, its first batches read ahead) gives batches 4 and 5 of an
    uninterrupted run."""
    rng = np.random.RandomState(4)
    path = write_lmdb([tensor_protos(jpeg_bytes(rng, 30, 36), i) for i in range(5)])
    args = dict(batch_size=2, scale=30, crop=20, mirror=1, is_test=0)
    expected = run_image_input(path, runs=5, seed=11, **args)
    workspace.ResetWorkspace()
    head = run_image_input(path, runs=3, seed=11, **args)
    for (a, la), (b, lb) in zip(head, expected[:3]):
        np.testing.assert_array_equal(a, b)
    saved = str(tmp_path / 'reader.minidb')
    workspace.RunOperatorOnce(core.CreateOperator('Save', ['reader'], [], db=saved,
                                                  db_type='minidb', absolute_path=1))
    workspace.ResetWorkspace()
    workspace.RunOperatorOnce(core.CreateOperator('CreateDB', [], ['reader'], db=path,
                                                  db_type='lmdb'))
    net = core.Net('resumed')
    net.ImageInput(['reader'], ['data', 'label'],
                   device_option=core.DeviceOption(0, 0, random_seed=11), **args)
    workspace.CreateNet(net)
    workspace.RunOperatorOnce(core.CreateOperator('Load', [], ['reader'], db=saved,
                                                  db_type='minidb', absolute_path=1))
    for data, label in expected[3:]:
        workspace.RunNet('resumed')
        np.testing.assert_array_equal(workspace.FetchBlob('label'), label)
        np.testing.assert_array_equal(workspace.FetchBlob('data'), data)


def test_caffe_datums_encoded_and_raw():
    rng = np.random.RandomState(4)
    jpeg = jpeg_bytes(rng, 24, 24)
    raw = rng.randint(0, 256, (3, 22, 22)).astype(np.uint8)  # CHW, as Caffe stores it
    datums = [doppio_pb2.Datum(encoded=True, data=jpeg, label=5),
              doppio_pb2.Datum(channels=3, height=22, width=22, data=raw.tobytes(), label=9)]
    path = write_lmdb([d.SerializeToString() for d in datums])
    data, label = run_image_input(path, batch_size=2, scale=22, crop=22, is_test=1,
                                  use_caffe_datum=1)
    np.testing.assert_array_equal(label, [5, 9])
    np.testing.assert_allclose(data[0], resize(decode(jpeg), 22, 22).astype(np.float32),
                               atol=1.0)
    np.testing.assert_array_equal(data[1], raw.transpose(1, 2, 0).astype(np.float32))


def test_raw_records_labels_extras_and_bounding_boxes():
    rng = np.random.RandomState(5)
    raws = [rng.randint(0, 256, (12, 12, 3)).astype(np.uint8) for _ in range(2)]
    values = [tensor_protos(raws[0], np.array([1, 3]), extras=[[0.5, 1.5]]),
              tensor_protos(raws[1], np.array([2]), extras=[[2.5, 3.5]], box=[2, 3, 8, 9])]
    path = write_lmdb(values)
    data, label, extra = run_image_input(path, n_outputs=3, batch_size=2, scale=8, crop=8,
                                         is_test=1, label_type=1, num_labels=4,
                                         output_sizes=[2], warp=1)
    np.testing.assert_array_equal(label, [[0, 1, 0, 1], [0, 0, 1, 0]])
    np.testing.assert_array_equal(extra, [[0.5, 1.5], [2.5, 3.5]])
    np.testing.assert_allclose(data[0], resize(raws[0], 8, 8).astype(np.float32), atol=1.0)
    boxed = raws[1][2:10, 3:12]  # ymin 2, xmin 3, height 8, width 9
    np.testing.assert_allclose(data[1], resize(boxed, 8, 8).astype(np.float32), atol=1.0)
    dense = write_lmdb([tensor_protos(raws[0], np.array([0.25, 0.75], np.float32))])
    _, label = run_image_input(dense, batch_size=1, scale=12, crop=12, is_test=1, label_type=2,
                               num_labels=2)
    np.testing.assert_array_equal(label, [[0.25, 0.75]])


def test_nchw_and_float16_output():
    rng = np.random.RandomState(6)
    path = write_lmdb([tensor_protos(jpeg_bytes(rng, 20, 20), 0)])
    nhwc, _ = run_image_input(path, batch_size=1, scale=16, crop=16, is_test=1, std=255.0)
    nchw, _ = run_image_input(path, batch_size=1, scale=16, crop=16, is_test=1, std=255.0,
                              use_gpu_transform=1, output_type='float16')
    assert nchw.dtype == np.float16 and nchw.shape == (1, 3, 16, 16)
    np.testing.assert_array_equal(nchw, nhwc.transpose(0, 3, 1, 2).astype(np.float16))


def test_inception_crops_and_color_noise():
    rng = np.random.RandomState(7)
    path = write_lmdb([tensor_protos(jpeg_bytes(rng, 40, 40), 0) for _ in range(4)])
    plain, _ = run_image_input(path, seed=1, batch_size=4, scale=32, crop=24, is_test=0)
    noisy, _ = run_image_input(path, seed=1, batch_size=4, scale=32, crop=24, is_test=0,
                               scale_jitter_type=1, color_jitter=1, color_lighting=1)
    assert noisy.shape == plain.shape and np.isfinite(noisy).all()
    assert not np.allclose(noisy, plain)
    test_mode, _ = run_image_input(path, seed=1, batch_size=4, scale=32, crop=24, is_test=1,
                                   scale_jitter_type=1, color_jitter=1, color_lighting=1)
    central, _ = run_image_input(path, batch_size=4, scale=32, crop=24, is_test=1)
    np.testing.assert_array_equal(test_mode, central)  # no noise in test mode


def test_brew_helper_gives_nchw():
    rng = np.random.RandomState(8)
    path = write_lmdb([tensor_protos(jpeg_bytes(rng, 20, 20), 4)] * 2)
    model = model_helper.ModelHelper(name='brew_image_input')
    reader = model.CreateDB('reader', db=path, db_type='lmdb')
    data, label = brew.image_input(model, reader, ['data', 'label'], batch_size=2, scale=16,
                                   crop=16, is_test=1, mean=128.0, std=128.0)
    assert [op.type for op in model.net.Proto().op] == ['ImageInput', 'NHWC2NCHW']
    workspace.RunNetOnce(model.param_init_net)
    workspace.RunNetOnce(model.net)
    assert workspace.FetchBlob('data').shape == (2, 3, 16, 16)
    np.testing.assert_array_equal(workspace.FetchBlob('data'),
                                  workspace.FetchBlob('data_nhwc').transpose(0, 3, 1, 2))
    with pytest.raises(ValueError, match='is_test'):
        brew.image_input(model, reader, ['d', 'l'], batch_size=2, scale=16, crop=16)


def test_bad_records_name_the_record_and_the_db():
    rng = np.random.RandomState(9)
    good = jpeg_bytes(rng, 20, 20)
    for value, fragment in [
            (tensor_protos(b'not an image', 0), "not a JPEG"),
            (tensor_protos(good[:len(good) // 3], 0), "cannot decode the JPEG"),
            (b'\x0a\xff\xff garbage', "not a serialized TensorProtos"),
            (tensor_protos(good, np.array([1, 2])), "a single label")]:
        path = write_lmdb([value])
        with pytest.raises(RuntimeError) as raised:
            run_image_input(path, batch_size=1, scale=16, crop=16, is_test=1)
        message = str(raised.value)
        assert fragment in message and "record '00000'" in message and path in message, message


def test_bad_arguments():
    path = write_lmdb([tensor_protos(jpeg_bytes(np.random.RandomState(0), 8, 8), 0)])
    for args, fragment in [
            (dict(batch_size=1, crop=8), 'scale and minsize'),
            (dict(batch_size=1, scale=8, minsize=8, crop=8), 'scale and minsize'),
            (dict(batch_size=1, scale=8), 'crop'),
            (dict(batch_size=1, scale=4, crop=8), 'no smaller than crop'),
            (dict(batch_size=0, scale=8, crop=8), 'batch_size'),
            (dict(batch_size=1, scale=8, crop=8, mean_per_channel=[1., 2.],
                  std_per_channel=[1., 2.]), '1 or 3 values'),
            (dict(batch_size=1, scale=8, crop=8, label_type=1), 'num_labels'),
            (dict(batch_size=1, scale=8, crop=8, label_type=3, num_labels=2), 'not implemented')]:
        with pytest.raises((RuntimeError, NotImplementedError), match=fragment):
            run_image_input(path, **args)


def test_schema_and_gradient():
    assert 'ImageInput' in workspace.RegisteredOperators()
    ops, grads = h.gradient_ops(h.make_op('ImageInput', ['r'], ['d', 'l'], batch_size=1))
    assert ops == [] and all(g is None for g in grads)


if __name__ == '__main__':
    h.run_main(__file__)
