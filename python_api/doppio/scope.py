"""Name and device scopes, as in caffe2.python.scope.

Both scopes are thread-local, so builders running on several threads (one
per device, say) do not see each other's prefixes or devices.
"""

import contextlib
import threading

from doppio.proto import doppio_pb2

# Caffe2's separator between a name scope and the names inside it.
_NAMESCOPE_SEPARATOR = '/'

_threadlocal_scope = threading.local()


def CurrentNameScope():
    """The current name prefix ('' or ending with '/')."""
    if not hasattr(_threadlocal_scope, 'namescope'):
        _threadlocal_scope.namescope = ''
    return _threadlocal_scope.namescope


def CurrentDeviceScope():
    """The current DeviceOption, or None outside every DeviceScope."""
    if not hasattr(_threadlocal_scope, 'devicescope'):
        _threadlocal_scope.devicescope = None
    return _threadlocal_scope.devicescope


@contextlib.contextmanager
def NameScope(prefix, reset=False):
    """Prefixes every blob name made inside with `prefix/`; nests unless
    `reset`, which starts from the top level."""
    if not isinstance(prefix, str):
        # A BlobReference or bytes name is accepted as its text.
        if isinstance(prefix, bytes):
            prefix = prefix.decode('utf-8')
        elif prefix is None:
            prefix = ''
        else:
            prefix = str(prefix)
    if prefix and not prefix.endswith(_NAMESCOPE_SEPARATOR):
        prefix += _NAMESCOPE_SEPARATOR
    old_scope = CurrentNameScope()
    new_scope = prefix if reset else old_scope + prefix
    _threadlocal_scope.namescope = new_scope
    try:
        yield
    finally:
        assert _threadlocal_scope.namescope == new_scope, \
            'name scope changed inside NameScope({!r})'.format(prefix)
        _threadlocal_scope.namescope = old_scope


@contextlib.contextmanager
def DeviceScope(scope, node_name=None):
    """Gives every operator created inside the DeviceOption `scope` (a copy,
    so later changes to `scope` do not leak in)."""
    new_scope = doppio_pb2.DeviceOption()
    if scope is not None:
        if not isinstance(scope, doppio_pb2.DeviceOption):
            raise TypeError(
                'DeviceScope(scope) needs a DeviceOption, got {}'.format(
                    type(scope).__name__))
        new_scope.CopyFrom(scope)
    elif not node_name:
        raise ValueError('DeviceScope needs a DeviceOption or a node_name')
    if node_name:
        new_scope.node_name = node_name
    old_scope = CurrentDeviceScope()
    _threadlocal_scope.devicescope = new_scope
    try:
        yield
    finally:
        assert _threadlocal_scope.devicescope == new_scope, \
            'device scope changed inside DeviceScope'
        _threadlocal_scope.devicescope = old_scope


@contextlib.contextmanager
def EmptyDeviceScope():
    """No device scope inside (ops get no device_option), whatever scope
    surrounds it: for nets whose loader picks the device."""
    old_scope = CurrentDeviceScope()
    _threadlocal_scope.devicescope = None
    try:
        yield
    finally:
        _threadlocal_scope.devicescope = old_scope
