"""The operators of operators/onnx_support_op.cc against numpy: the unary
math ops (and their gradients against central finite differences), Floor,
Ceil, Round, Sign, Where, Expand (+ ExpandGradient) and ArgMax/ArgMin."""
import math
import sys

import numpy as np
import pytest

from doppio import _C
from doppio.proto import doppio_pb2

RNG = np.random.RandomState(11)


def make_op(op_type, inputs, outputs, **args):
    op = doppio_pb2.OperatorDef(type=op_type, input=inputs, output=outputs)
    for name, value in args.items():
        arg = op.arg.add(name=name)
        if isinstance(value, (list, tuple)):
            arg.ints.extend(value)
        else:
            arg.i = int(value)
    return op


class _Workspace:
    counter = 0

    def __enter__(self):
        _Workspace.counter += 1
        self.previous = _C.current_workspace()
        _C.switch_workspace('onnx_support_op_test_%d' % _Workspace.counter, True)

    def __exit__(self, *exc):
        _C.reset_workspace()
        _C.switch_workspace(self.previous, True)


def run(ops, feeds, fetch):
    with _Workspace():
        for name, value in feeds.items():
            _C.feed_blob(name, np.require(value, requirements='C'))
        for op in ops:
            _C.run_operator_once(op.SerializeToString())
        return [_C.fetch_blob(name) for name in fetch]


def gradient_ops(op):
    data, input_grads = _C.get_gradient_defs(op.SerializeToString(),
                                             [name + '_grad' for name in op.output])
    ops = []
    for serialized in data:
        grad_op = doppio_pb2.OperatorDef()
        grad_op.ParseFromString(serialized)
        ops.append(grad_op)
    return ops, input_grads


# (op, numpy reference, derivative reference, input range)
MATH = [
    ('Sin', np.sin, np.cos, (-3, 3)),
    ('Cos', np.cos, lambda x: -np.sin(x), (-3, 3)),
    ('Tan', np.tan, lambda x: 1 / np.cos(x) ** 2, (-1.2, 1.2)),
    ('Asin', np.arcsin, lambda x: 1 / np.sqrt(1 - x * x), (-0.9, 0.9)),
    ('Acos', np.arccos, lambda x: -1 / np.sqrt(1 - x * x), (-0.9, 0.9)),
    ('Atan', np.arctan, lambda x: 1 / (1 + x * x), (-4, 4)),
    ('Sinh', np.sinh, np.cosh, (-3, 3)),
    ('Cosh', np.cosh, np.sinh, (-3, 3)),
    ('Asinh', np.arcsinh, lambda x: 1 / np.sqrt(x * x + 1), (-4, 4)),
    ('Acosh', np.arccosh, lambda x: 1 / np.sqrt(x * x - 1), (1.1, 5)),
    ('Atanh', np.arctanh, lambda x: 1 / (1 - x * x), (-0.9, 0.9)),
    ('Erf', np.vectorize(math.erf), lambda x: 2 / np.sqrt(np.pi) * np.exp(-x * x), (-3, 3)),
]


@pytest.mark.parametrize('op_type, reference, derivative, bounds', MATH)
@pytest.mark.parametrize('dtype', [np.float32, np.float64])
def test_math_forward(op_type, reference, derivative, bounds, dtype):
    x = RNG.uniform(*bounds, size=(3, 4)).astype(dtype)
    (y,) = run([make_op(op_type, ['X'], ['Y'])], {'X': x}, ['Y'])
    assert y.dtype == dtype and y.shape == x.shape
    tolerance = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(y, reference(x.astype(np.float64)), rtol=tolerance,
                               atol=tolerance)


