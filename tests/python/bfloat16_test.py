"""bfloat16 tensors (TensorProto BFLOAT16 = 16): fed from floats (rounded to
nearest even) or uint16 bit patterns, fetched widened to float32, cast,
filled, saved and loaded; checked against PyTorch's bfloat16 rounding."""
import os

import numpy as np
import pytest

from doppio import core, workspace
from doppio.proto import doppio_pb2

torch = pytest.importorskip("torch")
BFLOAT16 = doppio_pb2.TensorProto.BFLOAT16


@pytest.fixture(autouse=True)
def fresh_workspace():
    workspace.ResetWorkspace()
    yield
    workspace.ResetWorkspace()


def _torch_bfloat16(x):
    return torch.from_numpy(np.asarray(x, np.float32)).to(torch.bfloat16).float().numpy()


def _values(seed=0):
    rng = np.random.RandomState(seed)
    x = (rng.randn(200) * 10.0 ** rng.randint(-30, 30, 200)).astype(np.float32)
    bits = x.view(np.uint32)
    bits[::9] = (bits[::9] & 0xffff0000) | 0x8000  # exact midpoints: ties to even
    return np.concatenate([x, np.float32([0.0, -0.0, np.inf, -np.inf, 3.4e38, 1e-40])])


def test_fed_floats_round_as_torch_and_fetch_widened():
    x = _values()
    workspace.FeedBlob("b", workspace.BFloat16Tensor(x))
    got = workspace.FetchBlob("b")
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, _torch_bfloat16(x))
    workspace.FeedBlob("n", workspace.BFloat16Tensor(np.float32([np.nan])))
    assert np.isnan(workspace.FetchBlob("n")[0])


def test_fed_bit_patterns_are_kept():
    bits = np.array([0x3f80, 0xc000, 0x0001, 0x7f7f, 0x8000], np.uint16)
    workspace.FeedBlob("b", workspace.BFloat16Tensor(bits))
    want = (bits.astype(np.uint32) << 16).view(np.float32)
    np.testing.assert_array_equal(workspace.FetchBlob("b"), want)


def test_cast_to_and_from_bfloat16():
    x = _values(1)
    workspace.FeedBlob("x", x)
    workspace.RunOperatorOnce(core.CreateOperator("Cast", ["x"], ["b"], to=BFLOAT16))
    np.testing.assert_array_equal(workspace.FetchBlob("b"), _torch_bfloat16(x))
    workspace.RunOperatorOnce(core.CreateOperator("Cast", ["b"], ["i"], to="INT32"))
    finite = np.isfinite(_torch_bfloat16(x)) & (np.abs(_torch_bfloat16(x)) < 2e9)
    np.testing.assert_array_equal(workspace.FetchBlob("i")[finite],
                                  _torch_bfloat16(x)[finite].astype(np.int32))
    workspace.RunOperatorOnce(core.CreateOperator("Cast", ["b"], ["d"], to="DOUBLE"))
    np.testing.assert_array_equal(workspace.FetchBlob("d"), _torch_bfloat16(x).astype(np.float64))


def test_fill_and_save_load_keep_the_bits(tmp_path):
    workspace.RunOperatorOnce(core.CreateOperator(
        "ConstantFill", [], ["c"], shape=[2, 3], value=1.1, dtype=BFLOAT16))
    np.testing.assert_array_equal(workspace.FetchBlob("c"), np.full((2, 3), _torch_bfloat16(1.1)))
    workspace.FeedBlob("b", workspace.BFloat16Tensor(_values(2)))
    path = str(tmp_path / "bf16.minidb")
    workspace.RunOperatorOnce(core.CreateOperator(
        "Save", ["b", "c"], [], absolute_path=1, db=path, db_type="minidb"))
    want = workspace.FetchBlob("b")
    workspace.ResetWorkspace()
    workspace.RunOperatorOnce(core.CreateOperator(
        "Load", [], ["b", "c"], absolute_path=1, db=path, db_type="minidb"))
    np.testing.assert_array_equal(workspace.FetchBlob("b"), want)
    assert os.path.getsize(path) > 0


def test_bad_feeds_and_python_op_views_are_errors():
    with pytest.raises(RuntimeError, match="'b'.*int32"):
        workspace.FeedBlob("b", workspace.BFloat16Tensor(np.arange(3, dtype=np.int32)))
    assert not workspace.HasBlob("b")
    workspace.FeedBlob("b", workspace.BFloat16Tensor(np.float32([1.5])))

    def f(inputs, outputs):
        inputs[0].data  # numpy cannot view bfloat16 in place

    with pytest.raises(RuntimeError, match="'b'.*bfloat16.*Cast"):
        workspace.RunOperatorOnce(core.CreatePythonOperator(f, ["b"], []))


if __name__ == "__main__":
    raise SystemExit(pytest.main([__file__, "-v"]))
