"""caffe2.python.modeling.parameter_sharing: parameters shared across name
scopes. Inside `with ParameterSharing({'b': 'a'}):`, a parameter that
ModelHelper.create_param would name 'b/w' (relative to the current scope)
is 'a/w' instead, so the two scopes' layers train one set of weights (the
unrolled RNN shares every timestep's with ParameterSharing({'timestep_t':
''}))."""
import contextlib
import logging

from doppio import scope

logger = logging.getLogger(__name__)


class ParameterSharingContext(object):
    """The scope overrides in force (a stack of the active contexts').

    Not thread-safe: model building is single-threaded, as in Caffe2."""

    def __init__(self):
        self._scope_overrides = {}
        self._contexts = []

    def _resolve_scope_overrides(self, candidate_scope):
        """The scope a candidate scope maps to: the longest overridden prefix
        is replaced by its override (itself resolved again), the rest kept.
        With {'b/': 'a/'} and, inside b, {'b/shared/': 'b/'}: 'b/' -> 'a/',
        'b/shared/' -> 'a/', 'b/other/' -> 'a/other/', 'c/' -> 'c/'."""
        parts = candidate_scope.split(scope._NAMESCOPE_SEPARATOR)
        prefix = ''
        best, best_index = None, 0
        for index, part in enumerate(parts):
            prefix += part + scope._NAMESCOPE_SEPARATOR
            if prefix in self._scope_overrides:
                best, best_index = self._scope_overrides[prefix], index
        if best is None or best == candidate_scope:
            return candidate_scope
        return (self._resolve_scope_overrides(best) +
                scope._NAMESCOPE_SEPARATOR.join(parts[best_index + 1:]))

    def get_parameter_name(self, name):
        """`name` under the current name scope, after the overrides."""
        candidate = scope.CurrentNameScope()
        resolved = self._resolve_scope_overrides(candidate)
        if resolved != candidate:
            logger.info('Overwriting scope %s with scope %s', candidate, resolved)
        return resolved + name

    def add_scope_overrides(self, shared_scopes):
        self._contexts.append(shared_scopes)
        self._scope_overrides.update(shared_scopes)

    def pop(self):
        if not self._contexts:
            raise RuntimeError('ParameterSharingContext.pop without a matching add')
        self._contexts.pop()
        self._scope_overrides = {}
        for overrides in self._contexts:
            self._scope_overrides.update(overrides)


parameter_sharing_context = ParameterSharingContext()


def _normalize_namescope(namescope):
    if namescope and not namescope.endswith(scope._NAMESCOPE_SEPARATOR):
        return namescope + scope._NAMESCOPE_SEPARATOR
    return namescope


@contextlib.contextmanager
def ParameterSharing(shared_scopes):
    """Within the block, parameters of scope <current>/k are those of
    <current>/v for each k: v in `shared_scopes` ('' means the current scope
    itself)."""
    if not isinstance(shared_scopes, dict):
        raise TypeError('ParameterSharing takes a dict of scope -> shared scope')
    current = scope.CurrentNameScope()
    overrides = {}
    for key, value in shared_scopes.items():
        if value.startswith(key):
            raise ValueError('Illegal override for parameter sharing. {} is prefix of {}'.format(
                key, value))
        overrides[_normalize_namescope(current + key)] = _normalize_namescope(current + value)
    parameter_sharing_context.add_scope_overrides(overrides)
    try:
        yield
    finally:
        parameter_sharing_context.pop()