@pytest.mark.parametrize('op_type, reference, derivative, bounds', MATH)
def test_math_gradient_matches_finite_differences(op_type, reference, derivative, bounds):
    x = RNG.uniform(*bounds, size=(2, 5))
    dy = RNG.standard_normal(x.shape)
    op = make_op(op_type, ['X'], ['Y'])
    ops, input_grads = gradient_ops(op)
    assert [o.type for o in ops] == [op_type + 'Gradient']
    (dx,) = run([op] + ops, {'X': x, 'Y_grad': dy}, [input_grads[0]])
    step = 1e-6
    (plus,) = run([op], {'X': x + step}, ['Y'])
    (minus,) = run([op], {'X': x - step}, ['Y'])
    numeric = (plus - minus) / (2 * step) * dy
    np.testing.assert_allclose(dx, numeric, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dx, derivative(x) * dy, rtol=1e-10)


def test_math_gradient_refuses_in_place_forward():
    with pytest.raises(RuntimeError, match='in place'):
        gradient_ops(make_op('Sin', ['X'], ['X']))


@pytest.mark.parametrize('op_type, reference', [
    ('Floor', np.floor), ('Ceil', np.ceil), ('Round', np.round), ('Sign', np.sign)])
def test_step_functions(op_type, reference):
    x = np.array([-2.5, -1.5, -0.5, -0.0, 0.0, 0.4, 0.5, 1.5, 2.5, 3.7, np.nan], np.float32)
    (y,) = run([make_op(op_type, ['X'], ['Y'])], {'X': x}, ['Y'])
    np.testing.assert_array_equal(y, reference(x))  # Round: halves to even
    # In place is allowed, and the op has no gradient.
    (z,) = run([make_op(op_type, ['X'], ['X'])], {'X': x.astype(np.float64)}, ['X'])
    np.testing.assert_array_equal(z, reference(x.astype(np.float64)))
    ops, input_grads = gradient_ops(make_op(op_type, ['X'], ['Y']))
    assert ops == [] and input_grads == [None]


def test_sign_of_integers():
    x = np.array([-7, 0, 3], np.int64)
    (y,) = run([make_op('Sign', ['X'], ['Y'])], {'X': x}, ['Y'])
    np.testing.assert_array_equal(y, np.sign(x))
    assert y.dtype == np.int64


@pytest.mark.parametrize('shapes', [
    ((2, 3), (2, 3), (2, 3)), ((3,), (2, 3), (1,)), ((2, 1), (1, 3), (3,)),
    ((), (4, 1, 2), (3, 1)), ((2, 1, 4), (3, 1), ())])
def test_where_broadcasts_like_numpy(shapes):
    c = RNG.standard_normal(shapes[0]) > 0
    x = RNG.standard_normal(shapes[1]).astype(np.float32)
    y = RNG.standard_normal(shapes[2]).astype(np.float32)
    (z,) = run([make_op('Where', ['C', 'X', 'Y'], ['Z'])], {'C': c, 'X': x, 'Y': y}, ['Z'])
    np.testing.assert_array_equal(z, np.where(c, x, y))


def test_where_in_place_and_integer_values():
    c = np.array([True, False, True])
    x = np.array([1, 2, 3], np.int64)
    y = np.array([10, 20, 30], np.int64)
    (z,) = run([make_op('Where', ['C', 'X', 'Y'], ['X'])], {'C': c, 'X': x, 'Y': y}, ['X'])
    np.testing.assert_array_equal(z, [1, 20, 3])


def test_where_errors():
    feeds = {'C': np.array([1.0, 0.0]), 'X': np.zeros(2), 'Y': np.zeros(2)}
    with pytest.raises(RuntimeError, match="condition 'C' holds float64; it must be bool"):
        run([make_op('Where', ['C', 'X', 'Y'], ['Z'])], feeds, ['Z'])
    feeds = {'C': np.array([True, False]), 'X': np.zeros(2), 'Y': np.zeros(3)}
    with pytest.raises(RuntimeError, match="cannot broadcast"):
        run([make_op('Where', ['C', 'X', 'Y'], ['Z'])], feeds, ['Z'])


