"""A throwaway redis-server on a free loopback port, for the multi-process
tests' Redis stores: started, PINGed until it answers, killed afterwards."""
import contextlib
import os
import shutil
import socket
import subprocess
import time


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def running_redis_server():
    """Yields the port of a redis-server that answers PING (no persistence)."""
    binary = shutil.which("redis-server") or "/usr/bin/redis-server"
    if not os.path.exists(binary):
        raise RuntimeError("redis-server is not installed (tools/deps.sh installs it)")
    port = free_port()
    server = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1",
                               "--save", "", "--appendonly", "no"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5) as conn:
                    conn.sendall(b"PING\r\n")
                    if conn.recv(16).startswith(b"+PONG"):
                        break
            except OSError:
                pass
            assert server.poll() is None, "redis-server exited at startup"
            assert time.time() < deadline, "redis-server did not answer within 10 s"
            time.sleep(0.05)
        yield port
    finally:
        server.kill()
        server.wait()
