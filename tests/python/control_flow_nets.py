"""Nets the control-flow tests share (control_ops_test on the CPU,
gpu_control_flow_test under a GPU scope), and a walk over nested nets."""
from doppio import core
from doppio.net_builder import NetBuilder, ops


def adder_net(name='adder'):
    """Z = (X + Y) * Y."""
    net = core.Net(name)
    net.Add(['X', 'Y'], 'T')
    net.Mul(['T', 'Y'], 'Z')
    return net


def squaring_loop(rounds):
    """x = 1.5, y = 0.5; `rounds` times: x = x^2, y += x; s = x + y. A While
    whose condition net counts i up to `rounds`."""
    with NetBuilder(_use_control_ops=True) as nb:
        ops.Copy(ops.Const(0), 'i')
        ops.Copy(ops.Const(1), 'one')
        ops.Copy(ops.Const(rounds), 'n')
        ops.Copy(ops.Const(1.5), 'x')
        ops.Copy(ops.Const(0.5), 'y')
        with ops.WhileNet():
            with ops.Condition():
                ops.Add(['i', 'one'], 'i')
                ops.LE(['i', 'n'])
            ops.Pow('x', 'x', exponent=2.0)
            ops.Add(['y', 'x'], 'y')
        ops.Add(['x', 'y'], 's')
    return nb.get()[0]


def all_ops(net_proto):
    """(net name, op) for every op of a net and of the nets in its ops'
    arguments, depth first."""
    for op in net_proto.op:
        yield net_proto.name, op
        for arg in op.arg:
            for sub in list(arg.nets) + ([arg.n] if arg.HasField('n') else []):
                yield from all_ops(sub)
