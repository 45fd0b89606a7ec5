"""doppio.transformations (and its caffe2.python.transformations alias)
against numpy: a Conv + SpatialBN(is_test) + Relu + FC + Relu net built with
core.Net, fused in place with Caffe2's function names, run in the workspace
and compared with a numpy forward pass written here."""

import unittest

import numpy as np

from caffe2.python import core, workspace
from caffe2.python import transformations as caffe2_transformations
from doppio import transformations


def _conv3x3(x, w, b):
    n, c, h, wd = x.shape
    padded = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((n, w.shape[0], h, wd))
    for dy in range(3):
        for dx in range(3):
            out += np.einsum("nchw,mc->nmhw", padded[:, :, dy:dy + h, dx:dx + wd],
                             w[:, :, dy, dx])
    return out + b[None, :, None, None]


class TransformationsTest(unittest.TestCase):
    def setUp(self):
        workspace.ResetWorkspace()
        rng = np.random.RandomState(5)
        self.blobs = {
            "x": rng.normal(0, 1, (3, 2, 6, 6)).astype(np.float32),
            "w": rng.uniform(-0.5, 0.5, (4, 2, 3, 3)).astype(np.float32),
            "b": rng.uniform(-0.5, 0.5, 4).astype(np.float32),
            "s": rng.uniform(0.5, 1.5, 4).astype(np.float32),
            "bias": rng.normal(0, 0.3, 4).astype(np.float32),
            "mean": rng.normal(0, 0.3, 4).astype(np.float32),
            "var": rng.uniform(0.5, 1.5, 4).astype(np.float32),
            "fc_w": rng.uniform(-0.2, 0.2, (5, 4 * 36)).astype(np.float32),
            "fc_b": rng.uniform(-0.2, 0.2, 5).astype(np.float32),
        }
        for name, value in self.blobs.items():
            workspace.FeedBlob(name, value)

    def make_net(self):
        net = core.Net("fusable")
        net.Conv(["x", "w", "b"], "c", kernel=3, pad=1)
        net.SpatialBN(["c", "s", "bias", "mean", "var"], "n", is_test=1, epsilon=1e-5)
        net.Relu("n", "n")
        net.FC(["n", "fc_w", "fc_b"], "h")
        net.Relu("h", "y")
        net.Proto().external_output.extend(["y"])
        return net

    def expected(self):
        b = self.blobs
        conv = _conv3x3(b["x"], b["w"], b["b"])
        k = b["s"] / np.sqrt(b["var"].astype(np.float64) + 1e-5)
        n = np.maximum((conv - b["mean"][None, :, None, None]) * k[None, :, None, None]
                       + b["bias"][None, :, None, None], 0)
        return np.maximum(n.reshape(3, -1) @ b["fc_w"].T + b["fc_b"], 0)

    def run_and_fetch(self, net):
        workspace.RunNetOnce(net)
        return workspace.FetchBlob("y")

    def test_fuse_conv_bn_then_activation_matches_numpy(self):
        net = self.make_net()
        self.assertEqual(transformations.fuseConvBN(net), 1)
        types = [op.type for op in net.Proto().op]
        self.assertEqual(types, ["Conv", "Relu", "FC", "Relu"])
        np.testing.assert_allclose(self.run_and_fetch(net), self.expected(), atol=1e-5)
        counts = transformations.fuseActivation(net)
        self.assertEqual(counts, {"swish": 0, "conv_relu": 1, "conv_activation": 0,
                                  "fc_relu": 1})
        self.assertEqual([op.type for op in net.Proto().op], ["ConvFusion", "FC"])
        np.testing.assert_allclose(self.run_and_fetch(net), self.expected(), atol=1e-5)
        # The original weights are untouched; the folded ones are new blobs.
        np.testing.assert_array_equal(workspace.FetchBlob("w"), self.blobs["w"])

    def test_caffe2_alias_and_transformer(self):
        self.assertIs(caffe2_transformations.fuseConvBN, transformations.fuseConvBN)
        net = self.make_net()
        caffe2_transformations.Transformer().fuseConvBN(net)
        self.assertNotIn("SpatialBN", [op.type for op in net.Proto().op])
        with self.assertRaises(AttributeError):
            caffe2_transformations.Transformer.runTransform("noSuchTransform", net)

    def test_optimize_for_inference_on_a_netdef(self):
        proto = self.make_net().Proto()
        counts = transformations.optimizeForInference(proto)
        self.assertEqual(counts, {"conv_bn": 1, "matmul_bias": 0, "channels_last": 0, "swish": 0, "conv_relu": 1,
                                  "conv_activation": 0, "fc_relu": 1, "conv_sum": 0, "conv_inference": 0,
                                  "inplace": 0})
        np.testing.assert_allclose(self.run_and_fetch(proto), self.expected(), atol=1e-5)

    def test_kept_blobs_are_left_alone(self):
        net = self.make_net()
        counts = transformations.optimizeForInference(net, keep=["c", "h"])
        # c is wanted, so the BN stays (and the Conv, marked for inference
        # only); h is wanted, so FC + Relu stays apart.
        self.assertEqual(counts, {"conv_bn": 0, "matmul_bias": 0, "channels_last": 0, "swish": 0, "conv_relu": 0,
                                  "conv_activation": 0, "fc_relu": 0, "conv_sum": 0, "conv_inference": 1,
                                  "inplace": 0})
        self.assertEqual([op.engine for op in net.Proto().op if op.type == "FC"], [""])
        np.testing.assert_allclose(self.run_and_fetch(net), self.expected(), atol=1e-5)
        self.assertEqual(transformations.optimizeForMKLDNN(net, training_mode=True)["conv_bn"], 0)

    def test_bad_arguments_raise(self):
        with self.assertRaises(RuntimeError):
            transformations.optimizeForInference(self.make_net(), passes="fold_everything")


if __name__ == "__main__":
    unittest.main()