@pytest.mark.parametrize('x_shape, shape', [
    ((3, 1), (2, 3, 4)), ((3, 1), (1,)), ((1, 4), (3, 1)), ((), (2, 2)), ((2, 3), (2, 3)),
    ((3,), (0, 3))])
def test_expand_matches_numpy_broadcasting(x_shape, shape):
    x = RNG.standard_normal(x_shape).astype(np.float32)
    (y,) = run([make_op('Expand', ['X', 'shape'], ['Y'])],
               {'X': x, 'shape': np.array(shape, np.int64)}, ['Y'])
    expected = x * np.ones(shape, np.float32)  # ONNX: broadcast of both shapes
    np.testing.assert_array_equal(y, expected)


def test_expand_gradient_sums_over_the_stretched_dims():
    x = RNG.standard_normal((3, 1))
    shape = np.array([2, 3, 4], np.int64)
    op = make_op('Expand', ['X', 'shape'], ['Y'])
    ops, input_grads = gradient_ops(op)
    assert [o.type for o in ops] == ['ExpandGradient'] and input_grads[1] is None
    dy = RNG.standard_normal((2, 3, 4))
    (dx,) = run([op] + ops, {'X': x, 'shape': shape, 'Y_grad': dy}, [input_grads[0]])
    np.testing.assert_allclose(dx, dy.sum(axis=(0, 2)).reshape(3, 1), rtol=1e-12)


def test_expand_errors():
    with pytest.raises(RuntimeError, match='cannot broadcast'):
        run([make_op('Expand', ['X', 'shape'], ['Y'])],
            {'X': np.zeros((2, 3)), 'shape': np.array([4, 3], np.int64)}, ['Y'])
    with pytest.raises(RuntimeError, match='must not be negative'):
        run([make_op('Expand', ['X', 'shape'], ['Y'])],
            {'X': np.zeros(2), 'shape': np.array([-1, 2], np.int64)}, ['Y'])
    with pytest.raises(RuntimeError, match='supported types are int32, int64'):
        run([make_op('Expand', ['X', 'shape'], ['Y'])],
            {'X': np.zeros(2), 'shape': np.array([2.0])}, ['Y'])


def _arg_reference(x, axis, keepdims, is_max, last):
    if last:
        flipped = np.flip(x, axis)
        index = x.shape[axis] - 1 - (np.argmax(flipped, axis) if is_max
                                     else np.argmin(flipped, axis))
    else:
        index = np.argmax(x, axis) if is_max else np.argmin(x, axis)
    return np.expand_dims(index, axis) if keepdims else index


@pytest.mark.parametrize('op_type', ['ArgMax', 'ArgMin'])
@pytest.mark.parametrize('axis, keepdims, last', [
    (0, 1, 0), (1, 0, 0), (-1, 1, 1), (2, 0, 1)])
@pytest.mark.parametrize('dtype', [np.float32, np.int32])
def test_arg_max_min(op_type, axis, keepdims, last, dtype):
    # Few distinct values, so ties are common.
    x = RNG.randint(0, 3, size=(3, 4, 5)).astype(dtype)
    op = make_op(op_type, ['X'], ['I'], axis=axis, keepdims=keepdims, select_last_index=last)
    (got,) = run([op], {'X': x}, ['I'])
    assert got.dtype == np.int64
    np.testing.assert_array_equal(
        got, _arg_reference(x, axis, keepdims, op_type == 'ArgMax', last))


def test_arg_max_defaults_and_nan():
    x = np.array([[1.0, np.nan, 3.0], [2.0, 5.0, 5.0]], np.float32)
    (got,) = run([make_op('ArgMax', ['X'], ['I'])], {'X': x}, ['I'])
    np.testing.assert_array_equal(got, [[1], [1]])  # axis -1, keepdims: nan wins
    with pytest.raises(RuntimeError, match='axis 2 is out of range'):
        run([make_op('ArgMin', ['X'], ['I'], axis=2)], {'X': x}, ['I'])


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q']))
