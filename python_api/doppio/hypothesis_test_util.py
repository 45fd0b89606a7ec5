"""caffe2.python.hypothesis_test_util: property-based op tests, as Caffe2's
operator tests write them, on today's hypothesis.

    class TestRelu(hu.HypothesisTestCase):
        @given(X=hu.tensor(), **hu.gcs)
        def test_relu(self, X, gc, dc):
            op = core.CreateOperator('Relu', ['X'], ['Y'])
            self.assertReferenceChecks(gc, op, [X], lambda X: (np.maximum(X, 0),))
            self.assertDeviceChecks(dc, op, [X], [0])
            self.assertGradientChecks(gc, op, [X], 0, [0])

Strategies (dims, arrays, tensor(s), segment ids, lengths ...) draw numpy
inputs; `gcs` draws the gradient-check device `gc` and the device list
`dc` (the CPU, plus the GPU when one is visible: workspace.has_gpu_support).
Profiles: CAFFE2_HYPOTHESIS_PROFILE = dev (default, 10 examples), debug
(1000) or sandcastle (100, derandomized).
"""
import contextlib
import copy
import functools
import logging
import os

import hypothesis
import hypothesis.extra.numpy
import hypothesis.strategies as st
import numpy as np

from doppio import core, device_checker, gradient_checker, legacy_env, test_util, workspace
from doppio.proto import doppio_pb2 as caffe2_pb2

# Caffe2's op tests pass hypothesis 3.x arguments (settings(timeout=...),
# lists(average_size=...)); see legacy_env.
legacy_env.accept_legacy_hypothesis_arguments()


def is_sandcastle():
    return os.getenv('SANDCASTLE') == '1' or os.getenv('TW_JOB_USER') == 'sandcastle'


def is_travis():
    return 'TRAVIS' in os.environ


def _register_profiles():
    common = dict(suppress_health_check=[hypothesis.HealthCheck.too_slow,
                                         hypothesis.HealthCheck.data_too_large,
                                         hypothesis.HealthCheck.filter_too_much],
                  database=None, deadline=None)
    hypothesis.settings.register_profile('sandcastle', derandomize=True, max_examples=100,
                                         **common)
    hypothesis.settings.register_profile('dev', max_examples=10, **common)
    hypothesis.settings.register_profile('debug', max_examples=1000, **common)
    hypothesis.settings.load_profile(
        'sandcastle' if is_sandcastle() else os.getenv('CAFFE2_HYPOTHESIS_PROFILE', 'dev'))


_register_profiles()

# ---- strategies ----

_FLOAT_WIDTHS = {np.dtype(np.float16): 16, np.dtype(np.float32): 32, np.dtype(np.float64): 64}


def dims(min_value=1, max_value=5):
    return st.integers(min_value=min_value, max_value=max_value)


def elements_of_type(dtype=np.float32, filter_=None):
    """Caffe2's element ranges: floats in [-1, 1] (representable in the
    dtype), non-negative int32/int64, booleans."""
    dtype = np.dtype(dtype)
    if dtype in _FLOAT_WIDTHS:
        elements = st.floats(min_value=-1.0, max_value=1.0, width=_FLOAT_WIDTHS[dtype])
    elif dtype == np.int32:
        elements = st.integers(min_value=0, max_value=2 ** 31 - 1)
    elif dtype == np.int64:
        elements = st.integers(min_value=0, max_value=2 ** 63 - 1)
    elif dtype == np.bool_:
        elements = st.booleans()
    else:
        raise ValueError('Unexpected dtype without elements provided: {}'.format(dtype))
    return elements if filter_ is None else elements.filter(filter_)


def arrays(dims, dtype=np.float32, elements=None):
    if elements is None:
        elements = elements_of_type(dtype)
    elif np.dtype(dtype) in _FLOAT_WIDTHS:
        # Caffe2's tests pass float64 strategies for float32 arrays; old
        # hypothesis rounded their values, today's rejects them. Round here.
        elements = elements.map(np.dtype(dtype).type).map(float)
    return hypothesis.extra.numpy.arrays(dtype, dims, elements=elements)


def tensor(min_dim=1, max_dim=4, dtype=np.float32, elements=None, **kwargs):
    dims_ = st.lists(dims(**kwargs), min_size=min_dim, max_size=max_dim)
    return dims_.flatmap(lambda shape: arrays(shape, dtype, elements))


def tensor1d(min_len=1, max_len=64, dtype=np.float32, elements=None):
    return tensor(1, 1, dtype, elements, min_value=min_len, max_value=max_len)


