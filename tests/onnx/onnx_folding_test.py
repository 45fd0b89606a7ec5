"""Shape arithmetic that exporters put in the graph, folded while
converting (doppio/onnx/folding.py), and Einsum (ops_einsum.py), against
numpy: torch's F.pad with computed pads (Mod, ConstantOfShape, Reshape, a
reversed Slice, Transpose), Swin's attention mask (ConstantOfShape, then
ScatterND writes, Equal, Where), shapes that become known only after a
folded value (rounds of shape inference), Dropout of ratio 0 in training
mode, and Einsum's equations, spaces included."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from doppio.onnx import backend
from doppio.onnx.errors import UnsupportedError

I64 = TensorProto.INT64
F = TensorProto.FLOAT


def const(name, values, dtype=np.int64):
    return helper.make_node('Constant', [], [name], value=numpy_helper.from_array(
        np.asarray(values, dtype), name))


def run(nodes, inputs, feeds, initializers=(), opset=13):
    graph = helper.make_graph(nodes, 'g', inputs, [helper.make_tensor_value_info('y', F, None)],
                              initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', opset)])
    return backend.prepare(model).run(feeds)[0]


def test_torch_pad_with_computed_pads_then_softmax():
    """pad = (7 - W % 7) % 7 from the input's shape, then torch's pads
    shuffle: [0, 0, 0, pad] -> reversed pairs -> ONNX order."""
    nodes = [
        helper.make_node('Shape', ['x'], ['shape']),
        const('three', 3), const('seven', 7),
        helper.make_node('Gather', ['shape', 'three'], ['w']),
        helper.make_node('Mod', ['w', 'seven'], ['w_mod']),
        helper.make_node('Sub', ['seven', 'w_mod'], ['gap']),
        helper.make_node('Mod', ['gap', 'seven'], ['pad_r']),
        const('axes0', [0]),
        helper.make_node('Unsqueeze', ['pad_r', 'axes0'], ['pad_r_1d']),
        const('zeros3', [0, 0, 0]),
        helper.make_node('Concat', ['zeros3', 'pad_r_1d'], ['torch_pads'], axis=0),
        const('four', [4]),
        helper.make_node('ConstantOfShape', ['four'], ['more_zeros'],
                         value=numpy_helper.from_array(np.zeros(1, np.int64), 'v')),
        helper.make_node('Concat', ['torch_pads', 'more_zeros'], ['pads8'], axis=0),
        const('pairs', [-1, 2]),
        helper.make_node('Reshape', ['pads8', 'pairs'], ['paired']),
        const('start', [-1]), const('end', [-(2 ** 63) + 1]), const('step', [-1]),
        helper.make_node('Slice', ['paired', 'start', 'end', 'axes0', 'step'], ['reversed']),
        helper.make_node('Transpose', ['reversed'], ['columns'], perm=[1, 0]),
        const('flat', [-1]),
        helper.make_node('Reshape', ['columns', 'flat'], ['pads_i64']),
        helper.make_node('Cast', ['pads_i64'], ['pads'], to=I64),
        helper.make_node('Pad', ['x', 'pads'], ['padded']),
        helper.make_node('Softmax', ['padded'], ['y'], axis=-1),
    ]
    x = np.random.RandomState(0).randn(1, 2, 3, 10).astype(np.float32)
    got = run(nodes, [helper.make_tensor_value_info('x', F, [1, 2, 3, 10])], [x])
    # torch's pads run from the last dim: [0, 0, 0, pad_r] pads H's end.
    padded = np.pad(x, [(0, 0), (0, 0), (0, 4), (0, 0)])
    e = np.exp(padded - padded.max(-1, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(-1, keepdims=True), rtol=1e-6)


def test_swin_style_mask_from_scatter_nd():
    """A mask written into zeros by ScatterND, compared and selected: the
    values fold though the mask is larger than the small-value limit."""
    h, w = 16, 12
    indices = np.array([[i, j] for i in range(h // 2, h) for j in (0, 5)], np.int64)
    updates = np.full(len(indices), 3.0, np.float32)
    nodes = [
        const('hw', [h, w]),
        helper.make_node('ConstantOfShape', ['hw'], ['zeros'],
                         value=numpy_helper.from_array(np.zeros(1, np.float32), 'v')),
        helper.make_node('ScatterND', ['zeros', 'idx', 'upd'], ['regions']),
        const('three', [3.0], np.float32),
        helper.make_node('Equal', ['regions', 'three'], ['in_region']),
        const('big', [-100.0], np.float32), const('none', [0.0], np.float32),
        helper.make_node('Where', ['in_region', 'big', 'none'], ['mask']),
        helper.make_node('Add', ['x', 'mask'], ['y']),
    ]
    x = np.random.RandomState(1).randn(2, h, w).astype(np.float32)
    got = run(nodes, [helper.make_tensor_value_info('x', F, [2, h, w])], [x],
              [numpy_helper.from_array(indices, 'idx'), numpy_helper.from_array(updates, 'upd')])
    mask = np.zeros((h, w), np.float32)
    mask[h // 2:, [0, 5]] = -100.0
    np.testing.assert_array_equal(got, x + mask)


@pytest.mark.parametrize('fmod', [0, 1])
def test_mod_folds_with_each_sign_rule(fmod):
    a = np.array([-7, 7, -7, 7], np.int64)
    b = np.array([3, -3, -3, 3], np.int64)
    want = [-1, 1, -1, 1] if fmod else [2, -2, -1, 1]  # C's fmod / Python's %
    nodes = [const('a', a), const('b', b), helper.make_node('Mod', ['a', 'b'], ['m'], fmod=fmod),
             helper.make_node('Cast', ['m'], ['m_f'], to=F),
             helper.make_node('Add', ['x', 'm_f'], ['y'])]
    x = np.ones((2, 4), np.float32)
    got = run(nodes, [helper.make_tensor_value_info('x', F, [2, 4])], [x])
    np.testing.assert_array_equal(got, x + np.array(want, np.float32))


def test_mod_of_run_time_values_is_refused_clearly():
    node = helper.make_node('Mod', ['x', 'x'], ['y'], fmod=1)
    with pytest.raises(UnsupportedError, match='but as constant shape arithmetic'):
        run([node], [helper.make_tensor_value_info('x', F, [2])], [np.ones(2, np.float32)])


@pytest.mark.parametrize('ratio,ok', [(0.0, True), (0.5, False)])
def test_training_mode_dropout_only_with_ratio_zero(ratio, ok):
    nodes = [const('ratio', ratio, np.float32), const('training', True, np.bool_),
             helper.make_node('Dropout', ['x', 'ratio', 'training'], ['y'])]
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    inputs = [helper.make_tensor_value_info('x', F, [2, 3])]
    if ok:
        np.testing.assert_array_equal(run(nodes, inputs, [x]), x)
    else:
        with pytest.raises(UnsupportedError, match='training_mode=1'):
            run(nodes, inputs, [x])


EINSUMS = [
    ('bhid,bhjd->bhij', [(2, 3, 4, 5), (2, 3, 6, 5)]),
    ('B G H I J, B G H J D -> B G H I D', [(1, 2, 3, 4, 5), (1, 2, 3, 5, 6)]),
    ('ij,jk->ik', [(3, 4), (4, 5)]),
    ('bij,bjk->bik', [(2, 3, 4), (2, 4, 5)]),
    ('ij,kj', [(3, 4), (5, 4)]),
    ('i,i', [(7,), (7,)]),
    ('abc,cd->dba', [(2, 3, 4), (4, 5)]),
    ('ab,b->a', [(3, 4), (4,)]),
    ('abcd,cde->abe', [(2, 3, 4, 5), (4, 5, 6)]),
    ('ij,ik->jk', [(3, 4), (3, 5)]),
    ('ij->ji', [(3, 4)]),
    ('ijk->i', [(3, 4, 5)]),
    ('ij,jk', [(2, 3), (3, 4)]),
]


@pytest.mark.parametrize('equation,shapes', EINSUMS)
def test_einsum_matches_numpy(equation, shapes):
    rng = np.random.RandomState(len(equation))
    values = [rng.randn(*s).astype(np.float32) for s in shapes]
    names = ['a', 'b'][:len(values)]
    node = helper.make_node('Einsum', names, ['y'], equation=equation)
    inputs = [helper.make_tensor_value_info(n, F, list(v.shape)) for n, v in zip(names, values)]
    got = run([node], inputs, values, opset=12)
    want = np.einsum(equation.replace(' ', ''), *values)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize('equation,fragment', [('...ij,...jk->...ik', 'ellipsis'),
                                               ('ii->i', 'no diagonals')])
def test_einsum_refuses_what_it_cannot_do(equation, fragment):
    node = helper.make_node('Einsum', ['a'], ['y'], equation=equation)
    with pytest.raises(UnsupportedError, match=fragment):
        run([node], [helper.make_tensor_value_info('a', F, [3, 3])],
            [np.eye(3, dtype=np.float32)], opset=12)


if __name__ == '__main__':
    import sys
    sys.exit(pytest.main([__file__, '-q', '-p', 'no:cacheprovider']))
