"""models.seq2seq.seq2seq_model_helper: parameters added trainable or not,
found by name scope, initialized by param_init_net."""
import sys

import numpy as np
import pytest

from doppio import scope, workspace
from doppio.models.seq2seq.seq2seq_model_helper import Seq2SeqModelHelper


def test_params_by_kind_and_scope():
    workspace.ResetWorkspace()
    m = Seq2SeqModelHelper(name='s2s')
    assert m.arg_scope == {'use_cudnn': True, 'cudnn_exhaustive_search': False,
                           'order': 'NHWC'}
    p1 = m.AddParam('w', init_value=1.5)
    p2 = m.AddParam('frozen', init=('ConstantFill', {'shape': [2], 'value': 3.0}),
                    trainable=False)
    with scope.NameScope('enc', reset=True):
        p3 = m.AddParam('frozen2', init_value=2, trainable=False)
        assert m.GetNonTrainableParams() == [p3]
    assert m.GetNonTrainableParams() == [p2, p3]
    assert m.GetAllParams() == [p1, p2, p3]
    workspace.RunNetOnce(m.param_init_net)
    np.testing.assert_array_equal(workspace.FetchBlob('frozen'), [3.0, 3.0])
    np.testing.assert_array_equal(workspace.FetchBlob('w'), [1.5])


def test_external_params_and_errors():
    m = Seq2SeqModelHelper(init_params=False)
    p = m.AddParam('given')
    assert str(p) in m.net.Proto().external_input
    with pytest.raises(AssertionError, match='not both'):
        Seq2SeqModelHelper().AddParam('x', init=('ConstantFill', {}), init_value=1)
    with pytest.raises(AssertionError, match='needs init'):
        Seq2SeqModelHelper().AddParam('x')


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
