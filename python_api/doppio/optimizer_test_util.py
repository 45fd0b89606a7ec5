"""Caffe2's optimizer_test_util: mixins that test an optimizer by training.

A test class mixes in OptimizerTestBase (and, for optimizers that take
max_gradient_norm / allow_lr_injection, LRModificationTestBase) with a
unittest.TestCase and provides
    build_optimizer(model, **kwargs) -> the optimizer, built on the model
    check_optimizer(optimizer)          checks its auxiliary blobs
    _skip_gpu                           set by build_optimizer
Each mixin test fits y = x . [2, 6, 5, 0, 1] on 20 random binary rows, one
row per step for 2000 steps, and checks that the learned weights reach the
true ones within 1e-2: densely through an FC layer, and sparsely through a
Gather of a weight vector (every weight addressed twice per row, so
repeated indices are exercised).
"""
import unittest

import numpy as np

from doppio import brew, cnn, core, optimizer, workspace
from doppio.model_helper import ModelHelper
from doppio.modeling.initializers import Initializer, PseudoFP16Initializer
from doppio.proto import doppio_pb2 as caffe2_pb2

TRUE_WEIGHTS = np.array([2, 6, 5, 0, 1], dtype=np.float32)
ROWS = 20
STEPS = 2000


class OptimizerTestBase(object):
    """Mixin (not a TestCase itself, so unittest does not collect it)."""

    def _createDense(self, dtype=core.DataType.FLOAT):
        np.random.seed(123)
        float16 = dtype == core.DataType.FLOAT16
        data = np.random.randint(2, size=(ROWS, TRUE_WEIGHTS.size)).astype(
            np.float16 if float16 else np.float32)
        label = np.dot(data, TRUE_WEIGHTS)[:, np.newaxis]
        model = ModelHelper(name='test', arg_scope={'order': 'NCHW'})
        initializer = PseudoFP16Initializer if float16 else Initializer
        out = brew.fc(model, 'data', 'fc', TRUE_WEIGHTS.size, 1, ('ConstantFill', {}),
                      ('ConstantFill', {}), axis=0, WeightInitializer=initializer,
                      BiasInitializer=initializer)
        if float16:
            out = model.HalfToFloat(out, out + '_fp32')
        distance = model.SquaredL2Distance([out, 'label'])
        loss = model.AveragedLoss(distance, 'avg_loss')
        gradients = model.AddGradientOperators([loss])
        self.assertIsInstance(gradients['fc_w'], core.BlobReference)
        return model, TRUE_WEIGHTS, data, label

    def testDense(self):
        model, weights, data, label = self._createDense()
        built = self.build_optimizer(model)
        workspace.FeedBlob('data', data[0])
        workspace.FeedBlob('label', label[0])
        workspace.RunNetOnce(model.param_init_net)
        workspace.CreateNet(model.net, True)
        for _ in range(STEPS):
            row = np.random.randint(data.shape[0])
            workspace.FeedBlob('data', data[row])
            workspace.FeedBlob('label', label[row])
            workspace.RunNet(model.net.Proto().name)
        np.testing.assert_allclose(weights[np.newaxis, :], workspace.FetchBlob('fc_w'),
                                   atol=1e-2)
        self.check_optimizer(built)

    @unittest.skipIf(not workspace.has_gpu_support, 'No gpu support')
    def testGPUDense(self, dtype=core.DataType.FLOAT):
        with core.DeviceScope(core.DeviceOption(caffe2_pb2.CUDA, 0)):
            model, _, data, label = self._createDense(dtype)
            if dtype == core.DataType.FLOAT16:
                host = model.HalfToFloat('fc', 'fc_fp32_for_host')
                model.CopyGPUToCPU(host, 'fc_cpu')
            else:
                model.CopyGPUToCPU('fc', 'fc_cpu')
            workspace.FeedBlob('data', data[0])
            workspace.FeedBlob('label', label[0])
        # CPU ops after the GPU ones; the optimizer in the default scope.
        brew.fc(model, 'fc_cpu', 'fc2', dim_in=1, dim_out=10, axis=0)
        self.build_optimizer(model)
        if self._skip_gpu:
            return
        workspace.RunNetOnce(model.param_init_net)
        workspace.CreateNet(model.net, True)
        workspace.RunNet(model.net.Proto().name)

    def testSparse(self):
        copies = 2
        np.random.seed(123)
        data = np.random.randint(2, size=(ROWS, TRUE_WEIGHTS.size * copies)).astype(np.float32)
        label = np.dot(data, np.repeat(TRUE_WEIGHTS, copies))
        model = cnn.CNNModelHelper('NCHW', name='test')
        w = model.param_init_net.ConstantFill([], 'w', shape=[TRUE_WEIGHTS.size], value=0.0)
        model.params.append(w)
        picked = model.net.Gather([w, 'indices'], 'gather')
        out = model.ReduceFrontSum(picked, 'sum')
        distance = model.SquaredL2Distance([out, 'label'])
        loss = model.AveragedLoss(distance, 'avg_loss')
        gradients = model.AddGradientOperators([loss])
        self.assertIsInstance(gradients['w'], core.GradientSlice)
        built = self.build_optimizer(model)
        workspace.CreateBlob('indices')
        workspace.CreateBlob('label')
        positions = np.repeat(np.arange(TRUE_WEIGHTS.size), copies)
        for index_type in [np.int32, np.int64]:
            workspace.RunNetOnce(model.param_init_net)
            workspace.CreateNet(model.net, True)
            for _ in range(STEPS):
                row = np.random.randint(data.shape[0])
                indices = positions[data[row] == 1]
                if indices.size == 0:
                    continue
                workspace.FeedBlob('indices', indices.astype(index_type))
                workspace.FeedBlob('label', np.array(label[row]).astype(np.float32))
                workspace.RunNet(model.net.Proto().name)
            np.testing.assert_allclose(TRUE_WEIGHTS, workspace.FetchBlob('w'), atol=1e-2)
        self.check_optimizer(built)


