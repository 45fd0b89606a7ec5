#!/usr/bin/python3
"""Runs Caffe2's own Python tests, from a Caffe2 checkout outside this
repository, against Doppio's `caffe2` package, and prints passed / failed /
skipped per test file and in total.

    tools/caffe2_compat.sh CAFFE2_CHECKOUT [TEST_FILE ...] [--json OUT] [--timeout S]

TEST_FILEs are paths under the checkout's caffe2/python (default: the list
below, the tests of every module and op family Doppio ships). Each file runs
in its own pytest process from a scratch directory, with `--import-mode
importlib`, so `import caffe2` always finds Doppio's package, never the
checkout's. Nothing of Caffe2 is copied into this repository.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree

# Caffe2 test files for the modules and op families Doppio ships.
DEFAULT_TESTS = [
    # modules
    'core_test.py', 'core_gradients_test.py', 'workspace_test.py', 'scope_test.py',
    'brew_test.py', 'optimizer_test.py', 'memonger_test.py', 'data_parallel_model_test.py',
    'gradient_check_test.py', 'hypothesis_test.py', 'schema_test.py', 'db_test.py',
    'model_device_test.py', 'toy_regression_test.py', 'net_builder_test.py',
    'test/do_op_test.py', 'control_test.py',
    'modeling/initializers_test.py', 'modeling/parameter_sharing_test.py',
    'models/resnet_test.py', 'models/seq2seq/seq2seq_model_helper_test.py',
    'models/seq2seq/seq2seq_beam_search_test.py', 'python_op_test.py',
    'predictor/predictor_exporter_test.py', 'predictor/mobile_exporter_test.py',
    'fused_8bit_rowwise_conversion_ops_test.py',
    'lengths_reducer_fused_8bit_rowwise_ops_test.py',
    # op families
    'operator_test/activation_ops_test.py', 'operator_test/adagrad_test.py',
    'operator_test/adam_test.py', 'operator_test/basic_rnn_test.py',
    'operator_test/boolean_mask_test.py', 'operator_test/cast_op_test.py',
    'operator_test/clip_op_test.py', 'operator_test/concat_split_op_test.py',
    'operator_test/conditional_test.py', 'operator_test/tile_op_test.py',
    'operator_test/top_k_test.py', 'operator_test/sparse_ops_test.py',
    'operator_test/conv_test.py', 'operator_test/conv_transpose_test.py',
    'operator_test/copy_ops_test.py', 'operator_test/cross_entropy_ops_test.py',
    'operator_test/dropout_op_test.py', 'operator_test/elementwise_linear_op_test.py',
    'operator_test/elementwise_ops_test.py',
    'operator_test/elementwise_op_broadcast_test.py', 'operator_test/fc_operator_test.py',
    'operator_test/filler_ops_test.py', 'operator_test/flatten_op_test.py',
    'operator_test/gather_ops_test.py', 'operator_test/given_tensor_fill_op_test.py',
    'operator_test/group_conv_test.py', 'operator_test/gru_test.py',
    'operator_test/leaky_relu_test.py',
    'operator_test/learning_rate_op_test.py', 'operator_test/load_save_test.py',
    'operator_test/loss_ops_test.py', 'operator_test/matmul_op_test.py',
    'operator_test/momentum_sgd_test.py', 'operator_test/pooling_test.py',
    'operator_test/recurrent_net_executor_test.py', 'operator_test/recurrent_network_test.py',
    'operator_test/reduce_ops_test.py', 'operator_test/relu_op_test.py',
    'operator_test/reshape_ops_test.py', 'operator_test/rnn_cell_test.py',
    'operator_test/softmax_ops_test.py',
    'operator_test/spatial_bn_op_test.py',
    'operator_test/utility_ops_test.py', 'operator_test/weighted_sum_test.py',
]


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('checkout', help='a Caffe2 checkout (holding caffe2/python)')
    parser.add_argument('tests', nargs='*', help='test files under caffe2/python')
    parser.add_argument('--json', help='also write the table as JSON here')
    parser.add_argument('--timeout', type=int, default=900, help='seconds per test file')
    parser.add_argument('--python', default=sys.executable,
                        help='the interpreter that has Doppio importable')
    return parser.parse_args(argv)


def _counts(junit_path):
    """(passed, failed, skipped) from a pytest JUnit XML report."""
    root = ElementTree.parse(junit_path).getroot()
    suites = [root] if root.tag == 'testsuite' else list(root)
    total = failed = skipped = 0
    for suite in suites:
        total += int(suite.get('tests', 0))
        failed += int(suite.get('failures', 0)) + int(suite.get('errors', 0))
        skipped += int(suite.get('skipped', 0))
    return total - failed - skipped, failed, skipped


def run_file(python, path, timeout, scratch):
    """Runs one test file; returns its row."""
    junit = os.path.join(scratch, os.path.basename(path) + '.xml')
    command = [python, '-m', 'pytest', path, '-q', '-p', 'no:cacheprovider',
               '--import-mode', 'importlib', '--junitxml', junit, '-o',
               'junit_family=xunit1']
    try:
        result = subprocess.run(command, cwd=scratch, capture_output=True, text=True,
                                timeout=timeout)
    except subprocess.TimeoutExpired:
        return dict(passed=0, failed=0, skipped=0, note='timed out after {} s'.format(timeout))
    if not os.path.exists(junit):
        tail = (result.stdout + result.stderr).strip().splitlines()[-1:]
        return dict(passed=0, failed=0, skipped=0, note='no report: ' + ' '.join(tail))
    passed, failed, skipped = _counts(junit)
    row = dict(passed=passed, failed=failed, skipped=skipped, note='')
    if passed + failed + skipped == 0:
        lines = (result.stdout + result.stderr).strip().splitlines()
        row['note'] = ' '.join(lines[-1:])
    return row


def main(argv):
    args = parse_args(argv)
    base = os.path.join(os.path.abspath(args.checkout), 'caffe2', 'python')
    if not os.path.isdir(base):
        sys.exit('caffe2_compat: {} has no caffe2/python; get a Caffe2 checkout, e.g. '
                 'git clone https://github.com/facebookarchive/caffe2 (its last commit '
                 'before the move into PyTorch)'.format(args.checkout))
    tests = args.tests or DEFAULT_TESTS
    table = {}
    with tempfile.TemporaryDirectory(prefix='caffe2_compat_') as scratch:
        for test in tests:
            path = os.path.join(base, test)
            if not os.path.isfile(path):
                table[test] = dict(passed=0, failed=0, skipped=0, note='not in the checkout')
            else:
                table[test] = run_file(args.python, path, args.timeout, scratch)
            row = table[test]
            print('{:<55} {:>6} {:>6} {:>6}  {}'.format(test, row['passed'], row['failed'],
                                                         row['skipped'], row['note']),
                  flush=True)
    totals = {key: sum(row[key] for row in table.values())
              for key in ('passed', 'failed', 'skipped')}
    ran = totals['passed'] + totals['failed']
    print('{:<55} {:>6} {:>6} {:>6}  {:.1f}% of the cases that ran passed'.format(
        'TOTAL', totals['passed'], totals['failed'], totals['skipped'],
        100.0 * totals['passed'] / ran if ran else 0.0))
    if args.json:
        with open(args.json, 'w') as out:
            json.dump(dict(files=table, totals=totals), out, indent=1)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
