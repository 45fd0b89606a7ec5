"""End-to-end tests of tools/run_net and tools/print_registered_ops.

Nets are built here with the generated protobuf module, inputs are written
with numpy.save and as TensorProtos, and every output is checked against
numpy computing the same thing. Failure cases check the CLI contract: a
non-zero exit, exactly one line on stderr, and a message naming the culprit.
"""

import os
import subprocess
import tempfile
import unittest

import numpy as np
from google.protobuf import text_format

from proto import doppio_pb2
from tool_paths import runfile


RUN_NET = runfile("tools/run_net")
PRINT_REGISTERED_OPS = runfile("tools/print_registered_ops")


def _op(op_type, inputs, outputs, **args):
    op = doppio_pb2.OperatorDef(type=op_type, input=inputs, output=outputs)
    for name, value in args.items():
        arg = op.arg.add(name=name)
        if isinstance(value, bool) or isinstance(value, int):
            arg.i = int(value)
        elif isinstance(value, float):
            arg.f = value
        elif isinstance(value, str):
            arg.s = value.encode()
        elif all(isinstance(v, int) for v in value):
            arg.ints.extend(value)
        else:
            arg.floats.extend(value)
    return op


def _net(name, ops, external_input=()):
    net = doppio_pb2.NetDef(name=name, external_input=list(external_input))
    net.op.extend(ops)
    return net


W = np.array([[1.0, -2.0, 0.5], [4.0, 0.25, -8.0]], dtype=np.float32)


def _init_net():
    return _net("init", [
        _op("GivenTensorFill", [], ["w"], shape=[2, 3], values=[float(v) for v in W.flat]),
        _op("ConstantFill", [], ["b"], shape=[2, 3], value=0.5),
    ])


def _main_net(scale_arg=2.0, add_type="Add", external_input=("x", "y", "w", "b")):
    return _net("main", [
        _op(add_type, ["x", "y"], ["s"]),
        _op("Scale", ["s"], ["t"], scale=scale_arg),
        _op("Sum", ["t", "w", "b"], ["u"]),
        _op("Copy", ["u"], ["v"]),
    ], external_input=external_input)


def _tensor_proto(array):
    proto = doppio_pb2.TensorProto(dims=list(array.shape))
    assert array.dtype == np.float32
    proto.data_type = doppio_pb2.TensorProto.FLOAT
    proto.float_data.extend(float(v) for v in array.flat)
    return proto


class ToolTestCase(unittest.TestCase):

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(dir=os.environ.get("TEST_TMPDIR"))
        self.dir = self._tmp.name
        rng = np.random.RandomState(7)
        self.x = rng.uniform(-1, 1, size=(2, 3)).astype(np.float32)
        self.y = rng.uniform(-1, 1, size=(2, 3)).astype(np.float32)

    def tearDown(self):
        self._tmp.cleanup()

    def path(self, name):
        return os.path.join(self.dir, name)

    def write_bytes(self, name, data):
        with open(self.path(name), "wb") as f:
            f.write(data)
        return self.path(name)

    def write_net(self, name, net, text=False):
        if text:
            with open(self.path(name), "w") as f:
                f.write(text_format.MessageToString(net))
            return self.path(name)
        return self.write_bytes(name, net.SerializeToString())

    def write_inputs(self):
        np.save(self.path("x.npy"), self.x)
        self.write_bytes("y.pb", _tensor_proto(self.y).SerializeToString())
        return ["--input", "x=" + self.path("x.npy"), "--input", "y=" + self.path("y.pb")]

    def run_tool(self, binary, args):
        return subprocess.run([binary] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, timeout=120)

    def assert_one_line_error(self, result, *culprits, exit_code=1):
        self.assertEqual(result.returncode, exit_code,
                         "stdout: %s\nstderr: %s" % (result.stdout, result.stderr))
        lines = result.stderr.splitlines()
        self.assertEqual(len(lines), 1, "stderr should be one line: %r" % result.stderr)
        self.assertTrue(lines[0].startswith("run_net: error: "), lines[0])
        for culprit in culprits:
            self.assertIn(culprit, lines[0])
        return lines[0]


