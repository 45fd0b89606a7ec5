"""regularizer and regularizer_context (Caffe2's): L1/L2 penalties equal
numpy's, MaxNorm / ConstantNorm project the rows a sparse gradient touched
(SparseNormalize), and UseRegularizer / UseOptimizer blocks nest."""
import sys

import numpy as np
import pytest

from doppio import core, optimizer, regularizer, workspace
from doppio.optimizer_context import OptimizerContext, UseOptimizer
from doppio.regularizer_context import RegularizerContext, UseRegularizer


@pytest.fixture(autouse=True)
def fresh_workspace():
    workspace.ResetWorkspace()
    yield
    workspace.ResetWorkspace()


@pytest.mark.parametrize('kind,reference', [
    (regularizer.L1Norm, lambda w: np.abs(w).sum()),
    (regularizer.L2Norm, lambda w: (w * w).sum()),
])
def test_penalties_match_numpy(kind, reference):
    w = np.random.RandomState(0).randn(3, 4).astype(np.float32)
    workspace.FeedBlob('w', w)
    net = core.Net('penalty')
    out = kind(0.5)(net, None, core.BlobReference('w'))
    workspace.RunNetOnce(net)
    np.testing.assert_allclose(workspace.FetchBlob(str(out)), 0.5 * reference(w), rtol=1e-5)
    with pytest.raises(AssertionError, match='0 or positive'):
        kind(-1.0)


@pytest.mark.parametrize('kind,use_max', [(regularizer.MaxNorm, True),
                                          (regularizer.ConstantNorm, False)])
def test_row_norms_after_the_optimizer(kind, use_max):
    rng = np.random.RandomState(1)
    w = rng.randn(5, 3).astype(np.float32)
    w[3] *= 0.01  # a short row
    indices = np.array([1, 3], np.int64)
    workspace.FeedBlob('w', w)
    workspace.FeedBlob('i', indices)
    workspace.FeedBlob('g', rng.randn(2, 3).astype(np.float32))
    net = core.Net('project')
    reg = kind(norm=1.5)
    assert reg.apply_after_optimizer
    reg(net, None, core.BlobReference('w'),
        core.GradientSlice(core.BlobReference('i'), core.BlobReference('g')))
    workspace.RunNetOnce(net)
    want = w.copy()
    for row in indices:
        length = np.linalg.norm(want[row])
        if not (use_max and length <= 1.5):
            want[row] *= 1.5 / length
    np.testing.assert_allclose(workspace.FetchBlob('w'), want, rtol=1e-5)
    with pytest.raises(NotImplementedError, match='dense'):
        reg(net, None, core.BlobReference('w'), core.BlobReference('dense_grad'))


def test_contexts_nest_and_override():
    l1, l2 = regularizer.L1Norm(0.1), regularizer.L2Norm(0.2)
    with UseRegularizer({'WEIGHT': l1, 'BIAS': l1}):
        with UseRegularizer({'WEIGHT': l2}):
            context = RegularizerContext.current()
            assert context.get_regularizer('WEIGHT') is l2
            assert context.get_regularizer('BIAS') is l1
        assert RegularizerContext.current().get_regularizer('WEIGHT') is l1
    assert not RegularizerContext.current().has_regularizer('WEIGHT')
    with pytest.raises(AssertionError, match='not provided'):
        RegularizerContext.current().get_regularizer('WEIGHT')
    sgd = optimizer.SgdOptimizer(0.1)
    with UseOptimizer(sgd):
        assert OptimizerContext.current().get_optimizer('DEFAULT') is sgd


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
