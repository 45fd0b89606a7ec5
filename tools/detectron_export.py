#!/usr/bin/python3
"""Exports a Detectron model with Detectron's own converter against Doppio's
`caffe2` package, then runs the exported nets through tools/run_net and checks
their detections against Detectron's own inference code.

    tools/detectron_export.sh DETECTRON_CHECKOUT --cfg CONFIG.yaml --out_dir DIR
        [--image IMAGE] [--seed N] [CONFIG_KEY VALUE ...]

DETECTRON_CHECKOUT is a Detectron source tree outside this repository, with its
Cython extensions built (`python3 setup.py build_ext --inplace` there).
Nothing of Detectron is copied into this repository. What runs:

 1. Detectron's `model_builder` builds the test-time model from CONFIG (with
    Doppio's brew, ModelHelper, core and workspace). Each parameter's shape
    comes from the model's own parameter info; its values are seeded random
    numbers scaled by fan-in (Detectron's model zoo is not downloadable
    here), written as a Detectron weights .pkl.
 2. Detectron's `tools/convert_pkl_to_pb.py` (the 2018 version: its later
    versions import Facebook-internal modules) loads that .pkl through
    `test_engine.initialize_model_from_cfg`, converts its Python ops to
    Caffe2's C++ GenerateProposals / CollectAndDistributeFpnRpnProposals,
    fuses AffineChannel into the convolutions, adds BBoxTransform and
    BoxWithNMSLimit, and writes model.pb / model_init.pb. Its `verify_model`
    runs Detectron's own `im_detect_all` (numpy proposal generation, box
    decoding and NMS in Detectron's Python and Cython) beside the converted
    net in Doppio's workspace and asserts equal boxes and classes.
 3. `tools/run_net` runs the written model.pb / model_init.pb on the same
    input blobs, and its score_nms / bbox_nms / class_nms must equal the
    in-process run of the converted net.

The converter's `main()` is followed step by step rather than called, for one
reason: it writes the .pb files in text mode, which only Python 2 allowed.
Four things of the environment are adapted, each printed when it happens:
Detectron places its ops on CUDA device 0 (Detectron needs a GPU), which here
becomes the CPU when Doppio has no GPU; Detectron loads its custom-op library
with dyndep, whose ops Doppio has built in; and `pycocotools`, which only
dataset evaluation uses, is replaced by a module that raises if it is used;
PyYAML 6 requires the Loader argument Detectron's `yaml.load(stream)` omits.
"""
import argparse
import os
import pickle
import subprocess
import sys
import types

import numpy as np

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The last version of the converter that imports only public modules.
CONVERTER_COMMIT = 'cbb0236'
CONVERTER_PATH = 'tools/convert_pkl_to_pb.py'


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('checkout', help='a Detectron checkout with its Cython extensions built')
    parser.add_argument('--cfg', required=True, help='a Detectron config, e.g. '
                        'configs/12_2017_baselines/e2e_faster_rcnn_R-50-C4_1x.yaml')
    parser.add_argument('--out_dir', required=True, help='where model.pb, model_init.pb go')
    parser.add_argument('--image', help='test image (default: a synthetic 480x640 one)')
    parser.add_argument('--seed', type=int, default=0, help='seed of the random weights')
    parser.add_argument('--converter', help='convert_pkl_to_pb.py to use (default: the '
                        'checkout\'s, from its git history at {})'.format(CONVERTER_COMMIT))
    parser.add_argument('--run_net', default=None, help='the run_net binary')
    args, args.opts = parser.parse_known_args(argv)  # the rest: Detectron config overrides
    return args


def _say(message):
    print('[detectron_export] ' + message, flush=True)