class RunNetTest(ToolTestCase):

    def expected(self):
        s = self.x + self.y
        t = np.float32(2.0) * s
        u = t + W + np.float32(0.5)
        return s, u

    def check_outputs(self, net_file, init_file, inputs):
        result = self.run_tool(RUN_NET, [
            "--init_net", init_file, "--net", net_file,
            "--output", "s=" + self.path("s.npy"),
            "--output", "u=%s,v=%s" % (self.path("u.npy"), self.path("v.npy")),
        ] + inputs)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stderr, "")
        s, u = self.expected()
        got_s = np.load(self.path("s.npy"))
        self.assertEqual(got_s.dtype, np.float32)
        self.assertEqual(got_s.shape, (2, 3))
        np.testing.assert_array_equal(got_s, s)
        for name in ("u", "v"):
            got = np.load(self.path(name + ".npy"))
            self.assertEqual(got.shape, (2, 3))
            np.testing.assert_allclose(got, u, rtol=1e-6)

    def test_binary_nets(self):
        self.check_outputs(self.write_net("main.pb", _main_net()),
                           self.write_net("init.pb", _init_net()), self.write_inputs())

    def test_text_nets(self):
        self.check_outputs(self.write_net("main.pbtxt", _main_net(), text=True),
                           self.write_net("init.pbtxt", _init_net(), text=True),
                           self.write_inputs())

    def test_comma_separated_inputs_and_text_tensor_proto(self):
        np.save(self.path("x.npy"), self.x)
        with open(self.path("y.pbtxt"), "w") as f:
            f.write(text_format.MessageToString(_tensor_proto(self.y)))
        inputs = ["--input=x=%s,y=%s" % (self.path("x.npy"), self.path("y.pbtxt"))]
        self.check_outputs(self.write_net("main.pb", _main_net()),
                           self.write_net("init.pb", _init_net()), inputs)

    def test_timing_and_per_op_report(self):
        result = self.run_tool(RUN_NET, [
            "--init_net", self.write_net("init.pb", _init_net()),
            "--net", self.write_net("main.pb", _main_net()),
            "--iters", "3", "--warmup=2", "--report_per_op",
        ] + self.write_inputs())
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("2 warmup + 3 timed", result.stdout)
        # The report counts the timed runs only, not the warmup ones.
        self.assertIn("over 3 run(s)", result.stdout)
        report = result.stdout[result.stdout.index("Per-op time"):]
        for op_type in ("Add", "Scale", "Sum", "Copy"):
            rows = [line for line in report.splitlines() if line.split()[:1] == [op_type]]
            self.assertEqual(len(rows), 1, report)
            fields = rows[0].split()
            self.assertEqual(fields[1], "1")  # one op of each type
            self.assertTrue(fields[-1].endswith("%"))
        percents = [float(line.split()[-1].rstrip("%")) for line in report.splitlines()
                    if line.split()[:1] in (["Add"], ["Scale"], ["Sum"], ["Copy"])]
        self.assertAlmostEqual(sum(percents), 100.0, delta=0.1)

    def test_every_npy_dtype_passes_through_copy(self):
        net = self.write_net("copy.pb", _net("copy", [_op("Copy", ["a"], ["b"])]))
        arrays = {
            "float32": np.array([[1.5, -2.25]], np.float32),
            "float64": np.array([1e-300, -3.0]),
            "float16": np.array([0.5, -65504.0, np.inf], np.float16),
            "int8": np.array([-128, 127], np.int8),
            "int16": np.array([-32768, 32767], np.int16),
            "int32": np.array([[-(2 ** 31)], [2 ** 31 - 1]], np.int32),
            "int64": np.array([-(2 ** 63), 2 ** 63 - 1], np.int64),
            "uint8": np.array([0, 255], np.uint8),
            "uint16": np.array([0, 65535], np.uint16),
            "bool": np.array([[True, False], [False, True]]),
            "scalar": np.array(3.0, np.float32),
            "empty": np.zeros((0, 4), np.int32),
            "big_endian": np.array([1.0, 2.5, -7.0], ">f4"),
            "fortran_1d_like": np.asfortranarray(np.ones((1, 5), np.float32)),
        }
        for name, array in arrays.items():
            with self.subTest(dtype=name):
                np.save(self.path("a.npy"), array)
                result = self.run_tool(RUN_NET, [
                    "--net", net, "--input", "a=" + self.path("a.npy"),
                    "--output", "b=" + self.path("b.npy")])
                self.assertEqual(result.returncode, 0, result.stderr)
                got = np.load(self.path("b.npy"))
                self.assertEqual(got.dtype, array.dtype.newbyteorder("<")
                                 if array.dtype.byteorder == ">" else array.dtype)
                self.assertEqual(got.shape, array.shape)
                np.testing.assert_array_equal(got, array)

    def test_npy_format_versions_2_and_3(self):
        net = self.write_net("copy.pb", _net("copy", [_op("Copy", ["a"], ["b"])]))
        array = np.arange(12, dtype=np.int64).reshape(3, 4) - 5
        for version in ((2, 0), (3, 0)):
            with self.subTest(version=version):
                with open(self.path("a.npy"), "wb") as f:
                    np.lib.format.write_array(f, array, version=version)
                result = self.run_tool(RUN_NET, [
                    "--net", net, "--input", "a=" + self.path("a.npy"),
                    "--output", "b=" + self.path("b.npy")])
                self.assertEqual(result.returncode, 0, result.stderr)
                np.testing.assert_array_equal(np.load(self.path("b.npy")), array)

    def test_help(self):
        result = self.run_tool(RUN_NET, ["--help"])
        self.assertEqual(result.returncode, 0)
        for flag in ("init_net", "net", "plan", "input", "output", "iters", "warmup",
                     "report_per_op"):
            self.assertIn("-" + flag, result.stdout)


