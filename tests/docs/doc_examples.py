"""The code blocks of README.md and docs/*.md, and how to run the ones
marked runnable.

The convention (docs/examples_are_tests.md says it too): the last non-blank
line before a fenced block with a language is one of

    <!-- test: GROUP -->          run it as the next step of GROUP
    <!-- test: file=NAME -->      save it as NAME beside every group's steps
    <!-- test: copy-of=PATH -->   the block is the repository file PATH,
                                  byte for byte (so a page can show a real,
                                  built source file)
    <!-- no-test: REASON -->      show it only; REASON says why it cannot run

The documents are README.md and then the docs/ pages in the order README
links them; every docs/*.md must be linked. A group's steps run in that
order (a group may continue from one page to the next, as the tutorial
does) in one fresh folder: its Python blocks
in one interpreter (so later blocks see earlier ones' names, as in a
notebook), its sh/bash blocks with `bash -e -o pipefail`. The folder looks
like the repository root to the commands: bazel-bin/tools/{run_net,make_db}
and bazel-bin/tools/examples/cpp/data_parallel_mlp (the C++ example that
docs/coming_from.md shows) are the built binaries,
tools/inspect_net is the script, and tools/python is Debian's python3 with
the doppio package importable. Blocks without a language (output, diagrams)
need no marker.

Run by hand:  tools/python tests/docs/doc_examples.py [--list] [GROUP...]
"""
import collections
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile

RUNNABLE_LANGUAGES = ('python', 'sh', 'bash')
# Built programs the README's shell steps run, by their paths under bazel-bin.
TOOLS = ('tools/run_net', 'tools/make_db', 'tools/examples/cpp/data_parallel_mlp')
# Scripts the README runs from the source tree, linked at the same paths.
SCRIPTS = ('tools/inspect_net', 'tools/inspect_net.py')
MARKER = re.compile(r'^<!--\s*(test|no-test)\s*:\s*(.*?)\s*-->$')
FILE_SPEC = re.compile(r'^file=([\w.-]+)$')
COPY_SPEC = re.compile(r'^copy-of=([\w./-]+)$')
# docs/ pages in README's links, in order of appearance.
DOC_LINK = re.compile(r'\]\((docs/[\w.-]+\.md)(?:#[^)]*)?\)')
GROUP_SPEC = re.compile(r'^[\w-]+$')

Block = collections.namedtuple('Block', 'doc line language code marker_kind marker_value')


def parse_blocks(text, doc='README.md'):
    """Every fenced block of document `doc`: its first code line (1-based),
    language (the info string's first word, '' if none), code, and the
    marker before it (kind None when there is none)."""
    lines = text.split('\n')
    blocks = []
    i = 0
    while i < len(lines):
        stripped = lines[i].strip()
        if not stripped.startswith('```'):
            i += 1
            continue
        fence_line = i
        info = stripped[3:].strip()
        language = info.split()[0] if info else ''
        i += 1
        code = []
        while i < len(lines) and lines[i].strip() != '```':
            code.append(lines[i])
            i += 1
        if i == len(lines):
            raise ValueError('{}:{}: the fenced block never closes'.format(
                doc, fence_line + 1))
        i += 1
        kind, value = None, None
        before = fence_line - 1
        while before >= 0 and not lines[before].strip():
            before -= 1
        if before >= 0:
            match = MARKER.match(lines[before].strip())
            if match:
                kind, value = match.group(1), match.group(2)
        blocks.append(Block(doc, fence_line + 2, language, '\n'.join(code) + '\n', kind,
                            value))
    return blocks


