"""What Caffe2-era programs and tests need from numpy and hypothesis that
today's versions removed, restored on request.

Caffe2 scripts and tests were written against numpy < 1.20 and hypothesis
3.x. Run unchanged on today's versions they fail on names those libraries
have since dropped, not on anything Caffe2 did:
  * numpy: np.asscalar (removed in 1.23), the builtin aliases np.bool,
    np.int, np.float, np.complex, np.object, np.str, np.long (removed in
    1.24), and np.set_printoptions(threshold=np.nan) for "print
    everything" (now an error; sys.maxsize means the same);
  * hypothesis: settings(timeout=, min_satisfying_examples=,
    perform_health_check=, max_iterations=, ...) and lists/sets/text(
    average_size=), which today's hypothesis rejects as unknown arguments.

`restore_numpy_aliases()` runs when a program imports the `caffe2` package
(legacy code by definition); `accept_legacy_hypothesis_arguments()` when it
imports caffe2.python.hypothesis_test_util. Both only add what is missing
and drop arguments that no longer have an effect; Doppio's own code uses
neither.
"""
import functools
import sys
import warnings

_NUMPY_BUILTIN_ALIASES = {'bool': bool, 'int': int, 'float': float, 'complex': complex,
                          'object': object, 'str': str, 'long': int, 'unicode': str}

# Settings hypothesis 3.x accepted that today's version rejects (all of
# them only tuned how long or how hard a search ran).
_LEGACY_SETTINGS = ('timeout', 'min_satisfying_examples', 'perform_health_check',
                    'max_iterations', 'strict', 'use_coverage', 'buffer_size', 'max_shrinks')
_LEGACY_STRATEGY_ARGUMENTS = ('average_size',)


def restore_numpy_aliases():
    import numpy as np
    with warnings.catch_warnings():
        # numpy >= 1.24 warns on hasattr(np, 'bool') (reserved for the future).
        warnings.simplefilter('ignore', FutureWarning)
        missing = [name for name in _NUMPY_BUILTIN_ALIASES if name not in np.__dict__]
    for name in missing:
        setattr(np, name, _NUMPY_BUILTIN_ALIASES[name])
    if 'asscalar' not in np.__dict__:
        np.asscalar = lambda array: np.asarray(array).item()
    if not getattr(np.set_printoptions, '_doppio_legacy', False):
        np.set_printoptions = _nan_threshold_means_everything(np.set_printoptions)


def _nan_threshold_means_everything(set_printoptions):
    @functools.wraps(set_printoptions)
    def wrapper(*args, **kwargs):
        threshold = kwargs.get('threshold')
        if isinstance(threshold, float) and threshold != threshold:
            kwargs['threshold'] = sys.maxsize
        return set_printoptions(*args, **kwargs)
    wrapper._doppio_legacy = True
    return wrapper


def _dropping(function, names):
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        for name in names:
            kwargs.pop(name, None)
        return function(*args, **kwargs)
    wrapper._doppio_legacy = True
    return wrapper


def accept_legacy_hypothesis_arguments():
    import hypothesis
    import hypothesis.strategies as st
    settings_init = hypothesis.settings.__init__
    if not getattr(settings_init, '_doppio_legacy', False):
        hypothesis.settings.__init__ = _dropping(settings_init, _LEGACY_SETTINGS)
    for name in ('lists', 'sets', 'frozensets', 'text', 'dictionaries'):
        strategy = getattr(st, name)
        if not getattr(strategy, '_doppio_legacy', False):
            setattr(st, name, _dropping(strategy, _LEGACY_STRATEGY_ARGUMENTS))
