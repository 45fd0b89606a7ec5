"""IsEmpty and HasElements, alone and as If's condition."""
import numpy as np

import op_harness as h


def test_is_empty_and_has_elements():
    for x in (np.zeros((0, 3), np.float32), np.zeros((2, 0)), np.array([], np.int64)):
        assert h.run_op(h.make_op("IsEmpty", ["X"], ["E"]), [x])[0] == np.bool_(True)
        assert h.run_op(h.make_op("HasElements", ["X"], ["E"]), [x])[0] == np.bool_(False)
    for x in (np.zeros((1,), np.int32), np.float32(3.0), np.ones((2, 2))):
        out = h.run_op(h.make_op("IsEmpty", ["X"], ["E"]), [x])[0]
        assert out.dtype == np.bool_ and out.shape == () and not out
    two = h.make_op("HasElements", ["A", "B"], ["E"])
    assert h.run_op(two, [np.zeros(0), np.ones(1)])[0]
    assert not h.run_op(two, [np.zeros(0), np.zeros((0, 2))])[0]


def test_is_empty_has_no_gradient():
    import pytest
    with pytest.raises(RuntimeError, match="IsEmpty"):
        h.gradient_ops(h.make_op("IsEmpty", ["X"], ["E"]))


if __name__ == "__main__":
    h.run_main(__file__)
