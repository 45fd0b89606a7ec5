"""tools/make_db end to end, read back through CreateDB + TensorProtosDBInput.

Synthetic IDX files are written here with numpy (gzip'd and raw), converted
by the real make_db binary, and every batch the op yields is compared with
numpy slices of the synthetic arrays: both backends, both channel orders,
wrap-around at the end of the DB, sharding, data_limit. Bad inputs (wrong
magic, truncated files, mismatched counts, a corrupt or missing DB) must
fail with a clear message while the process lives on.
"""
import gzip
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np
import pytest

from doppio import core, workspace
from tool_paths import runfile


MAKE_DB = runfile("tools/make_db")
FASHION_MNIST = "/usr/share/datasets/fashion-mnist"


@pytest.fixture(autouse=True)
def fresh_workspace():
    workspace.ResetWorkspace()
    yield
    workspace.ResetWorkspace()


@pytest.fixture
def tmp():
    path = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


# ---------------------------------------------------------------- IDX files

def idx_images_bytes(images, magic=2051):
    n, rows, cols = images.shape
    return struct.pack(">IIII", magic, n, rows, cols) + images.astype(np.uint8).tobytes()


def idx_labels_bytes(labels, magic=2049):
    return struct.pack(">II", magic, len(labels)) + labels.astype(np.uint8).tobytes()


def write(path, data, gzipped):
    with (gzip.open(path, "wb") if gzipped else open(path, "wb")) as f:
        f.write(data)
    return path


def synthetic(n, rows=4, cols=3, seed=0):
    rng = np.random.RandomState(seed)
    images = rng.randint(0, 256, size=(n, rows, cols)).astype(np.uint8)
    labels = rng.randint(0, 10, size=n).astype(np.uint8)
    return images, labels


def write_dataset(tmp, images, labels, gzipped=True, stem="d"):
    suffix = ".gz" if gzipped else ""
    image_file = write(os.path.join(tmp, stem + "-images-idx3-ubyte" + suffix),
                       idx_images_bytes(images), gzipped)
    label_file = write(os.path.join(tmp, stem + "-labels-idx1-ubyte" + suffix),
                       idx_labels_bytes(labels), gzipped)
    return image_file, label_file


def make_db(image_file, label_file, output, *flags):
    return subprocess.run(
        [MAKE_DB, "--image_file=" + image_file, "--label_file=" + label_file,
         "--output_file=" + output] + list(flags),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)


def make_db_ok(*args):
    result = make_db(*args)
    assert result.returncode == 0, result.stderr
    return result


# ---------------------------------------------------------------- reading

def create_reader(db, db_type, reader="reader", num_shards=1, shard_id=0):
    workspace.RunOperatorOnce(core.CreateOperator(
        "CreateDB", [], [reader], db=db, db_type=db_type, num_shards=num_shards,
        shard_id=shard_id))


def input_net(name, batch_size, reader="reader", outputs=("data", "label")):
    net = core.Net(name)
    net.Proto().op.extend([core.CreateOperator(
        "TensorProtosDBInput", [reader], list(outputs), name="input",
        batch_size=batch_size)])
    workspace.CreateNet(net)
    return net.Proto().name


def expected_batch(images, labels, indices, channel_first):
    data = images[indices]
    data = data[:, np.newaxis, :, :] if channel_first else data[:, :, :, np.newaxis]
    return data, labels[indices].astype(np.int32)


def check_batch(images, labels, indices, channel_first, data="data", label="label"):
    want_data, want_label = expected_batch(images, labels, indices, channel_first)
    got_data, got_label = workspace.FetchBlob(data), workspace.FetchBlob(label)
    assert got_data.dtype == np.uint8
    assert got_label.dtype == np.int32
    np.testing.assert_array_equal(got_data, want_data)
    np.testing.assert_array_equal(got_label, want_label)


# ---------------------------------------------------------------- tests

@pytest.mark.parametrize("db_type", ["lmdb", "minidb"])
@pytest.mark.parametrize("channel_first", [True, False])
@pytest.mark.parametrize("gzipped", [True, False])
def test_batches_match_the_idx_arrays_and_wrap_around(tmp, db_type, channel_first, gzipped):
    images, labels = synthetic(10)
    image_file, label_file = write_dataset(tmp, images, labels, gzipped)
    db = os.path.join(tmp, "out." + db_type)
    result = make_db_ok(image_file, label_file, db, "--db=" + db_type,
                        "--channel_first=" + ("true" if channel_first else "false"))
    assert "10 records" in result.stdout and db in result.stdout
    create_reader(db, db_type)
    net = input_net("train", 4)
    for indices in ([0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 0, 1], [2, 3, 4, 5]):
        workspace.RunNet(net)
        check_batch(images, labels, indices, channel_first)


