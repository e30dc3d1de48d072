"""A loopback HTTP server that remembers the paths it was asked for: it shows from outside
whether code in a sandbox reached the network."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from support.loopback import serving_in_thread


@dataclass
class FetchServer:
    port: int
    seen: list[str] = field(default_factory=list)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"


def fetch_code(url: str) -> str:
    """Python that fetches ``url`` and prints the body (or, in one line, why it could not)."""
    return (
        "import urllib.request\n"
        "try:\n"
        f"    print(urllib.request.urlopen({url!r}, timeout=10).read().decode())\n"
        "except OSError as exc:\n"
        "    print('failed:', exc)"
    )


@contextmanager
def fetch_server() -> Iterator[FetchServer]:
    """Serve ``fetched PATH`` for every GET on 127.0.0.1, remembering each path."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    record = FetchServer(server.server_address[1])

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            record.seen.append(self.path)
            body = f"fetched {self.path}".encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server.RequestHandlerClass = Handler
    with serving_in_thread(server):
        yield record
