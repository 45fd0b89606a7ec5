#!/usr/bin/python3
"""Draws the benchmarks' ours / PyTorch ratios as one chart for the README:

    tools/python tools/bench/chart.py [--results tools/bench/results]
        [--out tools/bench/results/ratios.png]

It reads the JSON files the benches write into tools/bench/results (any that
are missing are left out, with a note) and draws one horizontal bar per
benchmark row: how many times faster (or, for memory, smaller) Doppio is
than PyTorch in that row's own run, on a log scale, with 1x marked and each
target the issues set drawn as a dashed line across its group's bars. Bars
that meet their target are green, those that miss it red, rows without a
target grey. Only matplotlib (Agg) and the JSON files are needed.
"""
import argparse
import collections
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_RESULTS = os.path.join(HERE, 'results')

# One bar: its label, ours / PyTorch (> 1: Doppio better), and the target
# ratio of its group (None: no target).
Bar = collections.namedtuple('Bar', ['label', 'ratio', 'target'])
Group = collections.namedtuple('Group', ['title', 'bars'])


def load(results_dir, name, notes):
    path = os.path.join(results_dir, name)
    if not os.path.exists(path):
        notes.append('{} missing: left out'.format(name))
        return None
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        notes.append('{} unreadable ({}): left out'.format(name, e))
        return None


def row_label(name):
    """'doppio 2 device(s) x 1 thread(s)' -> '2 devices x 1 thread'."""
    words = name[len('doppio '):].split(' ')
    for i, word in enumerate(words):
        if word.endswith('(s)'):
            singular = i > 0 and words[i - 1] == '1'
            words[i] = word[:-3] if singular else word[:-3] + 's'
    return ' '.join(words)


def fmnist_groups(data):
    """Every Doppio training row against its model's best PyTorch rate, and
    the CNN's 2-process rows against DDP."""
    rows = data.get('rows', [])
    groups = []
    for model in ('cnn', 'mlp'):
        # Results from before the MLP rows have no 'model': the CNN's.
        mine = [r for r in rows if r.get('model', 'cnn') == model]
        torch_rates = [r['img_per_s'] for r in mine if r['name'].startswith('pytorch')]
        if not torch_rates:
            continue
        best = max(torch_rates)
        best_name = next(r['name'] for r in mine if r['name'].startswith('pytorch') and
                         r['img_per_s'] == best)
        bars = [Bar(row_label(r['name']), r['img_per_s'] / best, 1.5)
                for r in mine if r['name'].startswith('doppio')]
        if bars:
            groups.append(Group("{} training, images/s vs PyTorch's best ({}; target 1.5x)"
                                .format(model.upper(), best_name.replace('pytorch ', '')),
                                bars))
    ddp = next((r['img_per_s'] for r in rows if r['name'] == 'pytorch DDP 2x1'), None)
    if ddp:
        bars = [Bar(row_label(r['name']), r['img_per_s'] / ddp, 1.3) for r in rows
                if r['name'].startswith('doppio') and r.get('processes', 1) > 1]
        if bars:
            groups.append(Group('CNN training, 2 processes vs PyTorch DDP (target 1.3x)', bars))
    return groups


def inference_groups(data):
    """Per batch, run_net's best configuration against PyTorch eager."""
    bars = []
    for batch in sorted({r['batch'] for r in data.get('rows', [])}):
        ours = [r for r in data['rows'] if r['batch'] == batch and r['who'] != 'pytorch']
        if ours:
            best = max(ours, key=lambda r: r['ratio_vs_torch'])
            bars.append(Bar('batch {}, run_net {}'.format(batch, best['config']),
                            best['ratio_vs_torch'], 2.0))
    return [Group('CNN inference vs PyTorch eager (target 2x)', bars)] if bars else []


def op_bench_groups(data):
    bars = [Bar('{} {}'.format(r['shape'], r['pass']), r['ratio_torch_over_doppio'], None)
            for r in data.get('rows', [])]
    return [Group('Operators, time vs PyTorch', bars)] if bars else []


def net_overhead_groups(data):
    torch_us = data.get('torch_us_per_op')
    per_op = data.get('us_per_op', {})
    bars = [Bar('{} executor, 10,000 tiny Adds'.format(key.split()[0]), torch_us / per_op[key],
                None) for key in ('simple Add', 'dag Add') if torch_us and key in per_op]
    return [Group('Executor overhead per op vs PyTorch eager', bars)] if bars else []


def gloo_groups(data):
    best = data.get('best', {})
    bars = [Bar('Allreduce {}'.format(alg), values['ratio_median'],
                1.0 if alg == 'halving_doubling' else None)
            for alg, values in best.items() if 'ratio_median' in values]
    return [Group('Gloo allreduce 25 MiB, 2 processes, time vs PyTorch (default '
                  'algorithm target 1x)', bars)] if bars else []


def memory_groups(data):
    rows = data.get('rows', [])
    torch = next((r for r in rows if r.get('name') == 'pytorch'), None)
    if not torch or not torch.get('rss_peak_delta'):
        return []
    bars = [Bar(r['name'], torch['rss_peak_delta'] / r['rss_peak_delta'], 1.0)
            for r in rows if r.get('name', '').startswith('doppio') and r.get('rss_peak_delta')]
    return [Group('Training memory, peak RSS vs PyTorch (smaller is better; target 1x)',
                  bars)] if bars else []


