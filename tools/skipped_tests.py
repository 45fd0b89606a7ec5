#!/usr/bin/python3
"""Lists the test cases that were skipped, per Bazel test target, from the
test logs of the last `bazel test`:

    tools/skipped_tests.py BAZEL_TESTLOGS_DIR [TARGET_LABEL...]

Bazel reports a target as PASSED when every case in it passed or skipped, so
a case that cannot run here (no GPU, no second device) would otherwise look
like a pass. This reads what each runner printed -- pytest's summary line
and its -rs reasons, GoogleTest's [  SKIPPED ] lines, unittest's
"OK (skipped=N)" -- and prints one line per target with skips, then a total.
Only the named targets are read when labels are given (the ones a run
covered); otherwise every test.log under the directory.
"""
import collections
import os
import re
import sys

PYTEST_SUMMARY = re.compile(r"^=*\s*(?:\d+ \w+, )*?(\d+) skipped\b.* in [\d.]+s")
PYTEST_REASON = re.compile(r"^SKIPPED \[(\d+)\] [^:]+(?::\d+)?: (.*)$")
GTEST_TOTAL = re.compile(r"^\[  SKIPPED \] (\d+) tests?, listed below:")
GTEST_CASE = re.compile(r"^\[  SKIPPED \] (\S+)$")
GTEST_REASON = re.compile(r"^(?:.*\.cc:\d+: )?Skipped$")
UNITTEST = re.compile(r"^OK \((?:.*, )?skipped=(\d+)\)$")


def skips_in(log_text):
    """(number of skipped cases, {reason: cases}) for one test.log; a reason
    GoogleTest gives counts once per case it skipped."""
    count, reasons = 0, collections.Counter()
    lines = log_text.splitlines()
    for i, line in enumerate(lines):
        for pattern in (PYTEST_SUMMARY, GTEST_TOTAL, UNITTEST):
            match = pattern.match(line.strip())
            if match:
                count += int(match.group(1))
        reason = PYTEST_REASON.match(line.strip())
        if reason:
            reasons[reason.group(2)] += int(reason.group(1))
        # GoogleTest prints "file.cc:NN: Skipped" then the streamed message.
        if GTEST_REASON.match(line.strip()) and i + 1 < len(lines) and lines[i + 1].strip():
            reasons[lines[i + 1].strip()] += 1
    return count, reasons


def shorten(reason, width=90):
    return reason if len(reason) <= width else reason[:width - 3] + "..."


def label_to_log(testlogs, label):
    package, _, name = label.lstrip("/").partition(":")
    return os.path.join(testlogs, package, name, "test.log")


def logs(testlogs, labels):
    if labels:
        for label in labels:
            path = label_to_log(testlogs, label)
            if os.path.isfile(path):
                yield label, path
        return
    for root, _, files in os.walk(testlogs):
        if "test.log" in files:
            relative = os.path.relpath(root, testlogs)
            package, name = os.path.split(relative)
            yield "//%s:%s" % (package, name), os.path.join(root, "test.log")


def main(argv):
    if len(argv) < 2:
        raise SystemExit(__doc__)
    total, targets = 0, 0
    for label, path in sorted(logs(argv[1], argv[2:])):
        with open(path, errors="replace") as f:
            count, reasons = skips_in(f.read())
        if count == 0:
            continue
        total += count
        targets += 1
        listed = ["%s x%d" % (shorten(reason), n) for reason, n in sorted(reasons.items())]
        shown = "; ".join(listed[:3]) + (" ..." if len(listed) > 3 else "")
        print("skipped: %-60s %3d case(s)%s" % (label, count, ": " + shown if shown else ""))
    print("skipped: %d test case(s) in %d target(s)" % (total, targets))


if __name__ == "__main__":
    main(sys.argv)
