"""The operator test harness: every op family's Python test uses it.

For one OperatorDef and its input arrays it checks
  (a) the outputs against an independent numpy reference written in the test,
  (b) every gradient the op's gradient maker produces against central finite
      differences of the forward op (float64 where the op supports it),
  (c) each in-place variant the schema allows against the out-of-place result,
  (d) CPU against CUDA when a GPU is present (skipped otherwise),
and that bad input raises a RuntimeError naming the op and the blob.

Inputs are drawn with hypothesis (see `arrays`, `dims`, `settings`); the
`doppio` profile is derandomized with few examples so `bazel test` stays fast
and repeatable; DOPPIO_HYPOTHESIS_PROFILE=thorough draws many more.
"""
import os

import hypothesis
import hypothesis.extra.numpy as hnp
import hypothesis.strategies as st
import numpy as np
import pytest

from doppio import _C
from doppio.proto import doppio_pb2

hypothesis.settings.register_profile(
    "doppio", max_examples=12, deadline=None, derandomize=True,
    suppress_health_check=[hypothesis.HealthCheck.too_slow,
                           hypothesis.HealthCheck.data_too_large])
hypothesis.settings.register_profile(
    "thorough", max_examples=300, deadline=None,
    suppress_health_check=[hypothesis.HealthCheck.too_slow,
                           hypothesis.HealthCheck.data_too_large])
hypothesis.settings.load_profile(os.environ.get("DOPPIO_HYPOTHESIS_PROFILE", "doppio"))

# ---------------------------------------------------------------- building ops


def _argument(name, value):
    arg = doppio_pb2.Argument(name=name)
    if isinstance(value, doppio_pb2.NetDef):
        arg.n.CopyFrom(value)
    elif isinstance(value, (bool, np.bool_)):
        arg.i = int(value)
    elif isinstance(value, (int, np.integer)):
        arg.i = int(value)
    elif isinstance(value, (float, np.floating)):
        arg.f = float(value)
    elif isinstance(value, str):
        arg.s = value.encode()
    elif isinstance(value, bytes):
        arg.s = value
    elif isinstance(value, (list, tuple, np.ndarray)):
        values = list(value)
        if all(isinstance(v, (bool, int, np.integer)) for v in values):
            arg.ints.extend(int(v) for v in values)
        elif all(isinstance(v, (int, float, np.integer, np.floating)) for v in values):
            arg.floats.extend(float(v) for v in values)
        elif all(isinstance(v, (str, bytes)) for v in values):
            arg.strings.extend(v.encode() if isinstance(v, str) else v for v in values)
        else:
            raise TypeError("argument %r: cannot mix types in %r" % (name, values))
    else:
        raise TypeError("argument %r: unsupported value %r" % (name, value))
    return arg


def make_op(op_type, inputs, outputs, engine=None, device_option=None, **args):
    """An OperatorDef with Caffe2's argument encoding for Python values."""
    op = doppio_pb2.OperatorDef(type=op_type, input=list(inputs), output=list(outputs))
    for name in sorted(args):
        op.arg.append(_argument(name, args[name]))
    if engine:
        op.engine = engine
    if device_option is not None:
        op.device_option.CopyFrom(device_option)
    return op


# ------------------------------------------------------------------ running


class _FreshWorkspace:
    """A new, empty workspace for the duration of a `with` block."""
    _counter = 0

    def __enter__(self):
        _FreshWorkspace._counter += 1
        self.previous = _C.current_workspace()
        _C.switch_workspace("op_harness_%d" % _FreshWorkspace._counter, True)
        return self

    def __exit__(self, *exc):
        _C.reset_workspace()
        _C.switch_workspace(self.previous, True)
        return False


class Int8:
    """An Int8TensorCPU input: uint8 (or int32) data, scale, zero point. Int8
    outputs come back from run_op as (data, scale, zero_point) tuples."""

    def __init__(self, data, scale, zero_point):
        self.data, self.scale, self.zero_point = data, float(scale), int(zero_point)


