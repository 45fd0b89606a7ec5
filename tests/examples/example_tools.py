"""Where the examples' tests find the built tools (make_db, run_net): the
test's runfiles under Bazel, the workspace's bazel-bin under pytest."""
import os

from python_api.examples import fmnist_train


def tools_dir():
    runfiles = os.environ.get('TEST_SRCDIR')
    if runfiles:
        return os.path.join(runfiles, 'doppio', 'tools')
    return os.path.join(fmnist_train.REPO_ROOT, 'bazel-bin', 'tools')
