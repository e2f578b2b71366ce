"""Servers for the remote-source tests, started on 127.0.0.1 and stopped by the tests."""

from __future__ import annotations

import pytest

from .servers import RangeServer


@pytest.fixture
def http_server():
    server = RangeServer()
    yield server
    server.close()


@pytest.fixture(scope="module")
def s3_endpoint():
    """moto's S3 server on a free port; yields its URL (dummy credentials are set by the caller)."""
    moto_server = pytest.importorskip("moto.server")
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()
