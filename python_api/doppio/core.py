"""caffe2.python.core: graph building (BlobReference, Net, CreateOperator,
DeviceOption, the gradient registry), plans and execution steps, and the
cross-device copy injection, under the one name Caffe2 scripts import.

The pieces live in modules that import one another in one direction only:
core_blob, core_gradient <- core_net (operators, nets) <- plan, cross_device <-
workspace <- this
module, which only re-exports them (tests/python/import_cycles_test checks
that the package has no import cycle).
"""
from doppio import scope  # noqa: F401  (core.scope, as in Caffe2)
from doppio import workspace
from doppio.core_net import *  # noqa: F401,F403
from doppio.cross_device import (  # noqa: F401
    InjectCrossDeviceCopies, InjectDeviceCopiesAmongNets,
    InjectDeviceCopiesAmongNetsWithoutB2D, RemapEntry)
from doppio.python_ops import CreatePythonOperator  # noqa: F401
from doppio.ssa import (  # noqa: F401
    get_op_ids_in_path, get_output_producers, get_ssa, get_undefined_blobs)
from doppio.plan import (  # noqa: F401
    ExecutionStep, Plan, execution_step, scoped_execution_step, to_execution_step)

# Caffe2 exposes this through core as well.
GlobalInit = workspace.GlobalInit
