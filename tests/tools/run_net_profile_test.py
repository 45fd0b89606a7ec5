"""run_net --profile FILE: a Chrome trace (Trace Event Format) with one
complete event per op of the net; --trace is the older name of the flag.

The expected events come from the NetDef written here: every op index once,
with the op's type; the JSON is checked against the format's rules (a
traceEvents list of objects with name/ph/pid/tid, and ts/dur on "X" events).
"""

import json
import os
import subprocess
import tempfile
import unittest

import numpy as np

from proto import doppio_pb2
from tool_paths import runfile


RUN_NET = runfile("tools/run_net")


def _op(op_type, inputs, outputs, **ints):
    op = doppio_pb2.OperatorDef(type=op_type, input=inputs, output=outputs)
    for name, value in ints.items():
        if isinstance(value, list):
            op.arg.add(name=name).ints.extend(value)
        elif isinstance(value, float):
            op.arg.add(name=name, f=value)
        else:
            op.arg.add(name=name, i=value)
    return op


def _nets(net_type=""):
    init = doppio_pb2.NetDef(name="init")
    init.op.extend([
        _op("ConstantFill", [], ["w"], shape=[5, 4], value=0.1),
        _op("ConstantFill", [], ["b"], shape=[5], value=0.0),
    ])
    main = doppio_pb2.NetDef(name="profiled", type=net_type,
                             external_input=["x", "w", "b"])
    main.op.extend([
        _op("FC", ["x", "w", "b"], ["h"]),
        _op("Relu", ["h"], ["h"]),
        _op("Softmax", ["h"], ["p"]),
        _op("Scale", ["x"], ["x2"], scale=2.0),
        _op("Sum", ["x2", "x"], ["x3"]),
    ])
    return init, main


class RunNetProfileTest(unittest.TestCase):

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="run_net_profile_test_")

    def path(self, name):
        return os.path.join(self.dir, name)

    def run_net(self, extra, net_type=""):
        init, main = _nets(net_type)
        with open(self.path("init.pb"), "wb") as f:
            f.write(init.SerializeToString())
        with open(self.path("main.pb"), "wb") as f:
            f.write(main.SerializeToString())
        np.save(self.path("x.npy"), np.arange(12, dtype=np.float32).reshape(3, 4))
        # The trace is checked op by op against the net as written, so it
        # runs unrewritten (the inference passes would fuse FC + Relu).
        args = ["--init_net", self.path("init.pb"), "--net", self.path("main.pb"),
                "--input", "x=" + self.path("x.npy"), "--nooptimize"] + extra
        result = subprocess.run([RUN_NET] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                universal_newlines=True, timeout=120)
        return result, main

    def check_trace(self, trace_path, net):
        with open(trace_path) as f:
            trace = json.load(f)
        events = trace["traceEvents"] if isinstance(trace, dict) else trace
        self.assertIsInstance(events, list)
        for event in events:
            for key in ("name", "ph", "pid", "tid"):
                self.assertIn(key, event)
            if event["ph"] == "X":
                self.assertGreaterEqual(event["ts"], 0)
                self.assertGreaterEqual(event["dur"], 0)
        op_events = [e for e in events
                     if e["ph"] == "X" and "op_index" in e.get("args", {})]
        self.assertEqual(sorted(e["args"]["op_index"] for e in op_events),
                         list(range(len(net.op))))
        for event in op_events:
            op = net.op[event["args"]["op_index"]]
            self.assertEqual(event["args"]["type"], op.type)
            self.assertEqual(event["name"], op.name or op.type)
        return op_events

    def test_profile_writes_one_event_per_op(self):
        for net_type in ("", "dag"):
            trace = self.path("trace_%s.json" % (net_type or "simple"))
            result, net = self.run_net(["--profile", trace], net_type)
            self.assertEqual(result.returncode, 0, result.stderr)
            events = self.check_trace(trace, net)
            self.assertTrue(all(e["args"]["device"] == "cpu_0" for e in events))

    def test_trace_is_an_alias(self):
        trace = self.path("trace.json")
        result, net = self.run_net(["--trace", trace])
        self.assertEqual(result.returncode, 0, result.stderr)
        self.check_trace(trace, net)
        result, net = self.run_net(["--trace", trace, "--profile", trace])
        self.assertEqual(result.returncode, 0, result.stderr)

    def test_conflicting_names_and_bad_path_are_errors(self):
        result, _ = self.run_net(["--trace", self.path("a.json"), "--profile", self.path("b.json")])
        self.assertEqual(result.returncode, 2)
        self.assertIn("--profile", result.stderr)
        missing_dir = self.path("no/such/dir/trace.json")
        result, _ = self.run_net(["--profile", missing_dir])
        self.assertEqual(result.returncode, 1)
        self.assertIn(missing_dir, result.stderr)
        self.assertEqual(len(result.stderr.strip().splitlines()), 1, result.stderr)


if __name__ == "__main__":
    unittest.main()
