"""UnscaleGradients and UpdateLossScale against PyTorch's GradScaler rules,
written out in numpy: unscale only when every element of every gradient is
finite; back off on overflow, grow after growth_interval good steps."""
import numpy as np
import pytest

import op_harness as h


def unscale(grads, scale):
    op = h.make_op('UnscaleGradients', ['g%d' % i for i in range(len(grads))] + ['scale'],
                   ['g%d' % i for i in range(len(grads))] + ['finite'])
    return h.run_op(op, list(grads) + [np.array([scale], np.float32)])


@pytest.mark.parametrize('dtype', [np.float32, np.float16, np.float64])
def test_finite_gradients_are_divided_by_the_scale(dtype):
    grads = [np.array([1.0, -2.0, 4.0], dtype), np.array([[8.0, 0.5]], dtype)]
    *out, finite = unscale(grads, 4.0)
    assert finite.dtype == np.bool_ and finite.tolist() == [True]
    for g, o in zip(grads, out):
        np.testing.assert_array_equal(o, (g.astype(np.float64) / 4.0).astype(dtype))


@pytest.mark.parametrize('bad', [np.inf, -np.inf, np.nan])
def test_a_non_finite_element_anywhere_skips_the_unscale(bad):
    grads = [np.array([1.0, 2.0], np.float32), np.array([3.0, bad], np.float16)]
    *out, finite = unscale(grads, 2.0)
    assert finite.tolist() == [False]
    np.testing.assert_array_equal(out[0], grads[0])


def test_bad_scale_is_refused():
    op = h.make_op('UnscaleGradients', ['g', 'scale'], ['g', 'finite'])
    h.assert_op_error(op, [np.ones(2, np.float32), np.array([0.0], np.float32)],
                      'UnscaleGradients', 'scale')


def numpy_schedule(flags, scale, interval, growth=2.0, backoff=0.5):
    good = skipped = 0
    for finite in flags:
        if not finite:
            scale, good, skipped = scale * backoff, 0, skipped + 1
        else:
            good += 1
            if good == interval:
                scale, good = scale * growth, 0
    return scale, good, skipped


def test_schedule_matches_gradscaler():
    rng = np.random.RandomState(3)
    flags = rng.rand(40) > 0.2
    with h._FreshWorkspace():
        from doppio import workspace
        workspace.FeedBlob('scale', np.array([1024.0], np.float32))
        workspace.FeedBlob('good', np.array([0], np.int64))
        workspace.FeedBlob('skipped', np.array([0], np.int64))
        op = h.make_op('UpdateLossScale', ['finite', 'scale', 'good', 'skipped'],
                       ['scale', 'good', 'skipped'], growth_interval=3)
        for finite in flags:
            workspace.FeedBlob('finite', np.array([finite]))
            workspace.RunOperatorOnce(op)
        got = (float(workspace.FetchBlob('scale')[0]), int(workspace.FetchBlob('good')[0]),
               int(workspace.FetchBlob('skipped')[0]))
    assert got == numpy_schedule(flags, 1024.0, 3)


def test_growth_never_overflows():
    op = h.make_op('UpdateLossScale', ['finite', 'scale', 'good', 'skipped'],
                   ['scale', 'good', 'skipped'], growth_interval=1)
    big = np.array([np.finfo(np.float32).max / 1.5], np.float32)
    scale, good, skipped = h.run_op(op, [np.array([True]), big, np.array([0], np.int64),
                                         np.array([0], np.int64)])
    assert scale[0] == big[0] and good[0] == 0 and skipped[0] == 0


if __name__ == '__main__':
    h.run_main(__file__)
