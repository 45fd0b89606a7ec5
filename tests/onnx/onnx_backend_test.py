"""ONNX's own backend test suite (onnx.backend.test) against doppio.onnx.

Every ONNX test model (node, pytorch-converted, pytorch-operator and simple
tests of the installed libonnx-testdata) is either run -- it matches an
INCLUDED family and no EXCLUDED_TESTS pattern -- or listed as unsupported
with the reason. The include list only grows; test_every_model_is_classified
fails when new test data appear unclassified, and
test_the_included_models_run guards against the suite silently running
nothing. The reference outputs are ONNX's (computed by its numpy reference
implementations), independent of Doppio.
"""
import os
import re
import unittest

import numpy as np
import onnx
import onnx.backend.test

from doppio.onnx import backend

# Families run in full (regexes over test names such as test_relu_cpu).
INCLUDED = [
    # elementwise math and activations
    r'^test_(abs|neg|exp|log|sqrt|reciprocal|floor|ceil|round|sign|erf)_',
    r'^test_(sin|cos|tan|asin|acos|atan|sinh|cosh|asinh|acosh|atanh)_',
    r'^test_(relu|sigmoid|tanh|elu|selu|celu|leakyrelu|prelu|thresholdedrelu)_',
    r'^test_(softplus|softsign|hardsigmoid|hardswish|shrink)_',
    r'^test_(add|sub|mul|div|pow)_',
    r'^test_(sum|mean|max|min)_',
    r'^test_clip_',
    r'^test_(isnan|isinf)_',
    # comparison and logic
    r'^test_(equal|greater|greater_equal|less|less_equal)_',
    r'^test_(and|or|xor)(\d|_bcast)', r'^test_not_',
    r'^test_where_',
    # convolution, pooling, normalization
    r'^test_(basic_conv|conv)_with', r'^test_convtranspose',
    r'^test_(averagepool|maxpool)_', r'^test_global(average|max)pool_',
    r'^test_batchnorm_', r'^test_instancenorm_', r'^test_lrn_',
    r'^test_layer_normalization_', r'^test_mvn_',
    # matrix products, softmax, dropout
    r'^test_gemm_', r'^test_matmul_\d', r'^test_(softmax|logsoftmax)_',
    r'^test_dropout_',
    # reductions
    r'^test_reduce_(sum|sum_square|mean|max|min|l1|l2|log_sum|log_sum_exp)_',
    r'^test_(argmax|argmin|hardmax)_',
    # tensor manipulation and creation
    r'^test_(reshape|flatten|transpose|squeeze|unsqueeze|concat|split)_',
    r'^test_(slice|gather_\d|gather_2d|gather_negative|shape|size)', r'^test_(expand_dim|tile)',
    r'^test_gather_elements_', r'^test_einsum_',
    r'^test_(cast|castlike)_', r'^test_identity_cpu', r'^test_constant(_|ofshape_)',
    r'^test_(constant|edge|reflect)_pad', r'^test_eyelike_', r'^test_range_[a-z0-9_]*delta_cpu',
    r'^test_(depthtospace|spacetodepth)_', r'^test_tri[lu]_', r'^test_(resize|upsample)_',
    # detection
    r'^test_roialign_',
    # models converted from PyTorch modules and operators
    r'^test_(AvgPool|BatchNorm|Conv|ConvTranspose|MaxPool|PReLU|Embedding|Linear|GLU)',
    r'^test_(ELU|LeakyReLU|ReLU|SELU|Sigmoid|Tanh|Softmax|Softmin|Softplus|Softsign)_',
    r'^test_(LogSoftmax|log_softmax|softmax_functional|softmax_lastdim)',
    r'^test_(ConstantPad2d|ZeroPad2d|ReflectionPad2d|ReplicationPad2d|PixelShuffle)',
    r'^test_PoissonNLLLLoss_no_reduce', r'^test_operator_',
    # "simple" models
    r'^test_(expand_shape_model|sign_model|single_relu_model|shrink_cpu)',
]

# Tests of included families that Doppio cannot run, with the reason.
EXCLUDED_TESTS = {
    r'^test_(cast|castlike)_FLOAT_to_BFLOAT16':
        "onnx 1.12's expected values truncate to bfloat16; Doppio rounds to nearest even, as "
        'ONNX specifies since 1.14 and PyTorch does',
    r'^test_einsum_batch_diagonal': 'Einsum with a repeated letter (a diagonal)',
}

