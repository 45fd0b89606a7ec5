"""The environment tools/launch.py gives each process, and the rendezvous ops
built from it.

`tools/python tools/launch.py --nprocs N [--store URL] script.py ...` starts
N copies of script.py with:

    DOPPIO_RANK, DOPPIO_WORLD_SIZE   this process's rank in [0, N), and N
                                     (also RANK / WORLD_SIZE, as torchrun sets)
    DOPPIO_STORE                     the rendezvous store: "file:///a/directory"
                                     or "redis://host:port"
    DOPPIO_RUN_ID                    an id fresh for every launch; the store
                                     key prefix, so keys a previous run left in
                                     the same store are never read by this one

A script then needs only:

    from doppio import distributed, workspace
    handler = distributed.store_handler_from_env()           # runs the op now
    world = distributed.common_world_from_env(handler)       # rendezvous
    ...  Allreduce([world, "x"], ["x"], engine="GLOO") ...

or passes a core.Net to both helpers to add the ops to that net instead
(for an init net, as data_parallel_model's rendezvous expects a handler
blob).

Under `launch.py --max_restarts R --checkpoint_dir DIR --checkpoint_every K`
the launcher restarts every rank after a failure, and Checkpointer (below)
saves and restores what a resumed run needs (DOPPIO_RESTART_COUNT,
DOPPIO_CHECKPOINT_DIR, DOPPIO_CHECKPOINT_EVERY).
"""
import os
import re
import sys
from urllib.parse import urlsplit

RANK_ENV = "DOPPIO_RANK"
WORLD_SIZE_ENV = "DOPPIO_WORLD_SIZE"
STORE_ENV = "DOPPIO_STORE"
RUN_ID_ENV = "DOPPIO_RUN_ID"


def _env(name):
    value = os.environ.get(name)
    if value is None or value == "":
        raise RuntimeError(
            "environment variable %s is not set; start this script with "
            "tools/launch.py (or set DOPPIO_RANK, DOPPIO_WORLD_SIZE, DOPPIO_STORE "
            "and DOPPIO_RUN_ID yourself)" % name)
    return value


def _env_int(name):
    value = _env(name)
    try:
        return int(value)
    except ValueError:
        raise RuntimeError("environment variable %s must be an integer, got %r"
                           % (name, value)) from None


def rank():
    """This process's rank, from DOPPIO_RANK."""
    value = _env_int(RANK_ENV)
    size = world_size()
    if not 0 <= value < size:
        raise RuntimeError("%s=%d is not a rank of a world of %s=%d"
                           % (RANK_ENV, value, WORLD_SIZE_ENV, size))
    return value


def world_size():
    """The number of processes, from DOPPIO_WORLD_SIZE."""
    value = _env_int(WORLD_SIZE_ENV)
    if value < 1:
        raise RuntimeError("%s must be at least 1, got %d" % (WORLD_SIZE_ENV, value))
    return value


def run_id():
    """This launch's id (DOPPIO_RUN_ID): the store key prefix."""
    return _env(RUN_ID_ENV)


def store_url():
    """The rendezvous store's URL, from DOPPIO_STORE."""
    return _env(STORE_ENV)


def parse_store_url(url):
    """("file", {"path": directory}) for file:///directory, or
    ("redis", {"host": host, "port": port}) for redis://host:port; anything
    else is a RuntimeError naming the URL."""
    parts = urlsplit(url)
    if parts.scheme == "file":
        # file://relative/dir would put "relative" in the host part; only an
        # absolute path says the same directory to every process.
        if parts.netloc not in ("", "localhost") or not parts.path.startswith("/"):
            raise RuntimeError("store URL %r: a file store is file:///absolute/directory" % url)
        return "file", {"path": parts.path}
    if parts.scheme == "redis":
        try:
            port = parts.port
        except ValueError:
            port = None
        if not parts.hostname or port is None or parts.path not in ("", "/"):
            raise RuntimeError("store URL %r: a Redis store is redis://host:port" % url)
        return "redis", {"host": parts.hostname, "port": port}
    raise RuntimeError("store URL %r: expected file:///directory or redis://host:port" % url)