def marker_problems(blocks):
    """What is wrong with the markers, one line per block: a block with a
    language and no marker, a no-test without a reason, a test marker that
    is neither a file, a copy nor a group of Python/shell steps."""
    problems = []
    for block in blocks:
        where = '{}:{} ({} block)'.format(block.doc, block.line, block.language or 'plain')
        if block.marker_kind is None:
            if block.language:
                problems.append(where + ': no <!-- test: ... --> or <!-- no-test: reason --> '
                                'marker on the line before it')
        elif block.marker_kind == 'no-test':
            if len(block.marker_value) < 10:
                problems.append(where + ': no-test needs a reason, got {!r}'.format(
                    block.marker_value))
        elif FILE_SPEC.match(block.marker_value) or COPY_SPEC.match(block.marker_value):
            pass
        elif not GROUP_SPEC.match(block.marker_value):
            problems.append(where + ': test marker {!r} is neither file=NAME, copy-of=PATH '
                            'nor a group name ([A-Za-z0-9_-])'.format(block.marker_value))
        elif block.language not in RUNNABLE_LANGUAGES:
            problems.append(where + ': only {} blocks can be group steps'.format(
                '/'.join(RUNNABLE_LANGUAGES)))
    return problems


def copy_problems(blocks, root):
    """One line per copy-of block that differs from its file under `root`."""
    problems = []
    for block in blocks:
        match = COPY_SPEC.match(block.marker_value or '') if block.marker_kind == 'test' else None
        if not match:
            continue
        path = os.path.join(root, match.group(1))
        if not os.path.isfile(path):
            problems.append('{}:{}: copy-of names {}, which does not exist'.format(
                block.doc, block.line, match.group(1)))
            continue
        with open(path) as f:
            if f.read() != block.code:
                problems.append('{}:{}: the block differs from {}; paste the file again'.format(
                    block.doc, block.line, match.group(1)))
    return problems


def documents(root):
    """README.md, then the docs/ pages in the order README links them, and
    the docs/*.md pages README does not link (a problem, listed apart)."""
    with open(os.path.join(root, 'README.md')) as f:
        linked = []
        for page in DOC_LINK.findall(f.read()):
            if page not in linked:
                linked.append(page)
    pages = sorted('docs/' + name for name in os.listdir(os.path.join(root, 'docs'))
                   if name.endswith('.md'))
    return ['README.md'] + [p for p in linked if p in pages], \
        [p for p in pages if p not in linked]


def read_blocks(root, docs):
    """The blocks of every document in `docs`, in order."""
    blocks = []
    for doc in docs:
        with open(os.path.join(root, doc)) as f:
            blocks.extend(parse_blocks(f.read(), doc))
    return blocks


def files_and_groups(blocks):
    """({file name: block}, {group: [blocks in document order]})."""
    files, groups = {}, collections.OrderedDict()
    for block in blocks:
        if block.marker_kind != 'test':
            continue
        match = FILE_SPEC.match(block.marker_value)
        if match:
            if match.group(1) in files:
                raise ValueError('{}:{}: a second block saved as {}'.format(
                    block.doc, block.line, match.group(1)))
            files[match.group(1)] = block
        elif not COPY_SPEC.match(block.marker_value):
            groups.setdefault(block.marker_value, []).append(block)
    return files, groups