def segment_ids(size, is_sorted):
    """Segment ids for `size` rows: sorted ones start at 0 and grow by 0 or
    1 per row; unsorted ones are any of 0..2*size."""
    if size == 0:
        return st.just(np.empty(shape=[0], dtype=np.int32))
    if is_sorted:
        return arrays([size], dtype=np.int32, elements=st.booleans()).map(
            lambda steps: np.cumsum(steps, dtype=np.int32) - steps[0])
    return arrays([size], dtype=np.int32, elements=st.integers(min_value=0,
                                                                max_value=2 * size))


def lengths(size, min_segments=None, max_segments=None, **kwargs):
    """Segment lengths (zeros allowed) summing to `size`."""
    min_segments = 0 if min_segments is None else min_segments
    max_segments = size if max_segments is None else max_segments
    if not 0 <= min_segments <= max_segments:
        raise ValueError('lengths: need 0 <= min_segments <= max_segments')
    if size == 0 and max_segments == 0:
        return st.just(np.empty(shape=[0], dtype=np.int32))
    if max_segments <= 0:
        raise ValueError('lengths: size is not 0, need at least one segment')
    borders = st.integers(min_value=max(min_segments - 1, 0),
                          max_value=max_segments - 1).flatmap(
        lambda count: hypothesis.extra.numpy.arrays(
            np.int32, count, elements=st.integers(min_value=0, max_value=size)))
    return borders.map(
        lambda cuts: np.diff(np.sort(np.append(cuts, np.array([0, size], np.int32)))).astype(
            np.int32))


def segmented_tensor(min_dim=1, max_dim=4, dtype=np.float32, is_sorted=True, elements=None,
                     segment_generator=segment_ids, allow_empty=False, **kwargs):
    empty = st.booleans() if allow_empty else st.just(False)
    shapes = st.tuples(empty, st.lists(dims(**kwargs), min_size=min_dim, max_size=max_dim)).map(
        lambda pair: ([0] if pair[0] else []) + pair[1])
    return shapes.flatmap(lambda shape: st.tuples(
        arrays(shape, dtype, elements), segment_generator(shape[0], is_sorted=is_sorted)))


def lengths_tensor(min_segments=None, max_segments=None, *args, **kwargs):
    generator = functools.partial(lengths, min_segments=min_segments,
                                  max_segments=max_segments)
    return segmented_tensor(*args, segment_generator=generator, **kwargs)


def sparse_segmented_tensor(min_dim=1, max_dim=4, dtype=np.float32, is_sorted=True,
                            elements=None, allow_empty=False, segment_generator=segment_ids,
                            itype=np.int64, **kwargs):
    """(data, indices into data's rows, segments of the indices)."""
    empty = st.booleans() if allow_empty else st.just(False)
    shapes = st.tuples(empty, st.lists(dims(**kwargs), min_size=min_dim,
                                       max_size=max_dim)).flatmap(
        lambda pair: st.tuples(st.just(pair[1]),
                               st.just(0) if pair[0] else
                               st.integers(min_value=1, max_value=pair[1][0])))
    return shapes.flatmap(lambda pair: st.tuples(
        arrays(pair[0], dtype, elements),
        arrays(pair[1], dtype=itype, elements=st.integers(min_value=0,
                                                          max_value=pair[0][0] - 1)),
        segment_generator(pair[1], is_sorted=is_sorted)))


def sparse_lengths_tensor(**kwargs):
    return sparse_segmented_tensor(segment_generator=lengths, **kwargs)


def tensors(n, min_dim=1, max_dim=4, dtype=np.float32, elements=None, **kwargs):
    """n arrays of one shape."""
    dims_ = st.lists(dims(**kwargs), min_size=min_dim, max_size=max_dim)
    return dims_.flatmap(lambda shape: st.lists(arrays(shape, dtype, elements),
                                                min_size=n, max_size=n))


def tensors1d(n, min_len=1, max_len=64, dtype=np.float32, elements=None):
    return tensors(n, 1, 1, dtype, elements, min_value=min_len, max_value=max_len)


# ---- devices ----

cpu_do = caffe2_pb2.DeviceOption()
gpu_do = caffe2_pb2.DeviceOption(device_type=caffe2_pb2.CUDA)
device_options = [cpu_do] + ([gpu_do] if workspace.has_gpu_support else [])
expanded_device_options = [cpu_do] + (
    [caffe2_pb2.DeviceOption(device_type=caffe2_pb2.CUDA, cuda_gpu_id=i)
     for i in range(workspace.NumCudaDevices())] if workspace.has_gpu_support else [])


def device_checker_device_options():
    return st.just(device_options)