def _emit(net_or_workspace, op):
    """Adds `op` to a core.Net, or runs it now in the current workspace."""
    from doppio import workspace
    if net_or_workspace is None or net_or_workspace is workspace:
        workspace.RunOperatorOnce(op)
    elif hasattr(net_or_workspace, "Proto"):
        net_or_workspace.Proto().op.extend([op])
    else:
        raise TypeError("expected a core.Net, the workspace module or None, got %r"
                        % (net_or_workspace,))


def store_handler_from_env(net_or_workspace=None, handler="store_handler"):
    """Creates the store handler blob `handler` for DOPPIO_STORE, with
    DOPPIO_RUN_ID as key prefix, and returns its name.

    `net_or_workspace`: None or the workspace module runs the op at once in
    the current workspace; a core.Net gets the op appended."""
    from doppio import core
    kind, where = parse_store_url(store_url())
    op_type = "FileStoreHandlerCreate" if kind == "file" else "RedisStoreHandlerCreate"
    op = core.CreateOperator(op_type, [], [handler], prefix=run_id(), **where)
    _emit(net_or_workspace, op)
    return op.output[0]  # under the current name scope, as CreateOperator names it


def common_world_from_env(handler, net_or_workspace=None, world="comm_world",
                          interface="lo", timeout_ms=30000):
    """Creates the common world blob `world` of DOPPIO_WORLD_SIZE ranks, this
    one DOPPIO_RANK, through the store handler blob `handler`; returns its
    name. `interface` defaults to loopback, which suits the processes of one
    launch on one host; pass "" to bind the address the host name resolves
    to. `net_or_workspace` as in store_handler_from_env."""
    from doppio import core
    # A BlobReference keeps the handler's name as given: it already carries
    # any name scope, which CreateOperator would otherwise add a second time.
    op = core.CreateOperator("CreateCommonWorld", [core.BlobReference(str(handler))], [world],
                             size=world_size(), rank=rank(), interface=interface,
                             timeout_ms=timeout_ms)
    _emit(net_or_workspace, op)
    return op.output[0]


# ---- elastic restarts (tools/launch.py --max_restarts) ----

def restart_count():
    """How many times tools/launch.py has restarted this job's ranks
    (DOPPIO_RESTART_COUNT; 0 on the first start or without the launcher)."""
    return _env_int("DOPPIO_RESTART_COUNT") if os.environ.get("DOPPIO_RESTART_COUNT") else 0


def _segments(sharded):
    """Save's `segments` for the blocks of a sharded model (blob, whole
    dims, dtype, begin, end): serialized TensorProtos without data."""
    from doppio.proto import doppio_pb2
    segments = []
    for blob, dims, data_type, begin, end in sharded:
        proto = doppio_pb2.TensorProto(name=blob, dims=dims, data_type=data_type)
        proto.segment.begin = begin
        proto.segment.end = end
        segments.append(proto.SerializeToString())
    return segments