def prepare_folder(folder, files, tool_paths):
    """Writes the file blocks, the tools under their repository paths, and
    a `python3` that is Debian's (the first on PATH may be another one)."""
    os.makedirs(folder, exist_ok=True)
    for name, block in files.items():
        with open(os.path.join(folder, name), 'w') as f:
            f.write(block.code)
    for name, path in tool_paths.items():
        link = os.path.join(folder, name if name in SCRIPTS else os.path.join('bazel-bin', name))
        os.makedirs(os.path.dirname(link), exist_ok=True)
        os.symlink(path, link)
    os.makedirs(os.path.join(folder, 'tools'), exist_ok=True)
    os.makedirs(os.path.join(folder, '.bin'))
    wrapper = os.path.join(folder, 'tools', 'python')
    with open(wrapper, 'w') as f:
        f.write('#!/bin/sh\nexec /usr/bin/python3 "$@"\n')
    os.chmod(wrapper, os.stat(wrapper).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    os.symlink('/usr/bin/python3', os.path.join(folder, '.bin', 'python3'))


def group_environment(folder):
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join([folder] + [p for p in sys.path if p])
    env['PATH'] = os.path.join(folder, '.bin') + os.pathsep + env.get('PATH', '/usr/bin:/bin')
    # The examples are small; more threads than cores only slow them down.
    env.setdefault('OMP_NUM_THREADS', '1')
    return env


def run_group(group, steps, files, tool_paths, folder, timeout):
    """Runs one group's steps in `folder`; returns (exit status, output)."""
    prepare_folder(folder, files, tool_paths)
    spec = os.path.join(folder, '.steps.json')
    with open(spec, 'w') as f:
        json.dump([step._asdict() for step in steps], f)
    # A session of its own, so a step that hangs is stopped with everything
    # it started (DDP's worker processes hold the output pipe open too).
    child = subprocess.Popen([sys.executable, os.path.abspath(__file__), '--steps', spec],
                             cwd=folder, env=group_environment(folder),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             start_new_session=True)
    try:
        output, _ = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        output, _ = child.communicate()
        return -1, output.decode(errors='replace') + '\ngroup {!r} ran past {} s\n'.format(
            group, timeout)
    return child.returncode, output.decode(errors='replace')


def run_steps(spec_path):
    """In the group's own interpreter: every step in order; the first
    failure ends the group with its document and line."""
    with open(spec_path) as f:
        steps = [Block(**step) for step in json.load(f)]
    namespace = {'__name__': '__main__', '__builtins__': __builtins__}
    for step in steps:
        print('--- {}:{} ({})'.format(step.doc, step.line, step.language), flush=True)
        if step.language == 'python':
            # Padded so tracebacks give the document's line numbers.
            source = '\n' * (step.line - 1) + step.code
            exec(compile(source, step.doc, 'exec'), namespace)
            sys.stdout.flush()
            continue
        status = subprocess.call(['bash', '-e', '-o', 'pipefail', '-c', step.code])
        if status != 0:
            print('{}:{}: the {} block exited with status {}'.format(
                step.doc, step.line, step.language, status), flush=True)
            return 1
    return 0


def default_tool_paths():
    """The built tools and the scripts: from the test's runfiles under Bazel,
    else bazel-bin and the source tree."""
    candidates = []
    for root in (os.environ.get('TEST_SRCDIR'), os.environ.get('RUNFILES_DIR')):
        if root:
            candidates.append(os.path.join(root, 'doppio'))
    repo_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    candidates.append(os.path.join(repo_root, 'bazel-bin'))
    candidates.append(repo_root)
    paths = {}
    for name in TOOLS + SCRIPTS:
        usable = os.path.isfile if name.endswith('.py') else \
            (lambda path: os.path.isfile(path) and os.access(path, os.X_OK))
        found = [os.path.join(c, name) for c in candidates if usable(os.path.join(c, name))]
        if not found:
            raise RuntimeError('{} is not built (bazel build //{}:{})'.format(
                name, os.path.dirname(name), os.path.basename(name)))
        paths[name] = os.path.realpath(found[0])
    return paths


def main(argv):
    if argv[:1] == ['--steps']:
        return run_steps(argv[1])
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    docs, unlinked = documents(root)
    blocks = read_blocks(root, docs)
    problems = marker_problems(blocks) + copy_problems(blocks, root)
    problems += ['{}: not linked from README.md'.format(page) for page in unlinked]
    for problem in problems:
        print(problem)
    files, groups = files_and_groups(blocks)
    if argv[:1] == ['--list']:
        for group, steps in groups.items():
            print('{}: {}'.format(group, ', '.join(
                '{}:{}'.format(s.doc, s.line) for s in steps)))
        return 1 if problems else 0
    failed = bool(problems)
    for group in argv or list(groups):
        if group not in groups:
            print('no group {!r} in the documents'.format(group))
            return 2
        folder = tempfile.mkdtemp(prefix='docs_{}_'.format(group))
        status, output = run_group(group, groups[group], files, default_tool_paths(),
                                   folder, timeout=600)
        print(output)
        print('{}: {} ({})'.format(group, 'ok' if status == 0 else 'FAILED', folder))
        if status == 0:
            shutil.rmtree(folder)
        failed |= status != 0
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
