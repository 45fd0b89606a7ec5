"""Every example in README.md and docs/*.md runs: the blocks marked
`<!-- test: GROUP -->` are run group by group (tests/docs/doc_examples.py
has the convention), blocks marked `copy-of=PATH` equal their files,
each group must succeed, and every block with a language must be marked
runnable or say why not. The tutorial's served model is then checked
against numpy applied to the weights in the exported init net, so a
tutorial that runs but serves the wrong thing fails too."""
import os
import py_compile
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import doc_examples as examples  # noqa: E402

from doppio.proto import doppio_pb2  # noqa: E402

# Groups the README must keep: the tutorial and one per system of
# "Coming from ...". Dropping a marker by mistake must not drop its test.
EXPECTED_GROUPS = {'tutorial', 'torch-dataparallel', 'torch-ddp', 'caffe2'}
GROUP_TIMEOUT_S = 240


def repository_root():
    for root in (os.environ.get('TEST_SRCDIR'), os.environ.get('RUNFILES_DIR')):
        if root and os.path.exists(os.path.join(root, 'doppio', 'README.md')):
            return os.path.join(root, 'doppio')
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.dirname(os.path.dirname(here))


ROOT = repository_root()
DOCS, UNLINKED = examples.documents(ROOT)
BLOCKS = examples.read_blocks(ROOT, DOCS)
FILES, GROUPS = examples.files_and_groups(BLOCKS)


@pytest.fixture(scope='module')
def tool_paths():
    return examples.default_tool_paths()


@pytest.fixture(scope='module')
def group_runs(tmp_path_factory, tool_paths):
    """Runs each group once, on first use: group -> (status, output, folder)."""
    runs = {}

    def run(group):
        if group not in runs:
            folder = str(tmp_path_factory.mktemp('readme_' + group.replace('-', '_')))
            status, output = examples.run_group(group, GROUPS[group], FILES, tool_paths,
                                                folder, timeout=GROUP_TIMEOUT_S)
            runs[group] = (status, output, folder)
        return runs[group]
    return run


def test_every_block_with_a_language_is_marked():
    assert examples.marker_problems(BLOCKS) == []


def test_every_docs_page_is_linked_from_the_readme():
    assert UNLINKED == []
    assert len(DOCS) > 10 and DOCS[0] == 'README.md'


def test_shown_source_files_are_the_built_ones():
    copies = [b for b in BLOCKS if b.marker_value
              and b.marker_value.startswith('copy-of=')]
    assert any(b.marker_value.endswith('data_parallel_mlp.cc') for b in copies)
    assert examples.copy_problems(BLOCKS, ROOT) == []


def test_a_copy_that_drifted_from_its_file_is_reported(tmp_path):
    (tmp_path / 'prog.cc').write_text('int main() { return 0; }\n')
    text = '\n'.join([
        '<!-- test: copy-of=prog.cc -->', '```cpp', 'int main() { return 0; }', '```',
        '<!-- test: copy-of=prog.cc -->', '```cpp', 'int main() { return 1; }', '```',
        '<!-- test: copy-of=missing.cc -->', '```cpp', 'x', '```',
    ])
    problems = examples.copy_problems(examples.parse_blocks(text, 'docs/x.md'), str(tmp_path))
    assert problems == [
        'docs/x.md:7: the block differs from prog.cc; paste the file again',
        'docs/x.md:11: copy-of names missing.cc, which does not exist']


def test_the_documents_keep_their_example_groups():
    assert EXPECTED_GROUPS <= set(GROUPS)
    assert {'fashion_mnist.py', 'train_ddp.py'} <= set(FILES)
    # The Lua side of "Coming from ..." is shown, not run, and says why.
    lua = [b for b in BLOCKS if b.language == 'lua']
    assert lua and all(b.marker_kind == 'no-test' for b in lua)


@pytest.mark.parametrize('group', sorted(GROUPS))
def test_group_runs(group_runs, group):
    status, output, _ = group_runs(group)
    assert status == 0, 'README group {!r} failed:\n{}'.format(group, output)


def test_python_files_compile(tmp_path):
    for name, block in FILES.items():
        if name.endswith('.py'):
            path = tmp_path / name
            path.write_text(block.code)
            py_compile.compile(str(path), doraise=True)


