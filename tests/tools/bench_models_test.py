"""The model benchmarks of issue 24 at their smallest: train_bench's
ResNet-20 on both sides from the same weights gives the same first loss and
the FLOP count He et al.'s ResNet-20 has; torchvision_bench imports and runs
one architecture and agrees with torch. Plumbing and agreement, not speed."""
import importlib.util
import os
import sys
import tempfile
import unittest

from tool_paths import runfile

sys.path.insert(0, os.path.dirname(runfile('tools/bench/machine.py')))

import train_bench  # noqa: E402

HAVE_TORCHVISION = importlib.util.find_spec('torchvision') is not None


class BenchModelsTest(unittest.TestCase):

    def test_train_bench_resnet20_agrees_with_torch(self):
        with tempfile.TemporaryDirectory() as folder:
            out = os.path.join(folder, 'train.json')
            status = train_bench.main(['--models', 'resnet20', '--rounds', '1', '--iterations',
                                       '1', '--warmup', '0', '--out', out])
            self.assertEqual(status, 0)
            import json
            with open(out) as f:
                (row,) = json.load(f)['rows']
        self.assertTrue(row['agrees'], row)
        # ResNet-20 on 32x32: 40.8M multiply-adds per image forward (He et al.
        # 2016 table 6 gives ~41M); a step is forward + two gradients.
        forward_macs = row['step_gflops'] * 1e9 / 64 / 2 / 3
        self.assertAlmostEqual(forward_macs / 40.8e6, 1.0, delta=0.03)
        self.assertGreater(row['doppio_images_per_s'], 0)

    @unittest.skipUnless(HAVE_TORCHVISION, 'python3-torchvision is not installed')
    def test_torchvision_bench_runs_squeezenet(self):
        import torchvision_bench
        with tempfile.TemporaryDirectory() as folder:
            status = torchvision_bench.main([
                '--models', 'squeezenet1_0', '--batches', '1', '--rounds', '1',
                '--warmup', '0', '--seconds', '0.01', '--out', os.path.join(folder, 't.json')])
        self.assertEqual(status, 0)


if __name__ == '__main__':
    unittest.main()
