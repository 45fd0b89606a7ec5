"""Caffe2's experiment_util: a CSV log of a training run.

ModelTrainerLog(expname, args) writes `<expname>_<YYYYmmdd_HHMMSS>.log` in
the current directory: a first line `# <args>`, then on the first log() a
header row and on each log() a row of timing columns (time since the last
row, inputs per second, cumulative counts) followed by the caller's values in
key order. Each line also goes to the "experiment_logger" logger, and each
row to the optional external loggers.
"""
import abc
import collections
import datetime
import logging
import socket
import time


class ExternalLogger(abc.ABC):
    """Somewhere else rows go (a dashboard, a database)."""

    @abc.abstractmethod
    def set_runtime_args(self, runtime_args):
        """Receives the run's arguments (a dict) once."""

    @abc.abstractmethod
    def log(self, log_dict):
        """Receives each row as an ordered dict."""


class ModelTrainerLog(object):

    def __init__(self, expname, runtime_args, external_loggers=None):
        started = datetime.datetime.fromtimestamp(time.time())
        self.experiment_id = '{}_{}'.format(expname, started.strftime('%Y%m%d_%H%M%S'))
        self.filename = '{}.log'.format(self.experiment_id)
        self.logstr('# {}'.format(runtime_args))
        self.headers = None
        self.start_time = time.time()
        self.last_time = self.start_time
        self.last_input_count = 0
        self.external_loggers = list(external_loggers or [])
        if self.external_loggers:
            args = dict(runtime_args if isinstance(runtime_args, dict) else vars(runtime_args))
            args['experiment_id'] = self.experiment_id
            args['hostname'] = socket.gethostname()
            for logger in self.external_loggers:
                logger.set_runtime_args(args)

    def logstr(self, line):
        with open(self.filename, 'a') as log_file:
            log_file.write(line + '\n')
        logging.getLogger('experiment_logger').info(line)

    def log(self, input_count, batch_count, additional_values):
        now = time.time()
        elapsed = now - self.last_time
        inputs = input_count - self.last_input_count
        self.last_time = now
        self.last_input_count = input_count
        row = collections.OrderedDict()
        row['time_spent'] = elapsed
        row['cumulative_time_spent'] = now - self.start_time
        row['input_count'] = inputs
        row['cumulative_input_count'] = input_count
        row['cumulative_batch_count'] = batch_count
        row['inputs_per_sec'] = inputs / elapsed if elapsed > 0 else 0.0
        for key in sorted(additional_values):
            row[key] = additional_values[key]
        if self.headers is None:
            self.headers = list(row)
            self.logstr(','.join(self.headers))
        self.logstr(','.join(str(value) for value in row.values()))
        for logger in self.external_loggers:
            try:
                logger.log(row)
            except Exception as error:  # a dashboard outage must not stop training
                logging.getLogger('experiment_logger').warning(
                    'external logger %s failed: %s', type(logger).__name__, error)