def numpy_mlp(init_net, images):
    """The tutorial's MLP from the exported weights, in numpy: pixels / 255,
    FC 784-256 + Relu, FC 256-128 + Relu, FC 128-10, softmax."""
    weights = {}
    for op in init_net.op:
        if op.type == 'GivenTensorFill':
            args = {a.name: a for a in op.arg}
            weights[op.output[0]] = np.array(args['values'].floats, np.float32).reshape(
                list(args['shape'].ints))
    x = images.reshape(len(images), -1).astype(np.float32) / 255
    for layer in ('fc1', 'fc2', 'pred'):
        x = x @ weights['cpu_0/{}_w'.format(layer)].T + weights['cpu_0/{}_b'.format(layer)]
        if layer != 'pred':
            x = np.maximum(x, 0)
    x = np.exp(x - x.max(axis=1, keepdims=True))
    return x / x.sum(axis=1, keepdims=True)


def test_tutorial_serves_the_trained_mlp(group_runs):
    status, output, folder = group_runs('tutorial')
    assert status == 0, output
    tutorial = os.path.join(folder, 'tutorial')
    init_net = doppio_pb2.NetDef()
    with open(os.path.join(tutorial, 'init_net.pb'), 'rb') as f:
        init_net.ParseFromString(f.read())
    images = np.load(os.path.join(tutorial, 'images.npy'))
    labels = np.load(os.path.join(tutorial, 'labels.npy'))
    probs = np.load(os.path.join(tutorial, 'probs.npy'))
    assert images.shape == (500, 1, 28, 28) and images.dtype == np.uint8
    np.testing.assert_allclose(probs, numpy_mlp(init_net, images), rtol=1e-4, atol=1e-6)
    # 40 steps of SGD: far above chance (0.1), though far from trained.
    assert np.mean(probs.argmax(axis=1) == labels) > 0.5
    for name in ('checkpoint.minidb', 'trace.json', 'drawn_tutorial_predict.dot', 'mlp.onnx'):
        assert os.path.exists(os.path.join(tutorial, name)), name


# ---- the checker and the runner themselves can fail ----

def test_unmarked_and_badly_marked_blocks_are_reported():
    text = '\n'.join([
        '```python', 'print(1)', '```',                                  # unmarked
        '<!-- test: ok-group -->', '', '```python', 'x = 1', '```',        # fine
        '<!-- test: ok-group -->', 'some prose', '```sh', 'true', '```',   # marker not last
        '<!-- no-test: -->', '```python', 'y', '```',                     # no reason
        '<!-- test: lua-group -->', '```lua', 'print(1)', '```',          # not runnable
        '<!-- test: bad group! -->', '```sh', 'true', '```',              # bad name
        '<!-- no-test: needs a GPU and Lua -->', '```lua', 'x = 1', '```',  # fine
        '```', 'plain output', '```',                                     # fine: no language
    ])
    problems = examples.marker_problems(examples.parse_blocks(text))
    lines = sorted(int(p.split(':')[1].split()[0]) for p in problems)
    assert lines == [2, 12, 16, 20, 24], problems


def test_an_unclosed_block_is_an_error():
    with pytest.raises(ValueError, match='never closes'):
        examples.parse_blocks('<!-- test: g -->\n```python\nprint(1)\n')


def test_a_failing_step_fails_its_group_and_names_its_line(tmp_path, tool_paths):
    text = '\n'.join([
        '<!-- test: g -->', '```python', 'value = 41', '```',
        '<!-- test: g -->', '```sh', 'test -f notes.txt', '```',
        '<!-- test: g -->', '```python', 'assert value == 42, "wrong value"', '```',
    ])
    _, groups = examples.files_and_groups(examples.parse_blocks(text))
    files = {'notes.txt': examples.Block('README.md', 1, 'text', 'x\n', 'test',
                                         'file=notes.txt')}
    status, output = examples.run_group('g', groups['g'], files, tool_paths,
                                        str(tmp_path / 'g'), timeout=60)
    assert status != 0
    assert 'File "README.md", line 11' in output and 'wrong value' in output

    files, groups = examples.files_and_groups(examples.parse_blocks(
        '<!-- test: g -->\n```sh\nfalse\necho not reached\n```\n'))
    status, output = examples.run_group('g', groups['g'], files, tool_paths,
                                        str(tmp_path / 'sh'), timeout=60)
    assert status != 0
    assert 'README.md:3: the sh block exited with status 1' in output
    assert 'not reached' not in output


def test_a_step_that_hangs_is_stopped_with_its_children(tmp_path, tool_paths):
    _, groups = examples.files_and_groups(examples.parse_blocks(
        '<!-- test: g -->\n```sh\nsleep 600 &\nsleep 600\n```\n'))
    status, output = examples.run_group('g', groups['g'], {}, tool_paths,
                                        str(tmp_path / 'hang'), timeout=2)
    assert status == -1
    assert "group 'g' ran past 2 s" in output


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q', '-p', 'no:cacheprovider']))
