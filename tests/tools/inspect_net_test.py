"""tools/inspect_net on the reference CNN (docs/DESIGN.md section 8), built here
with brew and exported as init and train NetDef files.

Independent references: op counts from the NetDef itself, parameter sizes
from the blobs the init net really creates when run, and FLOPs from the
textbook conv/FC formulas written out below from the layer sizes.
"""
import collections
import json
import os
import subprocess
import sys
import tempfile
import unittest

from doppio import brew, model_helper, workspace
from doppio.proto import doppio_pb2
from tool_paths import runfile


INSPECT_NET = runfile('tools/inspect_net.py')
BATCH = 64

# Multiply-adds of the reference CNN's conv and FC layers per image, times 2.
CONV1 = 2 * 28 * 28 * 32 * (3 * 3 * 1)
CONV2 = 2 * 14 * 14 * 64 * (3 * 3 * 32)
FC3 = 2 * 3136 * 128
PRED = 2 * 128 * 10
MATMUL_FLOPS_PER_IMAGE = CONV1 + CONV2 + FC3 + PRED


def reference_cnn(training):
    model = model_helper.ModelHelper(name='reference_cnn_train' if training else 'reference_cnn')
    conv1 = brew.conv(model, 'data', 'conv1', dim_in=1, dim_out=32, kernel=3, pad=1)
    bn1 = brew.spatial_bn(model, conv1, 'bn1', 32, epsilon=1e-5, momentum=0.9,
                          is_test=0 if training else 1)
    relu1 = brew.relu(model, bn1, bn1)
    pool1 = brew.max_pool(model, relu1, 'pool1', kernel=2, stride=2)
    conv2 = brew.conv(model, pool1, 'conv2', dim_in=32, dim_out=64, kernel=3, pad=1)
    bn2 = brew.spatial_bn(model, conv2, 'bn2', 64, epsilon=1e-5, momentum=0.9,
                          is_test=0 if training else 1)
    relu2 = brew.relu(model, bn2, bn2)
    pool2 = brew.max_pool(model, relu2, 'pool2', kernel=2, stride=2)
    fc3 = brew.fc(model, pool2, 'fc3', dim_in=64 * 7 * 7, dim_out=128)
    relu3 = brew.relu(model, fc3, fc3)
    pred = brew.fc(model, relu3, 'pred', dim_in=128, dim_out=10)
    softmax = brew.softmax(model, pred, 'softmax')
    if training:
        xent = model.net.LabelCrossEntropy([softmax, 'label'], 'xent')
        loss = model.net.AveragedLoss(xent, 'loss')
        model.AddGradientOperators([loss])
    return model