class RunNetErrorTest(ToolTestCase):

    def run_main(self, net, extra=(), inputs=None):
        args = ["--init_net", self.write_net("init.pb", _init_net()), "--net", net]
        return self.run_tool(RUN_NET, args + (self.write_inputs() if inputs is None else inputs)
                             + list(extra))

    def test_truncated_binary_net(self):
        data = _main_net().SerializeToString()
        cut = len(data) * 2 // 3
        while True:  # cut inside a field, where the wire data is invalid
            try:
                doppio_pb2.NetDef.FromString(data[:cut])
            except Exception:
                break
            cut -= 1
        net = self.write_bytes("truncated.pb", data[:cut])
        self.assert_one_line_error(self.run_main(net), net, "NetDef")

    def test_net_file_over_the_proto_byte_cap(self):
        main = _main_net()
        main.name = "main_" + "x" * 200  # larger than the init net, which must pass
        net = self.write_net("main.pb", main)
        size = os.path.getsize(net)
        init = self.write_net("init.pb", _init_net())
        self.assertLess(os.path.getsize(init), size)
        args = ["--init_net", init, "--net", net]
        env = dict(os.environ, DOPPIO_MAX_PROTO_BYTES=str(size - 1))
        result = subprocess.run([RUN_NET] + args + self.write_inputs(), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, universal_newlines=True, timeout=120,
                                env=env)
        self.assert_one_line_error(result, "NetDef file '%s'" % net, "is %d bytes" % size,
                                   "limit of %d bytes" % (size - 1), "DOPPIO_MAX_PROTO_BYTES")

    def test_garbage_net(self):
        garbage = bytes([0xff, 0xfe, 0x00, 0x13, 0x37]) * 20
        with self.assertRaises(Exception):
            doppio_pb2.NetDef.FromString(garbage)
        net = self.write_bytes("garbage.pb", garbage)
        line = self.assert_one_line_error(self.run_main(net), net)
        self.assertIn("binary", line)
        self.assertIn("text", line)

    def test_malformed_text_net(self):
        net = self.write_bytes("bad.pbtxt", b'name: "main"\nop { type: "Scale" input: }\n')
        line = self.assert_one_line_error(self.run_main(net), net)
        self.assertIn("line 2", line)

    def test_unknown_op_type_suggests_a_close_name(self):
        net = self.write_net("scal.pb", _net("main", [_op("Scal", ["x"], ["z"])]))
        line = self.assert_one_line_error(self.run_main(net), "'Scal'", "Scale", net)
        self.assertIn("did you mean", line)

    def test_missing_input_blob(self):
        np.save(self.path("x.npy"), self.x)
        only_x = ["--input", "x=" + self.path("x.npy")]
        declared = self.write_net("declared.pb", _main_net())
        self.assert_one_line_error(self.run_main(declared, inputs=only_x), "'y'", declared)
        undeclared = self.write_net("undeclared.pb", _main_net(external_input=()))
        self.assert_one_line_error(self.run_main(undeclared, inputs=only_x), "'y'", "Add")

    def test_argument_of_the_wrong_type(self):
        net = self.write_net("badarg.pb", _main_net(scale_arg="two"))
        self.assert_one_line_error(self.run_main(net), "'scale'", "string", "Scale")

    def test_shape_mismatch_in_add(self):
        net = self.write_net("main.pb", _main_net())
        np.save(self.path("x.npy"), self.x)
        np.save(self.path("y45.npy"), np.ones((4, 5), np.float32))
        inputs = ["--input", "x=" + self.path("x.npy"), "--input", "y=" + self.path("y45.npy")]
        self.assert_one_line_error(self.run_main(net, inputs=inputs), "Add", "main.pb")

    def test_truncated_npy_input(self):
        np.save(self.path("x.npy"), self.x)
        with open(self.path("x.npy"), "rb") as f:
            data = f.read()
        short = self.write_bytes("short.npy", data[:-5])
        np.save(self.path("y.npy"), self.y)
        inputs = ["--input", "x=" + short, "--input", "y=" + self.path("y.npy")]
        self.assert_one_line_error(self.run_main(self.write_net("main.pb", _main_net()),
                                                 inputs=inputs), short, "truncated")

    def test_inconsistent_tensor_proto_input(self):
        np.save(self.path("x.npy"), self.x)
        proto = _tensor_proto(self.y)
        del proto.float_data[-2:]  # dims promise 6 values; 4 remain
        bad = self.write_bytes("bad_y.pb", proto.SerializeToString())
        inputs = ["--input", "x=" + self.path("x.npy"), "--input", "y=" + bad]
        self.assert_one_line_error(self.run_main(self.write_net("main.pb", _main_net()),
                                                 inputs=inputs), bad)

    def test_fortran_ordered_npy_input(self):
        np.save(self.path("f.npy"), np.asfortranarray(self.x))
        inputs = ["--input", "x=" + self.path("f.npy"), "--input", "y=" + self.path("f.npy")]
        self.assert_one_line_error(self.run_main(self.write_net("main.pb", _main_net()),
                                                 inputs=inputs), "f.npy", "Fortran")

    def test_nonexistent_files(self):
        missing = self.path("no_such_net.pb")
        self.assert_one_line_error(self.run_main(missing), missing)
        net = self.write_net("main.pb", _main_net())
        missing_input = self.path("no_such_input.npy")
        self.assert_one_line_error(
            self.run_main(net, inputs=["--input", "x=" + missing_input]), missing_input)

    def test_missing_or_non_tensor_output(self):
        net = self.write_net("main.pb", _main_net())
        self.assert_one_line_error(
            self.run_main(net, extra=["--output", "nope=" + self.path("o.npy")]), "'nope'")
        self.assertFalse(os.path.exists(self.path("o.npy")))

    def test_usage_errors_exit_2(self):
        net = self.write_net("main.pb", _main_net())
        self.assert_one_line_error(self.run_tool(RUN_NET, ["--net", net, "--bogus=1"]),
                                   "--bogus", exit_code=2)
        self.assert_one_line_error(self.run_tool(RUN_NET, []), "--net", exit_code=2)
        self.assert_one_line_error(self.run_tool(RUN_NET, ["--net", net, "--iters=abc"]),
                                   "abc", exit_code=2)
        self.assert_one_line_error(self.run_tool(RUN_NET, ["--net", net, "--input", "x"]),
                                   "NAME=FILE", exit_code=2)