def _feed(names, arrays, device_option=None):
    """Feeds on the host, or onto the GPU of a CUDA `device_option` (a CUDA
    op reads its inputs where it runs)."""
    option_bytes = None
    if device_option is not None and device_option.device_type == doppio_pb2.CUDA:
        option_bytes = device_option.SerializeToString()
    for name, array in zip(names, arrays):
        if isinstance(array, Int8):
            _C.feed_int8_blob(name, np.ascontiguousarray(array.data), array.scale,
                              array.zero_point)
            continue
        # np.ascontiguousarray would turn a 0-d array into shape (1,).
        _C.feed_blob(name, np.require(array, requirements="C"), option_bytes)


def run_op(op, inputs):
    """Runs `op` on `inputs` (one array per op input, in order) in a fresh
    workspace and returns its outputs as a list of arrays."""
    with _FreshWorkspace():
        _feed(op.input, inputs, op.device_option)
        _C.run_operator_once(op.SerializeToString())
        return [_C.fetch_blob(name) for name in op.output]


def _unique_input_names(op, inputs):
    """Input names with duplicates collapsed: several op inputs may name one
    blob (Add(X, X)); the blob gets the first array given for it."""
    named = {}
    for name, array in zip(op.input, inputs):
        named.setdefault(name, array)
    return named


# ----------------------------------------------------------------- checking


def _assert_close(actual, expected, atol, rtol, what):
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, "%s: shape %s, expected %s" % (
        what, actual.shape, expected.shape)
    if actual.dtype.kind in "fc":
        np.testing.assert_allclose(actual, expected, atol=atol, rtol=rtol, err_msg=what)
    else:
        np.testing.assert_array_equal(actual, expected, err_msg=what)


def _tolerance(dtype, atol, rtol):
    dtype = np.dtype(dtype)
    if atol is None:
        atol = {np.dtype(np.float16): 1e-2, np.dtype(np.float32): 1e-4}.get(dtype, 1e-8)
    if rtol is None:
        rtol = {np.dtype(np.float16): 1e-2, np.dtype(np.float32): 1e-4}.get(dtype, 1e-7)
    return atol, rtol


def check_output(op, inputs, reference, outputs_to_check=None, atol=None, rtol=None,
                 output_dtypes=None):
    """Runs `op` and compares its outputs with `reference(*inputs)`, which
    returns one array per checked output (a single array is accepted)."""
    outputs = run_op(op, inputs)
    expected = reference(*inputs)
    if not isinstance(expected, (list, tuple)):
        expected = [expected]
    indices = list(range(len(expected))) if outputs_to_check is None else list(outputs_to_check)
    assert len(indices) == len(expected), "reference returned %d outputs for %d checked" % (
        len(expected), len(indices))
    for index, want in zip(indices, expected):
        got = outputs[index]
        if output_dtypes is not None:
            assert got.dtype == np.dtype(output_dtypes[index]), "output %d dtype %s" % (
                index, got.dtype)
        tol_atol, tol_rtol = _tolerance(got.dtype, atol, rtol)
        _assert_close(got, want, tol_atol, tol_rtol,
                      "%s output %d (%s)" % (op.type, index, op.output[index]))
    return outputs


def _densify(gradient, param_shape, dtype):
    """A gradient as a dense array: dense as is, GradientSlice scattered."""
    if isinstance(gradient, tuple):
        indices, values = gradient
        dense = np.zeros(param_shape, dtype=np.float64)
        np.add.at(dense, indices.astype(np.int64).reshape(-1),
                  values.reshape((-1,) + tuple(param_shape[1:])))
        return dense
    return gradient.astype(np.float64)


def gradient_ops(op, output_gradient_names=None):
    """The gradient OperatorDefs of `op` and the gradient blob of each input
    (a name, a (indices, values) pair of names, or None)."""
    grads = output_gradient_names or [name + "_grad" for name in op.output]
    op_bytes, input_grads = _C.get_gradient_defs(op.SerializeToString(), grads)
    ops = []
    for data in op_bytes:
        grad_op = doppio_pb2.OperatorDef()
        grad_op.ParseFromString(data)
        ops.append(grad_op)
    return ops, input_grads


