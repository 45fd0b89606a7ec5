"""Multi-process training over real network interfaces: every shard runs in
its own Linux network namespace, joined to the others by veth pairs on a
bridge (itself in a namespace of its own, so the host's network is never
touched), and binds Gloo to its veth, so the collectives cross a real
interface instead of loopback. The rendezvous is a file store: network
namespaces share the filesystem. Needs root (CAP_NET_ADMIN and
CAP_SYS_ADMIN); skips elsewhere, naming the command that was refused."""
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import uuid

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from worker_processes import run_workers  # noqa: E402
import distributed_training_worker as worker  # noqa: E402
from distributed_scale_test import assert_trained, mlp_specs  # noqa: E402
from gloo_collectives_test import file_store  # noqa: E402,F401
from parallelize_distributed_test import single_process_reference  # noqa: E402

WORKER = os.path.join(HERE, 'distributed_training_worker.py')
PYTHON = '/usr/bin/python3'
WALL_LIMIT_S = 60
SUBNET = '10.77.0.'  # private to the namespaces; the host never routes it


class Refused(Exception):
    """The machine would not let us build the namespaces: a reason to skip."""


def ip(*args, refusal_skips=False):
    command = ['ip'] + list(args)
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if done.returncode != 0:
        message = '`%s` failed (exit %d): %s' % (' '.join(command), done.returncode,
                                                 done.stderr.decode(errors='replace').strip())
        if refusal_skips:
            raise Refused(message)
        raise AssertionError(message)
    return done.stdout.decode()