def _plan(name, networks, steps):
    plan = doppio_pb2.PlanDef(name=name)
    plan.network.extend(networks)
    plan.execution_step.extend(steps)
    return plan


def _accumulate_plan(iterations):
    """acc = 0; repeat `iterations` times: acc = 0.5 * acc + x, it += 1;
    then out = acc + w + b (w and b from the init net)."""
    zero = _net("zero", [_op("ConstantFill", [], ["acc"], shape=[2, 3], value=0.0)])
    step = _net("step", [
        _op("Scale", ["acc"], ["acc"], scale=0.5),
        _op("Add", ["acc", "x"], ["acc"]),
        _op("Iter", [], ["it"]),
    ])
    finish = _net("finish", [_op("Sum", ["acc", "w", "b"], ["out"])])
    return _plan("accumulate", [zero, step, finish], [
        doppio_pb2.ExecutionStep(name="zero", network=["zero"]),
        doppio_pb2.ExecutionStep(name="loop", substep=[
            doppio_pb2.ExecutionStep(name="body", network=["step"], num_iter=iterations)]),
        doppio_pb2.ExecutionStep(name="finish", network=["finish"]),
    ])


class RunPlanTest(ToolTestCase):

    def run_plan(self, plan_file, extra=()):
        np.save(self.path("x.npy"), self.x)
        return self.run_tool(RUN_NET, [
            "--init_net", self.write_net("init.pb", _init_net()), "--plan", plan_file,
            "--input", "x=" + self.path("x.npy"),
        ] + list(extra))

    def check_accumulated(self, plan_file, iterations):
        result = self.run_plan(plan_file, [
            "--output", "acc=%s,out=%s,it=%s" % (
                self.path("acc.npy"), self.path("out.npy"), self.path("it.npy"))])
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stderr, "")
        self.assertIn("plan 'accumulate': 3 network(s), 3 execution step(s)", result.stdout)
        acc = np.zeros((2, 3), np.float32)
        for _ in range(iterations):
            acc = np.float32(0.5) * acc + self.x
        got_acc = np.load(self.path("acc.npy"))
        self.assertEqual(got_acc.dtype, np.float32)
        np.testing.assert_allclose(got_acc, acc, rtol=1e-6)
        np.testing.assert_allclose(np.load(self.path("out.npy")), acc + W + np.float32(0.5),
                                   rtol=1e-6)
        np.testing.assert_array_equal(np.load(self.path("it.npy")),
                                      np.array([iterations], np.int64))

    def test_text_plan_runs_a_net_num_iter_times(self):
        self.check_accumulated(self.write_net("plan.pbtxt", _accumulate_plan(7), text=True), 7)

    def test_binary_plan(self):
        self.check_accumulated(self.write_net("plan.pb", _accumulate_plan(3)), 3)

    def test_step_with_substeps_and_networks_is_one_line_error(self):
        plan = _accumulate_plan(2)
        plan.execution_step[1].network.append("step")
        plan_file = self.write_net("mixed.pbtxt", plan, text=True)
        self.assert_one_line_error(self.run_plan(plan_file), "execution step 'loop'",
                                   "both substeps and networks", "plan 'accumulate'",
                                   plan_file)

    def test_unknown_network_and_failing_op_are_one_line_errors(self):
        plan = _accumulate_plan(2)
        plan.execution_step[1].substep[0].network[0] = "stpe"
        plan_file = self.write_net("typo.pb", plan)
        self.assert_one_line_error(self.run_plan(plan_file), "execution step 'loop/body'",
                                   "'stpe'")
        plan = _accumulate_plan(2)
        plan.network[2].op[0].input[1] = "missing_blob"
        plan_file = self.write_net("missing.pb", plan)
        self.assert_one_line_error(self.run_plan(plan_file), "'missing_blob'", "Sum",
                                   "execution step 'finish'")

    def test_malformed_plan_file(self):
        plan_file = self.write_bytes("bad.pbtxt", b'name: "p"\nexecution_step { num_iter: x }\n')
        self.assert_one_line_error(self.run_plan(plan_file), plan_file, "PlanDef")

    def test_plan_usage_errors_exit_2(self):
        plan_file = self.write_net("plan.pb", _accumulate_plan(1))
        net_file = self.write_net("main.pb", _main_net())
        self.assert_one_line_error(
            self.run_tool(RUN_NET, ["--plan", plan_file, "--net", net_file]),
            "--net and --plan", exit_code=2)
        self.assert_one_line_error(
            self.run_tool(RUN_NET, ["--plan", plan_file, "--iters=3"]), "--iters",
            exit_code=2)


class PrintRegisteredOpsTest(ToolTestCase):

    def test_lists_scale_with_schema_and_gradient(self):
        result = self.run_tool(PRINT_REGISTERED_OPS, [])
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stderr, "")
        blocks = {}
        for block in result.stdout.split("\n\n")[1:]:
            lines = block.strip().splitlines()
            blocks[lines[0]] = "\n".join(lines[1:])
        for op_type in ("Scale", "Add", "Sum", "Copy", "ConstantFill", "GivenTensorFill"):
            self.assertIn(op_type, blocks)
        scale = blocks["Scale"]
        self.assertIn("devices:  CPU", scale)
        # Scale's contract: one input, one output, may run in place.
        self.assertIn("schema:   inputs 1, outputs 1, in-place allowed", scale)
        self.assertIn("gradient: maker", scale)
        self.assertIn("gradient: no gradient (", blocks["ConstantFill"])


if __name__ == "__main__":
    unittest.main()
