"""Where the tool tests find the binaries and scripts they run: in the
test's runfiles under Bazel, else in the source tree or bazel-bin (a test run
by hand from a checkout)."""
import os

_SOURCE_ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')


def runfile(path):
    """The absolute path of `path` (relative to the repository root)."""
    candidates = [
        os.path.join(root, 'doppio', path)
        for root in (os.environ.get('TEST_SRCDIR'), os.environ.get('RUNFILES_DIR'))
        if root
    ]
    candidates += [os.path.join(_SOURCE_ROOT, path),
                   os.path.join(_SOURCE_ROOT, 'bazel-bin', path)]
    for candidate in candidates:
        if os.path.exists(candidate):
            return candidate
    raise RuntimeError('cannot find %s in the runfiles, the source tree or bazel-bin' % path)