# Families not run, each with the reason (documentation, and the other half
# of test_every_model_is_classified).
UNSUPPORTED = {
    r'^test_(adagrad|adam|momentum|nesterov_momentum|gradient_of)':
        'training operators (ai.onnx.preview.training)',
    r'^test_training_dropout': 'training mode: models are imported for inference',
    r'^test_bernoulli': 'random outputs cannot match a reference',
    r'^test_bitshift': 'BitShift: unsigned 32/64-bit types do not exist in Doppio',
    r'^test_(blackman|hamming|hann)window|^test_(dft|stft|melweightmatrix)':
        'signal-processing operators',
    r'^test_(basic_convinteger|convinteger|matmulinteger|qlinear|quantizelinear|'
    r'dequantizelinear|dynamicquantizelinear)': 'quantized operators',
    r'^test_(gathernd|scatter|scatternd|compress|nonzero|unique|top_k|'
    r'onehot|cumsum|reversesequence|maxunpool|nonmaxsuppression)':
        'index and selection operators Doppio has no op for',
    r'^test_(det|reduce_prod|gridsample)_': 'operators Doppio has no op for',
    r'^test_mod_': 'Mod of run-time values (Doppio folds Mod of constants only)',
    r'^test_(gru|lstm|rnn|simple_rnn)_': 'recurrent operators',
    r'^test_(if|loop\d+|scan\d*_sum)': 'control flow (subgraphs)',
    r'^test_(sequence|optional|identity_opt|identity_sequence)':
        'sequence and optional types: Doppio blobs hold tensors',
    r'^test_(nllloss|sce)_': 'loss operators (their expanded forms use GatherElements)',
    r'^test_(strnorm|tfidfvectorizer)': 'string operators',
    r'^test_range_.*_expanded': 'the expanded Range is a Loop',
}


class DoppioBackendTest(onnx.backend.test.BackendTest):
    @classmethod
    def assert_similar_outputs(cls, ref_outputs, outputs, rtol, atol):
        # onnx 1.12's version names np.object, which numpy 1.24 removed.
        np.testing.assert_equal(len(outputs), len(ref_outputs))
        for ref, out in zip(ref_outputs, outputs):
            np.testing.assert_equal(out.dtype, ref.dtype)
            if ref.dtype == object:
                np.testing.assert_array_equal(out, ref)
            else:
                np.testing.assert_allclose(out, ref, rtol=rtol, atol=atol)


backend_test = DoppioBackendTest(backend.DoppioBackend, __name__)
for pattern in INCLUDED:
    backend_test.include(pattern)
for pattern in EXCLUDED_TESTS:
    backend_test.exclude(pattern)
globals().update(backend_test.test_cases)


def _model_test_names():
    data = os.path.join(os.path.dirname(onnx.__file__), 'backend', 'test', 'data')
    names = []
    for kind in ('node', 'pytorch-converted', 'pytorch-operator', 'simple'):
        for entry in sorted(os.listdir(os.path.join(data, kind))):
            if os.path.exists(os.path.join(data, kind, entry, 'model.onnx')):
                names.append(entry + '_cpu')
    return names


def _matches(patterns, name):
    return any(re.search(p, name) for p in patterns)


class ClassificationTest(unittest.TestCase):
    def test_every_model_is_classified(self):
        unclassified, contradictory = [], []
        for name in _model_test_names():
            runs = _matches(INCLUDED, name) and not _matches(EXCLUDED_TESTS, name)
            listed = _matches(UNSUPPORTED, name) or _matches(EXCLUDED_TESTS, name)
            if not runs and not listed:
                unclassified.append(name)
            if runs and _matches(UNSUPPORTED, name):
                contradictory.append(name)
        self.assertEqual(unclassified, [], 'include them, or list them as unsupported')
        self.assertEqual(contradictory, [], 'both included and listed as unsupported')

    def test_the_included_models_run(self):
        names = _model_test_names()
        included = [n for n in names if _matches(INCLUDED, n) and not _matches(EXCLUDED_TESTS, n)]
        self.assertGreater(len(included), 650)
        cases = backend_test.test_cases
        methods = {name for case in cases.values() for name in dir(case)
                   if name.startswith('test_')}
        self.assertEqual(sorted(set(included) - methods), [])
        # The included ones are not skipped (only CUDA variants are).
        for case in cases.values():
            for name in included:
                method = getattr(case, name, None)
                if method is not None:
                    self.assertFalse(getattr(method, '__unittest_skip__', False), name)


if __name__ == '__main__':
    unittest.main(verbosity=1)
