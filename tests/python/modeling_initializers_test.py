"""caffe2.python.modeling.initializers and parameter_info: which ops each
Initializer adds, the blobs they make (values checked against numpy), and
how brew helpers pick them (an Initializer class, as Caffe2 scripts pass)."""
import sys

import numpy as np
import pytest

from caffe2.python import brew, core, model_helper, workspace
from caffe2.python.modeling import initializers
from caffe2.python.modeling.parameter_info import ParameterInfo, ParameterType


@pytest.fixture(autouse=True)
def fresh_workspace():
    workspace.ResetWorkspace()
    yield
    workspace.ResetWorkspace()


def _ops(net):
    return [(op.type, list(op.input), list(op.output)) for op in net.Proto().op]


def test_initializer_is_one_fill_op():
    net = core.Net('init')
    info = initializers.Initializer('ConstantFill', value=1.5).create_param('w', net, [2, 3])
    assert isinstance(info, ParameterInfo) and info.blob_copy is None
    assert _ops(net) == [('ConstantFill', [], ['w'])]
    assert info.shape == [2, 3] and info.size == 6
    workspace.RunNetOnce(net)
    np.testing.assert_array_equal(workspace.FetchBlob('w'), np.full((2, 3), 1.5, np.float32))


def test_pseudo_fp16_keeps_a_float32_master():
    net = core.Net('init')
    info = initializers.PseudoFP16Initializer('GaussianFill', std=2.0).create_param(
        'w', net, [4, 5])
    assert _ops(net) == [('GaussianFill', [], ['w_fp32']), ('FloatToHalf', ['w_fp32'], ['w'])]
    assert str(info.blob) == 'w' and str(info.blob_copy[core.DataType.FLOAT]) == 'w_fp32'
    workspace.RunNetOnce(net)
    master = workspace.FetchBlob('w_fp32')
    assert master.dtype == np.float32 and workspace.FetchBlob('w').dtype == np.float16
    np.testing.assert_array_equal(workspace.FetchBlob('w'), master.astype(np.float16))


def test_reverse_pseudo_fp16_keeps_a_float16_copy():
    net = core.Net('init')
    info = initializers.ReversePseudoFP16Initializer('ConstantFill', value=0.1).create_param(
        'w', net, [3])
    assert _ops(net) == [('ConstantFill', [], ['w']), ('FloatToHalf', ['w'], ['w_fp16'])]
    assert str(info.blob_copy[core.DataType.FLOAT16]) == 'w_fp16'


def test_external_initializer_adds_nothing():
    net = core.Net('init')
    info = initializers.ExternalInitializer().create_param('w', net, [2])
    assert _ops(net) == [] and str(info.blob) == 'w'
    with pytest.raises(TypeError, match='param_name'):
        initializers.ExternalInitializer().create_param(3, net, [2])


def test_update_initializer_takes_a_class_or_an_object():
    default = ('XavierFill', {})
    chosen = initializers.update_initializer(None, None, default)
    assert type(chosen) is initializers.Initializer and chosen.operator_name == 'XavierFill'
    chosen = initializers.update_initializer(None, ('MSRAFill', {}), default)
    assert chosen.operator_name == 'MSRAFill'
    chosen = initializers.update_initializer(initializers.PseudoFP16Initializer,
                                             ('ConstantFill', {'value': 2.0}), default)
    assert type(chosen) is initializers.PseudoFP16Initializer
    assert chosen.operator_kwargs == {'value': 2.0}
    ready = initializers.Initializer('ConstantFill', value=3.0)
    assert initializers.update_initializer(ready, None, default) is ready
    with pytest.raises(ValueError, match='overwrite'):
        ready.update('XavierFill', {})


def test_brew_arg_scope_picks_the_initializer_class():
    model = model_helper.ModelHelper(name='scoped_init')
    with brew.arg_scope([brew.fc], WeightInitializer=initializers.PseudoFP16Initializer,
                        BiasInitializer=initializers.Initializer):
        brew.fc(model, 'x', 'y', 3, 2)
    types = [op.type for op in model.param_init_net.Proto().op]
    assert types == ['XavierFill', 'FloatToHalf', 'ConstantFill']
    infos = {str(i.blob): i for i in [model.get_param_info(p) for p in model.params]}
    assert str(infos['y_w'].blob_copy[core.DataType.FLOAT]) == 'y_w_fp32'
    assert infos['y_b'].blob_copy is None


def test_parameter_info_grad_type_and_optimizer():
    info = ParameterInfo(param_id=None, param=core.BlobReference('w'), shape=[2, 2])
    assert info.grad_type() is None
    info.grad = core.BlobReference('w_grad')
    assert info.grad_type() == ParameterType.DENSE
    info.grad = core.GradientSlice(core.BlobReference('i'), core.BlobReference('v'))
    assert info.grad_type() == ParameterType.SPARSE
    info.optimizer = 'sgd'
    with pytest.raises(ValueError, match='already has an optimizer'):
        info.optimizer = 'adam'
    with pytest.raises(TypeError):
        ParameterInfo(param_id=None, param='w')


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q', '-p', 'no:cacheprovider']))