class InspectNetTest(unittest.TestCase):

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix='inspect_net_test_')
        workspace.ResetWorkspace()

    def write(self, name, proto, text=False):
        path = os.path.join(self.dir, name)
        if text:
            with open(path, 'w') as out:
                out.write(str(proto))
        else:
            with open(path, 'wb') as out:
                out.write(proto.SerializeToString())
        return path

    def run_tool(self, *args):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
        return subprocess.run([sys.executable, INSPECT_NET] + list(args), env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, timeout=300)

    def inspect(self, model, *extra):
        init = self.write('init.pb', model.param_init_net.Proto())
        net = self.write('net.pbtxt', model.net.Proto(), text=True)
        result = self.run_tool('--net', net, '--init_net', init,
                               '--input_shape', 'data=%d,1,28,28' % BATCH,
                               '--input_shape', 'label=%d:int32' % BATCH, *extra)
        self.assertEqual(result.returncode, 0, result.stderr)
        return result

    def test_forward_net_summary_and_flops(self):
        model = reference_cnn(training=False)
        summary = json.loads(self.inspect(model, '--json').stdout)
        net = model.net.Proto()
        self.assertEqual(summary['num_ops'], len(net.op))
        self.assertEqual(summary['ops_by_type'],
                         dict(collections.Counter(op.type for op in net.op)))
        self.assertEqual(summary['external_inputs'], list(net.external_input))
        # Parameters: what the init net really creates, measured by running it.
        workspace.RunNetOnce(model.param_init_net)
        init_blobs = []
        for op in model.param_init_net.Proto().op:
            init_blobs.extend(b for b in op.output if b not in init_blobs)
        self.assertEqual(summary['parameters']['count'], len(init_blobs))
        self.assertEqual(summary['parameters']['bytes'],
                         sum(workspace.FetchBlob(b).nbytes for b in init_blobs))
        self.assertEqual(summary['parameters']['elements'],
                         sum(workspace.FetchBlob(b).size for b in init_blobs))
        # Every op of the forward CNN has a figure.
        self.assertEqual(summary['ops_without_cost'], 0,
                         [op for op in summary['ops'] if not op['known']])
        by_output = {}  # the op that first writes each blob (Relu rewrites fc3 in place)
        for op in summary['ops']:
            by_output.setdefault(op['outputs'][0], op)
        self.assertEqual(by_output['conv1']['flops'], BATCH * (CONV1 + 28 * 28 * 32))
        self.assertEqual(by_output['conv2']['flops'], BATCH * (CONV2 + 14 * 14 * 64))
        self.assertEqual(by_output['fc3']['flops'], BATCH * (FC3 + 128))
        self.assertEqual(by_output['pred']['flops'], BATCH * (PRED + 10))
        self.assertEqual(by_output['conv2']['params_bytes'], 4 * (64 * 32 * 9 + 64))
        self.assertEqual(by_output['pool1']['bytes_written'], 4 * BATCH * 32 * 14 * 14)
        total = summary['total']['flops']
        self.assertEqual(total, sum(op['flops'] for op in summary['ops']))
        # Conv and FC dominate: the elementwise ops add a few percent.
        self.assertGreaterEqual(total, BATCH * MATMUL_FLOPS_PER_IMAGE)
        self.assertLess(total, BATCH * MATMUL_FLOPS_PER_IMAGE * 1.06)
        self.assertEqual(summary['devices'], {'default': len(net.op)})

    def test_training_net_is_about_25_mflop_per_image(self):
        model = reference_cnn(training=True)
        summary = json.loads(self.inspect(model, '--json').stdout)
        by_type = collections.defaultdict(int)
        for op in summary['ops']:
            by_type[op['type']] += op['flops']
        for heavy in ('ConvGradient', 'FCGradient'):
            self.assertTrue(all(op['known'] for op in summary['ops'] if op['type'] == heavy))
        # Backward: dW and dX of every conv and FC (as in Caffe2, the data's
        # gradient is computed too), each costing what the forward does.
        self.assertEqual(by_type['ConvGradient'],
                         BATCH * (2 * (CONV1 + CONV2) + 28 * 28 * 32 + 14 * 14 * 64))
        self.assertEqual(by_type['FCGradient'], BATCH * (2 * (FC3 + PRED) + 128 + 10))
        per_image = summary['total']['flops'] / BATCH
        self.assertGreater(per_image, 23e6)
        self.assertLess(per_image, 27e6)

    def test_text_output(self):
        text = self.inspect(reference_cnn(training=False)).stdout
        self.assertIn('net: reference_cnn', text)
        self.assertIn('(12 ops)', text)
        self.assertIn('ops by type: ', text)
        self.assertIn('Conv 2', text)
        self.assertIn('parameters (init net): ', text)
        self.assertIn('total: ', text)

    def test_devices_and_engines(self):
        net = doppio_pb2.NetDef(name='two_devices')
        for device_id in (0, 1):
            op = net.op.add(type='Relu', input=['cpu_%d/x' % device_id],
                            output=['cpu_%d/y' % device_id], engine='DNNL' if device_id else '')
            op.device_option.device_type = doppio_pb2.CPU
            op.device_option.cuda_gpu_id = device_id
        path = self.write('two.pb', net)
        result = self.run_tool('--net', path, '--input_shape', 'cpu_0/x=2,3', '--json')
        self.assertEqual(result.returncode, 0, result.stderr)
        summary = json.loads(result.stdout)
        self.assertEqual(summary['devices'], {'cpu_0': 1, 'cpu_1': 1})
        self.assertEqual(summary['engines'], {'default': 1, 'DNNL': 1})
        # cpu_1/x has no shape: that op is listed without a figure.
        self.assertEqual([op['known'] for op in summary['ops']], [True, False])
        self.assertIn("'cpu_1/x'", summary['ops'][1]['reason'])
        self.assertEqual(summary['total']['flops'], 6)

    def test_bad_inputs_are_one_line_errors(self):
        garbage = os.path.join(self.dir, 'garbage.pb')
        with open(garbage, 'wb') as out:
            out.write(b'\xff\xfe\x00\x13\x37' * 10)
        result = self.run_tool('--net', garbage)
        self.assertEqual(result.returncode, 1)
        self.assertIn('garbage.pb', result.stderr)
        self.assertNotIn('Traceback', result.stderr)
        missing = self.run_tool('--net', os.path.join(self.dir, 'missing.pb'))
        self.assertEqual(missing.returncode, 1)
        self.assertIn('missing.pb', missing.stderr)
        net = self.write('n.pb', doppio_pb2.NetDef(name='n'))
        for bad in ('data', 'data=1,x', 'data=2:complex'):
            result = self.run_tool('--net', net, '--input_shape', bad)
            self.assertEqual(result.returncode, 2, bad)
            self.assertIn('--input_shape', result.stderr)
            self.assertNotIn('Traceback', result.stderr)


if __name__ == '__main__':
    unittest.main()
