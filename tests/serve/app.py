"""A replica's program in the serve tests: a stdlib HTTP server on $SKYC_SERVE_PORT.

GET /health answers 200 (the readiness path); GET / names the replica; GET /version
answers ``$APP_VERSION`` and the replica's id (what ``serve update`` changes), GET
/ready/$APP_VERSION 200 (a readiness path of that version only); GET
/stream?n=N&gap=S sends N server-sent events S seconds apart, chunk by chunk; POST
/echo answers the request's body; GET /sleep?s=S answers after S seconds.
"""

from __future__ import annotations

import os
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

REPLICA = os.environ.get("SKYPILOT_SERVE_REPLICA_ID", "?")
VERSION = os.environ.get("APP_VERSION", "-")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True   # headers and body are two writes: send each at once

    def log_message(self, format: str, *args: object) -> None:
        return

    def _send(self, code: int, body: bytes, kind: str = "text/plain") -> None:
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        url = urlparse(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        if url.path in ("/health", f"/ready/{VERSION}"):
            self._send(200, b"ok\n")
        elif url.path == "/":
            self._send(200, f"replica {REPLICA}\n".encode())
        elif url.path == "/version":
            self._send(200, f"{VERSION} {REPLICA}\n".encode())
        elif url.path == "/sleep":
            time.sleep(float(query.get("s", "0.1")))
            self._send(200, f"replica {REPLICA} slept\n".encode())
        elif url.path == "/stream":
            self._stream(int(query.get("n", "5")), float(query.get("gap", "0.3")))
        else:
            self._send(404, b"no such path\n")

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._send(200, body, self.headers.get("Content-Type") or "application/octet-stream")

    def _stream(self, count: int, gap: float) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for i in range(count):
            data = f"data: {i} {time.time():.6f}\n\n".encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
            time.sleep(gap)
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def main() -> None:
    port = int(os.environ["SKYC_SERVE_PORT"])
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    print(f"replica {REPLICA} listening on {port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
