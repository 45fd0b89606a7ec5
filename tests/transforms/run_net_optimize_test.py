"""run_net --optimize end to end: the reference CNN's predict + init nets
(written here with the generated protobuf module, random weights and BN
statistics) run with and without the flag; both must match a numpy forward
pass written here, and the flag must say what it fused."""

import os
import subprocess
import tempfile
import unittest

import numpy as np

from proto import doppio_pb2
from tool_paths import runfile


RUN_NET = runfile("tools/run_net")


def _op(op_type, inputs, outputs, **args):
    op = doppio_pb2.OperatorDef(type=op_type, input=inputs, output=outputs)
    for name, value in sorted(args.items()):
        arg = op.arg.add(name=name)
        if isinstance(value, int):
            arg.i = value
        elif isinstance(value, float):
            arg.f = value
        elif isinstance(value, str):
            arg.s = value.encode()
        elif all(isinstance(v, int) for v in value):
            arg.ints.extend(value)
        else:
            arg.floats.extend(float(v) for v in value)
    return op


def _weights(rng):
    w = {}
    for name, cin, cout in (("conv1", 1, 8), ("conv2", 8, 16)):
        bound = 1 / np.sqrt(cin * 9)
        w[name + "_w"] = rng.uniform(-bound, bound, (cout, cin, 3, 3)).astype(np.float32)
        w[name + "_b"] = rng.uniform(-bound, bound, cout).astype(np.float32)
    for name, c in (("bn1", 8), ("bn2", 16)):
        w[name + "_s"] = rng.uniform(0.5, 1.5, c).astype(np.float32)
        w[name + "_b"] = rng.normal(0, 0.2, c).astype(np.float32)
        w[name + "_rm"] = rng.normal(0, 0.2, c).astype(np.float32)
        w[name + "_riv"] = rng.uniform(0.5, 1.5, c).astype(np.float32)
    w["fc3_w"] = rng.uniform(-0.05, 0.05, (32, 16 * 7 * 7)).astype(np.float32)
    w["fc3_b"] = rng.uniform(-0.05, 0.05, 32).astype(np.float32)
    w["pred_w"] = rng.uniform(-0.2, 0.2, (10, 32)).astype(np.float32)
    w["pred_b"] = rng.uniform(-0.2, 0.2, 10).astype(np.float32)
    return w


def _nets(weights):
    init = doppio_pb2.NetDef(name="init")
    for name, value in weights.items():
        init.op.extend([_op("GivenTensorFill", [], [name], shape=list(value.shape),
                            values=[float(v) for v in value.ravel()])])
    predict = doppio_pb2.NetDef(name="predict", external_input=["data"] + list(weights),
                                external_output=["softmax"])
    previous = "data"
    for i in (1, 2):
        c, bn, pool = "conv%d" % i, "bn%d" % i, "pool%d" % i
        predict.op.extend([
            _op("Conv", [previous, c + "_w", c + "_b"], [c], kernel=3, pad=1),
            _op("SpatialBN", [c, bn + "_s", bn + "_b", bn + "_rm", bn + "_riv"], [bn],
                is_test=1, epsilon=1e-5),
            _op("Relu", [bn], [bn]),
            _op("MaxPool", [bn], [pool], kernel=2, stride=2),
        ])
        previous = pool
    predict.op.extend([
        _op("FC", ["pool2", "fc3_w", "fc3_b"], ["fc3"]),
        _op("Relu", ["fc3"], ["fc3"]),
        _op("FC", ["fc3", "pred_w", "pred_b"], ["pred"]),
        _op("Softmax", ["pred"], ["softmax"]),
    ])
    return init, predict


# ---- numpy reference ----

def _conv3x3(x, w, b):
    n, c, h, wd = x.shape
    padded = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((n, w.shape[0], h, wd))
    for dy in range(3):
        for dx in range(3):
            patch = padded[:, :, dy:dy + h, dx:dx + wd]
            out += np.einsum("nchw,mc->nmhw", patch, w[:, :, dy, dx])
    return out + b[None, :, None, None]


