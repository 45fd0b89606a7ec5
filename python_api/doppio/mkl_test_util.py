"""caffe2.python.mkl_test_util: hypothesis_test_util's device strategies with
Caffe2's MKL-DNN device added where the build has one. Doppio has none
(workspace.C.has_mkldnn is False), so the MKL strategies exist for tests to
decorate with, and those tests skip on has_mkldnn as Caffe2's do."""
import hypothesis.strategies as st

from doppio import hypothesis_test_util as hu
from doppio import workspace
from doppio.proto import doppio_pb2 as caffe2_pb2

cpu_do = hu.cpu_do
gpu_do = hu.gpu_do
mkl_do = caffe2_pb2.DeviceOption(device_type=caffe2_pb2.MKLDNN)
device_options = hu.device_options + ([mkl_do] if workspace.C.has_mkldnn else [])


def device_checker_device_options():
    return st.just(device_options)


def gradient_checker_device_option():
    return st.sampled_from(device_options)


gcs = dict(gc=gradient_checker_device_option(), dc=device_checker_device_options())
gcs_cpu_only = hu.gcs_cpu_only
gcs_gpu_only = hu.gcs_gpu_only
gcs_mkl_only = dict(gc=st.sampled_from([mkl_do]), dc=st.just([mkl_do]))
gcs_cpu_mkl = dict(gc=st.sampled_from([cpu_do, mkl_do]), dc=st.just([cpu_do, mkl_do]))