GPU_TITLE = 'GPU training (run on a lent H100/H200), images/s vs PyTorch'


def gpu_groups(data):
    ratios = data.get('ratio_doppio_over_pytorch_by_gpus', {})
    bars = [Bar('{} GPU(s), batch {}'.format(gpus, data.get('batch')), ratio, None)
            for gpus, ratio in sorted(ratios.items())]
    return [Group(GPU_TITLE, bars)] if bars else []


SOURCES = [
    ('fmnist_bench.json', fmnist_groups),
    ('inference_bench.json', inference_groups),
    ('op_bench.json', op_bench_groups),
    ('net_overhead.json', net_overhead_groups),
    ('gloo_allreduce_bench.json', gloo_groups),
    ('memory_bench.json', memory_groups),
    ('gpu_train_bench.json', gpu_groups),
    ('gpu_train_bench_batch512.json', gpu_groups),
]


def collect(results_dir):
    """(groups, notes): every group of bars the results hold."""
    groups, notes = [], []
    for name, extract in SOURCES:
        data = load(results_dir, name, notes)
        if data is None:
            continue
        try:
            found = extract(data)
        except (KeyError, TypeError, ValueError, ZeroDivisionError) as e:
            notes.append('{}: unexpected layout ({!r}): left out'.format(name, e))
            continue
        if not found:
            notes.append('{}: no rows with a PyTorch comparison'.format(name))
        for group in found:
            # Groups of one title from several files (the GPU batches) merge.
            same = next((g for g in groups if g.title == group.title), None)
            if same is None:
                groups.append(group)
            else:
                same.bars.extend(group.bars)
    return groups, notes


def bar_color(bar):
    if bar.target is None:
        return '0.6'
    return '#2ca02c' if bar.ratio >= bar.target else '#d62728'


def draw(groups, out, title):
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    count = sum(len(g.bars) for g in groups) + len(groups)
    fig, ax = plt.subplots(figsize=(11, 0.28 * count + 1.6))
    y = 0
    ticks, labels = [], []
    target_drawn = False
    for group in groups:
        # A heading row above each group's bars.
        ax.text(1.0, y, group.title, ha='center', va='center', fontsize=9, fontweight='bold')
        y += 1
        first = y
        for bar in group.bars:
            ax.barh(y, bar.ratio, left=0, color=bar_color(bar), height=0.7)
            ax.text(bar.ratio * 1.03, y, '{:.2f}x'.format(bar.ratio), va='center', fontsize=7)
            ticks.append(y)
            labels.append(bar.label)
            y += 1
        for target in sorted({b.target for b in group.bars if b.target is not None}):
            ax.plot([target, target], [first - 0.5, y - 0.5], linestyle='--', color='k',
                    linewidth=1.2, label=None if target_drawn else 'target')
            target_drawn = True
    ax.axvline(1.0, color='0.3', linewidth=0.8, label='parity (1x)')
    ax.set_xscale('log')
    ratios = [b.ratio for g in groups for b in g.bars]
    low, high = min(0.3, min(ratios) * 0.8), max(ratios) * 1.6
    ax.set_xlim(low, high)
    ticks_x = [t for t in (0.25, 0.5, 1, 1.5, 2, 3, 5, 10, 20, 50, 100) if low <= t <= high]
    ax.set_xticks(ticks_x)
    ax.set_xticklabels(['{:g}x'.format(t) for t in ticks_x])
    ax.minorticks_off()
    ax.set_yticks(ticks)
    ax.set_yticklabels(labels, fontsize=7)
    ax.set_ylim(y - 0.5, -0.8)
    ax.set_xlabel('Doppio / PyTorch (times faster; memory: times smaller), log scale')
    ax.set_title(title, fontsize=10)
    ax.legend(loc='lower right', fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--results', default=DEFAULT_RESULTS,
                        help='folder of the benches\' JSON files')
    parser.add_argument('--out', default=None,
                        help='PNG to write (default: RESULTS/ratios.png)')
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if not os.path.isdir(args.results):
        raise SystemExit('chart: no results folder {}'.format(args.results))
    out = args.out or os.path.join(args.results, 'ratios.png')
    groups, notes = collect(args.results)
    for note in notes:
        print('chart: ' + note, file=sys.stderr)
    if not groups:
        raise SystemExit('chart: no benchmark results with a PyTorch comparison in {}'
                         .format(args.results))
    fmnist = load(args.results, 'fmnist_bench.json', []) or {}
    cores = (fmnist.get('machine') or {}).get('cores')
    title = 'Doppio vs PyTorch, each ratio from one run of its bench{}'.format(
        ' ({} CPU cores; GPU rows on a GPU machine)'.format(cores) if cores else '')
    draw(groups, out, title)
    for group in groups:
        print(group.title)
        for bar in group.bars:
            print('  {:<60} {:6.2f}x{}'.format(bar.label, bar.ratio, '' if bar.target is None
                                               else '  (target {}x)'.format(bar.target)))
    print('chart: {}'.format(out))
    return groups


if __name__ == '__main__':
    main()
