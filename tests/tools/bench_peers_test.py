"""The benchmarks' PyTorch peers (tools/bench/peers) run from the repository
alone and print what the benches read: one JSON line each, with the figures
in range. Tiny runs: correctness of the plumbing, not speed."""
import json
import os
import subprocess
import sys
import unittest

from tool_paths import runfile


def last_json(command):
    output = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            universal_newlines=True, timeout=300,
                            env=dict(os.environ, OMP_NUM_THREADS='1'))
    if output.returncode != 0:
        raise AssertionError('{} failed:\n{}'.format(command, output.stdout))
    lines = [line for line in output.stdout.splitlines() if line.startswith('{"')]
    if not lines:
        raise AssertionError('{} printed no JSON line:\n{}'.format(command, output.stdout))
    return json.loads(lines[-1])


class BenchPeersTest(unittest.TestCase):

    def test_torch_fmnist_trains_the_reference_models(self):
        for model in ('mlp', 'cnn'):
            result = last_json([sys.executable, runfile('tools/bench/peers/torch_fmnist.py'),
                                model, '1', '1', '--train_limit', '640'])
            self.assertEqual(result['model'], model)
            self.assertEqual(result['batch'], 64)
            (epoch,) = result['epochs']
            self.assertGreater(epoch['img_per_s'], 0)
            # 10 steps of SGD lr 0.05 already beat chance (0.1) on the test set.
            self.assertGreater(epoch['test_acc'], 0.2, result)
            self.assertLessEqual(epoch['test_acc'], 1.0)

    def test_torch_ddp_trains_and_reduces(self):
        train = last_json([sys.executable, runfile('tools/bench/peers/torch_ddp.py'), '2', '3'])
        self.assertEqual((train['mode'], train['world'], train['global_batch']), ('train', 2, 64))
        self.assertGreater(train['img_per_s'], 0)
        reduce = last_json([sys.executable, runfile('tools/bench/peers/torch_ddp.py'), '2', '2',
                            'allreduce'])
        self.assertEqual((reduce['mode'], reduce['mib']), ('allreduce', 25))
        self.assertGreater(reduce['algbw_GBps'], 0)

    def test_torch_overhead(self):
        result = last_json([sys.executable, runfile('tools/bench/peers/torch_overhead.py'), '200'])
        self.assertEqual(result['ops'], 200)
        self.assertGreater(result['us_per_op'], 0)

    def test_machine_names_the_isa(self):
        output = subprocess.run([sys.executable, runfile('tools/bench/machine.py')],
                                stdout=subprocess.PIPE, universal_newlines=True,
                                check=True).stdout
        self.assertIn('core(s), ISA ', output)
        with open('/proc/cpuinfo') as f:
            flags = f.read()
        if ' avx512f' in flags:
            self.assertIn('AVX-512', output)
        elif ' avx2' in flags:
            self.assertIn('AVX2', output)


if __name__ == '__main__':
    unittest.main()
