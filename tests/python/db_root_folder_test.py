"""workspace.ResetWorkspace(root_folder): as in Caffe2, the db ops of the
fresh workspace resolve relative paths against the root folder; here they
also refuse paths that leave it unless absolute_path=1 (operators/db_path.h).
Checkpoints Save writes carry a CRC-32C that Load verifies."""
import os
import sys

import numpy as np
import pytest

from doppio import core, workspace


@pytest.fixture
def root(tmp_path):
    folder = tmp_path / "root"
    folder.mkdir()
    (tmp_path / "outside").mkdir()
    workspace.ResetWorkspace(str(folder))
    yield folder
    workspace.ResetWorkspace()


def save(db, **kwargs):
    workspace.RunOperatorOnce(core.CreateOperator(
        "Save", ["x"], [], db=db, db_type="minidb", **kwargs))


def load(db, **kwargs):
    workspace.RunOperatorOnce(core.CreateOperator(
        "Load", [], ["x"], db=db, db_type="minidb", **kwargs))


def test_relative_paths_land_in_the_root_folder(root):
    assert workspace.RootFolder() == str(root)
    values = np.arange(6, dtype=np.float32).reshape(2, 3)
    workspace.FeedBlob("x", values)
    save("ckpt.minidb")
    assert (root / "ckpt.minidb").is_file()
    workspace.FeedBlob("x", np.zeros(1, np.float32))
    load("ckpt.minidb")
    np.testing.assert_array_equal(workspace.FetchBlob("x"), values)


def test_paths_leaving_the_root_folder_are_refused(root, tmp_path):
    workspace.FeedBlob("x", np.ones(3, np.float32))
    os.symlink(str(tmp_path / "outside"), str(root / "link"))
    for path in ["../outside/ckpt", str(tmp_path / "outside" / "ckpt"), "link/ckpt"]:
        with pytest.raises(RuntimeError) as raised:
            save(path)
        message = str(raised.value)
        assert "Save: db path '{}' leaves the root folder '{}'".format(path, root) in message
        assert "absolute_path=1" in message
    assert os.listdir(str(tmp_path / "outside")) == []
    save(str(tmp_path / "outside" / "ckpt"), absolute_path=1)
    assert (tmp_path / "outside" / "ckpt").is_file()


def test_default_root_is_the_current_directory():
    workspace.ResetWorkspace()
    assert workspace.RootFolder() == "."


def test_a_damaged_checkpoint_is_an_error_and_changes_nothing(root):
    values = np.linspace(-1, 1, 50).astype(np.float32)
    workspace.FeedBlob("x", values)
    save("ckpt.minidb")
    path = root / "ckpt.minidb"
    data = bytearray(path.read_bytes())
    at = data.find(values[20].tobytes())
    assert at > 0
    data[at] ^= 0x01
    path.write_bytes(bytes(data))
    workspace.FeedBlob("x", np.full(2, 7, np.float32))
    with pytest.raises(RuntimeError, match="checksum does not match"):
        load("ckpt.minidb")
    np.testing.assert_array_equal(workspace.FetchBlob("x"), np.full(2, 7, np.float32))


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
