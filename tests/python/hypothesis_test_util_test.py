"""Caffe2's op-test utilities (hypothesis_test_util, gradient_checker,
device_checker, test_util) as users' op tests use them: each check passes
on a correct op and fails, as it must, on a wrong reference, a wrong
gradient or a wrong device result."""
import sys
import unittest

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given, settings

from caffe2.python import core, device_checker, gradient_checker, workspace
import caffe2.python.hypothesis_test_util as hu


class TestChecks(hu.HypothesisTestCase):

    @given(X=hu.tensor(), **hu.gcs)
    def test_relu_passes_every_check(self, X, gc, dc):
        X[np.abs(X) < 0.1] = 0.5  # keep finite differences away from the kink
        op = core.CreateOperator('Relu', ['X'], ['Y'])
        outputs = self.assertReferenceChecks(gc, op, [X], lambda X: (np.maximum(X, 0),))
        np.testing.assert_array_equal(outputs[0], np.maximum(X, 0))
        self.assertDeviceChecks(dc, op, [X], [0])
        self.assertGradientChecks(gc, op, [X], 0, [0])

    def test_a_wrong_reference_fails(self):
        X = np.array([[-1.0, 2.0]], np.float32)
        op = core.CreateOperator('Relu', ['X'], ['Y'])
        with self.assertRaises(AssertionError):
            self.assertReferenceChecks(hu.cpu_do, op, [X], lambda X: (X,))
        with self.assertRaises(RuntimeError):  # not a tuple of outputs
            self.assertReferenceChecks(hu.cpu_do, op, [X], lambda X: X)

    def test_a_wrong_gradient_fails(self):
        X = np.array([[0.5, -0.7, 1.2]], np.float32)
        op = core.CreateOperator('Relu', ['X'], ['Y'])
        doubled = [core.CreateOperator('Scale', ['Y_grad'], ['X_grad'], scale=2.0)]
        with self.assertRaises(AssertionError):
            self.assertGradientChecks(hu.cpu_do, op, [X], 0, [0], grad_ops=doubled)

    def test_gradient_reference(self):
        X = np.array([1.0, -2.0, 3.0], np.float32)
        op = core.CreateOperator('Scale', ['X'], ['Y'], scale=3.0)
        self.assertReferenceChecks(
            hu.cpu_do, op, [X], lambda X: (3 * X,), output_to_grad='Y',
            grad_reference=lambda dY, outputs, inputs: (3 * dY,))
        with self.assertRaises(AssertionError):
            self.assertReferenceChecks(
                hu.cpu_do, op, [X], lambda X: (3 * X,), output_to_grad='Y',
                grad_reference=lambda dY, outputs, inputs: (dY,))

    def test_validation_and_raising_checks(self):
        X = np.array([[1.0, 2.0]], np.float32)
        W = np.ones((3, 2), np.float32)
        b = np.zeros(3, np.float32)
        op = core.CreateOperator('FC', ['X', 'W', 'b'], ['Y'])
        seen = {}
        self.assertValidationChecks(hu.cpu_do, op, [X, W, b],
                                    lambda X, W, b, Y: seen.update(Y=Y))
        np.testing.assert_array_equal(seen['Y'], [[3.0, 3.0, 3.0]])
        self.assertRunOpRaises(hu.cpu_do, op, [X, np.ones((3, 5), np.float32), b],
                               exception=RuntimeError, regexp='W')
        with self.assertRaises(AssertionError):
            self.assertRunOpRaises(hu.cpu_do, op, [X, W, b], exception=RuntimeError)

    def test_ws_handle_and_fresh_workspace(self):
        self.assertEqual(workspace.Blobs(), [])
        blob = self.ws.create_blob('x')
        blob.feed(np.arange(3, dtype=np.float32))
        np.testing.assert_array_equal(blob.fetch(), [0, 1, 2])
        self.assertIn('x', self.ws.blobs)
        np.testing.assert_array_equal(self.ws.blobs['x'].fetch(), [0, 1, 2])
        self.ws.run(core.CreateOperator('Relu', ['x'], ['y']))
        np.testing.assert_array_equal(self.ws.blobs['y'].fetch(), [0, 1, 2])
        net = core.Net('ws_net')
        net.Scale('x', 'z', scale=2.0)
        handle = self.ws.create_net(net)
        handle.run()
        self.ws.run(handle)
        self.assertIn('ws_net', self.ws.nets)
        np.testing.assert_array_equal(self.ws.blobs['z'].fetch(), [0, 2, 4])
        with self.assertRaises(KeyError):
            self.ws.blobs['nope']
        # self.ws is a workspace of its own, as in Caffe2.
        self.assertFalse(workspace.HasBlob('z'))
        current = workspace.C.Workspace.current
        current.create_blob('here').feed(np.ones(2, np.float32))
        self.assertTrue(workspace.HasBlob('here'))
        self.assertNotIn('here', self.ws.blobs)


