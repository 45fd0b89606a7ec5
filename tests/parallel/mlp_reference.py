"""The numpy reference the data-parallel and install tests compare training
with: whole-batch plain SGD of the small MLP (fc1, relu, fc2, softmax loss),
forward and backward written out by hand in float64. numpy only, so a test
that must not import doppio from the source tree (tests/install) can use it."""
import numpy as np


def numpy_sgd(params, batches, lr):
    """`params`: fc1_w, fc1_b, fc2_w, fc2_b; `batches`: (x, labels) pairs.
    Returns the parameters after one SGD step per batch."""
    params = {k: np.array(v, np.float64) for k, v in params.items()}
    for x, y in batches:
        pre = x @ params['fc1_w'].T + params['fc1_b']
        hidden = np.maximum(pre, 0)
        logits = hidden @ params['fc2_w'].T + params['fc2_b']
        shifted = logits - logits.max(axis=1, keepdims=True)
        prob = np.exp(shifted) / np.exp(shifted).sum(axis=1, keepdims=True)
        dlogits = prob.copy()
        dlogits[np.arange(len(y)), y] -= 1
        dlogits /= len(y)
        grads = {'fc2_w': dlogits.T @ hidden, 'fc2_b': dlogits.sum(axis=0)}
        dhidden = (dlogits @ params['fc2_w']) * (pre > 0)
        grads['fc1_w'] = dhidden.T @ x
        grads['fc1_b'] = dhidden.sum(axis=0)
        for k in params:
            params[k] = params[k] - lr * grads[k]
    return params