class Checkpointer(object):
    """The checkpoint an elastic job resumes from after tools/launch.py
    restarts its ranks (--checkpoint_dir DIR --checkpoint_every K, or the
    arguments). Rank 0 saves device 0's state every K iterations: the
    params, the optimizer state and everything else the init net makes
    (data_parallel_model.GetCheckpointParams), and the shared iteration
    counters, which carry the learning-rate schedule. Files are
    DIR/checkpoint_<iteration>.minidb, written beside and renamed into
    place by Save, so a rank killed mid-save leaves the previous one whole;
    the newest two are kept.

    A model parallelized with shard_optimizer_state=True holds only a
    block of each optimizer state blob per shard, so every shard saves:
    DIR/checkpoint_<iteration>.shard<R>of<S>.minidb, shard 0's with
    everything else, the others' with their blocks alone, each block as a
    segment of the whole blob. A checkpoint counts once all S files are
    there. restore() loads them together (Load assembles each whole blob
    from its segments) and cuts the blocks of the current shard count, so a
    job may resume at another process count, sharded or not, and an
    unsharded checkpoint resumes a sharded job too.

        checkpointer = distributed.Checkpointer(model)
        first = checkpointer.restore()      # 0, or the iteration to resume at
        for iteration in range(first, total):
            ... feed the batch of `iteration` ...
            data_parallel_model.RunNet(model, 1)
            checkpointer.after_iteration(iteration)

    The DB readers the init net makes (CreateDB) and the training net's
    random generators (Dropout's) are each rank's own: every rank saves them
    to DIR/checkpoint_<iteration>.local<R>of<N>.minidb (each reader as the
    records its input op had handed to the net, which a restored reader
    replays through the op's shuffle buffer: core/db.h; each op's generator
    as its state), and restores them when resuming at the same process
    count. With batches
    that are fed as a function of the iteration, or read by
    TensorProtosDBInput (shuffled or not), the resumed run is bit for bit
    the uninterrupted one. Call restore() after RunInitNet on every rank: all
    of them load the same files, then every device takes device 0's
    values."""

    KEEP = 2
    _NAME = re.compile(r"^checkpoint_(\d+)(?:\.(shard|local)(\d+)of(\d+))?\.minidb$")

    def __init__(self, model, directory=None, every=None):
        self.model = model
        self.directory = directory or os.environ.get("DOPPIO_CHECKPOINT_DIR")
        every = every if every is not None else os.environ.get("DOPPIO_CHECKPOINT_EVERY", 1)
        try:
            self.every = int(every)
        except ValueError:
            raise RuntimeError("checkpoint_every %r is not an integer" % (every,))
        if self.every < 1:
            raise RuntimeError("checkpoint_every must be >= 1, got %d" % self.every)
        from doppio import data_parallel_model
        # What a checkpoint holds is fixed once the model is parallelized.
        # The DB readers (CreateDB's outputs) are each rank's own: every rank
        # saves and restores its readers in a file of its own.
        self.readers = sorted(set(str(o) for op in model.param_init_net.Proto().op
                                  if op.type == "CreateDB" for o in op.output))
        self.blobs = sorted(str(b) for b in data_parallel_model.GetCheckpointParams(model)
                            if str(b) not in self.readers)
        rendezvous = getattr(model, "_rendezvous", None)
        if rendezvous:
            self.world = rendezvous["num_shards"]
        else:
            self.world = world_size() if os.environ.get(WORLD_SIZE_ENV) is not None else 1
        # (blob, whole dims, dtype, begin, end) of this shard's blocks.
        self.sharded = list(getattr(model, "_sharded_blobs", None) or [])
        self.save_args = {"segments": _segments(self.sharded)} if self.sharded else {}
        if self.sharded:
            self.shard = (model._rendezvous["shard_id"], model._rendezvous["num_shards"])
            self.rank = self.shard[0]
        else:
            self.shard = None
            # Outside the launcher the process is rank 0.
            self.rank = rank() if os.environ.get(RANK_ENV) is not None else 0

    def _path(self, iteration, shard=None, kind="shard"):
        name = "checkpoint_%d" % iteration
        if shard is not None:
            name += ".%s%dof%d" % ((kind,) + tuple(shard))
        return os.path.join(self.directory, name + ".minidb")

    def _files(self):
        """iteration -> the files of its complete checkpoint(s), and every
        checkpoint file by iteration."""
        complete, every = {}, {}
        if not self.directory or not os.path.isdir(self.directory):
            return complete, every
        mains, shards, local = set(), {}, {}
        for name in os.listdir(self.directory):
            match = self._NAME.match(name)
            if not match:
                continue
            iteration = int(match.group(1))
            every.setdefault(iteration, []).append(os.path.join(self.directory, name))
            if match.group(2) is None:
                mains.add(iteration)
            else:
                found = shards if match.group(2) == "shard" else local
                found.setdefault(iteration, {}).setdefault(int(match.group(4)), set()).add(
                    int(match.group(3)))

        def whole(sets, iteration, count):
            return sets.get(iteration, {}).get(count) == set(range(count))

        for iteration in sorted(every):
            counts = local.get(iteration, {})
            # Rank 0 writes its local file before its params, so params saved
            # at a count whose local files are not all there are from a save
            # a failure cut short. Sets of another count (an earlier attempt
            # at another process count, cut short) do not matter.
            for count in sorted(shards.get(iteration, {}), reverse=True):
                if whole(shards, iteration, count) and (
                        count not in counts or whole(local, iteration, count)):
                    complete[iteration] = [self._path(iteration, (r, count))
                                           for r in range(count)]
                    break
            if iteration in mains and iteration not in complete and (
                    not counts or any(whole(local, iteration, c) for c in counts)):
                complete[iteration] = [self._path(iteration)]
        return complete, every

    def _local_file(self, iteration):
        """This rank's file of `iteration` (its readers and random
        generators) if it was saved at this process count (a sharded
        reader's position means nothing at another), else None."""
        path = self._path(iteration, (self.rank, self.world), kind="local")
        return path if os.path.exists(path) else None

    def saved_iterations(self):
        """Iterations with a complete checkpoint, oldest first."""
        return sorted(self._files()[0])

    def restore(self):
        """Loads the newest checkpoint, if any, into device 0 and copies it to
        every device (a sharded model keeps this shard's blocks of the
        optimizer state); returns the number of iterations it holds (0:
        none)."""
        from doppio import core, data_parallel_model, workspace
        complete = self._files()[0]
        if not complete:
            return 0
        iteration = max(complete)
        workspace.RunOperatorOnce(core.CreateOperator(
            "Load", [], [core.BlobReference(b) for b in self.blobs], dbs=complete[iteration],
            db_type="minidb", absolute_path=1))
        data_parallel_model.FinalizeAfterCheckpoint(self.model, self.blobs)
        if self.sharded:
            workspace.RunNetOnce(self.model._shard_state_net)
        self._restore_local(iteration)
        return iteration

    def _random_states_blob(self):
        return "__doppio_random_states/" + self.model.net.Name()

    def _restore_local(self, iteration):
        """Each reader resumes after the records its input op had handed to
        the net (core/db.h), shuffle buffer included, and each op's random
        generator where it stood."""
        from doppio import core, workspace
        local = self._local_file(iteration)
        if local is None:
            if self.readers:
                sys.stderr.write("doppio.distributed.Checkpointer: no local file of rank %d of "
                                 "%d for iteration %d; the DB readers start from the "
                                 "beginning\n" % (self.rank, self.world, iteration))
            return
        states = self._random_states_blob()
        workspace.RunOperatorOnce(core.CreateOperator(
            "Load", [], [core.BlobReference(b) for b in self.readers + [states]], db=local,
            db_type="minidb", absolute_path=1, allow_incomplete=True))
        if not workspace.HasBlob(states):
            return
        if self.model.net.Name() not in workspace.Nets():
            sys.stderr.write("doppio.distributed.Checkpointer: net '%s' is not created yet "
                             "(call restore() after RunInitNet); its random generators start "
                             "from their seeds\n" % self.model.net.Name())
            return
        workspace.C.set_net_random_states(
            self.model.net.Name(), [bytes(s) for s in workspace.FetchBlob(states)])

    def _save_local(self, done):
        """This rank's readers and random generators, if it has any."""
        from doppio import core, workspace
        import numpy as np
        try:
            states = workspace.C.net_random_states(self.model.net.Name())
        except RuntimeError:
            states = []  # the training net is not created (nothing drew yet)
        blobs = list(self.readers)
        if any(states):
            workspace.FeedBlob(self._random_states_blob(), np.array(states, dtype=object))
            blobs.append(self._random_states_blob())
        if blobs:
            workspace.RunOperatorOnce(core.CreateOperator(
                "Save", [core.BlobReference(b) for b in blobs], [],
                db=self._path(done, (self.rank, self.world), kind="local"),
                db_type="minidb", absolute_path=1))

    def after_iteration(self, iteration):
        """Call after iteration `iteration` (counting from 0) ran: every
        `every` iterations rank 0 saves (every shard, when the optimizer
        state is sharded); returns the file written, or None."""
        done = iteration + 1
        if not self.directory or done % self.every != 0:
            return None
        from doppio import core, workspace
        os.makedirs(self.directory, exist_ok=True)
        self._save_local(done)
        if self.rank != 0 and not self.sharded:
            return None
        blobs = self.blobs if self.rank == 0 else [b[0] for b in self.sharded]
        path = self._path(done, self.shard)
        workspace.RunOperatorOnce(core.CreateOperator(
            "Save", [core.BlobReference(b) for b in blobs], [], db=path, db_type="minidb",
            absolute_path=1, **self.save_args))
        if self.rank == 0:
            self._remove_old()
        return path

    def _remove_old(self):
        """Every file of iterations older than the newest KEEP complete
        checkpoints. Only rank 0 removes: by the time it saves iteration i,
        every shard has finished its files of the iterations before i."""
        complete, every = self._files()
        kept = sorted(complete)[-self.KEEP:]
        if not kept:
            return
        for iteration, paths in every.items():
            if iteration >= kept[0]:
                continue
            for path in paths:
                try:
                    os.remove(path)
                except OSError:
                    pass
