"""The names core builds on: blob references, gradient slices and the
operator registry's contents. Below core_net (which re-exports them as
caffe2.python.core does)."""
import collections

from doppio import _C
from doppio import scope

GradientSlice = collections.namedtuple('GradientSlice', ['indices', 'values'])

_registered_operators = set()


def RegisteredOperators():
    return _C.registered_operators()


def RefreshRegisteredOperators():
    """Caffe2 cached the registry's op list and refreshed it after loading an
    op library; Doppio asks the registry each time, so there is nothing to
    refresh."""


def IsOperator(op_type):
    # Operators register when the extension loads, so one snapshot suffices;
    # a miss re-reads it in case a library was loaded since.
    if op_type not in _registered_operators:
        _registered_operators.update(RegisteredOperators())
    return op_type in _registered_operators


def IsOperatorWithEngine(op_type, engine):
    """Whether `op_type` has a kernel registered for `engine` ('DEFAULT' or
    '' name the default one) on some device."""
    engine = '' if engine in ('', 'DEFAULT') else engine
    return any(registered == engine
               for _, registered in _C.registered_operator_devices(op_type))


class BlobReference(object):
    """A blob's name, usable wherever a str is, that also remembers the net
    that made it so `blob.Relu([], 'y')` adds a Relu to that net."""

    def __init__(self, name, net=None):
        if isinstance(name, bytes):
            name = name.decode('utf-8')
        self._name = str(name)
        self._from_net = net
        # meta allows helper functions to attach information to a blob.
        self.meta = {}

    def __hash__(self):
        return hash(self._name)

    def __eq__(self, other):
        if isinstance(other, str):
            return self._name == other
        if isinstance(other, BlobReference):
            return self._name == other._name
        return False

    def __ne__(self, other):
        return not self == other

    def __str__(self):
        return self._name

    def __repr__(self):
        return 'BlobReference("{}")'.format(self._name)

    def __add__(self, other):
        if not isinstance(other, str):
            raise RuntimeError('Cannot add BlobReference to a non-string.')
        return BlobReference(self._name + other, self._from_net)

    def __radd__(self, other):
        if not isinstance(other, str):
            raise RuntimeError('Cannot add a non-string to BlobReference.')
        return BlobReference(other + self._name, self._from_net)

    def Net(self):
        return self._from_net

    def GetNameScope(self):
        return self._name[:self._name.rfind(scope._NAMESCOPE_SEPARATOR) + 1]

    def GetUnscopedName(self):
        return self._name[self._name.rfind(scope._NAMESCOPE_SEPARATOR) + 1:]

    def _CreateAndAddToNet(self, op_type, inputs=None, *args, **kwargs):
        """Adds op_type to the blob's net with this blob as its first input."""
        inputs = [] if inputs is None else inputs
        if isinstance(inputs, (str, bytes, BlobReference)):
            inputs = [inputs]
        return self._from_net.__getattr__(op_type)([self] + list(inputs), *args, **kwargs)

    def __getattr__(self, op_type):
        if op_type.startswith('__'):
            raise AttributeError(op_type)
        if self._from_net is None:
            raise AttributeError(
                'You cannot use a blob reference that does not have a net '
                'source to create operators. Create the operator from an '
                'explicit net object.')
        if not IsOperator(op_type):
            raise AttributeError('Method ' + op_type + ' is not a registered operator.')
        return lambda *args, **kwargs: self._CreateAndAddToNet(op_type, *args, **kwargs)


def ScopedName(name):
    """`name` under the current name scope."""
    return scope.CurrentNameScope() + name


def ScopedBlobReference(name, *args, **kwargs):
    """A BlobReference to `name` under the current name scope."""
    return BlobReference(scope.CurrentNameScope() + name, *args, **kwargs)
