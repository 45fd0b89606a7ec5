"""caffe2.python.experiment_util.ModelTrainerLog: the CSV file it writes,
read back and recomputed from the values the test passed."""
import csv
import logging
import sys
import time

import pytest

from caffe2.python import experiment_util


class RecordingLogger(experiment_util.ExternalLogger):
    def __init__(self, fail=False):
        self.args = None
        self.rows = []
        self.fail = fail

    def set_runtime_args(self, runtime_args):
        self.args = runtime_args

    def log(self, log_dict):
        if self.fail:
            raise IOError('dashboard down')
        self.rows.append(dict(log_dict))


class Args(object):
    def __init__(self):
        self.batch_size = 32
        self.lr = 0.1

    def __str__(self):
        return 'Namespace(batch_size=32, lr=0.1)'


def test_csv_rows(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    external = RecordingLogger()
    log = experiment_util.ModelTrainerLog('exp', Args(), external_loggers=[external])
    assert log.experiment_id.startswith('exp_') and len(log.experiment_id) == len('exp_') + 15
    assert external.args['batch_size'] == 32 and external.args['experiment_id'] == \
        log.experiment_id and external.args['hostname']
    time.sleep(0.01)
    log.log(input_count=64, batch_count=2, additional_values={'loss': 1.5, 'accuracy': 0.25})
    time.sleep(0.01)
    log.log(input_count=160, batch_count=5, additional_values={'loss': 0.5, 'accuracy': 0.75})

    lines = (tmp_path / log.filename).read_text().splitlines()
    assert lines[0] == '# Namespace(batch_size=32, lr=0.1)'
    rows = list(csv.DictReader(lines[1:]))
    assert list(rows[0]) == ['time_spent', 'cumulative_time_spent', 'input_count',
                             'cumulative_input_count', 'cumulative_batch_count',
                             'inputs_per_sec', 'accuracy', 'loss']
    assert [int(r['input_count']) for r in rows] == [64, 96]
    assert [int(r['cumulative_input_count']) for r in rows] == [64, 160]
    assert [int(r['cumulative_batch_count']) for r in rows] == [2, 5]
    assert [float(r['loss']) for r in rows] == [1.5, 0.5]
    for row in rows:
        assert float(row['time_spent']) > 0
        assert float(row['inputs_per_sec']) == pytest.approx(
            int(row['input_count']) / float(row['time_spent']), rel=1e-6)
    assert float(rows[1]['cumulative_time_spent']) >= float(rows[0]['cumulative_time_spent'])
    assert [r['loss'] for r in external.rows] == [1.5, 0.5]


def test_a_failing_external_logger_does_not_stop_training(tmp_path, monkeypatch, caplog):
    monkeypatch.chdir(tmp_path)
    log = experiment_util.ModelTrainerLog('exp', {'a': 1},
                                          external_loggers=[RecordingLogger(fail=True)])
    with caplog.at_level(logging.WARNING):
        log.log(input_count=8, batch_count=1, additional_values={})
    assert 'dashboard down' in caplog.text
    assert len((tmp_path / log.filename).read_text().splitlines()) == 3


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q', '-p', 'no:cacheprovider']))