def test_data_limit_keeps_the_first_records(tmp):
    images, labels = synthetic(9)
    db = os.path.join(tmp, "limited.minidb")
    make_db_ok(*write_dataset(tmp, images, labels), db, "--db=minidb", "--data_limit=5")
    create_reader(db, "minidb")
    net = input_net("train", 5)
    for _ in range(2):
        workspace.RunNet(net)
        check_batch(images, labels, [0, 1, 2, 3, 4], True)


def test_a_batch_larger_than_the_db_wraps(tmp):
    images, labels = synthetic(3)
    db = os.path.join(tmp, "small_lmdb")
    make_db_ok(*write_dataset(tmp, images, labels), db)
    create_reader(db, "lmdb")
    net = input_net("train", 7)
    workspace.RunNet(net)
    check_batch(images, labels, [0, 1, 2, 0, 1, 2, 0], True)
    workspace.RunNet(net)
    check_batch(images, labels, [1, 2, 0, 1, 2, 0, 1], True)


@pytest.mark.parametrize("db_type", ["lmdb", "minidb"])
def test_two_shards_cover_every_record_once_per_epoch(tmp, db_type):
    n = 11
    images, labels = synthetic(n, seed=3)
    db = os.path.join(tmp, "sharded." + db_type)
    make_db_ok(*write_dataset(tmp, images, labels), db, "--db=" + db_type)
    seen = []
    for shard, count in ((0, 6), (1, 5)):
        reader = "reader%d" % shard
        create_reader(db, db_type, reader=reader, num_shards=2, shard_id=shard)
        net = input_net("shard%d" % shard, 1, reader=reader,
                        outputs=("data%d" % shard, "label%d" % shard))
        for _ in range(count):
            workspace.RunNet(net)
            # Records are told apart by their pixels, labels repeat.
            pixels = workspace.FetchBlob("data%d" % shard)[0, 0]
            matches = [i for i in range(n) if np.array_equal(images[i], pixels)]
            assert len(matches) == 1
            seen.append(matches[0])
    assert sorted(seen) == list(range(n))
    assert seen[:6] == [0, 2, 4, 6, 8, 10] and seen[6:] == [1, 3, 5, 7, 9]


