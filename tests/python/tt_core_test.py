"""tt_core: TT-SVD with full ranks reconstructs its tensor (checked by
contracting the cores in numpy), truncated ranks give the best low-rank
error of the first unfolding, and init_tt_cores makes cores of the sizes
the TT layout needs, orthonormal before scaling."""
import sys

import numpy as np
import pytest

from doppio import tt_core


def contract(cores, sizes, ranks):
    """The full tensor of TT cores (r_i, n_i, r_{i+1}), concatenated."""
    offset, result = 0, np.ones((1, 1))
    for i, n in enumerate(sizes):
        size = ranks[i] * n * ranks[i + 1]
        core = cores[offset:offset + size].reshape(ranks[i], n * ranks[i + 1])
        offset += size
        result = (result @ core).reshape(-1, ranks[i + 1])
    return result.reshape(sizes)


@pytest.mark.parametrize('sizes', [[2, 3], [3, 2, 2], [2, 2, 2, 2]])
def test_full_rank_tt_svd_reconstructs(sizes):
    rng = np.random.RandomState(0)
    tensor = rng.randn(*sizes)
    # Full ranks: the products of the sizes on each side of every cut.
    ranks = [1] + [min(int(np.prod(sizes[:k])), int(np.prod(sizes[k:])))
                   for k in range(1, len(sizes))] + [1]
    cores = tt_core.tt_svd(tensor, np.array(sizes), np.array(ranks))
    np.testing.assert_allclose(contract(cores, sizes, ranks), tensor, rtol=1e-4, atol=1e-5)


def test_truncated_tt_svd_is_the_best_rank_one_fit_of_a_matrix():
    rng = np.random.RandomState(1)
    matrix = rng.randn(4, 5)
    cores = tt_core.tt_svd(matrix, np.array([4, 5]), np.array([1, 1, 1]))
    u, s, vt = np.linalg.svd(matrix)
    best = s[0] * np.outer(u[:, 0], vt[0])
    np.testing.assert_allclose(contract(cores, [4, 5], [1, 1, 1]), best, rtol=1e-4, atol=1e-5)


def test_init_tt_cores_sizes_and_orthogonality():
    inp, out, ranks = [2, 3, 2], [2, 2, 3], [1, 3, 2, 1]
    cores = tt_core.init_tt_cores(inp, out, ranks)
    sizes = [ranks[i] * inp[i] * out[i] * ranks[i + 1] for i in range(3)]
    assert cores.dtype == np.float32 and cores.size == sum(sizes)
    glorot = (np.prod(inp) * np.prod(ranks)) ** (1.0 / 3)
    first = cores[:sizes[0]].reshape(-1, ranks[1]) * glorot / 0.1
    np.testing.assert_allclose(first.T @ first, np.eye(ranks[1]), atol=1e-5)
    np.testing.assert_array_equal(cores, tt_core.init_tt_cores(inp, out, ranks))  # seeded
    with pytest.raises(AssertionError, match='tt-ranks'):
        tt_core.init_tt_cores(inp, out, [1, 2, 1])


def test_matrix_to_tt_checks_shapes():
    with pytest.raises(AssertionError, match='W has shape'):
        tt_core.matrix_to_tt(np.zeros((3, 4)), [2, 2], [2, 2], [1, 2, 1])
    cores = tt_core.matrix_to_tt(np.random.RandomState(2).randn(4, 4), [2, 2], [2, 2],
                                 [1, 4, 1])
    assert cores.dtype == np.float32 and cores.size == 2 * 2 * 4 * 2


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