class Topology:
    """`size` shard namespaces, each with loopback and one veth (address
    SUBNET + (rank + 1)), the other ends on a bridge in a hub namespace.
    Names carry the pid so concurrent runs never collide; interface names
    stay within Linux's 15 characters."""

    def __init__(self, size):
        tag = '%d' % os.getpid()
        self.hub = 'doppio_%s_hub' % tag
        self.namespaces = ['doppio_%s_s%d' % (tag, r) for r in range(size)]
        self.interfaces = ['dv%ss%d' % (tag, r) for r in range(size)]
        self.addresses = [SUBNET + str(r + 1) for r in range(size)]
        self.created = []

    def build(self):
        for namespace in [self.hub] + self.namespaces:
            ip('netns', 'add', namespace, refusal_skips=True)
            self.created.append(namespace)
        bridge = 'dbr%s' % os.getpid()
        ip('-n', self.hub, 'link', 'add', bridge, 'type', 'bridge', refusal_skips=True)
        ip('-n', self.hub, 'link', 'set', bridge, 'up')
        for rank, (namespace, interface, address) in enumerate(
                zip(self.namespaces, self.interfaces, self.addresses)):
            hub_end = 'dh%sh%d' % (os.getpid(), rank)
            # Both ends are created straight inside their namespaces: nothing
            # ever appears in the host's own.
            ip('-n', namespace, 'link', 'add', interface, 'type', 'veth', 'peer', 'name',
               hub_end, 'netns', self.hub, refusal_skips=True)
            ip('-n', self.hub, 'link', 'set', hub_end, 'master', bridge)
            ip('-n', self.hub, 'link', 'set', hub_end, 'up')
            ip('-n', namespace, 'addr', 'add', address + '/24', 'dev', interface)
            ip('-n', namespace, 'link', 'set', interface, 'up')
            ip('-n', namespace, 'link', 'set', 'lo', 'up')
        self.wait_for_links()

    def wait_for_links(self, limit_s=10):
        # A fresh veth's address is tentative (DAD) and its carrier late for
        # a moment; connecting before then fails spuriously.
        deadline = time.time() + limit_s
        for namespace, interface in zip(self.namespaces, self.interfaces):
            while 'LOWER_UP' not in ip('-n', namespace, 'link', 'show', interface):
                assert time.time() < deadline, '%s in %s never came up' % (interface, namespace)
                time.sleep(0.05)

    def destroy(self):
        # Deleting a namespace deletes the veth ends and the bridge in it.
        failures = []
        for namespace in reversed(self.created):
            done = subprocess.run(['ip', 'netns', 'delete', namespace],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            if done.returncode != 0:
                failures.append((namespace, done.stderr.decode(errors='replace')))
        self.created = []
        assert not failures, 'could not delete namespaces: %s' % failures


def topology(size):
    if shutil.which('ip') is None:
        pytest.skip('network namespaces unavailable: the `ip` command (iproute2) is missing')
    net = Topology(size)
    try:
        net.build()
    except Refused as refusal:
        net.destroy()
        pytest.skip('network namespaces unavailable: %s' % refusal)
    except BaseException:
        net.destroy()
        raise
    return net


@pytest.fixture
def two_namespaces():
    net = topology(2)
    yield net
    net.destroy()


@pytest.fixture
def four_namespaces():
    net = topology(4)
    yield net
    net.destroy()


@pytest.fixture(params=[8, 16])
def many_namespaces(request):
    net = topology(request.param)
    yield net
    net.destroy()


LISTEN = '''
import socket, sys
server = socket.socket()
server.bind((sys.argv[1], 0))
server.listen(1)
server.settimeout(10)
print(server.getsockname()[1], flush=True)
try:
    connection, _ = server.accept()
    connection.sendall(b"hello")
    connection.close()
except socket.timeout:
    pass
'''

CONNECT = '''
import socket, sys
try:
    with socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=3) as c:
        print(c.getsockname()[0], c.recv(5).decode())
except OSError as error:
    print("unreachable", error)
'''


def probe(net, listener_rank, listen_address, connector_rank, connect_address):
    """Listens on listen_address inside one shard namespace and connects to
    connect_address (same port) from another; returns the connector's
    report: '<its local address> hello' or 'unreachable ...'."""
    listener = subprocess.Popen(
        ['ip', 'netns', 'exec', net.namespaces[listener_rank], PYTHON, '-c', LISTEN,
         listen_address], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        port = listener.stdout.readline().decode().strip()
        assert port, listener.stderr.read().decode(errors='replace')
        done = subprocess.run(
            ['ip', 'netns', 'exec', net.namespaces[connector_rank], PYTHON, '-c', CONNECT,
             connect_address, port], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            timeout=15)
        return done.stdout.decode().strip()
    finally:
        listener.kill()
        listener.wait()


def assert_isolated_but_connected(net):
    assert len(set(net.addresses)) == len(net.addresses)
    for namespace, interface, address in zip(net.namespaces, net.interfaces, net.addresses):
        shown = ip('-n', namespace, '-o', '-4', 'addr', 'show')
        # Only loopback and this shard's veth: the host's interfaces are not
        # here, so Gloo can only have reached a peer through the veth.
        assert sorted(line.split()[1] for line in shown.splitlines()) == sorted(
            ['lo', interface]), shown
        assert ' %s/24 ' % address in shown, shown
    last = len(net.namespaces) - 1
    # Across the bridge, from the connector's own veth address.
    assert probe(net, last, net.addresses[last], 0, net.addresses[last]) == (
        '%s hello' % net.addresses[0])
    # A loopback listener is invisible from the next namespace: 127.0.0.1
    # there is that namespace's own loopback.
    assert probe(net, last, '127.0.0.1', 0, '127.0.0.1').startswith('unreachable')


def launch_in_namespaces(net, store, specs, timeout_ms=10000, wall_limit_s=WALL_LIMIT_S):
    """One worker per spec, shard r in namespace r; returns the reports."""
    prefix = uuid.uuid4().hex

    def command(shard):
        spec = dict(store=store, prefix=prefix, timeout_ms=timeout_ms, **shard)
        return lambda out: ['ip', 'netns', 'exec', net.namespaces[shard['shard_id']], PYTHON,
                            WORKER, json.dumps(spec), out]

    return run_workers([command(shard) for shard in specs], wall_limit_s,
                       tag='doppio_netns_out_')[0]


def published_addresses(store):
    """Every IPv4 address of SUBNET or loopback found in the values the
    shards' Gloo devices published to the file store (their listening
    sockaddrs, bytes in network order)."""
    seen = set()
    candidates = {socket.inet_aton(SUBNET + str(h)): SUBNET + str(h) for h in range(1, 255)}
    candidates[socket.inet_aton('127.0.0.1')] = '127.0.0.1'
    for root, _, files in os.walk(store['path']):
        for name in files:
            with open(os.path.join(root, name), 'rb') as f:
                data = f.read()
            seen.update(text for raw, text in candidates.items() if raw in data)
    return seen


def assert_trained_like_one_process(reports):
    assert_trained(reports)
    initial = reports[0]['init']
    for report in reports[1:]:
        assert report['init'] == initial  # shard 0's, broadcast
    expected = single_process_reference(initial)
    for p in worker.mlp.PARAMS:
        assert not np.allclose(expected[p], initial[p]), p  # it trained
        for shard, report in enumerate(reports):
            np.testing.assert_allclose(report['final'][p], expected[p], rtol=1e-5, atol=1e-6,
                                       err_msg='shard %d %s' % (shard, p))


def train_across(net, store):
    assert_isolated_but_connected(net)
    specs = [dict(spec, interface=net.interfaces[spec['shard_id']])
             for spec in mlp_specs(len(net.namespaces))]
    # 16 interpreters start on 2 cores.
    many = len(net.namespaces) > 4
    reports = launch_in_namespaces(net, store, specs, timeout_ms=30000 if many else 10000,
                                   wall_limit_s=300 if many else WALL_LIMIT_S)
    assert_trained_like_one_process(reports)
    # Each shard's Gloo listened on its namespace's veth address, and none
    # on loopback.
    assert published_addresses(store) == set(net.addresses)


def test_two_namespaces_train_the_mlp_like_one_process(two_namespaces, file_store):
    train_across(two_namespaces, file_store)


def test_four_namespaces_on_a_bridge_train_the_mlp_like_one_process(four_namespaces,
                                                                     file_store):
    train_across(four_namespaces, file_store)


def test_eight_and_sixteen_namespaces_on_a_bridge_train_the_mlp_like_one_process(
        many_namespaces, file_store):
    train_across(many_namespaces, file_store)


def test_loopback_cannot_join_shards_in_separate_namespaces(two_namespaces, file_store):
    # The control: bound to 'lo' (the worker's default) the shards publish
    # 127.0.0.1, which in the peer's namespace is the peer itself, so the
    # rendezvous must fail on every shard -- with an error, not a hang.
    reports = launch_in_namespaces(two_namespaces, file_store, mlp_specs(2), timeout_ms=1000)
    for shard, report in enumerate(reports):
        assert 'final' not in report, (shard, report)
        assert 'CreateCommonWorld' in report.get('error', ''), (shard, report)
    assert published_addresses(file_store) == {'127.0.0.1'}


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q', '-p', 'no:cacheprovider']))
