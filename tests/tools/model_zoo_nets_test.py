"""Caffe2's exported detection nets from its model zoo, as Detectron and
Caffe2 wrote them: Detectron's e2e_faster_rcnn_R-50-C4_1x and Mask R-CNN2Go
(float32 and int8) predict nets, read from a checkout of the zoo
(github.com/facebookarchive/models, formerly caffe2/models) named by
DOPPIO_MODELS_CHECKOUT; skipped without one (the zoo is not part of this
repository, and its weight files are Git LFS objects, so only the nets'
text forms are read).

Weights come from tools/synthesize_weights.py (shapes solved from each net,
values calibrated on the test image). Each net then runs op by op with every
stage checked against the reference interpreter (torch / torchvision /
numpy; tests/tools/caffe2_reference.py), and once through tools/run_net as
a user runs it, whose detections must equal the op-by-op run's."""
import os
import subprocess
import tempfile

import numpy as np
import pytest

import caffe2_reference as reference
import synthesize_weights as sw
from doppio import workspace
from tool_paths import runfile

CHECKOUT = os.environ.get('DOPPIO_MODELS_CHECKOUT')
pytestmark = pytest.mark.skipif(
    not CHECKOUT, reason='needs DOPPIO_MODELS_CHECKOUT: a checkout of '
    'github.com/facebookarchive/models (Caffe2\'s model zoo) outside this repository')

# (predict net in the zoo, image preparation): Detectron subtracts its
# pixel means and scales the short side (240 here, to keep the test short);
# Mask R-CNN2Go takes BGR in [0, 255] with the short side at 320.
NETS = {
    'faster_rcnn_R-50-C4': ('detectron/e2e_faster_rcnn_R-50-C4_1x/predict_net.pbtxt',
                            (102.9801, 115.9465, 122.7717), 240),
    'mask_rcnn_2go_fp32': ('mask_rcnn_2go/model/fp32/model.pbtxt', (0.0, 0.0, 0.0), 320),
    'mask_rcnn_2go_int8': ('mask_rcnn_2go/model/int8/model.pbtxt', (0.0, 0.0, 0.0), 320),
}
OUTPUTS = ('score_nms', 'bbox_nms', 'class_nms')


def _image():
    """A 480 x 640 BGR test image: smooth waves and flat rectangles."""
    rng = np.random.RandomState(0)
    yy, xx = np.mgrid[0:480, 0:640].astype(np.float32)
    image = np.stack([128 + 60 * np.sin(xx / (23 + 11 * c) + yy / (37 + 5 * c))
                      for c in range(3)], axis=2)
    for _ in range(6):
        x0, y0 = rng.randint(0, 560), rng.randint(0, 400)
        image[y0:y0 + rng.randint(40, 200), x0:x0 + rng.randint(40, 200)] = rng.randint(0, 256, 3)
    return np.clip(image, 0, 255)


def _inputs(means, short_side):
    """data (1, 3, H, W) and im_info, scaled by nearest-neighbour sampling
    (the nets do not care how the image was resized)."""
    image = _image() - np.array(means, np.float32)
    scale = short_side / float(image.shape[0])
    rows = (np.arange(int(round(image.shape[0] * scale))) / scale).astype(int)
    cols = (np.arange(int(round(image.shape[1] * scale))) / scale).astype(int)
    data = image[rows][:, cols].transpose(2, 0, 1)[None].astype(np.float32)
    return {'data': np.ascontiguousarray(data),
            'im_info': np.array([[data.shape[2], data.shape[3], scale]], np.float32)}


@pytest.fixture(scope='module', params=sorted(NETS))
def model(request):
    path, means, short_side = NETS[request.param]
    full = os.path.join(CHECKOUT, path)
    if not os.path.exists(full):
        pytest.skip('{} is not in {}'.format(path, CHECKOUT))
    net = sw.load_net(full)
    inputs = _inputs(means, short_side)
    init = sw.synthesize(net, inputs, classes=81, seed=0)
    return request.param, net, init, inputs


def _fresh_workspace(init, inputs):
    workspace.ResetWorkspace()
    workspace.RunNetOnce(init)
    for name, value in inputs.items():
        workspace.FeedBlob(name, value)


def test_every_stage_matches_the_reference(model):
    name, net, init, inputs = model
    _fresh_workspace(init, inputs)
    rows = reference.check_stages(net)
    print('{}: {} ops checked, {} detections'.format(
        name, len(rows), len(workspace.FetchBlob('score_nms'))))
    assert len(workspace.FetchBlob('score_nms')) > 0
    if 'mask' in name:
        assert any(row[2] == 'If -> else_net' for row in rows)  # the mask head ran
        assert workspace.FetchBlob('mask_fcn_probs').shape[0] == len(
            workspace.FetchBlob('score_nms'))


def test_run_net_gives_the_same_detections(model):
    name, net, init, inputs = model
    _fresh_workspace(init, inputs)
    workspace.RunNetOnce(net)
    want = {blob: workspace.FetchBlob(blob) for blob in OUTPUTS}
    with tempfile.TemporaryDirectory() as tmp:
        command = [runfile('tools/run_net')]
        for flag, proto in (('--net', net), ('--init_net', init)):
            path = os.path.join(tmp, flag[2:] + '.pb')
            with open(path, 'wb') as f:
                f.write(proto.SerializeToString())
            command += [flag, path]
        for blob, value in inputs.items():
            np.save(os.path.join(tmp, blob + '.npy'), value)
            command += ['--input', '{}={}/{}.npy'.format(blob, tmp, blob)]
        for blob in OUTPUTS:
            command += ['--output', '{}={}/out_{}.npy'.format(blob, tmp, blob)]
        subprocess.run(command, check=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for blob in OUTPUTS:
            np.testing.assert_allclose(np.load('{}/out_{}.npy'.format(tmp, blob)), want[blob],
                                       rtol=1e-3, atol=1e-2, err_msg='{}: {}'.format(name, blob))


if __name__ == '__main__':
    raise SystemExit(pytest.main([__file__, '-v', '-s']))
