"""brew.arg_scope: default keywords for helpers inside a block: caffe2.python.helpers.arg_scope, whose helpers
brew registers."""

import contextlib
import copy
import threading



_threadlocal_scope = threading.local()


def get_current_scope():
    if not hasattr(_threadlocal_scope, 'current_scope'):
        _threadlocal_scope.current_scope = {}
    return _threadlocal_scope.current_scope


@contextlib.contextmanager
def arg_scope(single_helper_or_list, **kwargs):
    """Default keywords for the given helpers inside the block."""
    helpers = single_helper_or_list
    if not isinstance(helpers, list):
        helpers = [helpers]
    for helper in helpers:
        if not callable(helper):
            raise TypeError('arg_scope takes helper functions, got {!r}'.format(helper))
    old_scope = copy.deepcopy(get_current_scope())
    for helper in helpers:
        get_current_scope().setdefault(helper.__name__, {}).update(kwargs)
    try:
        yield
    finally:
        _threadlocal_scope.current_scope = old_scope