def prepare_environment(checkout):
    """Makes Detectron importable against Doppio's caffe2 (see the module doc)."""
    sys.path.insert(0, checkout)
    import importlib.util
    if importlib.util.find_spec('pycocotools') is None:
        _say('pycocotools is not installed: dataset evaluation is unavailable (not used here)')
        parent = sys.modules['pycocotools'] = _unavailable_module('pycocotools')
        for child in ('mask', 'coco', 'cocoeval'):
            module = _unavailable_module('pycocotools.' + child)
            sys.modules[module.__name__] = module
            setattr(parent, child, module)
    import detectron.utils.c2 as c2_utils
    from caffe2.proto import caffe2_pb2
    from caffe2.python import core, workspace

    def import_built_in_ops():
        _say('Detectron\'s op library: Doppio has its ops built in')

    import detectron.utils.env as envu
    import yaml
    if 'Loader' in yaml.load.__code__.co_varnames[:yaml.load.__code__.co_argcount] and (
            yaml.load.__defaults__ is None):
        _say('PyYAML >= 6: Detectron\'s yaml.load(stream) gets the Loader PyYAML 5 chose')
        envu.yaml_load = lambda stream: yaml.load(stream, Loader=yaml.FullLoader)
    c2_utils.import_detectron_ops = import_built_in_ops
    c2_utils.import_contrib_ops = import_built_in_ops
    c2_utils.import_custom_ops = import_built_in_ops
    if workspace.NumCudaDevices() == 0:
        _say('no GPU: Detectron\'s CUDA device 0 is placed on the CPU')
        c2_utils.CudaDevice = lambda gpu_id: core.DeviceOption(caffe2_pb2.CPU)


def _unavailable_module(name):
    """A module whose every name imports, and raises when it is called."""
    module = types.ModuleType(name)

    def attribute(attr):
        if attr.startswith('__'):
            raise AttributeError(attr)

        def missing(*args, **kwargs):
            raise ImportError('{}.{} is needed here, and pycocotools is not installed'.format(
                name, attr))
        return missing

    module.__getattr__ = attribute
    module.__path__ = []
    return module


