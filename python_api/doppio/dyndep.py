"""Caffe2's dyndep: loading operator libraries at run time.

Caffe2 scripts name their op libraries in two ways:
  * a Buck target of Caffe2's own tree ('@/caffe2/caffe2/distributed:
    file_store_handler_ops'): Doppio builds those ops in, so each well-known
    target resolves to its built-in ops, which are checked to be registered;
    a target Doppio does not know, or one whose ops are not built, is an
    ImportError naming it;
  * a path to a shared library ('libmy_ops.so'): loaded with ctypes, so its
    static registrations run, as in Caffe2; a path that is not a file is an
    ImportError (Caffe2 printed a warning and failed later, at the first use
    of an op that was never registered).
"""
import ctypes
import os

from doppio import core

# Caffe2's op-library targets and the ops each provides in Doppio.
_BUILT_IN_LIBRARIES = {
    '@/caffe2/caffe2/distributed:file_store_handler_ops': ('FileStoreHandlerCreate',),
    '@/caffe2/caffe2/distributed:redis_store_handler_ops': ('RedisStoreHandlerCreate',),
    '@/caffe2/caffe2/contrib/gloo:gloo_ops': (
        'CreateCommonWorld', 'CloneCommonWorld', 'DestroyCommonWorld', 'Allreduce',
        'Allgather', 'Broadcast', 'Barrier', 'ReduceScatter'),
    # The CUDA kernels of the same ops (registered for the CUDA device).
    '@/caffe2/caffe2/contrib/gloo:gloo_ops_gpu': (
        'CreateCommonWorld', 'Allreduce', 'Broadcast'),
    '@/caffe2/caffe2/contrib/nccl:nccl_ops': (
        'NCCLAllreduce', 'NCCLBroadcast', 'NCCLReduce', 'NCCLAllGather', 'NCCLReduceScatter'),
}

# Known targets whose ops Doppio does not have, and what to use instead.
_UNAVAILABLE_LIBRARIES = {
    '@/caffe2/caffe2/mpi:mpi_ops': 'Doppio has no MPI ops; rendezvous through Gloo with a '
                                   'file or Redis store (FileStoreHandlerCreate, '
                                   'RedisStoreHandlerCreate)',
}

_IMPORTED_DYNDEPS = set()


def InitOpsLibrary(name):
    """Makes the ops of library `name` available (see the module doc)."""
    if name.startswith('@/'):
        _init_built_in(name)
        return
    if not os.path.isfile(name):
        raise ImportError('dyndep.InitOpsLibrary: {!r} is neither a file nor one of the '
                          'op libraries built into Doppio ({})'.format(
                              name, ', '.join(sorted(_BUILT_IN_LIBRARIES))))
    _init_impl(name)


def _init_built_in(target):
    if target in _UNAVAILABLE_LIBRARIES:
        raise ImportError('dyndep.InitOpsLibrary({!r}): {}'.format(
            target, _UNAVAILABLE_LIBRARIES[target]))
    ops = _BUILT_IN_LIBRARIES.get(target)
    if ops is None:
        raise ImportError('dyndep.InitOpsLibrary: unknown op library {!r}; the Caffe2 '
                          'libraries built into Doppio are {}'.format(
                              target, ', '.join(sorted(_BUILT_IN_LIBRARIES))))
    missing = [op for op in ops if not core.IsOperator(op)]
    if missing:
        raise ImportError('dyndep.InitOpsLibrary({!r}): this build of Doppio lacks its ops '
                          '{}'.format(target, ', '.join(missing)))
    _IMPORTED_DYNDEPS.add(target)


def GetImportedOpsLibraries():
    return _IMPORTED_DYNDEPS


def _init_impl(path):
    # RTLD_GLOBAL, as Caffe2's DlopenGuard: a library of ops resolves the
    # framework's symbols from the already loaded extension.
    ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    _IMPORTED_DYNDEPS.add(path)
    core.RefreshRegisteredOperators()
