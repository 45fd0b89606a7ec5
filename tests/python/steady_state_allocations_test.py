"""Issue 13's memory target: once warmed up, a training iteration of the
reference CNN and MLP (docs/DESIGN.md section 8) makes no call at all to the CPU
allocator, counted by workspace.GetCPUAllocatorStats()['allocations'].
Covered: Parallelize_CPU on 1 and 2 devices (one dag worker per device, as
fmnist_train.py runs them), with and without optimize_gradient_memory
(memonger), input from TensorProtosDBInput on a minidb and from fed blobs;
and a plain net through memonger.share_grad_blobs(share_activations=True),
where blobs of different sizes share one tensor, and one blob switching
between dtypes as a shared blob may. Feeding is outside the
count: FeedBlob makes a fresh tensor on every call by design.

Also that ops which now reuse their output's storage (Cast) still write
every element when shapes shrink and grow again, against numpy."""
import os
import sys
import tempfile

import numpy as np
import pytest

from doppio import core, memonger, model_helper, optimizer, workspace
from python_api.examples.fmnist_models import MODELS, add_loss_and_accuracy
from python_api.examples.fmnist_parallel_training import (build_parallel_training,
                                                          write_random_minidb)

GLOBAL_BATCH = 64
WARMUP_ITERATIONS = 3
COUNTED_ITERATIONS = 5
RECORDS = 96


@pytest.fixture(autouse=True)
def fresh_workspace():
    workspace.ResetWorkspace()
    optimizer.reset_optimizer_instance_count()
    yield
    workspace.ResetWorkspace()


@pytest.fixture(scope="module")
def minidb():
    """RECORDS random Fashion-MNIST-shaped records in a minidb."""
    folder = tempfile.mkdtemp(prefix="steady_state_")
    path = os.path.join(folder, "train.minidb")
    write_random_minidb(path, RECORDS, seed=1)
    yield path
    os.remove(path)
    os.rmdir(folder)


def allocations():
    return workspace.GetCPUAllocatorStats()["allocations"]


def allocations_per_iteration(net_name, feed):
    """Allocator calls made by each counted RunNet, after the warm-up."""
    counts = []
    for i in range(WARMUP_ITERATIONS + COUNTED_ITERATIONS):
        feed()
        before = allocations()
        workspace.RunNet(net_name)
        if i >= WARMUP_ITERATIONS:
            counts.append(allocations() - before)
    return counts


@pytest.mark.parametrize("source", ["db", "fed"])
@pytest.mark.parametrize("use_memonger", [False, True], ids=["plain", "memonger"])
@pytest.mark.parametrize("devices", [[0], [0, 1]], ids=["1dev", "2dev"])
@pytest.mark.parametrize("model_name", ["cnn", "mlp"])
def test_parallel_training_iterations_allocate_nothing(model_name, devices, use_memonger,
                                                       source, minidb):
    train, feed = build_parallel_training(model_name, devices, use_memonger, source, minidb,
                                          GLOBAL_BATCH, name_prefix="steady")
    counts = allocations_per_iteration(train.net.Proto().name, feed)
    assert counts == [0] * COUNTED_ITERATIONS, counts
    # The count is real: the nets did train (a finite loss on every device).
    for device in devices:
        assert np.isfinite(workspace.FetchBlob("cpu_{}/loss".format(device)))


@pytest.mark.parametrize("model_name", ["cnn", "mlp"])
def test_memonger_shared_activations_keep_capacity_for_every_sharer(model_name):
    """share_activations=True maps blobs of different sizes onto one blob;
    its tensor must grow to the largest sharer once and then stay."""
    model = model_helper.ModelHelper(name="shared_" + model_name)
    loss = add_loss_and_accuracy(model, MODELS[model_name](model, "data", is_test=0), "label")
    model.AddGradientOperators([loss])
    optimizer.build_sgd(model, base_learning_rate=0.05, momentum=0.9, nesterov=False,
                        policy="fixed")
    grads = [str(g) for g in model.param_to_grad.values()]
    original_blobs = {b for op in model.net.Proto().op for b in op.output}
    model.net._net = memonger.share_grad_blobs(model.net, [loss], grads, namescope="",
                                               share_activations=True)
    shared_blobs = {b for op in model.net.Proto().op for b in op.output}
    assert len(shared_blobs) < len(original_blobs)
    workspace.RunNetOnce(model.param_init_net)
    rng = np.random.RandomState(4)

    def feed():
        workspace.FeedBlob("data", rng.standard_normal((GLOBAL_BATCH, 1, 28, 28))
                           .astype(np.float32))
        workspace.FeedBlob("label", rng.randint(0, 10, size=GLOBAL_BATCH).astype(np.int32))

    feed()
    workspace.CreateNet(model.net)
    counts = allocations_per_iteration(model.net.Proto().name, feed)
    assert counts == [0] * COUNTED_ITERATIONS, counts
    assert np.isfinite(workspace.FetchBlob("loss"))


def test_a_blob_alternating_between_dtypes_keeps_its_storage():
    """memonger shares blobs by name whatever their dtypes; one blob that
    holds int32 in one op and float in the next must not reallocate at
    each switch. Values against numpy."""
    net = core.Net("dtype_switch")
    net.Cast("a", "shared", to=core.DataType.INT32)
    net.Cast("shared", "as_float", to=core.DataType.FLOAT)
    net.Scale("a", "shared", scale=2.0)
    net.Sum(["shared", "as_float"], "total")
    a = (np.arange(1000, dtype=np.float32) - 500.0) * 0.75
    workspace.FeedBlob("a", a)
    workspace.CreateNet(net)
    counts = allocations_per_iteration(net.Proto().name, lambda: None)
    assert counts == [0] * COUNTED_ITERATIONS, counts
    expected = a * 2.0 + np.trunc(a).astype(np.float32)
    np.testing.assert_array_equal(workspace.FetchBlob("total"), expected)


def test_cast_reusing_its_output_writes_every_element():
    """Cast keeps its output's storage between runs now; shrinking and then
    growing the input must still give numpy's conversion each time, with no
    allocation once the output has held the largest shape."""
    net = core.Net("cast_reuse")
    net.Cast("x", "y", to=core.DataType.FLOAT)
    rng = np.random.RandomState(6)
    workspace.FeedBlob("x", np.zeros((6, 5), dtype=np.int32))
    workspace.CreateNet(net)
    workspace.RunNet(net.Proto().name)  # y's storage: 30 floats
    for shape in [(6, 5), (2, 3), (4,), (6, 5), (3, 10)]:
        x = rng.randint(-1000, 1000, size=shape).astype(np.int32)
        workspace.FeedBlob("x", x)
        before = allocations()
        workspace.RunNet(net.Proto().name)
        assert allocations() == before, shape
        y = workspace.FetchBlob("y")
        assert y.dtype == np.float32 and y.shape == x.shape
        np.testing.assert_array_equal(y, x.astype(np.float32))
    # A wider dtype than the storage was made for needs new memory.
    workspace.FeedBlob("x", np.array([1.5, -2.5], dtype=np.float64))
    cast_int = core.Net("cast_to_int64")
    cast_int.Cast("x", "y", to=core.DataType.INT64)
    workspace.RunNetOnce(cast_int)
    np.testing.assert_array_equal(workspace.FetchBlob("y"), np.array([1, -2], dtype=np.int64))


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
