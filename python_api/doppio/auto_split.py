"""Picks how a data-parallel CPU model uses the cores: several devices
(replicas) of one thread each, one device whose ops each use every core, or
one device with several dag workers running independent ops at once.

Which is faster depends on the model and the machine (on 2 cores the
reference CNN trains ~1.9x faster as 2 devices x 1 thread, while a model of
a few large GEMMs may prefer intra-op threads), so the choice is measured:
each candidate is built, run for a few warm-up steps, then timed, in
alternating rounds so a burst of load from other processes does not decide
alone; the best round of each counts.

    splits = auto_split.candidate_splits(cores=os.cpu_count(), batch_size=64)
    best, report = auto_split.pick_split(splits, measure=my_measure)
    print(auto_split.describe(best, report))

`measure(split)` returns images (or any work unit) per second for one
round; the caller builds its model for `split` (devices, workers per device,
intra-op threads) and times it, e.g. with `time_steps`. Everything here is
plain Python, so the selection can be tested with a fake clock.
"""
import collections
import time

Split = collections.namedtuple('Split', ['devices', 'workers_per_device', 'intra_op_threads'])


def split_name(split):
    """'2 devices x 1 thread', '1 device x 2 threads (2 workers)'."""
    threads = split.workers_per_device * split.intra_op_threads
    name = '{} device{} x {} thread{}'.format(
        split.devices, '' if split.devices == 1 else 's', threads, '' if threads == 1 else 's')
    if split.workers_per_device > 1:
        name += ' ({} workers)'.format(split.workers_per_device)
    return name


def candidate_splits(cores, batch_size=None):
    """The splits worth timing on `cores` cores, each using every core once:
    D devices x (cores / D) threads per op for every divisor D of the cores
    (D must also divide the batch, which the devices share), and one device
    with `cores` workers of one thread each. Most devices first."""
    if cores < 1:
        raise ValueError('auto split: cores must be positive, got {}'.format(cores))
    splits = []
    for devices in range(cores, 0, -1):
        if cores % devices:
            continue
        if batch_size is not None and batch_size % devices:
            continue
        splits.append(Split(devices, 1, cores // devices))
    if cores > 1:
        splits.append(Split(1, cores, 1))
    return splits


def time_steps(step, steps, warmup=0, min_seconds=0.0, clock=time.perf_counter):
    """Runs `step()` `warmup` times untimed, then at least `steps` times and
    until `min_seconds` have passed; returns (timed steps, seconds)."""
    if steps < 1:
        raise ValueError('auto split: steps must be positive, got {}'.format(steps))
    for _ in range(warmup):
        step()
    done = 0
    start = clock()
    while True:
        step()
        done += 1
        elapsed = clock() - start
        if done >= steps and elapsed >= min_seconds:
            return done, elapsed


def pick_split(splits, measure, rounds=2):
    """Measures every split `rounds` times, alternating, and returns
    (the split with the highest best-round rate, {split: [rate per round]}).
    A tie goes to the earlier split in `splits`. A split whose measurement
    raises stops the selection: a model that cannot run one way is not
    silently run another."""
    splits = list(splits)
    if not splits:
        raise ValueError('auto split: no candidate splits')
    if rounds < 1:
        raise ValueError('auto split: rounds must be positive, got {}'.format(rounds))
    rates = collections.OrderedDict((split, []) for split in splits)
    for _ in range(rounds):
        for split in splits:
            rate = float(measure(split))
            if not rate > 0:
                raise ValueError('auto split: {} measured a rate of {}; expected a positive '
                                 'number'.format(split_name(split), rate))
            rates[split].append(rate)
    best = max(splits, key=lambda split: (max(rates[split]), -splits.index(split)))
    return best, rates


def describe(best, rates, unit='images/s'):
    """One line: what was picked and every candidate's best rate."""
    others = ', '.join('{} {:,.0f}'.format(split_name(split), max(values))
                       for split, values in rates.items())
    return 'auto split: picked {} ({:,.0f} {}); measured {}'.format(
        split_name(best), max(rates[best]), unit, others)
