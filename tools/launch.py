"""Starts one process per rank of a multi-process Doppio run, like torchrun.

    tools/python tools/launch.py --nprocs N [--store redis://host:port | file:///dir]
                                 [--start_redis] [--grace_s S] [--run_id ID]
                                 [--max_restarts R [--checkpoint_dir DIR]
                                  [--checkpoint_every K]]
                                 script.py [args...]

Every process runs `script.py args...` with this interpreter and this
PYTHONPATH (so doppio is importable as it is here) and the environment
doppio.distributed reads: DOPPIO_RANK, DOPPIO_WORLD_SIZE, DOPPIO_STORE,
DOPPIO_RUN_ID, plus torchrun's RANK, WORLD_SIZE, LOCAL_RANK and
LOCAL_WORLD_SIZE; and DOPPIO_NUM_CORES, this host's cores divided by the
process count (at least 1, unless already set), which Doppio's thread pools
and intra-op threads size themselves by, as torchrun sets OMP_NUM_THREADS=1.

Store: --store as given; --start_redis starts a redis-server on a free
loopback port for this run and stops it afterwards; neither gives a fresh
file store in a temporary directory, removed afterwards. DOPPIO_RUN_ID is
fresh per launch (unless --run_id), so a store shared with earlier runs
never hands this one their keys.

Each line a process prints goes to the launcher's stdout / stderr prefixed
"[rank R] ". When every process exits 0 so does the launcher. When one
fails, the others get --grace_s seconds to finish (they usually fail by
themselves once a collective loses its peer), then SIGTERM, then SIGKILL
two seconds later; the launcher exits with the first failure's code
(128 + signal for a process killed by a signal). Each process runs in its
own session and dies with the launcher (PR_SET_PDEATHSIG), so none outlives it.

Elastic restarts: with --max_restarts R, a failed launch (any rank failing
or killed) stops every rank as above and starts them all again, up to R
times, each time under a fresh DOPPIO_RUN_ID (so no rank meets the last
attempt's store keys) with DOPPIO_RESTART_COUNT = the restarts so far. The
ranks resume from their last complete checkpoint: --checkpoint_dir and
--checkpoint_every reach them as DOPPIO_CHECKPOINT_DIR and
DOPPIO_CHECKPOINT_EVERY, which doppio.distributed.Checkpointer reads.
With --nprocs MIN:MAX and --nprocs_file, each start takes its process
count from the file (clamped): a job can go on with fewer ranks and grow
back; its checkpoint (device 0's state) does not depend on the count, and
the script splits its global batch by DOPPIO_WORLD_SIZE.
Ctrl-C or SIGTERM to the launcher stops the job without a restart.
"""
import argparse
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from urllib.parse import urlsplit

TERM_TO_KILL_S = 2.0
POLL_S = 0.05
PR_SET_PDEATHSIG = 1


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="launch.py", description=__doc__.split("\n\n")[0],
        usage="%(prog)s --nprocs N [--store URL | --start_redis] [options] script.py [args...]")
    parser.add_argument("--nprocs", type=nprocs_range, required=True, metavar="N | MIN:MAX",
                        help="processes (ranks) to start; MIN:MAX (as torchrun) lets a "
                        "restart use another count within those bounds (--nprocs_file)")
    parser.add_argument("--nprocs_file",
                        help="with --nprocs MIN:MAX: before every start the launcher reads "
                        "the process count from this file (what a scheduler says is "
                        "available), clamped to MIN:MAX; missing or unreadable: MAX")
    parser.add_argument("--store", help="rendezvous store: redis://host:port or file:///directory "
                        "(default: a fresh file store in a temporary directory)")
    parser.add_argument("--start_redis", action="store_true",
                        help="start a redis-server on a free loopback port for this run")
    parser.add_argument("--redis_server", default=shutil.which("redis-server") or
                        "/usr/bin/redis-server", help="redis-server binary for --start_redis")
    parser.add_argument("--grace_s", type=float, default=5.0,
                        help="after a process fails, seconds the others get before SIGTERM")
    parser.add_argument("--run_id", help="store key prefix (default: a fresh random id; "
                        "with restarts, each attempt appends its number)")
    parser.add_argument("--max_restarts", type=int, default=0,
                        help="restart every rank after a failure up to this many times")
    parser.add_argument("--checkpoint_dir",
                        help="where the ranks checkpoint (DOPPIO_CHECKPOINT_DIR)")
    parser.add_argument("--checkpoint_every", type=int, default=1,
                        help="iterations between checkpoints (DOPPIO_CHECKPOINT_EVERY)")
    parser.add_argument("script", help="the Python script every rank runs")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="the script's arguments")
    args = parser.parse_args(argv)
    if args.nprocs[0] < 1:
        parser.error("--nprocs must be at least 1, got %d" % args.nprocs[0])
    if args.nprocs_file and args.nprocs[0] == args.nprocs[1]:
        parser.error("--nprocs_file needs --nprocs MIN:MAX with MIN < MAX")
    if args.grace_s < 0:
        parser.error("--grace_s must not be negative")
    if args.max_restarts < 0:
        parser.error("--max_restarts must not be negative")
    if args.checkpoint_every < 1:
        parser.error("--checkpoint_every must be at least 1")
    if args.store and args.start_redis:
        parser.error("give --store or --start_redis, not both")
    if args.store:
        check_store_url(parser, args.store)
    if not os.path.isfile(args.script):
        parser.error("script %r does not exist" % args.script)
    return args