def gradient_checker_device_option():
    return st.sampled_from(device_options)


gcs = dict(gc=gradient_checker_device_option(), dc=device_checker_device_options())
gcs_cpu_only = dict(gc=st.sampled_from([cpu_do]), dc=st.just([cpu_do]))
gcs_gpu_only = dict(gc=st.sampled_from([gpu_do]), dc=st.just([gpu_do]))


@contextlib.contextmanager
def temp_workspace(name='temp_ws'):
    """Runs the block in workspace `name`, emptied afterwards."""
    previous = workspace.CurrentWorkspace()
    workspace.SwitchWorkspace(name.decode() if isinstance(name, bytes) else name, True)
    try:
        yield
    finally:
        workspace.ResetWorkspace()
        workspace.SwitchWorkspace(previous)


def _feed_inputs(op, inputs, device_option, input_device_options):
    for name, value in zip(op.input, inputs):
        workspace.FeedBlob(name, value,
                           device_option=input_device_options.get(name, device_option))


def _on_device(op, device_option):
    op = copy.deepcopy(op)
    op.device_option.CopyFrom(device_option)
    return op


def runOpBenchmark(device_option, op, inputs, input_device_options=None, iterations=10):
    """Seconds per run of `op` (mean over `iterations` after one warm-up)."""
    import time
    op = _on_device(op, device_option)
    net = caffe2_pb2.NetDef(name=op.name or 'test')
    net.op.extend([op])
    with temp_workspace():
        _feed_inputs(op, inputs, device_option, input_device_options or {})
        workspace.CreateNet(net)
        workspace.RunNet(net.name)
        started = time.time()
        workspace.RunNet(net.name, iterations)
        return (time.time() - started) / iterations


