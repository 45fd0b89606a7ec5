"""Caffe2's tt_core: tensor-train (TT) factorizations of fully connected
weights, in the core layout the TT operator reads.

A TT layer maps prod(inp_sizes) inputs to prod(out_sizes) outputs through
cores; core i has shape (tt_ranks[i], inp_sizes[i], out_sizes[i],
tt_ranks[i + 1]) and the cores are concatenated, flattened, in one float32
vector. Requires len(inp_sizes) == len(out_sizes) == len(tt_ranks) - 1.
"""
import numpy as np


def _check_sizes(inp_sizes, out_sizes, tt_ranks):
    if len(inp_sizes) != len(out_sizes):
        raise AssertionError('The number of input dimensions ({}) must be equal to the number '
                             'of output dimensions ({}).'.format(len(inp_sizes),
                                                                 len(out_sizes)))
    if len(tt_ranks) != len(inp_sizes) + 1:
        raise AssertionError('The number of tt-ranks ({}) must be one more than the number of '
                             'input and output dims ({}).'.format(len(tt_ranks),
                                                                  len(out_sizes)))


def init_tt_cores(inp_sizes, out_sizes, tt_ranks, seed=1234):
    """Random cores for a TT layer trained from scratch: Gaussian cores,
    each but the last orthogonalized (QR) with its R carried into the next,
    scaled Glorot-style by 0.1 / (prod(inp_sizes) * prod(tt_ranks))^(1/d).
    Seeds numpy's global generator with `seed` (Caffe2's draws)."""
    np.random.seed(seed)
    _check_sizes(inp_sizes, out_sizes, tt_ranks)
    inp_sizes, out_sizes, tt_ranks = (np.array(v) for v in (inp_sizes, out_sizes, tt_ranks))
    count = len(inp_sizes)
    pieces = []
    carried = 1
    for i in range(count):
        shape = [tt_ranks[i], inp_sizes[i], out_sizes[i], tt_ranks[i + 1]]
        core = np.dot(carried, np.random.normal(0, 1, size=(shape[0], np.prod(shape[1:]))))
        core = core.reshape((np.prod(shape[:3]), shape[3]))
        if i < count - 1:
            core, carried = np.linalg.qr(core)
        pieces.append(core.flatten())
    cores = np.concatenate(pieces) if pieces else np.zeros(0)
    glorot = (np.prod(inp_sizes) * np.prod(tt_ranks)) ** (1.0 / count)
    return (0.1 / glorot) * cores.astype(np.float32)


def tt_svd(W, sizes, tt_ranks):
    """TT-SVD: the cores (concatenated, float32) of the tensor W with mode
    sizes `sizes`, each truncated to its rank by a reduced SVD."""
    sizes, tt_ranks = np.asarray(sizes), np.asarray(tt_ranks)
    if len(tt_ranks) != len(sizes) + 1:
        raise AssertionError('tt_svd needs one more rank than sizes')
    rest = W.copy()
    cores = np.zeros(np.sum(tt_ranks[:-1] * sizes * tt_ranks[1:]), dtype=np.float32)
    position = 0
    for i in range(len(sizes) - 1):
        rest = np.reshape(rest, [tt_ranks[i] * sizes[i], -1])
        u, s, v = np.linalg.svd(rest, full_matrices=False)
        rank = tt_ranks[i + 1]
        u, s, v = u[:, :rank], s[:rank], v[:rank, :]
        size = tt_ranks[i] * sizes[i] * rank
        cores[position:position + size] = u.ravel()
        position += size
        rest = np.dot(np.diag(s), v)
    last = len(sizes) - 1
    cores[position:position + tt_ranks[last] * sizes[last] * tt_ranks[last + 1]] = rest.ravel()
    return cores


def matrix_to_tt(W, inp_sizes, out_sizes, tt_ranks):
    """The TT cores approximating a trained FC weight W of shape
    (prod(inp_sizes), prod(out_sizes)), in the TT operator's layout."""
    _check_sizes(inp_sizes, out_sizes, tt_ranks)
    if W.shape[0] != np.prod(inp_sizes) or W.shape[1] != np.prod(out_sizes):
        raise AssertionError('W has shape {} but the sizes give ({}, {})'.format(
            W.shape, np.prod(inp_sizes), np.prod(out_sizes)))
    inp_sizes, out_sizes, tt_ranks = (np.array(v) for v in (inp_sizes, out_sizes, tt_ranks))
    count = inp_sizes.size
    # Interleave the modes: (out_1, inp_1, out_2, inp_2, ...) of W's transpose.
    tensor = np.reshape(W.transpose().copy(), np.concatenate((inp_sizes, out_sizes)))
    order = np.repeat(np.arange(count), 2) + np.tile([0, count], count)
    tensor = np.reshape(np.transpose(tensor, axes=order), inp_sizes * out_sizes)
    cores = tt_svd(tensor, inp_sizes * out_sizes, tt_ranks)
    # Reorder each core's axes and the cores themselves (last first).
    result = np.zeros(cores.shape, dtype=np.float32)
    offset = 0
    for i in range(count):
        shape = (tt_ranks[i], inp_sizes[i], out_sizes[i], tt_ranks[i + 1])
        size = int(np.prod(shape))
        core = cores[offset:offset + size].reshape(shape).transpose((1, 3, 0, 2))
        result[result.shape[0] - offset - size:result.shape[0] - offset] = core.flatten()
        offset += size
    return result
