"""moto's S3 server with one request at a time, so a conditional write is atomic as it is on S3.

    python deploy/cluster/s3_standin.py [--host 127.0.0.1] [--port 5000]

Why not `python -m moto.server`: moto (5.2) answers each request on its own thread and checks a PutObject's
`If-Match` / `If-None-Match` by reading the object, then writes it in a separate step with no lock between the
two (moto/s3/responses.py `put_object`). Two writers holding the same ETag can both pass the check and both get
200, so one update is lost: `tests/ui/test_shared_backends.py`'s concurrent writers lost one under load. S3
evaluates the condition atomically with the write (the first to finish wins, the others get 412 Precondition
Failed or 409 ConditionalRequestConflict), and the chat store (ui/shared/blobs_s3.py) relies on that. Serving
one request at a time gives the stand-in that guarantee (and S3's read-after-write order) without changing
moto's answers; `tests/ui/test_s3_standin.py` checks it with the check-then-write window held open.
The tests (tests/ui/shared_servers.py) and the cluster (cluster.py) start this instead of moto.server.
"""
from __future__ import annotations

import argparse
import os
import threading
from collections.abc import Callable, Iterable
from typing import Any

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class OneRequestAtATime:
    """WSGI middleware: each request, its answer's body included, runs alone. `waiting` counts requests queued
    behind the one running (the stand-in's test watches it)."""

    def __init__(self, app: WsgiApp) -> None:
        self.app = app
        self._turn = threading.Lock()
        self._count = threading.Lock()
        self.waiting = 0

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        with self._count:
            self.waiting += 1
        with self._turn:
            with self._count:
                self.waiting -= 1
            answer = self.app(environ, start_response)
            try:
                return list(answer)
            finally:
                close = getattr(answer, "close", None)
                if close is not None:
                    close()


def moto_app() -> OneRequestAtATime:
    """moto's app for every service (as moto.server builds it), one request at a time."""
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

    return OneRequestAtATime(DomainDispatcherApplication(create_backend_app))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=5000)
    args = parser.parse_args(argv)
    os.environ.setdefault("MOTO_PORT", str(args.port))  # as moto.server does: moto names it in some answers
    from moto.moto_server.werkzeug_app import MotoRequestHandler
    from werkzeug.serving import run_simple

    # Threads still accept connections (boto3 keeps several open); OneRequestAtATime orders the requests.
    run_simple(args.host, args.port, moto_app(), threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main()