def nprocs_range(text):
    """"N" -> (N, N); "MIN:MAX" -> (MIN, MAX), MIN <= MAX."""
    parts = text.split(":")
    try:
        low, high = (int(parts[0]), int(parts[-1])) if len(parts) in (1, 2) else (None, None)
    except ValueError:
        low = high = None
    if low is None or low > high:
        raise argparse.ArgumentTypeError("expected N or MIN:MAX with MIN <= MAX, got %r" % text)
    return low, high


def processes_now(args, log):
    """How many ranks the next start gets: --nprocs N, or the --nprocs_file
    count clamped to MIN:MAX."""
    low, high = args.nprocs
    if not args.nprocs_file or low == high:
        return high
    try:
        with open(args.nprocs_file) as f:
            text = f.read().strip()
    except OSError:
        return high
    try:
        wanted = int(text)
    except ValueError:
        log("--nprocs_file %s holds %r, not a process count; starting %d"
            % (args.nprocs_file, text[:40], high))
        return high
    count = min(high, max(low, wanted))
    if count != wanted:
        log("--nprocs_file asks for %d processes; starting %d (--nprocs %d:%d)"
            % (wanted, count, low, high))
    return count


def check_store_url(parser, url):
    """The launcher's own check, so a typo fails here and not in N processes;
    doppio.distributed.parse_store_url is the one the processes apply."""
    parts = urlsplit(url)
    if parts.scheme == "file":
        if parts.netloc not in ("", "localhost") or not parts.path.startswith("/"):
            parser.error("--store %r: a file store is file:///absolute/directory" % url)
    elif parts.scheme == "redis":
        try:
            port = parts.port
        except ValueError:
            port = None
        if not parts.hostname or port is None:
            parser.error("--store %r: a Redis store is redis://host:port" % url)
    else:
        parser.error("--store %r: expected redis://host:port or file:///directory" % url)


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def redis_answers(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as conn:
            conn.sendall(b"PING\r\n")
            return conn.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def start_redis(binary, timeout_s=10.0):
    """A redis-server without persistence on a free loopback port, once it
    answers PING; returns (process, url)."""
    if not os.path.exists(binary):
        raise SystemExit("launch.py: --start_redis: %s not found (tools/deps.sh installs "
                         "redis-server)" % binary)
    # Another process may take the port between probe and bind: retry then.
    for _ in range(3):
        port = free_port()
        server = subprocess.Popen(
            [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=die_with_parent)
        deadline = time.time() + timeout_s
        while server.poll() is None and time.time() < deadline:
            if redis_answers(port):
                return server, "redis://127.0.0.1:%d" % port
            time.sleep(0.05)
        stop(server)
    raise SystemExit("launch.py: --start_redis: %s did not answer on a loopback port "
                     "within %g s" % (binary, timeout_s))


def die_with_parent():
    """Runs in the child before exec: SIGKILL when the launcher dies, even by
    SIGKILL, so no rank is orphaned. Linux only; elsewhere a no-op."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def stop(process):
    if process.poll() is None:
        process.kill()
    process.wait()


class Rank:
    def __init__(self, rank, process):
        self.rank = rank
        self.process = process
        self.readers = []

    def signal_group(self, signum):
        """Signals the rank's whole session: the script and whatever it
        started itself."""
        if self.process.poll() is not None:
            return
        try:
            os.killpg(self.process.pid, signum)
        except ProcessLookupError:
            pass


def forward_lines(source, sink, prefix, lock):
    """Copies `source` to `sink` line by line, each line prefixed; a lock
    keeps lines of different ranks whole."""
    for line in iter(source.readline, b""):
        if not line.endswith(b"\n"):
            line += b"\n"
        with lock:
            sink.write(prefix + line)
            sink.flush()
    source.close()


def available_cores():
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def start_ranks(args, store, run_id, restart, nprocs):
    ranks = []
    for rank in range(nprocs):
        env = dict(os.environ)
        env.update({
            "DOPPIO_RANK": str(rank), "DOPPIO_WORLD_SIZE": str(nprocs),
            "DOPPIO_STORE": store, "DOPPIO_RUN_ID": run_id,
            "DOPPIO_RESTART_COUNT": str(restart),
            "RANK": str(rank), "WORLD_SIZE": str(nprocs),
            "LOCAL_RANK": str(rank), "LOCAL_WORLD_SIZE": str(nprocs),
        })
        # Each rank sizes its thread pools for its share of the host's
        # cores, not all of them (torchrun sets OMP_NUM_THREADS=1 for this).
        env.setdefault("DOPPIO_NUM_CORES", str(max(1, available_cores() // nprocs)))
        if args.checkpoint_dir:
            env["DOPPIO_CHECKPOINT_DIR"] = os.path.abspath(args.checkpoint_dir)
            env["DOPPIO_CHECKPOINT_EVERY"] = str(args.checkpoint_every)
        # Lines should reach the terminal when printed, not when a rank exits.
        env.setdefault("PYTHONUNBUFFERED", "1")
        # New sessions: a rank's own children are signalled with it, and a
        # terminal's Ctrl-C reaches the launcher alone, which stops everyone.
        process = subprocess.Popen(
            [sys.executable, args.script] + args.args, env=env, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
            preexec_fn=die_with_parent)
        ranks.append(Rank(rank, process))
    # Reader threads only after every fork: preexec_fn is unsafe beside threads.
    lock = threading.Lock()
    for rank in ranks:
        prefix = b"[rank %d] " % rank.rank
        for source, sink in ((rank.process.stdout, sys.stdout.buffer),
                             (rank.process.stderr, sys.stderr.buffer)):
            reader = threading.Thread(target=forward_lines, args=(source, sink, prefix, lock),
                                      daemon=True)
            reader.start()
            rank.readers.append(reader)
    return ranks


def exit_code(returncode):
    return 128 - returncode if returncode < 0 else returncode


def describe(returncode):
    if returncode < 0:
        try:
            return "was killed by %s" % signal.Signals(-returncode).name
        except ValueError:
            return "was killed by signal %d" % -returncode
    return "exited with code %d" % returncode


def supervise(ranks, grace_s, log):
    """Waits for every rank; returns the launcher's exit code. After the
    first failure the survivors get grace_s, then SIGTERM, then SIGKILL."""
    first_failure = None
    deadline_term = deadline_kill = None
    while True:
        running = [r for r in ranks if r.process.poll() is None]
        for r in ranks:
            code = r.process.returncode
            if code not in (None, 0) and first_failure is None:
                first_failure = r
                if running:
                    log("rank %d %s; stopping the other ranks in %g s unless they exit"
                        % (r.rank, describe(code), grace_s))
                deadline_term = time.time() + grace_s
                deadline_kill = deadline_term + TERM_TO_KILL_S
        if not running:
            break
        now = time.time()
        if deadline_kill is not None and now >= deadline_kill:
            for r in running:
                r.signal_group(signal.SIGKILL)
        elif deadline_term is not None and now >= deadline_term:
            for r in running:
                r.signal_group(signal.SIGTERM)
            deadline_term = float("inf")
        time.sleep(POLL_S)
    for r in ranks:
        for reader in r.readers:
            reader.join(timeout=1.0)
    if first_failure is None:
        return 0
    log("rank %d %s; launch failed" % (first_failure.rank, describe(first_failure.process.returncode)))
    return exit_code(first_failure.process.returncode) or 1


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)

    def log(message):
        sys.stderr.write("launch.py: %s\n" % message)
        sys.stderr.flush()

    run_id = args.run_id or uuid.uuid4().hex
    cleanups = []
    ranks = []

    # SIGTERM / SIGINT to the launcher stop the ranks through the finally
    # below (their sessions do not get a terminal's Ctrl-C themselves).
    def on_signal(signum, _frame):
        raise KeyboardInterrupt(signal.Signals(signum).name)

    signal.signal(signal.SIGTERM, on_signal)
    try:
        store = args.store
        if args.start_redis:
            server, store = start_redis(args.redis_server)
            cleanups.append(lambda: stop(server))
            log("started %s for this run" % store)
        elif store is None:
            directory = tempfile.mkdtemp(prefix="doppio_launch_store_")
            cleanups.append(lambda: shutil.rmtree(directory, ignore_errors=True))
            store = "file://" + directory
        for restart in range(args.max_restarts + 1):
            attempt_id = run_id if restart == 0 else "%s-restart%d" % (run_id, restart)
            nprocs = processes_now(args, log)
            if restart:
                log("starting %d processes" % nprocs)
            ranks = start_ranks(args, store, attempt_id, restart, nprocs)
            code = supervise(ranks, args.grace_s, log)
            if code == 0 or restart == args.max_restarts:
                return code
            log("restarting every rank (restart %d of %d)%s" % (
                restart + 1, args.max_restarts,
                " from the last complete checkpoint in %s" % args.checkpoint_dir
                if args.checkpoint_dir else ""))
    except KeyboardInterrupt as interrupt:
        log("interrupted (%s); stopping every rank" % (interrupt.args[0] if interrupt.args
                                                       else "SIGINT"))
        return 130
    finally:
        for r in ranks:
            r.signal_group(signal.SIGTERM)
        deadline = time.time() + TERM_TO_KILL_S
        for r in ranks:
            try:
                r.process.wait(timeout=max(0.0, deadline - time.time()))
            except subprocess.TimeoutExpired:
                r.signal_group(signal.SIGKILL)
                r.process.wait()
        for cleanup in reversed(cleanups):
            cleanup()


if __name__ == "__main__":
    sys.exit(main())
