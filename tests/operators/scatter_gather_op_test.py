"""Chunk (the scatter of torch.nn.parallel: torch.chunk's split rule) against
numpy, with finite-difference gradients, and Concat as its inverse (gather)."""
import hypothesis.strategies as st
import numpy as np
from hypothesis import given

import op_harness as h
from doppio import _C


def torch_chunk_sizes(size, parts):
    """torch.chunk's documented rule, written independently: chunks of
    ceil(size / parts), the last smaller; missing chunks are empty here."""
    step = -(-size // parts)
    sizes = [len(range(start, min(start + step, size))) for start in range(0, size, step)]
    return sizes + [0] * (parts - len(sizes))


def names(prefix, count):
    return ["%s%d" % (prefix, i) for i in range(count)]


def numpy_chunks(x, parts, axis):
    bounds = np.cumsum(torch_chunk_sizes(x.shape[axis], parts))[:-1]
    return np.split(x, bounds, axis=axis)


def test_rule_matches_known_torch_chunk_results():
    # torch.arange(n).chunk(k) lengths, from PyTorch's docs and behaviour.
    assert torch_chunk_sizes(11, 6) == [2, 2, 2, 2, 2, 1]
    assert torch_chunk_sizes(12, 6) == [2] * 6
    assert torch_chunk_sizes(13, 6) == [3, 3, 3, 3, 1, 0]
    assert torch_chunk_sizes(5, 4) == [2, 2, 1, 0]
    assert torch_chunk_sizes(8, 3) == [3, 3, 2]


@given(h.dims(1, 4, 1, 7), st.integers(1, 5), st.data())
def test_chunk_matches_numpy(shape, parts, data):
    axis = data.draw(st.integers(0, len(shape) - 1))
    shape = list(shape)
    shape[axis] = max(shape[axis], parts)
    x = data.draw(h.arrays(tuple(shape), data.draw(st.sampled_from([np.float32, np.int32]))))
    argument = axis - len(shape) if data.draw(st.booleans()) else axis
    op = h.make_op("Chunk", ["X"], names("Y", parts), axis=argument)
    h.check_output(op, [x], lambda x: numpy_chunks(x, parts, axis))


def test_uneven_split_of_a_batch():
    x = np.arange(8 * 3, dtype=np.float32).reshape(8, 3)
    op = h.make_op("Chunk", ["X"], names("Y", 3))
    outputs = h.run_op(op, [x])
    np.testing.assert_array_equal(outputs[0], x[0:3])
    np.testing.assert_array_equal(outputs[1], x[3:6])
    np.testing.assert_array_equal(outputs[2], x[6:8])


def test_empty_trailing_chunk():
    x = np.arange(5 * 2, dtype=np.float32).reshape(5, 2)
    outputs = h.run_op(h.make_op("Chunk", ["X"], names("Y", 4)), [x])
    assert [o.shape for o in outputs] == [(2, 2), (2, 2), (1, 2), (0, 2)]


@given(h.dims(1, 3, 1, 6), st.integers(1, 4), st.data())
def test_chunk_gradient(shape, parts, data):
    axis = data.draw(st.integers(0, len(shape) - 1))
    shape = list(shape)
    shape[axis] = max(shape[axis], parts)
    x = data.draw(h.arrays(tuple(shape), np.float64))
    op = h.make_op("Chunk", ["X"], names("Y", parts), axis=axis)
    h.check_gradient(op, [x], [0])


def test_chunk_gradient_with_unused_outputs_is_zero_there():
    # Only the middle chunk has a gradient: the others contribute zeros.
    op = h.make_op("Chunk", ["X"], names("Y", 3))
    ops, grads = h.gradient_ops(op, ["", "Y1_grad", ""])
    assert [o.type for o in ops] == ["ConstantFill", "ConstantFill", "Concat"]
    assert grads == ["X_grad"]
    x = np.arange(14, dtype=np.float32).reshape(7, 2)
    dy = np.random.RandomState(1).rand(3, 2).astype(np.float32)
    with h._FreshWorkspace():
        _C.feed_blob("X", x)
        _C.run_operator_once(op.SerializeToString())
        _C.feed_blob("Y1_grad", dy)
        for grad_op in ops:
            _C.run_operator_once(grad_op.SerializeToString())
        got = _C.fetch_blob("X_grad")
    expected = np.zeros_like(x)
    expected[3:6] = dy
    np.testing.assert_array_equal(got, expected)


def test_batch_smaller_than_outputs_is_an_error():
    x = np.zeros((2, 3), np.float32)
    h.assert_op_error(h.make_op("Chunk", ["batch"], names("Y", 3)), [x],
                      "'batch'", "[2, 3]", "fewer than the 3 outputs")
    h.assert_op_error(h.make_op("Chunk", ["batch"], names("Y", 2), axis=2), [x],
                      "'batch'", "axis 2")


@given(h.dims(1, 3, 1, 6), st.integers(1, 4), st.data())
def test_concat_gathers_the_chunks_back(shape, parts, data):
    axis = data.draw(st.integers(0, len(shape) - 1))
    shape = list(shape)
    shape[axis] = max(shape[axis], parts)
    x = data.draw(h.arrays(tuple(shape), np.float32))
    chunks = h.run_op(h.make_op("Chunk", ["X"], names("Y", parts), axis=axis), [x])
    gather = h.make_op("Concat", names("Y", parts), ["Z", "split_info"], axis=axis)
    h.check_output(gather, chunks, lambda *ys: [x], outputs_to_check=[0])


NUM_GPUS = _C.num_cuda_devices()


def test_chunk_is_registered_for_cuda_and_fails_cleanly_without_a_gpu():
    import pytest
    from doppio import core, workspace
    assert ("CUDA", "") in workspace.C.registered_operator_devices("Chunk")
    if NUM_GPUS > 0:
        pytest.skip("a GPU is present: covered by the CPU-vs-CUDA test below")
    workspace.ResetWorkspace()
    workspace.FeedBlob("x", np.arange(8, dtype=np.float32).reshape(4, 2))
    op = core.CreateOperator("Chunk", ["x"], ["a", "b"],
                             device_option=core.DeviceOption(1, 0))
    with pytest.raises(RuntimeError, match="(?s)no CUDA device.*Chunk"):
        workspace.RunOperatorOnce(op)
    workspace.ResetWorkspace()


def test_chunk_on_cuda_equals_cpu():
    import pytest
    from doppio import core, workspace
    if NUM_GPUS == 0:
        pytest.skip("no CUDA device: " + _C.cuda_unavailable_reason())
    x = np.random.RandomState(0).randn(3, 7, 2).astype(np.float32)
    gpu = core.DeviceOption(1, 0)
    workspace.ResetWorkspace()
    workspace.FeedBlob("x", x, device_option=gpu)
    workspace.RunOperatorOnce(core.CreateOperator("Chunk", ["x"], ["a", "b", "c"], axis=1,
                                                  device_option=gpu))
    got = [workspace.FetchBlob(name) for name in ("a", "b", "c")]
    expected = np.split(x, [3, 6], axis=1)  # torch.chunk(7, 3): 3, 3, 1
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e)
    workspace.ResetWorkspace()


if __name__ == "__main__":
    h.run_main(__file__)
