"""doppio.auto_split: the candidate splits for a core count and the
selection, driven by fake rates and a fake clock (no model runs)."""
import sys

import pytest

from doppio import auto_split
from doppio.auto_split import Split


def test_candidates_use_every_core_once():
    assert auto_split.candidate_splits(2) == [Split(2, 1, 1), Split(1, 1, 2), Split(1, 2, 1)]
    assert auto_split.candidate_splits(1) == [Split(1, 1, 1)]
    four = auto_split.candidate_splits(4, batch_size=64)
    assert four == [Split(4, 1, 1), Split(2, 1, 2), Split(1, 1, 4), Split(1, 4, 1)]
    for split in four:
        assert split.devices * split.workers_per_device * split.intra_op_threads == 4


def test_candidates_skip_devices_that_do_not_divide_the_batch():
    # 3 devices cannot share a batch of 64 equally.
    assert auto_split.candidate_splits(3, batch_size=64) == [Split(1, 1, 3), Split(1, 3, 1)]
    with pytest.raises(ValueError, match='cores'):
        auto_split.candidate_splits(0)


def test_split_names():
    assert auto_split.split_name(Split(2, 1, 1)) == '2 devices x 1 thread'
    assert auto_split.split_name(Split(1, 1, 2)) == '1 device x 2 threads'
    assert auto_split.split_name(Split(1, 2, 1)) == '1 device x 2 threads (2 workers)'


def test_picks_the_fastest_by_its_best_round():
    splits = auto_split.candidate_splits(2)
    # Round 1: the 2-device run hit a load burst; round 2 shows its real rate.
    rates = {Split(2, 1, 1): [900.0, 3600.0], Split(1, 1, 2): [1900.0, 1800.0],
             Split(1, 2, 1): [2000.0, 2100.0]}
    calls = []

    def measure(split):
        calls.append(split)
        return rates[split][sum(1 for c in calls if c == split) - 1]

    best, measured = auto_split.pick_split(splits, measure, rounds=2)
    assert best == Split(2, 1, 1)
    # Alternating rounds: every split once, then every split again.
    assert calls == splits + splits
    assert dict(measured) == rates
    line = auto_split.describe(best, measured)
    assert line.startswith('auto split: picked 2 devices x 1 thread (3,600 images/s)')
    assert '1 device x 2 threads 1,900' in line
    assert '1 device x 2 threads (2 workers) 2,100' in line


def test_intra_op_threads_win_when_they_are_faster():
    fixed = {Split(2, 1, 1): 10000.0, Split(1, 1, 2): 30000.0, Split(1, 2, 1): 12000.0}
    best, _ = auto_split.pick_split(auto_split.candidate_splits(2), fixed.get, rounds=3)
    assert best == Split(1, 1, 2)


def test_a_tie_goes_to_the_first_candidate():
    splits = auto_split.candidate_splits(2)
    best, _ = auto_split.pick_split(splits, lambda split: 5.0)
    assert best == splits[0]


def test_bad_measurements_and_arguments_are_errors():
    splits = auto_split.candidate_splits(2)
    with pytest.raises(ValueError, match='rate of 0'):
        auto_split.pick_split(splits, lambda split: 0.0)
    with pytest.raises(ValueError, match='no candidate'):
        auto_split.pick_split([], lambda split: 1.0)
    with pytest.raises(ValueError, match='rounds'):
        auto_split.pick_split(splits, lambda split: 1.0, rounds=0)

    def broken(split):
        raise RuntimeError('op FC failed')

    with pytest.raises(RuntimeError, match='op FC failed'):
        auto_split.pick_split(splits, broken)


class FakeClock:
    """Each step advances time by a fixed amount; reading it costs nothing."""

    def __init__(self, step_seconds):
        self.now = 100.0
        self.step_seconds = step_seconds

    def __call__(self):
        return self.now

    def step(self):
        self.now += self.step_seconds


def test_time_steps_runs_warmup_untimed_then_enough_steps():
    clock = FakeClock(0.01)
    steps, seconds = auto_split.time_steps(clock.step, steps=5, warmup=3, clock=clock)
    assert steps == 5
    assert seconds == pytest.approx(0.05)
    assert clock.now == pytest.approx(100.08)  # 3 warm-up + 5 timed steps
    # Fast steps: keeps going until min_seconds have passed.
    clock = FakeClock(0.001)
    steps, seconds = auto_split.time_steps(clock.step, steps=5, min_seconds=0.02, clock=clock)
    assert steps == 20 and seconds == pytest.approx(0.02)
    with pytest.raises(ValueError, match='steps'):
        auto_split.time_steps(clock.step, steps=0)


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q', '-p', 'no:cacheprovider']))
