"""A real HTTP receiver for webhook tests: a thread serving 127.0.0.1 on a free port that
records every request and answers from a script of statuses (the last one repeats)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


class Receiver:
    def __init__(self, statuses=(200,), *, body: bytes = b"ok", delay: float = 0.0, headers=None):
        self.statuses = list(statuses)
        self.reply_body = body
        self.reply_headers = dict(headers or {})
        self.delay = delay
        self.received: list[Received] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                receiver.received.append(Received(self.path, dict(self.headers.items()), body))
                if receiver.delay:
                    time.sleep(receiver.delay)
                status = (
                    receiver.statuses.pop(0) if len(receiver.statuses) > 1 else receiver.statuses[0]
                )
                self.send_response(status)
                for name, value in receiver.reply_headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(receiver.reply_body)))
                self.end_headers()
                self.wfile.write(receiver.reply_body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
