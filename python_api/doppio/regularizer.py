"""Caffe2's regularizers: `reg(net, param_init_net, param, grad)` adds to
`net` either a penalty blob to add to the loss (L1Norm, L2Norm: lambda
times the parameter's L1 norm or squared L2 norm, LpNorm's outputs) or,
applied after the optimizer (apply_after_optimizer), a projection of the
rows a sparse gradient touched (MaxNorm: rows longer than `norm` scaled
back to it; ConstantNorm: every touched row scaled to length `norm`)."""
from doppio import core


class Regularizer(object):
    def __init__(self):
        self.apply_after_optimizer = False

    def __call__(self, net, param_init_net, param, grad=None):
        if not isinstance(param, core.BlobReference):
            raise AssertionError('the parameter must be a BlobReference, got {!r}'.format(
                param))
        return self._run(net, param_init_net, param, grad)

    def _run(self, net, param_init_net, param, grad):
        raise NotImplementedError('{} does not implement _run'.format(type(self).__name__))


class _LpPenalty(Regularizer):
    _p = None

    def __init__(self, reg_lambda):
        super(_LpPenalty, self).__init__()
        if reg_lambda < 0:
            raise AssertionError('factor ahead of regularization should be 0 or positive')
        self.reg_lambda = reg_lambda

    def _run(self, net, param_init_net, param, grad=None):
        output = net.NextScopedBlob(param + '_l{}_regularization'.format(self._p))
        net.LpNorm([param], [output], p=self._p)
        net.Scale([output], [output], scale=float(self.reg_lambda))
        return output


class L1Norm(_LpPenalty):
    """reg_lambda * sum |w|."""
    _p = 1


class L2Norm(_LpPenalty):
    """reg_lambda * sum w^2 (LpNorm's p=2 output, the squared norm)."""
    _p = 2


class _RowNorm(Regularizer):
    _use_max_norm = None

    def __init__(self, norm=1.0):
        super(_RowNorm, self).__init__()
        self.norm = norm
        self.apply_after_optimizer = True

    def _run(self, net, param_init_net, param, grad):
        if not self.norm > 0:
            raise AssertionError('norm should be bigger than 0.')
        if not isinstance(grad, core.GradientSlice):
            raise NotImplementedError('{} is not supported for dense parameters'.format(
                type(self).__name__))
        net.SparseNormalize([param, grad.indices, grad.values], [param],
                            use_max_norm=self._use_max_norm, norm=float(self.norm))


class MaxNorm(_RowNorm):
    """Rows the gradient touched are scaled down to L2 norm `norm` at most."""
    _use_max_norm = True


class ConstantNorm(_RowNorm):
    """Rows the gradient touched are scaled to L2 norm `norm`."""
    _use_max_norm = False
