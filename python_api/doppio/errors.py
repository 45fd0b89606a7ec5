"""The kinds of Doppio's errors, as Python types.

Doppio's C++ picks an error's kind where the check is written
(core/enforce.h); each kind arrives here as its own type, and every one of
them is also a RuntimeError, the one type Caffe2 raised, so `except
RuntimeError` in code written for Caffe2 still catches them:

    InvalidArgumentError  (ValueError, RuntimeError)   a bad option, argument, shape
    OutOfRangeError       (IndexError, RuntimeError)   an index out of range
    NotFoundError         (LookupError, RuntimeError)  a missing blob, op type, net
    NotImplementedError   (builtin, a RuntimeError)    valid but not supported yet

Any other failure (a file that cannot be read, a dead peer) is a plain
RuntimeError. docs/errors.md has the whole contract.
"""
from doppio._C import InvalidArgumentError, NotFoundError, OutOfRangeError  # noqa: F401

__all__ = ['InvalidArgumentError', 'NotFoundError', 'OutOfRangeError']