def load_converter(checkout, path):
    """Detectron's convert_pkl_to_pb.py as a module."""
    if path is None:
        shown = subprocess.run(
            ['git', '-C', checkout, 'show', '{}:{}'.format(CONVERTER_COMMIT, CONVERTER_PATH)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if shown.returncode != 0:
            raise SystemExit('{} has no git history with {} at {} ({}); pass that version with '
                             '--converter'.format(checkout, CONVERTER_PATH, CONVERTER_COMMIT,
                                                  shown.stderr.decode().strip()))
        source = shown.stdout.decode()
        origin = '{}@{}'.format(CONVERTER_PATH, CONVERTER_COMMIT)
    else:
        with open(path) as f:
            source = f.read()
        origin = path
    module = types.ModuleType('convert_pkl_to_pb')
    module.__file__ = origin
    exec(compile(source, origin, 'exec'), module.__dict__)
    return module


# Output scale each layer is calibrated to: unit variance in the trunk, class
# logits wide enough that some classes clear TEST.SCORE_THRESH, box deltas
# small enough that boxes stay inside the image.
_OUTPUT_STD = (('rpn_cls_logits', 2.0), ('rpn_bbox_pred', 0.1), ('cls_score', 3.0),
               ('bbox_pred', 0.1), ('mask_fcn_logits', 2.0))


def _initial_value(rng, name, shape):
    shape = tuple(shape)
    if name.endswith('_s'):  # AffineChannel scale (frozen BatchNorm)
        return rng.uniform(0.5, 1.5, shape).astype(np.float32)
    if name.endswith('_b') or len(shape) == 1:
        return rng.normal(0.0, 0.1, shape).astype(np.float32)
    return rng.normal(0.0, np.sqrt(2.0 / np.prod(shape[1:])), shape).astype(np.float32)


def make_weights(converter, pkl_path, image, seed):
    """Random weights of the test model's parameter shapes (from Detectron's
    model_builder), calibrated on the test image layer by layer (each Conv /
    FC scaled so its output has the spread _OUTPUT_STD asks), written as a
    Detectron weights file. Without calibration a random ResNet's activations
    grow with depth until every score saturates."""
    from caffe2.python import core, workspace
    import detectron.modeling.model_builder as model_builder
    import detectron.utils.c2 as c2_utils

    cfg = converter.cfg
    workspace.ResetWorkspace()
    model = model_builder.create(cfg.MODEL.TYPE, train=False, gpu_id=0)
    rng = np.random.RandomState(seed)
    blobs = {}
    for param in model.params:
        name = c2_utils.UnscopeName(str(param))
        blobs[name] = _initial_value(rng, name, model.get_param_info(param).shape)
    inputs = converter._prepare_blobs(image, cfg.PIXEL_MEANS, cfg.TEST.SCALE,
                                      cfg.TEST.MAX_SIZE)
    with c2_utils.NamedCudaScope(0):
        for name, value in list(blobs.items()) + list(inputs.items()):
            workspace.FeedBlob(core.ScopedName(name), value)
        for op in model.net.Proto().op:
            _run_calibrated(op, blobs)
    with open(pkl_path, 'wb') as f:
        pickle.dump({'blobs': blobs}, f, pickle.HIGHEST_PROTOCOL)
    workspace.ResetWorkspace()
    _say('{} parameters of calibrated random weights -> {}'.format(len(blobs), pkl_path))


def _run_calibrated(op, blobs):
    """Runs `op`; a Conv or FC is rescaled (weight and bias) to its target
    output spread and run again."""
    from caffe2.python import workspace
    import detectron.utils.c2 as c2_utils
    workspace.RunOperatorOnce(op)
    if op.type not in ('Conv', 'FC') or len(op.input) < 2:
        return
    weight = c2_utils.UnscopeName(op.input[1])
    if weight not in blobs:
        return
    spread = float(np.std(workspace.FetchBlob(op.output[0])))
    if not np.isfinite(spread) or spread == 0.0:
        return
    target = dict(_OUTPUT_STD).get(c2_utils.UnscopeName(op.output[0]), 1.0)
    for position, param in enumerate(op.input[1:3]):
        name = c2_utils.UnscopeName(param)
        blobs[name] = (blobs[name] * (target / spread)).astype(np.float32)
        workspace.FeedBlob(op.input[1 + position], blobs[name])
    workspace.RunOperatorOnce(op)


def synthetic_image(path, seed):
    """A 480x640 BGR image with smooth shapes (cv2 writes it as a real PNG)."""
    import cv2
    rng = np.random.RandomState(seed)
    yy, xx = np.mgrid[0:480, 0:640].astype(np.float32)
    image = np.stack([128 + 60 * np.sin(xx / (23 + 11 * c) + yy / (37 + 5 * c))
                      for c in range(3)], axis=2)
    for _ in range(6):
        x0, y0 = rng.randint(0, 560), rng.randint(0, 400)
        w, h = rng.randint(40, 200), rng.randint(40, 200)
        image[y0:y0 + h, x0:x0 + w] = rng.randint(0, 256, 3)
    cv2.imwrite(path, np.clip(image, 0, 255).astype(np.uint8))


def configure(converter, args):
    """The converter's own argument parsing and config merging (its main())."""
    argv = ['convert_pkl_to_pb.py', '--cfg', args.cfg, '--out_dir', args.out_dir,
            '--device', 'cpu'] + list(args.opts)
    saved, sys.argv = sys.argv, argv
    try:
        conv_args = converter.parse_args()
    finally:
        sys.argv = saved
    converter.merge_cfg_from_file(conv_args.cfg_file)
    if conv_args.opts:
        converter.merge_cfg_from_list(conv_args.opts)
    converter.cfg.NUM_GPUS = 1
    converter.assert_and_infer_cfg()
    return conv_args


def convert(converter, conv_args, image_path):
    """convert_pkl_to_pb.main() from load_model to verify_model; returns
    (predict NetDef, init NetDef)."""
    from caffe2.python import core
    import copy
    model, blobs = converter.load_model(conv_args)
    net = core.Net('')
    net.Proto().op.extend(copy.deepcopy(model.net.Proto().op))
    net.Proto().external_input.extend(copy.deepcopy(model.net.Proto().external_input))
    net.Proto().external_output.extend(copy.deepcopy(model.net.Proto().external_output))
    net.Proto().type = conv_args.net_execution_type
    net.Proto().num_workers = 1 if conv_args.net_execution_type == 'simple' else 4
    converter.convert_net(conv_args, net.Proto(), blobs)
    converter.add_bbox_ops(conv_args, net, blobs)
    if conv_args.fuse_af:
        net, blobs = converter.mutils.fuse_net_affine(net, blobs)
    if conv_args.use_nnpack:
        converter.mutils.update_mobile_engines(net.Proto())
    init_net = converter.gen_init_net(net, blobs, ['data', 'im_info'])
    net.Proto().name = conv_args.net_name
    init_net.Proto().name = conv_args.net_name + '_init'
    converter.verify_model(conv_args, [net, init_net], image_path)
    _say('Detectron\'s verify_model: the converted net\'s detections equal im_detect_all\'s')
    return net.Proto(), init_net.Proto()


def write_nets(out_dir, net, init_net):
    os.makedirs(out_dir, exist_ok=True)
    for name, proto in (('model.pb', net), ('model_init.pb', init_net)):
        with open(os.path.join(out_dir, name), 'wb') as f:
            f.write(proto.SerializeToString())
    with open(os.path.join(out_dir, 'model.pbtxt'), 'w') as f:
        f.write(str(net))


def run_in_process(converter, net, init_net, image):
    """The converted nets in this process's workspace (as run_model_pb does),
    returning the input blobs and the three detection outputs."""
    from caffe2.python import core, workspace
    cfg = converter.cfg
    inputs = converter._prepare_blobs(image, cfg.PIXEL_MEANS, cfg.TEST.SCALE,
                                      cfg.TEST.MAX_SIZE)
    workspace.ResetWorkspace()
    workspace.RunNetOnce(init_net)
    for name, value in inputs.items():
        workspace.FeedBlob(name, value)
    predict = core.Net(net)
    workspace.RunNetOnce(predict)
    outputs = {name: workspace.FetchBlob(name) for name in ('score_nms', 'bbox_nms',
                                                             'class_nms')}
    return inputs, outputs


def run_with_run_net(run_net, out_dir, inputs):
    """tools/run_net on the written files; its three outputs as arrays."""
    command = [run_net, '--init_net', os.path.join(out_dir, 'model_init.pb'),
               '--net', os.path.join(out_dir, 'model.pb')]
    for name, value in inputs.items():
        path = os.path.join(out_dir, name + '.npy')
        np.save(path, value)
        command += ['--input', '{}={}'.format(name, path)]
    outputs = {}
    for name in ('score_nms', 'bbox_nms', 'class_nms'):
        outputs[name] = os.path.join(out_dir, 'run_net_' + name + '.npy')
        command += ['--output', '{}={}'.format(name, outputs[name])]
    _say('running ' + ' '.join(command))
    subprocess.run(command, check=True)
    return {name: np.load(path) for name, path in outputs.items()}


def compare(expected, actual):
    """run_net's detections against the in-process run (same ops, same
    inputs; run_net's inference passes may round differently)."""
    for name in ('score_nms', 'bbox_nms', 'class_nms'):
        if expected[name].shape != actual[name].shape:
            raise AssertionError('{}: run_net gave shape {}, the in-process run {}'.format(
                name, actual[name].shape, expected[name].shape))
        np.testing.assert_allclose(actual[name], expected[name], rtol=1e-3, atol=1e-3,
                                   err_msg=name)
    _say('run_net: {} detections, equal to the in-process run (classes {})'.format(
        len(expected['score_nms']), sorted(set(expected['class_nms'].astype(int).tolist()))))


def main(argv):
    args = parse_args(argv)
    checkout = os.path.abspath(args.checkout)
    args.cfg = os.path.join(checkout, args.cfg) if not os.path.isabs(args.cfg) else args.cfg
    args.out_dir = os.path.abspath(args.out_dir)
    os.makedirs(args.out_dir, exist_ok=True)
    run_net = args.run_net or os.path.join(REPO_ROOT, 'bazel-bin', 'tools', 'run_net')
    prepare_environment(checkout)
    converter = load_converter(checkout, args.converter)
    image_path = args.image or os.path.join(args.out_dir, 'synthetic.png')
    if args.image is None:
        synthetic_image(image_path, args.seed)
    weights = os.path.join(args.out_dir, 'random_weights.pkl')
    # TRAIN.WEIGHTS (an ImageNet model's URL) would be downloaded; tests never read it.
    args.opts = list(args.opts) + ['TEST.WEIGHTS', weights, 'TRAIN.WEIGHTS', '']
    conv_args = configure(converter, args)
    import cv2
    make_weights(converter, weights, cv2.imread(image_path), args.seed)
    net, init_net = convert(converter, conv_args, image_path)
    write_nets(args.out_dir, net, init_net)
    inputs, expected = run_in_process(converter, net, init_net, cv2.imread(image_path))
    if len(expected['score_nms']) == 0:
        raise AssertionError('the net detected nothing: the check would be vacuous')
    compare(expected, run_with_run_net(run_net, args.out_dir, inputs))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
