"""caffe2.python.dyndep.InitOpsLibrary: Caffe2's library targets resolve to
built-in ops; anything else is a clear ImportError, never a silent no-op."""
import sys

import pytest

import doppio._C
from caffe2.python import core, dyndep


@pytest.mark.parametrize('target,op', [
    ('@/caffe2/caffe2/distributed:file_store_handler_ops', 'FileStoreHandlerCreate'),
    ('@/caffe2/caffe2/distributed:redis_store_handler_ops', 'RedisStoreHandlerCreate'),
    ('@/caffe2/caffe2/contrib/gloo:gloo_ops', 'Allreduce'),
    ('@/caffe2/caffe2/contrib/nccl:nccl_ops', 'NCCLAllreduce'),
])
def test_caffe2_targets_resolve_to_built_in_ops(target, op):
    dyndep.InitOpsLibrary(target)
    assert target in dyndep.GetImportedOpsLibraries()
    assert core.IsOperator(op)


def test_unknown_targets_and_missing_files_are_import_errors():
    with pytest.raises(ImportError, match='unknown op library.*:nope_ops.*file_store_handler_ops'):
        dyndep.InitOpsLibrary('@/caffe2/caffe2/contrib:nope_ops')
    with pytest.raises(ImportError, match='no MPI ops'):
        dyndep.InitOpsLibrary('@/caffe2/caffe2/mpi:mpi_ops')
    with pytest.raises(ImportError, match='libabsent_ops.so'):
        dyndep.InitOpsLibrary('/nonexistent/libabsent_ops.so')


def test_a_shared_library_file_is_loaded():
    # The extension itself is a real shared library that registers ops.
    path = doppio._C.__file__
    dyndep.InitOpsLibrary(path)
    assert path in dyndep.GetImportedOpsLibraries()
    assert core.IsOperator('Relu')


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q', '-p', 'no:cacheprovider']))