class LRModificationTestBase(object):
    """Mixin for optimizers built with max_gradient_norm and
    allow_lr_injection."""

    def _gradient_ratio_reference(self, model, params, max_gradient_norm):
        squares = 0.0
        for param in params:
            grad = model.param_to_grad[param]
            if isinstance(grad, core.GradientSlice):
                grad = grad.values
            squares += np.linalg.norm(workspace.FetchBlob(grad)) ** 2
        return max_gradient_norm / np.maximum(max_gradient_norm, np.sqrt(squares))

    def test_global_norm_based_gradient_clipping(self):
        max_gradient_norm = 1.0
        model, _, data, label = self._createDense()
        built = self.build_optimizer(model, max_gradient_norm=max_gradient_norm)
        params = [p for p in model.GetParams(top_scope=True)
                  if p in model.param_to_grad and
                  not isinstance(model.param_to_grad[p], core.GradientSlice)]
        workspace.FeedBlob('data', data[0])
        workspace.FeedBlob('label', label[0])
        workspace.RunNetOnce(model.param_init_net)
        workspace.CreateNet(model.net, True)
        self.assertIsNotNone(built._lr_multiplier)
        row = np.random.randint(data.shape[0])
        workspace.FeedBlob('data', data[row])
        workspace.FeedBlob('label', label[row])
        workspace.RunNet(model.net.Proto().name)
        reference = self._gradient_ratio_reference(model, params, max_gradient_norm)
        ratio = workspace.FetchBlob('norm_clipped_grad_update/norm_ratio')
        np.testing.assert_almost_equal(ratio, reference)
        self.assertTrue(reference < 1.0, 'bad test: the gradient was not clipped')

    def test_lr_injection(self):
        model, _, data, label = self._createDense()
        built = self.build_optimizer(model, max_gradient_norm=1, allow_lr_injection=True)
        workspace.FeedBlob('data', data[0])
        workspace.FeedBlob('label', label[0])
        workspace.RunNetOnce(model.param_init_net)
        workspace.CreateNet(model.net, True)
        self.assertIsNotNone(built._lr_multiplier)
        self.assertEqual(optimizer.get_lr_injection(), 1)
        optimizer.set_lr_injection(0)
        self.assertEqual(optimizer.get_lr_injection(), 0)
        # The injection multiplies the clipping ratio into lr_multiplier.
        workspace.RunNet(model.net.Proto().name)
        self.assertEqual(workspace.FetchBlob('lr_multiplier'), 0)
