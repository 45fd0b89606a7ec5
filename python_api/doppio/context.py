"""Caffe2's context module: classes whose instances, entered with `with`,
become the "current" one for code running inside the block.

    @context.define_context(allow_default=True)
    class Node(object): ...

    with Node('trainer'):
        Node.current()       # that Node

`define_context` gives the class `current(value=None, required=True)` and
wraps its __enter__/__exit__ (the class's own run first on entry, last on
exit). Each thread has its own stack of active instances per class. With
allow_default, `current()` outside any block creates (and keeps) a
default instance; without, it is an error (or None with required=False).
"""
import threading


class _ContextInfo(object):
    def __init__(self, cls, allow_default):
        self.cls = cls
        self.allow_default = allow_default
        self._local = threading.local()

    @property
    def stack(self):
        if not hasattr(self._local, 'stack'):
            self._local.stack = []
        return self._local.stack

    def enter(self, value):
        self.stack.append(value)

    def exit(self, value):
        if not self.stack or self.stack[-1] is not value:
            raise RuntimeError('{} context exited out of order'.format(self.cls.__name__))
        self.stack.pop()

    def get_active(self, required=True):
        if not self.stack:
            if not required:
                return None
            if not self.allow_default:
                raise AssertionError('Context {} is required but none is active.'.format(
                    self.cls.__name__))
            self.enter(self.cls())
        return self.stack[-1]


_registry = {}


def _info(cls):
    for klass in cls.__mro__:
        if klass in _registry:
            return _registry[klass]
    raise KeyError('{} is not a context class'.format(cls.__name__))


def _enter(self):
    if self._prev_enter is not None:
        self._prev_enter()
    _info(type(self)).enter(self)
    return self


def _exit(self, *exc):
    _info(type(self)).exit(self)
    if self._prev_exit is not None:
        return self._prev_exit(*exc)
    return None


def _current(cls, value=None, required=True):
    if value is not None:
        if not isinstance(value, cls):
            raise AssertionError('Wrong context type. Expected: {}, got {}.'.format(
                cls.__name__, type(value).__name__))
        return value
    return _info(cls).get_active(required=required)


def define_context(arg_name=None, allow_default=False):
    """Class decorator: makes the class a context (see the module doc).
    arg_name is accepted for Caffe2's signature."""
    def wrapper(cls):
        _registry[cls] = _ContextInfo(cls, allow_default)
        cls._prev_enter = cls.__dict__.get('__enter__')
        cls._prev_exit = cls.__dict__.get('__exit__')
        cls.__enter__ = _enter
        cls.__exit__ = _exit
        cls.current = classmethod(_current)
        return cls
    return wrapper
