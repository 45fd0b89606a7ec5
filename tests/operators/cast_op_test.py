"""Cast against numpy's astype."""
import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given

import op_harness as h

# TensorProto.DataType values and names.
TYPES = {
    np.float32: (1, "FLOAT"), np.int32: (2, "INT32"), np.bool_: (5, "BOOL"),
    np.uint8: (6, "UINT8"), np.int8: (7, "INT8"), np.uint16: (8, "UINT16"),
    np.int16: (9, "INT16"), np.int64: (10, "INT64"), np.float16: (12, "FLOAT16"),
    np.float64: (13, "DOUBLE"), np.uint32: (17, "UINT32"), np.uint64: (18, "UINT64"),
}
types = st.sampled_from(sorted(TYPES, key=lambda t: TYPES[t][0]))


def _cast_case(shape, source, target, by_name, data):
    """(x, the Cast op); `to` by number or by name."""
    # Values every type holds exactly, so numpy's astype is the reference.
    x = data.draw(h.arrays(tuple(shape), np.int64, elements=st.integers(0, 100))).astype(source)
    number, name = TYPES[target]
    return x, h.make_op("Cast", ["X"], ["Y"], to=name.lower() if by_name else number)


@given(h.dims(0, 3), types, types, st.booleans(), st.data())
def test_cast_matches_numpy(shape, source, target, by_name, data):
    x, op = _cast_case(shape, source, target, by_name, data)
    h.check_output(op, [x], lambda x: x.astype(target), output_dtypes=[target])


@h.requires_cuda
@given(h.dims(0, 3), types, types, st.booleans(), st.data())
def test_cast_cuda_matches_cpu(shape, source, target, by_name, data):
    x, op = _cast_case(shape, source, target, by_name, data)
    h.check_device(op, [x])


def test_float_to_int_truncates_and_saturates():
    x = np.array([1.7, -1.7, 3e9, -3e9, np.nan, 255.9, -1.0], np.float32)
    got = h.run_op(h.make_op("Cast", ["X"], ["Y"], to=2), [x])[0]
    np.testing.assert_array_equal(got, [1, -1, 2147483647, -2147483648, 0, 255, -1])
    got = h.run_op(h.make_op("Cast", ["X"], ["Y"], to="uint8"), [x])[0]
    np.testing.assert_array_equal(got, [1, 0, 255, 0, 0, 255, 0])
    got = h.run_op(h.make_op("Cast", ["X"], ["Y"], to="bool"), [np.array([0.0, -0.5, 2.0])])[0]
    np.testing.assert_array_equal(got, [False, True, True])


def test_cast_to_string():
    got = h.run_op(h.make_op("Cast", ["X"], ["Y"], to="STRING"), [np.array([1, -2], np.int32)])[0]
    assert list(got) == [b"1", b"-2"]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_shortest_strings_are_numpys(dtype):
    rng = np.random.RandomState(0)
    x = np.concatenate([rng.uniform(0, 1, 50), rng.standard_normal(20) * 10.0 ** rng.randint(
        -12, 12, 20), [0.0, -0.0, 1e-45 if dtype == np.float32 else 5e-324, 123456789.0]])
    x = x.astype(dtype)
    got = h.run_op(h.make_op("Cast", ["X"], ["Y"], to="STRING", shortest_strings=1), [x])[0]
    assert [g.decode() for g in got] == [str(v) for v in x]
    specials = np.array([np.nan, np.inf, -np.inf], dtype)
    got = h.run_op(h.make_op("Cast", ["X"], ["Y"], to="STRING", shortest_strings=1),
                   [specials])[0]
    assert list(got) == [b"NaN", b"INF", b"-INF"]


@pytest.mark.parametrize("to,dtype", [("FLOAT", np.float32), ("DOUBLE", np.float64),
                                      ("INT64", np.int64), ("INT8", np.int8)])
def test_strings_read_as_numbers(to, dtype):
    if np.dtype(dtype).kind == "f":
        texts = ["0.47892547", "-1e-3", "NaN", "INF", "+INF", "-inf", " 2.5", "7"]
        want = np.array([float(t) for t in texts], dtype)
    else:
        texts = ["12", "-7", "0", "3.9", "1e2"]
        want = np.array([12, -7, 0, 3, 100], dtype)
    got = h.run_op(h.make_op("Cast", ["S"], ["Y"], to=to), [np.array(texts, object)])[0]
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, want)
    big = h.run_op(h.make_op("Cast", ["S"], ["Y"], to="INT64"),
                   [np.array(["9007199254740993"], object)])[0]
    assert big[0] == 9007199254740993  # exact, beyond a double's 53 bits
    huge = h.run_op(h.make_op("Cast", ["S"], ["Y"], to="UINT64"),
                    [np.array(["18446744073709551615", "7", "-0"], object)])[0]
    np.testing.assert_array_equal(huge, np.array([2**64 - 1, 7, 0], np.uint64))
    h.assert_op_error(h.make_op("Cast", ["S"], ["Y"], to="UINT64"),
                      [np.array(["-3"], object)], "'S'[0]", "range of uint64")
    h.assert_op_error(h.make_op("Cast", ["S"], ["Y"], to="INT32"),
                      [np.array(["12abc"], object)], "'S'[0]", "not a number")