def _reference(x, w):
    h = x
    for i in (1, 2):
        h = _conv3x3(h, w["conv%d_w" % i], w["conv%d_b" % i])
        bn = "bn%d" % i
        scale = w[bn + "_s"] / np.sqrt(w[bn + "_riv"].astype(np.float64) + 1e-5)
        h = (h - w[bn + "_rm"][None, :, None, None]) * scale[None, :, None, None] \
            + w[bn + "_b"][None, :, None, None]
        h = np.maximum(h, 0)
        n, c, hh, ww = h.shape
        h = h.reshape(n, c, hh // 2, 2, ww // 2, 2).max(axis=(3, 5))
    h = np.maximum(h.reshape(h.shape[0], -1) @ w["fc3_w"].T + w["fc3_b"], 0)
    logits = h @ w["pred_w"].T + w["pred_b"]
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True), h


class RunNetOptimizeTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        rng = np.random.RandomState(13)
        self.weights = _weights(rng)
        init, predict = _nets(self.weights)
        self.init = os.path.join(self.dir.name, "init.pb")
        self.predict = os.path.join(self.dir.name, "predict.pb")
        with open(self.init, "wb") as f:
            f.write(init.SerializeToString())
        with open(self.predict, "wb") as f:
            f.write(predict.SerializeToString())
        self.x = rng.normal(0, 1, (5, 1, 28, 28)).astype(np.float32)
        self.data = os.path.join(self.dir.name, "x.npy")
        np.save(self.data, self.x)

    def tearDown(self):
        self.dir.cleanup()

    def run_net(self, *extra):
        out = os.path.join(self.dir.name, "softmax.npy")
        result = subprocess.run(
            [RUN_NET, "--init_net", self.init, "--net", self.predict, "--input",
             "data=" + self.data, "--output", "softmax=" + out] + list(extra),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
            timeout=120)
        self.assertEqual(result.returncode, 0, result.stderr)
        return np.load(out), result.stdout

    def test_optimized_net_matches_numpy_and_the_given_net(self):
        expected, _ = _reference(self.x, self.weights)
        given, stdout = self.run_net("--nooptimize")
        self.assertNotIn("optimized net", stdout)
        optimized, stdout = self.run_net()  # the default
        self.assertIn("optimized net 'predict': 12 -> 7 op(s): 2 Conv+SpatialBN, 2 Conv+Relu, "
                      "1 FC+Relu", stdout)
        np.testing.assert_allclose(given, expected, atol=2e-6)
        np.testing.assert_allclose(optimized, expected, atol=2e-6)
        np.testing.assert_array_equal(optimized.argmax(1), expected.argmax(1))

    def test_each_pass_alone(self):
        expected, _ = _reference(self.x, self.weights)
        for passes, summary in (("conv_bn", "2 Conv+SpatialBN, 0 Conv+Relu, 0 FC+Relu"),
                                ("activation", "0 Conv+SpatialBN, 0 Conv+Relu, 1 FC+Relu"),
                                ("none", "0 Conv+SpatialBN, 0 Conv+Relu, 0 FC+Relu")):
            got, stdout = self.run_net("--optimize", "--optimize_passes=" + passes)
            self.assertIn(summary, stdout)
            np.testing.assert_allclose(got, expected, atol=2e-6)

    def test_output_blobs_are_kept(self):
        conv1 = os.path.join(self.dir.name, "conv1.npy")
        fc3 = os.path.join(self.dir.name, "fc3.npy")
        result = subprocess.run(
            [RUN_NET, "--init_net", self.init, "--net", self.predict, "--input",
             "data=" + self.data, "--optimize", "--output", "conv1=" + conv1,
             "--output", "fc3=" + fc3],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
            timeout=120)
        self.assertEqual(result.returncode, 0, result.stderr)
        # conv1 is wanted, so the first SpatialBN stays (and so does its Relu);
        # fc3 is wanted after its in-place Relu, which the fused FC writes.
        self.assertIn("1 Conv+SpatialBN, 1 Conv+Relu, 1 FC+Relu", result.stdout)
        _, hidden = _reference(self.x, self.weights)
        np.testing.assert_allclose(np.load(fc3), hidden, atol=2e-6)
        np.testing.assert_allclose(
            np.load(conv1), _conv3x3(self.x, self.weights["conv1_w"], self.weights["conv1_b"]),
            atol=2e-6)

    def test_bad_pass_name_is_a_usage_error(self):
        result = subprocess.run(
            [RUN_NET, "--init_net", self.init, "--net", self.predict, "--input",
             "data=" + self.data, "--optimize", "--optimize_passes=conv_bn,everything"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
            timeout=120)
        self.assertEqual(result.returncode, 2)
        self.assertIn("unknown inference pass 'everything'", result.stderr)


if __name__ == "__main__":
    unittest.main()
