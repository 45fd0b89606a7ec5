"""Control flow between models (caffe2.python.helpers.control_ops; brew
registers them): the branch and body models' nets run in scopes of their own
(doppio.control_ops_util)."""

from doppio.control_ops_util import add_if_op, add_while_op


def cond(model, cond_blob, external_blobs, then_model, else_model=None):
    """Runs then_model's net when cond_blob (a bool scalar) is true, else
    else_model's; `external_blobs` are the outer blobs the branches may use."""
    add_if_op(model.net, cond_blob, external_blobs, then_model.net,
              else_model.net if else_model else None)


def loop(model, cond_blob, external_blobs, loop_model, cond_model=None):
    """Runs loop_model's net while cond_blob is true; cond_model's net, if
    given, runs before each check and writes cond_blob."""
    add_while_op(model.net, cond_blob, external_blobs, loop_model.net,
                 cond_model.net if cond_model else None)