class HypothesisTestCase(test_util.TestCase):
    """unittest.TestCase with Caffe2's op checks."""

    def assertDeviceChecks(self, device_options, op, inputs, outputs_to_check,
                           input_device_options=None, threshold=0.01):
        """Outputs `outputs_to_check` agree on every device of
        `device_options`."""
        checker = device_checker.DeviceChecker(threshold, device_options=device_options)
        self.assertTrue(checker.CheckSimple(op, inputs, outputs_to_check, input_device_options))

    def assertGradientChecks(self, device_option, op, inputs, outputs_to_check,
                             outputs_with_grads, grad_ops=None, threshold=0.005, stepsize=0.05,
                             input_device_options=None):
        """The gradient of input `outputs_to_check` (an index, Caffe2's name
        for it) matches finite differences of sum(y^2)/2 over the outputs
        `outputs_with_grads`."""
        checker = gradient_checker.GradientChecker(
            stepsize=stepsize, threshold=threshold, device_option=device_option,
            workspace_name=str(device_option))
        passed, grad, estimate = checker.CheckSimple(
            op, inputs, outputs_to_check, outputs_with_grads, grad_ops=grad_ops,
            input_device_options=input_device_options)
        self.assertEqual(grad.shape, estimate.shape)
        self.assertTrue(passed, 'Gradient check failed for input ' +
                        str(op.input[outputs_to_check]))

    def _assertGradReferenceChecks(self, op, inputs, ref_outputs, output_to_grad,
                                   grad_reference, threshold=1e-4):
        grad_blob_name = output_to_grad + '_grad'
        grad_ops, grad_map = core.GradientRegistry.GetBackwardPass(
            [op], {output_to_grad: grad_blob_name})
        output_grad = workspace.FetchBlob(output_to_grad)
        grad_ref_outputs = grad_reference(output_grad, ref_outputs, inputs)
        workspace.FeedBlob(grad_blob_name, output_grad)
        workspace.RunOperatorsOnce(grad_ops)
        self.assertEqual(len(grad_ref_outputs), len(inputs))
        for name, ref in zip(op.input, grad_ref_outputs):
            grad_names = grad_map.get(name)
            if not grad_names:
                self.assertIsNone(ref)
                continue
            if isinstance(grad_names, core.GradientSlice):
                ref_values, ref_indices = ref
                values_name = grad_names.values
            else:
                ref_values, ref_indices, values_name = ref, None, grad_names
            np.testing.assert_allclose(
                workspace.FetchBlob(str(values_name)), ref_values, atol=threshold,
                rtol=threshold,
                err_msg='Gradient {} (x) is not matching the reference (y)'.format(values_name))
            if ref_indices is not None:
                np.testing.assert_allclose(workspace.FetchBlob(str(grad_names.indices)),
                                           ref_indices, atol=1e-4, rtol=1e-4)

    def _assertInferTensorChecks(self, name, shapes, output):
        """The schema's inferred shape agrees with the computed output's (a
        warning, as in Caffe2, unless CAFFE2_ASSERT_SHAPEINFERENCE=1)."""
        if name not in shapes or not isinstance(output, np.ndarray):
            return
        try:
            np.testing.assert_array_equal(
                np.array(shapes[name], np.int64), np.array(output.shape, np.int64),
                err_msg='Shape {} mismatch: {} vs. {}'.format(name, shapes[name], output.shape))
        except AssertionError as error:
            logging.warning(str(error))
            if os.getenv('CAFFE2_ASSERT_SHAPEINFERENCE') == '1':
                raise

    def _check_against_reference(self, op, reference_outputs, outputs_to_check, threshold,
                                 atol, shapes):
        if not isinstance(reference_outputs, (tuple, list)):
            raise RuntimeError('You are providing a wrong reference implementation. A proper '
                               'one should return a tuple/list of numpy arrays.')
        if not outputs_to_check:
            self.assertEqual(len(reference_outputs), len(op.output))
            outputs_to_check = list(range(len(op.output)))
        outputs = []
        for index, ref in zip(outputs_to_check, reference_outputs):
            name = op.output[index]
            output = workspace.FetchBlob(name)
            if isinstance(output, np.ndarray) and output.dtype.kind in ('S', 'O'):
                np.testing.assert_array_equal(output, ref)
            else:
                np.testing.assert_allclose(
                    output, ref, atol=threshold if atol is None else atol, rtol=threshold,
                    err_msg='Output {} is not matching the reference'.format(name))
            self._assertInferTensorChecks(name, shapes, output)
            outputs.append(output)
        return outputs

    def assertReferenceChecks(self, device_option, op, inputs, reference,
                              input_device_options=None, threshold=1e-4, output_to_grad=None,
                              grad_reference=None, atol=None, outputs_to_check=None):
        """Outputs of `op` on `inputs` equal `reference(*inputs)` (a tuple
        of arrays) within atol/rtol; with grad_reference, the gradient too.
        Returns the outputs."""
        op = _on_device(op, device_option)
        with temp_workspace():
            if len(op.input) > len(inputs):
                raise ValueError('must supply an input for each input on the op: %s vs %s' %
                                 (op.input, inputs))
            _feed_inputs(op, inputs, device_option, input_device_options or {})
            net = core.Net('opnet')
            net.Proto().op.extend([op])
            try:
                shapes, _ = workspace.InferShapesAndTypes([net])
            except RuntimeError as error:
                logging.warning(str(error))
                if os.getenv('CAFFE2_ASSERT_SHAPEINFERENCE') == '1':
                    raise
                shapes = {}
            workspace.RunNetOnce(net)
            reference_outputs = reference(*inputs)
            outputs = self._check_against_reference(op, reference_outputs, outputs_to_check,
                                                    threshold, atol, shapes)
            if grad_reference is not None:
                if output_to_grad is None:
                    raise ValueError('If grad_reference is set, output_to_grad has to be set '
                                     'as well')
                with core.DeviceScope(device_option):
                    self._assertGradReferenceChecks(op, inputs, reference_outputs,
                                                    output_to_grad, grad_reference,
                                                    threshold=threshold)
            return outputs

    def assertValidationChecks(self, device_option, op, inputs, validator,
                               input_device_options=None, as_kwargs=True, init_net=None):
        """validator(**{blob: value}) (or validator(inputs=, outputs=)) over
        the op's inputs and outputs after one run."""
        if as_kwargs and len(set(list(op.input) + list(op.output))) != len(op.input) + len(
                op.output):
            raise ValueError('in-place ops are not supported in as_kwargs mode')
        op = _on_device(op, device_option)
        with temp_workspace():
            _feed_inputs(op, inputs, device_option, input_device_options or {})
            if init_net:
                workspace.RunNetOnce(init_net)
            workspace.RunOperatorOnce(op)
            outputs = [workspace.FetchBlob(name) for name in op.output]
            if as_kwargs:
                validator(**dict(zip(list(op.input) + list(op.output), list(inputs) + outputs)))
            else:
                validator(inputs=inputs, outputs=outputs)

    def assertRunOpRaises(self, device_option, op, inputs, input_device_options=None,
                          exception=(Exception,), regexp=None):
        op = _on_device(op, device_option)
        with temp_workspace():
            _feed_inputs(op, inputs, device_option, input_device_options or {})
            if regexp is None:
                self.assertRaises(exception, workspace.RunOperatorOnce, op)
            else:
                self.assertRaisesRegex(exception, regexp, workspace.RunOperatorOnce, op)