def shuffled_record_order(db, records, images, labels, shuffle_buffer, seed, batch=4):
    """Indices of the records a shuffling reader emits over `records` reads,
    identified by their pixels; each label must still be its image's."""
    workspace.ResetWorkspace()
    create_reader(db, "minidb")
    net = core.Net("shuffled")
    net.Proto().op.extend([core.CreateOperator(
        "TensorProtosDBInput", ["reader"], ["data", "label"], batch_size=batch,
        shuffle_buffer=shuffle_buffer, shuffle_seed=seed)])
    workspace.CreateNet(net)
    order = []
    for _ in range(records // batch):
        workspace.RunNet(net.Proto().name)
        for pixels, label in zip(workspace.FetchBlob("data"), workspace.FetchBlob("label")):
            matches = [i for i in range(len(images)) if np.array_equal(images[i], pixels[0])]
            assert len(matches) == 1
            assert label == labels[matches[0]]
            order.append(matches[0])
    return order


def test_shuffle_buffer_mixes_records_and_keeps_pairs(tmp):
    n = 16
    images, labels = synthetic(n, seed=5)
    db = os.path.join(tmp, "shuffle.minidb")
    make_db_ok(*write_dataset(tmp, images, labels), db, "--db=minidb")
    in_order = list(range(n)) * 2
    # A buffer of one record is no shuffle at all.
    assert shuffled_record_order(db, 2 * n, images, labels, 1, seed=0) == in_order
    first = shuffled_record_order(db, 10 * n, images, labels, n, seed=1)
    assert first[:2 * n] != in_order
    assert shuffled_record_order(db, 10 * n, images, labels, n, seed=1) == first
    assert shuffled_record_order(db, 10 * n, images, labels, n, seed=2) != first
    # Every record read goes out once: after 10 passes' worth of outputs the
    # reader has read 11 passes, and the buffer holds the other n records.
    counts = np.bincount(first, minlength=n)
    assert counts.sum() == 10 * n and counts.max() <= 11
    assert counts.min() >= 10 - 3


def test_model_helper_and_brew_readers_read_the_db(tmp):
    # The two spellings Caffe2 scripts use for a DB input layer.
    from doppio import brew, model_helper
    images, labels = synthetic(6, seed=9)
    db = os.path.join(tmp, "helper.minidb")
    make_db_ok(*write_dataset(tmp, images, labels), db, "--db=minidb")
    legacy = model_helper.ModelHelper(name="legacy_reader")
    legacy.TensorProtosDBInput([], ["data", "label"], batch_size=4, db=db, db_type="minidb")
    workspace.RunNetOnce(legacy.param_init_net)
    workspace.CreateNet(legacy.net)
    workspace.RunNet(legacy.net.Proto().name)
    check_batch(images, labels, [0, 1, 2, 3], True)
    # A second DB: the reader blob is named after the DB, and replacing a
    # reader while another net's prefetch thread reads it is not supported.
    db2 = os.path.join(tmp, "helper2.minidb")
    make_db_ok(*write_dataset(tmp, images, labels), db2, "--db=minidb")
    model = model_helper.ModelHelper(name="brew_reader")
    brew.db_input(model, ["data2", "label2"], batch_size=3, db=db2, db_type="minidb")
    workspace.RunNetOnce(model.param_init_net)
    workspace.CreateNet(model.net)
    for indices in ([0, 1, 2], [3, 4, 5], [0, 1, 2]):
        workspace.RunNet(model.net.Proto().name)
        check_batch(images, labels, indices, True, data="data2", label="label2")


def test_negative_shuffle_buffer_is_refused(tmp):
    images, labels = synthetic(4)
    db = os.path.join(tmp, "neg.minidb")
    make_db_ok(*write_dataset(tmp, images, labels), db, "--db=minidb")
    create_reader(db, "minidb")
    with pytest.raises(RuntimeError, match="shuffle_buffer must be >= 0"):
        workspace.RunOperatorOnce(core.CreateOperator(
            "TensorProtosDBInput", ["reader"], ["data", "label"], batch_size=2,
            shuffle_buffer=-1))


@pytest.mark.skipif(not os.path.isdir(FASHION_MNIST), reason="Fashion-MNIST not installed")
def test_fashion_mnist_records_match_the_gzip_files(tmp):
    with gzip.open(os.path.join(FASHION_MNIST, "t10k-images-idx3-ubyte.gz")) as f:
        raw = f.read()
    images = np.frombuffer(raw, dtype=np.uint8, offset=16).reshape(-1, 28, 28)
    with gzip.open(os.path.join(FASHION_MNIST, "t10k-labels-idx1-ubyte.gz")) as f:
        labels = np.frombuffer(f.read(), dtype=np.uint8, offset=8)
    db = os.path.join(tmp, "fmnist_lmdb")
    result = make_db_ok(os.path.join(FASHION_MNIST, "t10k-images-idx3-ubyte.gz"),
                        os.path.join(FASHION_MNIST, "t10k-labels-idx1-ubyte.gz"), db)
    assert "10000 records" in result.stdout
    create_reader(db, "lmdb")
    net = input_net("train", 64)
    workspace.RunNet(net)
    check_batch(images, labels, list(range(64)), True)


# ---- make_db's failures: exit 1, one line naming the file, no output

def expect_make_db_failure(args, *parts, output=None):
    result = make_db(*args)
    assert result.returncode == 1, (result.returncode, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("make_db: error: ")
    for part in parts:
        assert part in lines[0], (part, lines[0])
    if output is not None:
        assert not os.path.exists(output)


def test_wrong_magic_numbers_are_refused(tmp):
    images, labels = synthetic(4)
    image_file, label_file = write_dataset(tmp, images, labels)
    out = os.path.join(tmp, "out_lmdb")
    # The files swapped: each has the other's magic.
    expect_make_db_failure((label_file, image_file, out), label_file, "magic number 2049",
                           "expected 2051", output=out)
    bad = write(os.path.join(tmp, "bad-images"), idx_images_bytes(images, magic=1234), False)
    expect_make_db_failure((bad, label_file, out), bad, "magic number 1234", output=out)
    bad = write(os.path.join(tmp, "bad-labels"), idx_labels_bytes(labels, magic=7), False)
    expect_make_db_failure((image_file, bad, out), bad, "magic number 7", output=out)


def test_truncated_files_are_refused(tmp):
    images, labels = synthetic(4)
    _, label_file = write_dataset(tmp, images, labels)
    out = os.path.join(tmp, "out_lmdb")
    full = idx_images_bytes(images)
    cut = write(os.path.join(tmp, "cut-images"), full[:-5], False)
    expect_make_db_failure((cut, label_file, out), cut, "truncated", output=out)
    header_only = write(os.path.join(tmp, "header-images"), full[:10], False)
    expect_make_db_failure((header_only, label_file, out), header_only, "header",
                           output=out)
    cut_gz_path = os.path.join(tmp, "cut-images.gz")
    with open(cut_gz_path, "wb") as f:
        f.write(gzip.compress(full)[:-12])
    expect_make_db_failure((cut_gz_path, label_file, out), cut_gz_path, output=out)
    long = write(os.path.join(tmp, "long-images"), full + b"xyz", False)
    expect_make_db_failure((long, label_file, out), long, "3 bytes after", output=out)
    empty = write(os.path.join(tmp, "empty-images"), b"", False)
    expect_make_db_failure((empty, label_file, out), empty, output=out)


def test_mismatched_counts_and_missing_files_are_refused(tmp):
    images, labels = synthetic(5)
    image_file, _ = write_dataset(tmp, images, labels)
    fewer = write(os.path.join(tmp, "fewer-labels"), idx_labels_bytes(labels[:4]), False)
    out = os.path.join(tmp, "out_lmdb")
    expect_make_db_failure((image_file, fewer, out), image_file, fewer, "5 images",
                           "4 labels", output=out)
    missing = os.path.join(tmp, "no-such-file")
    expect_make_db_failure((missing, fewer, out), missing, output=out)


def test_an_existing_lmdb_output_and_bad_flags(tmp):
    images, labels = synthetic(2)
    image_file, label_file = write_dataset(tmp, images, labels)
    out = os.path.join(tmp, "out_lmdb")
    make_db_ok(image_file, label_file, out)
    expect_make_db_failure((image_file, label_file, out), out)
    expect_make_db_failure((image_file, label_file, os.path.join(tmp, "x"), "--db=nosuch"),
                           "nosuch")
    for flags in (["--data_limit=0"], ["--data_limit=-3"], ["--bogus=1"]):
        result = make_db(image_file, label_file, os.path.join(tmp, "y"), *flags)
        assert result.returncode == 2, (flags, result.stderr)
    result = subprocess.run([MAKE_DB, "--image_file=" + image_file], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, universal_newlines=True)
    assert result.returncode == 2 and "--label_file" in result.stderr


# ---- the op's failures: RuntimeError naming the db, interpreter alive

def test_a_missing_db_fails_in_create_db(tmp):
    missing = os.path.join(tmp, "nothing_here")
    for db_type in ("lmdb", "minidb"):
        with pytest.raises(RuntimeError, match="nothing_here"):
            create_reader(missing, db_type)


def test_a_corrupt_minidb_fails_with_the_db_named(tmp):
    images, labels = synthetic(6)
    db = os.path.join(tmp, "corrupt.minidb")
    make_db_ok(*write_dataset(tmp, images, labels), db, "--db=minidb")
    with open(db, "r+b") as f:
        # Mid-record: six equal records cut at a third would leave four whole.
        size = os.path.getsize(db)
        f.truncate(size - size // 3 - 5)
    with pytest.raises(RuntimeError, match="corrupt.minidb"):
        create_reader(db, "minidb")
        net = input_net("train", 6)
        workspace.RunNet(net)


def test_a_corrupt_lmdb_fails_with_the_db_named(tmp):
    images, labels = synthetic(6)
    db = os.path.join(tmp, "corrupt_lmdb")
    make_db_ok(*write_dataset(tmp, images, labels), db)
    data_file = os.path.join(db, "data.mdb")
    with open(data_file, "wb") as f:
        f.write(b"\x5a" * 8192)
    with pytest.raises(RuntimeError, match="corrupt_lmdb"):
        create_reader(db, "lmdb")
        net = input_net("train", 2)
        workspace.RunNet(net)


def test_records_of_different_shapes_fail_from_run_net(tmp):
    # Two minidb files concatenated are one minidb: 4x3 records, then 3x4.
    a_images, a_labels = synthetic(2, rows=4, cols=3)
    b_images, b_labels = synthetic(2, rows=3, cols=4, seed=1)
    a_db, b_db = os.path.join(tmp, "a.minidb"), os.path.join(tmp, "b.minidb")
    make_db_ok(*write_dataset(tmp, a_images, a_labels, stem="a"), a_db, "--db=minidb")
    make_db_ok(*write_dataset(tmp, b_images, b_labels, stem="b"), b_db, "--db=minidb")
    mixed = os.path.join(tmp, "mixed.minidb")
    with open(mixed, "wb") as f:
        f.write(open(a_db, "rb").read() + open(b_db, "rb").read())
    create_reader(mixed, "minidb")
    net = input_net("train", 3)
    with pytest.raises(RuntimeError) as error:
        workspace.RunNet(net)
    message = str(error.value)
    for part in ("TensorProtosDBInput 'input'", "mixed.minidb", "uint8[1, 3, 4]",
                 "uint8[1, 4, 3]"):
        assert part in message, (part, message)
    # The interpreter and the workspace live on: a well-formed DB still reads.
    create_reader(a_db, "minidb", reader="good")
    good = input_net("good", 2, reader="good", outputs=("gd", "gl"))
    workspace.RunNet(good)
    check_batch(a_images, a_labels, [0, 1], True, data="gd", label="gl")


# ---------------------------------------------------------------- JPEG records

@pytest.mark.parametrize("record_format", ["jpeg_tensor_protos", "jpeg_datum"])
def test_jpeg_records_decode_to_the_idx_images(tmp, record_format):
    import io
    from PIL import Image
    yy, xx = np.mgrid[0:16, 0:12]
    images = np.stack([(yy * 16 + xx * 5 + 7 * k) % 256 for k in range(3)]).astype(np.uint8)
    labels = np.array([3, 1, 4], np.uint8)
    image_file, label_file = write_dataset(tmp, images, labels)
    db = os.path.join(tmp, record_format + ".minidb")
    out = make_db_ok(image_file, label_file, db, "--db=minidb", "--record_format=" + record_format,
                     "--jpeg_quality=100")
    assert "3 records" in out.stdout and record_format in out.stdout
    create_reader(db, "minidb")
    workspace.RunOperatorOnce(core.CreateOperator(
        "ImageInput", ["reader"], ["data", "label"], batch_size=3, scale=12, crop=12,
        is_test=1, color=0, use_caffe_datum=int(record_format == "jpeg_datum")))
    np.testing.assert_array_equal(workspace.FetchBlob("label"), labels)
    data = workspace.FetchBlob("data")[:, :, :, 0]
    for i in range(3):
        # ImageInput center-crops the 16 x 12 image to 12 x 12 (rows 2..13).
        np.testing.assert_allclose(data[i], images[i, 2:14].astype(np.float32), atol=3)
    if record_format == "jpeg_tensor_protos":
        # The record's first tensor is a JPEG file PIL reads back (within JPEG's loss).
        create_reader(db, "minidb", reader="r2")
        workspace.RunOperatorOnce(core.CreateOperator(
            "TensorProtosDBInput", ["r2"], ["jpeg", "jpeg_label"], batch_size=0))
        jpeg = workspace.FetchBlob("jpeg").reshape(-1)[0]
        decoded = np.asarray(Image.open(io.BytesIO(jpeg)).convert("L"), np.float32)
        np.testing.assert_allclose(decoded, images[0].astype(np.float32), atol=3)
        assert workspace.FetchBlob("jpeg_label").reshape(-1)[0] == labels[0]


def test_bad_record_format_and_quality_are_usage_errors(tmp):
    images, labels = synthetic(2)
    image_file, label_file = write_dataset(tmp, images, labels)
    for flag, fragment in [("--record_format=png", "--record_format"),
                           ("--jpeg_quality=0", "--jpeg_quality")]:
        result = make_db(image_file, label_file, os.path.join(tmp, "out"), flag)
        assert result.returncode != 0 and fragment in result.stderr


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