def _analytic_gradients(op, inputs, projections, checked):
    grad_ops, input_grads = gradient_ops(op)
    with _FreshWorkspace():
        _feed(op.input, inputs, op.device_option)
        _C.run_operator_once(op.SerializeToString())
        for name, projection in zip(op.output, projections):
            if projection is not None:
                _C.feed_blob(name + "_grad", projection)
        for grad_op in grad_ops:
            _C.run_operator_once(grad_op.SerializeToString())
        result = {}
        for index in checked:
            grad = input_grads[index]
            assert grad is not None, "%s: input %d (%s) got no gradient" % (
                op.type, index, op.input[index])
            if isinstance(grad, tuple):
                result[index] = (_C.fetch_blob(grad[0]), _C.fetch_blob(grad[1]))
            else:
                result[index] = _C.fetch_blob(grad)
        return result


def check_gradient(op, inputs, checked_inputs, outputs_with_grad=None, step=None,
                   threshold=None, seed=0):
    """Checks d(loss)/d(input) for each index in `checked_inputs`, with
    loss = sum_j <R_j, Y_j> over the outputs in `outputs_with_grad` (all by
    default) and R_j random, against central differences of the forward op.

    Inputs should be float64 where the op supports it: the defaults are
    step 1e-6 / threshold 1e-5 in float64 and step 1e-2 / threshold 5e-2
    (relative) in float32."""
    inputs = [np.asarray(x) for x in inputs]
    rng = np.random.RandomState(seed)
    outputs = run_op(op, inputs)
    wanted = set(range(len(op.output)) if outputs_with_grad is None else outputs_with_grad)
    projections = []
    for index, output in enumerate(outputs):
        if index in wanted and output.dtype.kind == "f":
            projections.append(rng.uniform(-1, 1, output.shape).astype(output.dtype))
        else:
            projections.append(None)

    def loss(values):
        outs = run_op(op, values)
        return sum(float(np.sum(p.astype(np.float64) * o.astype(np.float64)))
                   for p, o in zip(projections, outs) if p is not None)

    analytic = _analytic_gradients(op, inputs, projections, checked_inputs)
    for index in checked_inputs:
        x = inputs[index]
        assert x.dtype.kind == "f", "gradient check needs a float input %d" % index
        is_double = x.dtype == np.float64
        h = step if step is not None else (1e-6 if is_double else 1e-2)
        limit = threshold if threshold is not None else (1e-5 if is_double else 5e-2)
        numeric = np.zeros(x.shape, dtype=np.float64)
        flat = numeric.reshape(-1)
        for i in range(x.size):
            plus = [v.copy() for v in inputs]
            minus = [v.copy() for v in inputs]
            plus[index].reshape(-1)[i] += h
            minus[index].reshape(-1)[i] -= h
            flat[i] = (loss(plus) - loss(minus)) / (2 * h)
        got = _densify(analytic[index], x.shape, x.dtype)
        assert got.shape == numeric.shape, "%s: gradient of input %d has shape %s, want %s" % (
            op.type, index, got.shape, numeric.shape)
        scale = np.maximum(1.0, np.abs(numeric))
        error = np.max(np.abs(got - numeric) / scale) if x.size else 0.0
        assert error <= limit, (
            "%s: gradient of input %d (%s) differs from finite differences by %.3g "
            "(limit %.3g)\nanalytic:\n%s\nnumeric:\n%s" % (
                op.type, index, op.input[index], error, limit, got, numeric))


