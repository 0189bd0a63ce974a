"""A real ``redis-server`` for the tests: started on 127.0.0.1 on a free port for the
session and stopped after it. Without the binary (Debian's ``redis-server`` package)
the tests are skipped with that reason."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time

import pytest
import redis


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def redis_port(tmp_path_factory):
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed (Debian: apt-get install redis-server)")
    port = _free_port()
    folder = tmp_path_factory.mktemp("redis")
    server = subprocess.Popen(
        [binary, "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly",
         "no", "--dir", str(folder)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    client = redis.Redis(host="127.0.0.1", port=port)
    deadline = time.monotonic() + 10
    while True:
        try:
            client.ping()
            break
        except redis.ConnectionError:
            if server.poll() is not None or time.monotonic() > deadline:
                server.kill()
                raise RuntimeError(f"redis-server did not start on port {port}") from None
            time.sleep(0.05)
    yield port
    client.close()
    server.terminate()
    server.wait(10)


@pytest.fixture
def server(redis_port):
    """Connection arguments of the session's server, emptied before each test."""
    redis.Redis(host="127.0.0.1", port=redis_port).flushall()
    return {"host": "127.0.0.1", "port": redis_port}
