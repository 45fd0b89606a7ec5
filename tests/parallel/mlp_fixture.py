"""The small MLP the data-parallel Python tests train: its sizes, initial
parameters, batches and forward builder, plus the workspace reset every
test starts from. One definition, so the tests compare the same model."""
import numpy as np
import pytest

from doppio import brew, optimizer, workspace

D_IN, HIDDEN, D_OUT, BATCH, STEPS = 5, 7, 3, 8, 10
PARAMS = ['fc1_w', 'fc1_b', 'fc2_w', 'fc2_b']


@pytest.fixture(autouse=True)
def fresh_workspace():
    workspace.ResetWorkspace()
    optimizer.reset_optimizer_instance_count()
    yield
    workspace.ResetWorkspace()


def initial_params():
    rng = np.random.RandomState(3)
    return {
        'fc1_w': rng.randn(HIDDEN, D_IN).astype(np.float32) * 0.5,
        'fc1_b': rng.randn(HIDDEN).astype(np.float32) * 0.1,
        'fc2_w': rng.randn(D_OUT, HIDDEN).astype(np.float32) * 0.5,
        'fc2_b': rng.randn(D_OUT).astype(np.float32) * 0.1,
    }


def batches():
    rng = np.random.RandomState(7)
    return [(rng.randn(BATCH, D_IN).astype(np.float32),
             rng.randint(0, D_OUT, size=BATCH).astype(np.int32)) for _ in range(STEPS)]


def forward(model, loss_scale):
    hidden = brew.fc(model, 'data', 'fc1', D_IN, HIDDEN)
    hidden = brew.relu(model, hidden, 'relu1')
    logits = brew.fc(model, hidden, 'fc2', HIDDEN, D_OUT)
    _, loss = model.net.SoftmaxWithLoss([logits, 'label'], ['softmax', 'avg_loss'])
    return [model.net.Scale(loss, 'scaled_loss', scale=loss_scale)]