def check_inplace(op, inputs, atol=None, rtol=None):
    """For each (input, output) pair the schema allows in place, runs the op
    with the output writing over the input and compares with out of place."""
    expected = run_op(op, inputs)
    tried = 0
    for i in range(len(op.input)):
        for o in range(len(op.output)):
            if not _C.inplace_allowed(op.type, i, o) or op.input[i] == op.output[o]:
                continue
            if expected[o].shape != np.asarray(inputs[i]).shape:
                continue  # the output cannot live in that input's blob
            variant = doppio_pb2.OperatorDef()
            variant.CopyFrom(op)
            variant.output[o] = op.input[i]
            got = run_op(variant, inputs)
            for k, (g, e) in enumerate(zip(got, expected)):
                tol_atol, tol_rtol = _tolerance(g.dtype, atol, rtol)
                _assert_close(g, e, tol_atol, tol_rtol,
                              "%s in place (input %d -> output %d), output %d" % (
                                  op.type, i, o, k))
            tried += 1
    return tried


def _cuda_unavailable_reason():
    """Why CPU-vs-CUDA checks cannot run here, or None when they can."""
    if _C.num_cuda_devices() > 0:
        return None
    return "no CUDA device: " + _C.cuda_unavailable_reason()


# Marks a test whose only subject is a CUDA op: without a GPU pytest reports
# it as skipped, with the reason, never as passed. Tests that also check the
# CPU keep their device half in a separate test carrying this mark, since a
# skip inside a hypothesis @given test ends every example, the CPU ones too.
requires_cuda = pytest.mark.skipif(_cuda_unavailable_reason() is not None,
                                   reason=str(_cuda_unavailable_reason()))


def check_device(op, inputs, atol=None, rtol=None):
    """CPU vs CUDA for the same op and inputs. Without a GPU the calling test
    is skipped (pytest.skip); mark it @requires_cuda so the report says why
    before any input is drawn."""
    reason = _cuda_unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    cpu = run_op(op, inputs)
    gpu_op = doppio_pb2.OperatorDef()
    gpu_op.CopyFrom(op)
    gpu_op.device_option.device_type = doppio_pb2.CUDA
    gpu = run_op(gpu_op, inputs)
    for k, (g, c) in enumerate(zip(gpu, cpu)):
        tol_atol, tol_rtol = _tolerance(c.dtype, atol, rtol)
        _assert_close(g, c, tol_atol, tol_rtol, "%s CUDA vs CPU output %d" % (op.type, k))


def assert_op_error(op, inputs, *fragments):
    """Running `op` raises RuntimeError whose message holds every fragment
    (and always the op type)."""
    with pytest.raises(RuntimeError) as info:
        run_op(op, inputs)
    message = str(info.value)
    for fragment in (op.type,) + fragments:
        assert fragment in message, "%r not in error message:\n%s" % (fragment, message)
    return message


# -------------------------------------------------------------- strategies


def dims(min_rank=1, max_rank=4, min_value=1, max_value=5):
    """A shape: a list of min_rank..max_rank dims in [min_value, max_value]."""
    return st.lists(st.integers(min_value, max_value), min_size=min_rank, max_size=max_rank)


def arrays(shape, dtype=np.float32, elements=None):
    """Arrays of `shape` (a tuple or a strategy); floats default to [-1, 1]
    without nan/inf."""
    dtype = np.dtype(dtype)
    if elements is None:
        if dtype.kind == "f":
            elements = st.floats(-1, 1, width=8 * dtype.itemsize, allow_nan=False,
                                 allow_infinity=False)
        elif dtype.kind in "iu":
            info = np.iinfo(dtype)
            elements = st.integers(max(info.min, -100), min(info.max, 100))
        elif dtype.kind == "b":
            elements = st.booleans()
    return hnp.arrays(dtype, shape, elements=elements)


float_dtypes = st.sampled_from([np.float32, np.float64])


@st.composite
def broadcastable_shapes(draw):
    """Two shapes that broadcast numpy-style, in either order."""
    shape = draw(dims(0, 4, 1, 4))
    start = draw(st.integers(0, len(shape)))
    other = [1 if draw(st.booleans()) else d for d in shape[start:]]
    if draw(st.booleans()):
        return tuple(shape), tuple(other)
    return tuple(other), tuple(shape)


def run_main(path):
    """py_test entry point: runs pytest on the test file."""
    import sys
    sys.exit(pytest.main([path, "-q", "-rs", "-p", "no:cacheprovider"]))
