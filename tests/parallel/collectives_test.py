"""Allreduce and Broadcast (in-process, CPU devices) against numpy."""
import sys

import numpy as np
import pytest

from doppio import _C
from doppio.proto import doppio_pb2


def make_op(op_type, blobs, **int_args):
    op = doppio_pb2.OperatorDef(type=op_type, input=blobs, output=blobs)
    for name, value in sorted(int_args.items()):
        op.arg.add(name=name, i=value)
    return op


@pytest.fixture(autouse=True)
def fresh_workspace():
    previous = _C.current_workspace()
    _C.switch_workspace("collectives_test", True)
    yield
    _C.reset_workspace()
    _C.switch_workspace(previous, True)


def run_in_place(op, arrays):
    for name, array in zip(op.input, arrays):
        _C.feed_blob(name, np.require(array, requirements="C"))
    _C.run_operator_once(op.SerializeToString())
    return [_C.fetch_blob(name) for name in op.output]


def replicas(rng, n, shape, dtype):
    # Magnitudes over several decades, so a different order of additions
    # would round differently and show up in an exact comparison.
    return [(rng.uniform(-1, 1, shape) * 2.0 ** rng.randint(-8, 9, shape)).astype(dtype)
            for _ in range(n)]


def ordered_sum(arrays):
    total = arrays[0].copy()
    for array in arrays[1:]:
        total = total + array
    return total


def names(n):
    return ["cpu_%d/fc_w_grad" % i for i in range(n)]


SHAPES = [(), (0,), (3, 0, 2), (1,), (7,), (5, 3), (2, 3, 5, 7), (4099,), (3, 2049), (70001,)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_allreduce_is_the_ordered_sum_on_every_device(n, dtype):
    rng = np.random.RandomState(n)
    for shape in SHAPES:
        xs = replicas(rng, n, shape, dtype)
        outputs = run_in_place(make_op("Allreduce", names(n)), xs)
        expected = ordered_sum(xs)
        for i, got in enumerate(outputs):
            assert got.dtype == dtype and got.shape == shape, (i, got.dtype, got.shape)
            np.testing.assert_array_equal(got, expected, err_msg="%s device %d" % (shape, i))
            # And close to the exact sum: n roundings, each at most half an
            # ulp of a partial sum bounded by sum(|x|).
            exact = np.sum(np.asarray(xs, np.float64), axis=0)
            bound = n * np.finfo(dtype).eps * np.sum(np.abs(np.asarray(xs, np.float64)), axis=0)
            assert np.all(np.abs(got - exact) <= bound), shape


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_allreduce_is_bit_identical_across_thread_counts(dtype):
    rng = np.random.RandomState(7)
    for n in (2, 3, 5):
        xs = replicas(rng, n, (123457,), dtype)
        results = [run_in_place(make_op("Allreduce", names(n), num_threads=t), xs)
                   for t in (1, 2, 3)]
        for outputs in results:
            for got in outputs:
                assert got.tobytes() == results[0][0].tobytes()
        assert results[0][0].tobytes() == ordered_sum(xs).tobytes()


def test_allreduce_float16_rounds_the_float32_sum_once():
    rng = np.random.RandomState(3)
    xs = [rng.uniform(-4, 4, (513,)).astype(np.float16) for _ in range(4)]
    outputs = run_in_place(make_op("Allreduce", names(4)), xs)
    expected = ordered_sum([x.astype(np.float32) for x in xs]).astype(np.float16)
    for got in outputs:
        assert got.dtype == np.float16
        np.testing.assert_array_equal(got, expected)


def expect_error(op, arrays, *fragments):
    with pytest.raises(RuntimeError) as info:
        run_in_place(op, arrays)
    for fragment in (op.type,) + fragments:
        assert fragment in str(info.value), (fragment, str(info.value))


def test_allreduce_errors_name_the_blobs():
    a = np.ones((2, 3), np.float32)
    expect_error(make_op("Allreduce", ["cpu_0/g", "cpu_1/g"]), [a, a.T.copy()],
                 "cpu_1/g", "cpu_0/g")
    expect_error(make_op("Allreduce", ["cpu_0/g", "cpu_1/g"]), [a, a.astype(np.float64)],
                 "cpu_1/g", "float64")
    expect_error(make_op("Allreduce", ["cpu_0/g", "cpu_1/g"]),
                 [np.ones(3, np.int32)] * 2, "cpu_0/g", "int32")
    not_in_place = doppio_pb2.OperatorDef(type="Allreduce", input=["x0", "x1"],
                                          output=["y0", "y1"])
    expect_error(not_in_place, [a, a], "in place")
    expect_error(make_op("Allreduce", ["x0", "x1"], num_threads=-2), [a, a], "num_threads")


def test_broadcast_copies_the_root_everywhere():
    rng = np.random.RandomState(1)
    root = rng.randn(3, 4)
    others = [np.zeros((3, 4)), np.zeros((1,), np.float32), root + 1]
    for root_index in range(4):
        xs = others[:root_index] + [root] + others[root_index:]
        outputs = run_in_place(make_op("Broadcast", names(4), root=root_index), xs)
        for got in outputs:
            assert got.dtype == np.float64 and got.shape == (3, 4)
            np.testing.assert_array_equal(got, root)


def test_broadcast_default_root_is_zero_and_errors():
    outputs = run_in_place(make_op("Broadcast", ["a", "b"]),
                           [np.arange(5, dtype=np.float32), np.zeros(5, np.float32)])
    np.testing.assert_array_equal(outputs[1], np.arange(5, dtype=np.float32))
    expect_error(make_op("Broadcast", ["a", "b"], root=5),
                 [np.zeros(2), np.zeros(2)], "root 5")
    expect_error(make_op("Broadcast", ["a", "b"], root=-1),
                 [np.zeros(2), np.zeros(2)], "root -1")


def test_no_gradient_for_collectives():
    for op_type in ("Allreduce", "Broadcast"):
        op = make_op(op_type, ["x0", "x1"])
        ops, grads = _C.get_gradient_defs(op.SerializeToString(), ["x0_grad", "x1_grad"])
        assert list(ops) == [] and all(g is None for g in grads), (op_type, ops, grads)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
