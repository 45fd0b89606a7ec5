"""The cap on serialized NetDefs and PlanDefs handed to C++ as bytes
(DOPPIO_MAX_PROTO_BYTES, core/limits.h): a message over it is refused before
it is parsed, with an error naming what it is, the limit and how to raise it;
one under it runs. The cap is read once per process, so each case runs in a
fresh interpreter with the variable set; sizes come from the message's own
ByteSize() (protobuf's Python implementation, independent of Doppio)."""
import os
import subprocess
import sys
import textwrap

import pytest

# Builds a NetDef of a few hundred bytes and tries CreateNet, RunNetOnce and
# RunPlan with it; prints one line per call: its name and OK or the error.
_SCRIPT = textwrap.dedent("""
    import numpy as np
    from doppio import workspace
    from doppio.proto import doppio_pb2
    net = doppio_pb2.NetDef(name="capped")
    for i in range(8):
        net.op.add(type="Relu", input=["x"], output=["x"], name="relu_%d" % i)
    plan = doppio_pb2.PlanDef(name="capped_plan")
    plan.network.add().CopyFrom(net)
    plan.execution_step.add(name="step", network=["capped"], num_iter=1)
    print("SIZES", net.ByteSize(), plan.ByteSize())
    workspace.FeedBlob("x", np.array([-1.0, 2.0], np.float32))
    calls = [
        ("CreateNet", lambda: workspace.CreateNet(net, overwrite=True)),
        ("RunNetOnce", lambda: workspace.RunNetOnce(net)),
        ("RunPlan", lambda: workspace.RunPlan(plan)),
    ]
    for name, call in calls:
        try:
            call()
            print(name, "OK")
        except RuntimeError as error:
            print(name, "ERROR", str(error).replace("\\n", " "))
""")


def run_with_limit(limit):
    env = dict(os.environ)
    env["DOPPIO_MAX_PROTO_BYTES"] = limit
    result = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True,
                            timeout=120, env=env)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    sizes = [line for line in lines if line.startswith("SIZES ")]
    assert len(sizes) == 1, result.stdout
    net_bytes, plan_bytes = (int(value) for value in sizes[0].split()[1:])
    outcomes = {line.split(" ", 1)[0]: line.split(" ", 1)[1] for line in lines
                if line.split(" ", 1)[0] in ("CreateNet", "RunNetOnce", "RunPlan")}
    return net_bytes, plan_bytes, outcomes


def test_messages_over_the_cap_are_refused_naming_it():
    net_bytes, plan_bytes, outcomes = run_with_limit("64")
    assert net_bytes > 64 and plan_bytes > 64
    for call in ("CreateNet", "RunNetOnce"):
        message = outcomes[call]
        assert message.startswith("ERROR"), (call, message)
        assert "NetDef from bytes" in message
        assert "is %d bytes" % net_bytes in message
        assert "limit of 64 bytes" in message
        assert "DOPPIO_MAX_PROTO_BYTES" in message
    plan_message = outcomes["RunPlan"]
    assert "PlanDef from bytes" in plan_message and "is %d bytes" % plan_bytes in plan_message


def test_messages_under_the_cap_run():
    net_bytes, plan_bytes, outcomes = run_with_limit("1K")
    assert net_bytes < 1024 and plan_bytes < 1024
    assert outcomes == {"CreateNet": "OK", "RunNetOnce": "OK", "RunPlan": "OK"}


def test_exactly_at_the_cap_runs_and_one_byte_less_fails():
    net_bytes, plan_bytes, _ = run_with_limit("1K")
    _, _, at_cap = run_with_limit(str(max(net_bytes, plan_bytes)))
    assert at_cap == {"CreateNet": "OK", "RunNetOnce": "OK", "RunPlan": "OK"}
    _, _, below = run_with_limit(str(net_bytes - 1))
    assert below["CreateNet"].startswith("ERROR") and "NetDef from bytes" in below["CreateNet"]


def test_malformed_cap_names_the_variable():
    _, _, outcomes = run_with_limit("lots")
    assert "DOPPIO_MAX_PROTO_BYTES='lots'" in outcomes["RunNetOnce"]


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
