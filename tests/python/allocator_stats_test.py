"""workspace.GetCPUAllocatorStats / ResetCPUAllocatorPeak (Doppio additions
read by memonger's benchmark): feeding, running and removing blobs move the
counted bytes by what numpy says the arrays hold."""
import sys

import numpy as np
import pytest

from doppio import _C, core, workspace


@pytest.fixture(autouse=True)
def fresh_workspace():
    workspace.ResetWorkspace()
    yield
    workspace.ResetWorkspace()


def held():
    return workspace.GetCPUAllocatorStats()["current_bytes"]


def test_stats_are_a_dict_of_ints():
    stats = workspace.GetCPUAllocatorStats()
    assert set(stats) == {"current_bytes", "peak_bytes", "allocations", "allocated_bytes"}
    assert all(isinstance(v, int) and v >= 0 for v in stats.values())
    assert stats["peak_bytes"] >= stats["current_bytes"]


def test_fed_and_removed_blobs_move_current_bytes():
    before = held()
    x = np.ones((4, 3, 32, 32), dtype=np.float32)
    workspace.FeedBlob("x", x)
    assert held() - before == x.nbytes
    y = np.arange(10, dtype=np.int64)
    workspace.FeedBlob("y", y)
    assert held() - before == x.nbytes + y.nbytes
    _C.remove_blob("x")
    assert held() - before == y.nbytes
    workspace.ResetWorkspace()
    assert held() == before


def test_peak_covers_a_temporary_and_reset_lowers_it():
    before = held()
    net = core.Net("fill")
    net.ConstantFill([], "big", shape=[1000, 10], value=1.0)
    net.ConstantFill([], "small", shape=[5], value=2.0)
    workspace.RunNetOnce(net)
    workspace.ResetCPUAllocatorPeak()
    stats = workspace.GetCPUAllocatorStats()
    assert stats["peak_bytes"] == stats["current_bytes"]
    assert stats["current_bytes"] - before == 40000 + 20

    _C.remove_blob("big")
    temp = core.Net("temp")
    temp.ConstantFill([], "t", shape=[100], value=3.0)
    workspace.RunNetOnce(temp)
    _C.remove_blob("t")
    stats = workspace.GetCPUAllocatorStats()
    assert stats["current_bytes"] - before == 20
    # The reset's window began with 40,020 bytes held; the 400-byte
    # temporary came after "big" was freed, so it raised nothing.
    assert stats["peak_bytes"] - before == 40000 + 20

    workspace.ResetCPUAllocatorPeak()
    workspace.RunNetOnce(temp)
    stats = workspace.GetCPUAllocatorStats()
    # ConstantFill may hold a scalar of scratch while it runs; far below
    # the 40,020 bytes of the earlier window in any case.
    assert 20 + 400 <= stats["peak_bytes"] - before <= 20 + 400 + 64


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
