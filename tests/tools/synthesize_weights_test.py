"""tools/synthesize_weights.py on a Mask R-CNN2Go-shaped net (float32 and
Int8; tests/tools/mobile_detector.py): the channel counts it solves, the
init net it writes (Caffe2's fill ops), the net then run through run_net,
and every stage checked against the independent reference interpreter
(tests/tools/caffe2_reference.py), which must also catch a wrong op."""
import os
import subprocess
import tempfile

import numpy as np
import pytest

import caffe2_reference as reference
import mobile_detector
import synthesize_weights as sw
from doppio import workspace
from tool_paths import runfile

RUN_NET = runfile('tools/run_net')


def _inputs():
    rng = np.random.RandomState(0)
    yy, xx = np.mgrid[0:48, 0:64].astype(np.float32)
    image = np.stack([128 + 60 * np.sin(xx / (5 + 3 * c) + yy / (7 + c)) for c in range(3)])
    image[:, 10:30, 20:50] = rng.randint(0, 256, (3, 1, 1))
    return {'data': image[None].astype(np.float32),
            'im_info': np.array([[48, 64, 0.8]], np.float32)}


@pytest.fixture(scope='module', params=[False, True], ids=['fp32', 'int8'])
def synthesized(request):
    net = mobile_detector.build(quantized=request.param)
    init = sw.synthesize(net, _inputs(), classes=5, channels=8, seed=1)
    return net, init


def test_channels_follow_the_net():
    solved = sw.solve_channels(mobile_detector.build(quantized=False), classes=5, channels=8)
    assert solved.get('blk1_dw') == 32 and solved.get('blk1_pw') == 32  # depthwise group
    assert solved.get('blk1') == solved.get('conv0') == 8  # Sum with the block's input: free
    assert solved.get('blk2_dw') == 48
    assert solved.get('cls_score') == 5 and solved.get('bbox_pred') == 20  # classes, 4 x
    assert solved.get('rpn_cls_logits') == sw.NUM_ANCHORS
    assert solved.get('rpn_bbox_pred') == 4 * sw.NUM_ANCHORS
    assert solved.get('mask_pool') == solved.get('blk2')  # RoIAlign keeps channels


def test_conflicting_channel_counts_are_an_error():
    net = mobile_detector.build(quantized=False)
    for op in net.op:
        if op.type == 'Sum' and op.output[0] == 'blk1':
            op.input[:] = ['blk1_dw', 'blk2_dw']  # depthwise widths 32 and 48 summed
    with pytest.raises(ValueError, match="channel count of 'blk2_dw': 32 and 48"):
        sw.solve_channels(net, classes=5, channels=8)


def test_init_net_holds_caffe2_fill_ops(synthesized):
    net, init = synthesized
    outputs = {op.output[0]: op for op in init.op}
    params = [name for name in net.external_input if name not in ('data', 'im_info')]
    assert sorted(outputs) == sorted(params)
    quantized = net.name.endswith('int8')
    kinds = {op.type for op in init.op}
    if quantized:
        assert kinds == {'Int8GivenTensorFill', 'Int8GivenIntTensorFill', 'GivenTensorFill'}
        assert outputs['anchor'].type == 'GivenTensorFill'
    else:
        assert kinds == {'GivenTensorFill'}
    w = reference.arg(outputs['blk2_dw_w'], 'shape')
    assert w == ([48, 3, 3, 1] if quantized else [48, 1, 3, 3])


def _run_in_workspace(net, init):
    workspace.ResetWorkspace()
    workspace.RunNetOnce(init)
    for name, value in _inputs().items():
        workspace.FeedBlob(name, value)


def test_every_stage_matches_the_reference(synthesized):
    net, init = synthesized
    _run_in_workspace(net, init)
    rows = reference.check_stages(net)
    checked = {row[2] for row in rows}
    assert 'If -> else_net' in checked and 'BoxWithNMSLimit' in checked
    assert len(workspace.FetchBlob('score_nms')) > 0  # the weights detect something
    masks = workspace.FetchBlob('mask_fcn_probs')
    assert masks.shape[0] == len(workspace.FetchBlob('score_nms')) and masks.ndim == 4


def test_the_reference_catches_a_wrong_op(synthesized, monkeypatch):
    net, init = synthesized
    _run_in_workspace(net, init)
    monkeypatch.setitem(reference.OPS, 'BBoxTransform', lambda op, v: [
        reference.bbox_transform(op, v)[0] + 1.0])
    with pytest.raises(AssertionError, match='BBoxTransform'):
        reference.check_stages(net)


def test_run_net_gives_the_workspace_results(synthesized):
    net, init = synthesized
    _run_in_workspace(net, init)
    workspace.RunNetOnce(net)
    want = {name: workspace.FetchBlob(name) for name in ('score_nms', 'bbox_nms', 'class_nms')}
    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for name, value in list(_inputs().items()) + [('net', net), ('init', init)]:
            paths[name] = os.path.join(tmp, name + ('.npy' if name in _inputs() else '.pb'))
            if name in _inputs():
                np.save(paths[name], value)
            else:
                with open(paths[name], 'wb') as f:
                    f.write(value.SerializeToString())
        command = [RUN_NET, '--init_net', paths['init'], '--net', paths['net'],
                   '--input', 'data=' + paths['data'], '--input', 'im_info=' + paths['im_info']]
        for name in want:
            command += ['--output', '{}={}/{}.npy'.format(name, tmp, name)]
        subprocess.run(command, check=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for name, value in want.items():
            np.testing.assert_allclose(np.load('{}/{}.npy'.format(tmp, name)), value,
                                       rtol=1e-4, atol=1e-3, err_msg=name)


if __name__ == '__main__':
    raise SystemExit(pytest.main([__file__, '-v']))