def test_gradient_casts_back():
    op = h.make_op("Cast", ["X"], ["Y"], to=1, from_type="DOUBLE")
    ops, grads = h.gradient_ops(op)
    args = {a.name: a.i for a in ops[0].arg}
    assert ops[0].type == "Cast" and args == {"to": 13, "from_type": 1}
    x = np.random.RandomState(0).uniform(-1, 1, (2, 3)).astype(np.float64)
    h.check_gradient(h.make_op("Cast", ["X"], ["Y"], to=13, from_type=13), [x], [0])
    with pytest.raises(RuntimeError, match="from_type"):
        h.gradient_ops(h.make_op("Cast", ["X"], ["Y"], to=1))


def test_bad_types():
    x = np.zeros(3, np.float32)
    h.assert_op_error(h.make_op("Cast", ["X"], ["Y"], to=99), [x], "'to'", "99")
    h.assert_op_error(h.make_op("Cast", ["X"], ["Y"], to="complex"), [x], "'to'", "complex")
    h.assert_op_error(h.make_op("Cast", ["X"], ["Y"], to=0), [x], "'to'")
    h.assert_op_error(h.make_op("Cast", ["X"], ["Y"], to=3), [x], "BYTE")
    h.assert_op_error(h.make_op("Cast", ["X"], ["Y"]), [x], "'to'")
    h.assert_op_error(h.make_op("Cast", ["S"], ["Y"], to=1),
                      [np.array(["1", "2.5x"], object)], "'S'[1]", "2.5x", "not a number")
    h.assert_op_error(h.make_op("Cast", ["S"], ["Y"], to="uint8"),
                      [np.array(["300"], object)], "'S'[0]", "range of uint8")


# ---- FloatToHalf / HalfToFloat against numpy's float16 ----

finite_floats = st.floats(-70000, 70000, width=32)


@given(h.dims(0, 3), st.data())
def test_float_to_half_matches_numpy(shape, data):
    x = data.draw(h.arrays(tuple(shape), np.float32, elements=finite_floats))
    # numpy rounds to nearest even and overflows to inf, as Caffe2 does.
    h.check_output(h.make_op("FloatToHalf", ["X"], ["Y"]), [x],
                   lambda x: x.astype(np.float16), output_dtypes=[np.float16])


@given(h.dims(0, 3), st.data())
def test_float_to_half_clip_saturates(shape, data):
    x = data.draw(h.arrays(tuple(shape), np.float32, elements=finite_floats))
    h.check_output(h.make_op("FloatToHalf", ["X"], ["Y"], clip=1), [x],
                   lambda x: np.clip(x, -65504, 65504).astype(np.float16),
                   output_dtypes=[np.float16])


def test_float_to_half_specials():
    x = np.array([np.inf, -np.inf, np.nan, 1e-8, -0.0, 65520.0], np.float32)
    got = h.run_op(h.make_op("FloatToHalf", ["X"], ["Y"]), [x])[0]
    with np.errstate(over="ignore"):  # 65520 overflows to inf, as intended
        want = x.astype(np.float16)
    np.testing.assert_array_equal(got, want)
    got = h.run_op(h.make_op("FloatToHalf", ["X"], ["Y"], clip=True), [x])[0]
    np.testing.assert_array_equal(got[[0, 1, 5]], np.array([65504, -65504, 65504], np.float16))
    assert np.isnan(got[2])


def test_cast_between_float_and_float16_rounds_as_numpy():
    # Cast takes the vectorized conversions for these pairs: non-integers,
    # ties, overflow, subnormals and specials, past the vector width.
    rng = np.random.RandomState(5)
    x = np.concatenate([rng.randn(997) * 300, [65520.0, 1e-7, np.inf, -np.inf, np.nan],
                        1 + (2 * np.arange(16) + 1) * 2.0 ** -12]).astype(np.float32)
    (y,) = h.run_op(h.make_op("Cast", ["X"], ["Y"], to=12), [x])
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(y, x.astype(np.float16))
    (back,) = h.run_op(h.make_op("Cast", ["X"], ["Y"], to=1), [y])
    np.testing.assert_array_equal(back, y.astype(np.float32))


@given(h.dims(0, 3), st.data())
def test_half_to_float_is_exact(shape, data):
    bits = data.draw(h.arrays(tuple(shape), np.int64, elements=st.integers(0, 0xFFFF)))
    x = bits.astype(np.uint16).view(np.float16)  # every float16, nan and inf included
    got = h.run_op(h.make_op("HalfToFloat", ["X"], ["Y"]), [x])[0]
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, x.astype(np.float32))


def test_precision_casts_are_each_others_gradient():
    for op_type, inverse in (("FloatToHalf", "HalfToFloat"), ("HalfToFloat", "FloatToHalf")):
        ops, grads = h.gradient_ops(h.make_op(op_type, ["X"], ["Y"]))
        assert [(o.type, list(o.input), list(o.output)) for o in ops] == [
            (inverse, ["Y_grad"], ["X_grad"])]


def test_precision_casts_refuse_other_types():
    h.assert_op_error(h.make_op("FloatToHalf", ["X"], ["Y"]), [np.zeros(2, np.float64)],
                      "'X'", "float64", "float32")
    h.assert_op_error(h.make_op("HalfToFloat", ["X"], ["Y"]), [np.zeros(2, np.float32)],
                      "'X'", "float16")


if __name__ == "__main__":
    h.run_main(__file__)
