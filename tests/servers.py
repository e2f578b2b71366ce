"""Servers on 127.0.0.1 started by the tests: HTTP with Range support (counting requests and
bytes sent, and misbehaving on request), and an S3 endpoint (moto's server mode)."""

from __future__ import annotations

import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class RangeServer:
    """Serves ``files`` (path → bytes) with HEAD and ranged GET.

    ``mode``: ``"ok"``; ``"error"`` (500 for GETs); ``"slow"`` (GETs stall for ``stall`` seconds);
    ``"short"`` (a ranged GET announces the full range but sends half and closes);
    ``"truncated"`` (HEAD reports the full size, GETs serve a file cut in half); ``"norange"``
    (GETs ignore Range and send the whole file); ``"endless"`` (a ranged GET is a 206 whose body
    has no length and runs on, up to ``endless_limit`` bytes, until the client hangs up);
    ``"drip"`` (a ranged GET sends its body one byte every ``drip_interval`` seconds, giving up
    after ``drip_limit`` bytes).
    """

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.mode = "ok"
        self.stall = 3.0
        self.endless_limit = 128 << 20
        self.drip_interval = 0.05
        self.drip_limit = 100
        self.requests: list[tuple[str, str, str | None]] = []  # (method, path, Range header)
        self.bytes_sent = 0
        self.in_flight = 0
        self.most_in_flight = 0
        """GETs being answered at once, and the most at any moment since the last reset."""
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_HEAD(self) -> None:
                server._record(self)
                data = server.files.get(self.path)
                if data is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Accept-Ranges", "bytes")
                self.end_headers()

            def do_GET(self) -> None:
                with server._lock:
                    server.in_flight += 1
                    server.most_in_flight = max(server.most_in_flight, server.in_flight)
                try:
                    self._answer_get()
                finally:
                    with server._lock:
                        server.in_flight -= 1

            def _answer_get(self) -> None:
                server._record(self)
                data = server.files.get(self.path)
                if data is None:
                    self.send_error(404)
                    return
                if server.mode == "error":
                    self.send_error(500)
                    return
                if server.mode == "slow":
                    time.sleep(server.stall)
                full = len(data)
                if server.mode == "truncated":
                    data = data[: full // 2]
                match = re.fullmatch(r"bytes=(\d+)-(\d*)", self.headers.get("Range") or "")
                if server.mode == "norange":
                    match = None
                if match is None:
                    body, status = data, 200
                else:
                    start = int(match[1])
                    end = min(int(match[2]) + 1 if match[2] else len(data), len(data))
                    body, status = memoryview(data)[start:end], 206  # no copy, as a server sending from a file
                if server.mode in ("endless", "drip") and status == 206:
                    self._hostile(body, start, full)
                    return
                announced = len(body)
                if server.mode == "short" and status == 206:
                    body = body[: len(body) // 2]
                self.send_response(status)
                self.send_header("Content-Length", str(announced))
                if status == 206:
                    self.send_header("Content-Range", f"bytes {start}-{start + announced - 1}/{full}")
                self.end_headers()
                with server._lock:  # counted before sending: the client cannot see it before the count
                    server.bytes_sent += len(body)
                self.wfile.write(body)
                if server.mode == "short":
                    self.close_connection = True

            def _hostile(self, body: bytes | memoryview, start: int, full: int) -> None:
                """The body of a ranged GET as an endless or a dripping server sends it (loops bounded)."""
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {start}-{start + len(body) - 1}/{full}")
                if server.mode == "drip":
                    self.send_header("Content-Length", str(len(body)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                chunk = b"\0" * (1 << 16) if server.mode == "endless" else b""
                try:
                    if server.mode == "endless":
                        for _ in range(server.endless_limit // len(chunk)):
                            with server._lock:
                                server.bytes_sent += len(chunk)
                            self.wfile.write(chunk)
                    else:
                        for i in range(min(len(body), server.drip_limit)):
                            with server._lock:
                                server.bytes_sent += 1
                            self.wfile.write(body[i : i + 1])
                            self.wfile.flush()
                            time.sleep(server.drip_interval)
                except (BrokenPipeError, ConnectionResetError):  # the client hung up: what it should do
                    pass

        class Server(ThreadingHTTPServer):
            def handle_error(self, request: object, client_address: object) -> None:
                if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):  # clients that stop reading
                    super().handle_error(request, client_address)

        self._server = Server(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def _record(self, handler: BaseHTTPRequestHandler) -> None:
        with self._lock:
            self.requests.append((handler.command, handler.path, handler.headers.get("Range")))

    def url(self, path: str) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}{path}"

    def reset_counts(self) -> None:
        with self._lock:
            self.requests.clear()
            self.bytes_sent = 0
            self.most_in_flight = self.in_flight

    @property
    def range_requests(self) -> list[tuple[str, str, str | None]]:
        return [r for r in self.requests if r[0] == "GET"]

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
