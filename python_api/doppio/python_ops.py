"""Python operators: core.CreatePythonOperator and Net.Python (Caffe2's),
ops whose work is a Python function f(inputs, outputs) on host tensors. The
op itself is C++ (python_api/python_op.cc): it keeps the function under a
token, takes the GIL to call it, and turns an exception into the op's error.

This module adds Net.Python to core_net's Net (core imports it, so every
Net has it)."""
import pickle

from doppio import _C
from doppio import core_net


def _RegisterPythonImpl(f, grad_f=None, python_func_type=None, pass_workspace=False):
    """Registers f (and grad_f) with the extension; returns the token.
    python_func_type(f) gives an object with forward and backward; a
    (func, args, kwargs) tuple is built here with func(*args, **kwargs)."""
    if python_func_type:
        func = python_func_type(f)
        f, grad_f = func.forward, func.backward
    else:
        if isinstance(f, tuple):
            f = f[0](*f[1], **f[2])
        if isinstance(grad_f, tuple):
            grad_f = grad_f[0](*grad_f[1], **grad_f[2])
    token = _C.register_python_op(f, pass_workspace, '')
    if grad_f:
        _C.register_python_gradient_op(token, grad_f)
    return token


def CreatePythonOperator(f, inputs, outputs, grad_f=None, pass_workspace=False,
                         python_func_type=None, *args, **kwargs):
    """A "Python" OperatorDef running f(inputs, outputs) (with
    pass_workspace, f(inputs, outputs, workspace)); grad_f, when given, is
    its gradient: it gets the op's inputs, outputs and output gradients and
    fills the input gradients."""
    kwargs['token'] = _RegisterPythonImpl(f, grad_f, python_func_type,
                                          pass_workspace=pass_workspace)
    return core_net.CreateOperator('Python', inputs, outputs, *args, **kwargs)


def _builder_bytes(t):
    if not isinstance(t, tuple):
        return ''
    if len(t) != 3:
        raise ValueError('Expected builder tuple (func, args, kwargs)')
    func, args, kwargs = t
    return pickle.dumps((func, tuple(args), dict(kwargs)))


def Python(self, f, grad_f=None, python_func_type=None, pass_workspace=False,
           grad_output_indices=None, grad_input_indices=None):
    """Registers a Python op and returns a function adding it to this net:
    net.Python(f)(inputs, outputs). f and grad_f are functions, or (func,
    args, kwargs) tuples pickled into the op and built where it is created
    (both, or neither, must be tuples). The gradient function takes the
    op's inputs, outputs and output gradients (only those of
    grad_output_indices when given) and gives the input gradients (only
    those of grad_input_indices when given)."""
    if not core_net.IsOperator('Python'):
        raise RuntimeError('this build has no Python op')
    f_builder = _builder_bytes(f)
    grad_f_builder = _builder_bytes(grad_f)
    if grad_f and bool(f_builder) != bool(grad_f_builder):
        raise ValueError('A tuple has to be passed to both f and grad_f or neither.')
    op_kwargs = {}
    if f_builder:
        op_kwargs['pickled_builder'] = f_builder
        op_kwargs['pickled_grad_builder'] = grad_f_builder
        op_kwargs['pass_workspace'] = pass_workspace
    else:
        op_kwargs['token'] = _RegisterPythonImpl(f, grad_f, python_func_type,
                                                 pass_workspace=pass_workspace)
    grad_output_indices = grad_output_indices or []
    grad_input_indices = grad_input_indices or []
    return lambda *args, **kwargs: self._CreateAndAddToSelf(
        'Python', grad_output_indices=grad_output_indices,
        grad_input_indices=grad_input_indices, *args, **dict(kwargs, **op_kwargs))


core_net.Net.Python = Python


def _gradient_to_wire(gradient):
    if gradient is None:
        return None
    if isinstance(gradient, core_net.GradientSlice):
        return (str(gradient.indices), str(gradient.values))
    return str(gradient)


def _gradient_from_wire(gradient):
    if isinstance(gradient, tuple):
        return core_net.GradientSlice(gradient[0], gradient[1])
    return gradient


def RegisterGradient(cls, op_type):
    """Decorator registering a Python gradient maker for `op_type`:
    f(op, g_output) -> (gradient ops (a list, or one op), g_input), the
    gradients being names, GradientSlices or None. It replaces a built-in
    maker of that type; the backward pass calls it for every op of the
    type."""
    def Wrapper(func):
        def maker(op_bytes, g_output):
            op = core_net.caffe2_pb2.OperatorDef()
            op.ParseFromString(op_bytes)
            ops, g_input = func(op, [_gradient_from_wire(g) for g in g_output])
            if isinstance(ops, core_net.caffe2_pb2.OperatorDef):
                ops = [ops]
            return ([o.SerializeToString() for o in ops or []],
                    [_gradient_to_wire(g) for g in g_input])
        _C.register_python_gradient(op_type, maker)
        cls.gradient_registry_[op_type] = func
        return func
    return Wrapper


core_net.GradientRegistry.gradient_registry_ = {}
core_net.GradientRegistry.RegisterGradient = classmethod(RegisterGradient)