class TestStrategies(unittest.TestCase):

    @given(data=st.data(), size=st.integers(0, 20))
    @settings(max_examples=30)
    def test_lengths_sum_to_size(self, data, size):
        lengths = data.draw(hu.lengths(size, max_segments=max(size, 1)))
        self.assertEqual(lengths.dtype, np.int32)
        self.assertEqual(int(lengths.sum()), size)
        self.assertTrue((lengths >= 0).all())

    @given(data=st.data(), size=st.integers(1, 20))
    @settings(max_examples=30)
    def test_sorted_segment_ids_start_at_zero_and_step_by_one(self, data, size):
        ids = data.draw(hu.segment_ids(size, is_sorted=True))
        self.assertEqual(ids[0], 0)
        self.assertTrue(set(np.diff(ids)) <= {0, 1})

    @given(arrays=hu.tensors(n=3), half=hu.tensor(dtype=np.float16),
           ints=hu.tensor1d(dtype=np.int32))
    def test_tensors_share_a_shape_and_elements_fit_the_dtype(self, arrays, half, ints):
        self.assertEqual(len(arrays), 3)
        self.assertEqual(len(set(a.shape for a in arrays)), 1)
        self.assertTrue(all(np.abs(a).max() <= 1 for a in arrays))
        self.assertEqual(half.dtype, np.float16)
        self.assertTrue((ints >= 0).all() and ints.dtype == np.int32)

    @given(data=hu.sparse_lengths_tensor(min_dim=2, max_dim=2))
    def test_sparse_lengths_tensor(self, data):
        values, indices, lengths = data
        self.assertTrue((indices < values.shape[0]).all())
        self.assertEqual(int(lengths.sum()), len(indices))

    def test_devices(self):
        self.assertEqual(hu.device_options[0], hu.cpu_do)
        self.assertEqual(len(hu.device_options), 2 if workspace.has_gpu_support else 1)
        import caffe2.python.mkl_test_util as mu
        # No MKL-DNN device in Doppio: its strategies exist, its device is never drawn.
        self.assertEqual(mu.device_options, hu.device_options)
        self.assertIs(mu.gcs_cpu_only, hu.gcs_cpu_only)
        self.assertEqual(mu.mkl_do.device_type, 2)


def test_gradient_checker_densifies_sparse_gradients():
    data = np.random.RandomState(0).randn(5, 3).astype(np.float32)
    indices = np.array([1, 3, 1], np.int64)  # a repeated row accumulates
    op = core.CreateOperator('Gather', ['data', 'indices'], ['rows'])
    checker = gradient_checker.GradientChecker(stepsize=0.01, threshold=0.01)
    passed, grad, estimate = checker.CheckSimple(op, [data, indices], 0, [0])
    assert passed
    want = np.zeros_like(data)
    np.add.at(want, indices, data[indices])  # d(sum rows^2 / 2) / d data
    np.testing.assert_allclose(grad, want, rtol=1e-5)


def test_net_gradient_checker():
    net = core.Net('checked')
    net.Mul(['x', 'x'], 'sq')
    net.SumElements('sq', 'loss')
    x = np.array([0.5, -1.5, 2.0], np.float32)
    mean_delta, max_delta = gradient_checker.NetGradientChecker.Check(
        net, ['loss'], {'x': x}, 'x', step_size=1e-2, threshold=1e-2, print_net=False)
    assert max_delta < 1e-2
    other = core.Net('checked2')
    other.Pow('x', 'sq2', exponent=2.0)
    other.SumElements('sq2', 'loss2')
    gradient_checker.NetGradientChecker.CompareNets(
        [net, other], [['loss'], ['loss2']], [0], ['x'], {'x': x}, threshold=1e-5)


def test_device_checker_reports_disagreement():
    op = core.CreateOperator('Relu', ['X'], ['Y'])
    X = np.array([-1.0, 1.0], np.float32)
    assert device_checker.DeviceChecker(0.01, [hu.cpu_do, hu.cpu_do]).CheckSimple(op, [X], [0])
    # Same device, different seeds: a random op disagrees with itself.
    seeded = [core.DeviceOption(0, 0, random_seed=1), core.DeviceOption(0, 0, random_seed=2)]
    noisy = core.CreateOperator('GaussianFill', [], ['G'], shape=[16])
    net = core.Net('noisy').Proto()
    net.op.extend([noisy])
    assert not device_checker.DeviceChecker(0.01, seeded).CheckNet(net)


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q', '-p', 'no:cacheprovider']))
