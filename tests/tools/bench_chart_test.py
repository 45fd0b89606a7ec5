"""tools/bench/chart.py on synthetic bench results: each row's ours / PyTorch
ratio (computed here from the raw rates), its target, missing and broken
files left out with a note, and a PNG written."""
import importlib.util
import json
import os
import sys
import tempfile

import pytest
from tool_paths import runfile


def load_chart():
    spec = importlib.util.spec_from_file_location('bench_chart', runfile('tools/bench/chart.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


chart = load_chart()


def fmnist_rows():
    def row(model, name, rate, processes=1):
        return dict(model=model, name=name, img_per_s=rate, processes=processes, test_acc=0.8,
                    load_before=1.0, load_after=1.0)
    return [row('cnn', 'doppio 2 device(s) x 1 thread(s)', 3000),
            row('cnn', 'doppio 2 processes x 1 device(s)', 2600, processes=2),
            row('cnn', 'pytorch 2 threads', 1500),
            row('cnn', 'pytorch DDP 2x1', 2000),
            row('mlp', 'doppio 1 device(s) x 2 thread(s)', 45000),
            row('mlp', 'pytorch 2 threads', 10000),
            row('mlp', 'pytorch 1 thread', 25000)]


@pytest.fixture
def results():
    with tempfile.TemporaryDirectory() as folder:
        with open(os.path.join(folder, 'fmnist_bench.json'), 'w') as f:
            json.dump(dict(machine=dict(cores=2), rows=fmnist_rows()), f)
        with open(os.path.join(folder, 'inference_bench.json'), 'w') as f:
            json.dump(dict(rows=[
                dict(batch=1, who='pytorch', config='eager, no_grad', ratio_vs_torch=1.0),
                dict(batch=1, who='doppio', config='as given', ratio_vs_torch=1.5),
                dict(batch=1, who='doppio', config='+ fusion', ratio_vs_torch=2.5)]), f)
        with open(os.path.join(folder, 'op_bench.json'), 'w') as f:
            f.write('{not json')
        yield folder


def bars_by_group(groups):
    return {g.title: [(b.label, round(b.ratio, 6), b.target) for b in g.bars] for g in groups}


def test_ratios_are_against_each_models_best_pytorch_run(results):
    groups, notes = chart.collect(results)
    found = bars_by_group(groups)
    cnn = next(t for t in found if t.startswith('CNN training, images/s'))
    # PyTorch's best CNN run is DDP (2,000 images/s).
    assert found[cnn] == [('2 devices x 1 thread', 1.5, 1.5),
                          ('2 processes x 1 device', 1.3, 1.5)]
    mlp = next(t for t in found if t.startswith('MLP training'))
    # ... and the MLP's its 1-thread run (25,000), not the 2-thread one.
    assert '1 thread' in mlp
    assert found[mlp] == [('1 device x 2 threads', 1.8, 1.5)]
    ddp = next(t for t in found if 'DDP' in t and t.startswith('CNN training, 2 processes'))
    assert found[ddp] == [('2 processes x 1 device', 1.3, 1.3)]
    inference = next(t for t in found if t.startswith('CNN inference'))
    assert found[inference] == [('batch 1, run_net + fusion', 2.5, 2.0)]
    assert any('op_bench.json unreadable' in note for note in notes)
    assert any('net_overhead.json missing' in note for note in notes)


def test_bar_colors_follow_the_targets():
    assert chart.bar_color(chart.Bar('a', 1.6, 1.5)) != chart.bar_color(chart.Bar('b', 1.4, 1.5))
    assert chart.bar_color(chart.Bar('c', 3.0, None)) == '0.6'


def test_writes_a_png(results):
    out = os.path.join(results, 'ratios.png')
    chart.main(['--results', results, '--out', out])
    with open(out, 'rb') as f:
        assert f.read(8) == b'\x89PNG\r\n\x1a\n'


def test_no_results_is_an_error():
    with tempfile.TemporaryDirectory() as folder:
        with pytest.raises(SystemExit, match='no benchmark results'):
            chart.main(['--results', folder])
        with pytest.raises(SystemExit, match='no results folder'):
            chart.main(['--results', os.path.join(folder, 'missing')])


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q', '-p', 'no:cacheprovider']))
