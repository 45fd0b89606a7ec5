"""The model benchmarks of issue 24 at their smallest: train_bench's
ResNet-20 on both sides from the same weights, in each side's every layout,
gives the same first loss and the FLOP count He et al.'s ResNet-20 has;
torchvision_bench imports and runs one architecture and agrees with torch;
every training model of train_bench, in NCHW and in NHWC, once warm, calls
the CPU allocator zero times per step and a second run from the same
weights repeats the first bit for bit (issue 24's steady-state and
determinism targets). Plumbing, agreement and behaviour, not speed."""
import importlib.util
import itertools
import os
import sys
import tempfile
import unittest

import numpy as np

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

    def test_training_models_allocate_nothing_and_repeat_bit_for_bit(self):
        from doppio import workspace
        for (name, spec), order in itertools.product(train_bench.MODELS.items(),
                                                     ('NCHW', 'NHWC')):
            with self.subTest(model=name, order=order):
                image = min(spec['image'], 32)
                rng = np.random.RandomState(0)
                x = rng.randn(4, 3, image, image).astype(np.float32)
                labels = rng.randint(0, 10, size=4).astype(np.int32)
                first = self._train(name, spec, x, labels, workspace, order)
                second = self._train(name, spec, x, labels, workspace, order,
                                     start=first['start'])
                self.assertEqual(first['allocations'], 0)
                self.assertEqual(second['allocations'], 0)
                self.assertEqual(sorted(first['end']), sorted(second['end']))
                for blob, value in first['end'].items():
                    np.testing.assert_array_equal(value, second['end'][blob], err_msg=blob)

    @staticmethod
    def _train(name, spec, x, labels, workspace, order, start=None):
        """Three warm-up steps, then four counted ones; every float blob
        (parameters, momenta, BN statistics, activations) at the end."""
        from doppio import optimizer
        optimizer.reset_optimizer_instance_count()
        trainer = train_bench.DoppioTrainer(name, spec, x, labels, order)
        if start is None:
            start = dict(trainer.parameters())
        for blob, value in start.items():
            trainer.set(blob, value)
        trainer.step(3)
        before = workspace.GetCPUAllocatorStats()['allocations']
        trainer.step(4)
        allocations = workspace.GetCPUAllocatorStats()['allocations'] - before
        end = {}
        for blob in workspace.Blobs():
            value = workspace.FetchBlob(blob)
            if isinstance(value, np.ndarray) and value.dtype == np.float32:
                end[blob] = value
        return dict(start=start, allocations=allocations, end=end)

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
