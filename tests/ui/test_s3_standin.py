"""The S3 stand-in the shared-store tests and the cluster use (deploy/cluster/s3_standin.py) keeps S3's promise
that a conditional write is atomic: of two writers holding one version, exactly one writes.

Deterministic: moto's S3 backend is served in this process and the first write to pass its precondition is held
between its check and its write until the other writer has passed its own check too (a lost update) or waits
its turn behind it. moto alone (no stand-in) is checked the same way, which is why the stand-in exists, and shows
this probe catches a lost update."""
from __future__ import annotations

import secrets
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError
from shared_servers import s3_client
from ui_testlib import free_port
from waiting import wait_until

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "deploy" / "cluster"))
import moto.s3.models as moto_models
from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from s3_standin import OneRequestAtATime, moto_app
from werkzeug.serving import make_server


@contextmanager
def served(app: Any) -> Iterator[str]:
    """`app` on a loopback port in this process, a thread per connection (as moto.server serves)."""
    server = make_server("127.0.0.1", free_port(), app, threaded=True, request_handler=MotoRequestHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(10)


def race(endpoint: str, condition: str, queued: Callable[[], int],
         monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], list[bytes], bytes]:
    """Two writers put one key with the same condition (If-Match on the ETag both read, or If-None-Match: * on an
    absent key). The first write to pass its check is held before its write until the other has passed its check
    too or is queued. Returns each writer's outcome ("ok" or S3's error code) sorted, the bodies that passed the
    check in order, and the body stored at the end."""
    client = s3_client(endpoint)
    bucket = f"race-{secrets.token_hex(6)}"
    client.create_bucket(Bucket=bucket)
    extra: dict[str, str] = {"IfNoneMatch": "*"}
    if condition == "if-match":
        client.put_object(Bucket=bucket, Key="k", Body=b"read by both")
        extra = {"IfMatch": client.get_object(Bucket=bucket, Key="k")["ETag"]}
    passed: list[bytes] = []  # the writes that passed their precondition and reached the backend's write
    write = moto_models.S3Backend.put_object

    def held(self: Any, bucket_name: str, key_name: str, value: bytes, *args: Any, **kwargs: Any) -> Any:
        if bucket_name == bucket:
            passed.append(value)
            if len(passed) == 1:
                wait_until(lambda: len(passed) > 1 or queued() > 0, 60,
                           "the other writer to pass its check or to wait its turn")
        return write(self, bucket_name, key_name, value, *args, **kwargs)

    monkeypatch.setattr(moto_models.S3Backend, "put_object", held)
    outcomes: list[str] = []

    def writer(name: str) -> None:
        try:
            s3_client(endpoint).put_object(Bucket=bucket, Key="k", Body=name.encode(), **extra)
            outcomes.append("ok")
        except ClientError as exc:
            outcomes.append(str(exc.response["Error"]["Code"]))

    threads = [threading.Thread(target=writer, args=(f"writer-{n}",)) for n in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not any(thread.is_alive() for thread in threads), "a writer did not finish"
    return sorted(outcomes), passed, client.get_object(Bucket=bucket, Key="k")["Body"].read()


@pytest.mark.parametrize("condition", ["if-match", "if-none-match"])
def test_the_standin_lets_one_of_two_conditional_writes_on_one_version_through(
        condition: str, monkeypatch: pytest.MonkeyPatch) -> None:
    app = moto_app()
    with served(app) as endpoint:
        outcomes, passed, stored = race(endpoint, condition, lambda: app.waiting, monkeypatch)
    assert outcomes == ["PreconditionFailed", "ok"]
    assert len(passed) == 1 and stored == passed[0]  # the other writer was refused at its check


@pytest.mark.parametrize("condition", ["if-match", "if-none-match"])
def test_moto_alone_lets_both_through_which_is_why_the_standin_exists(
        condition: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """If this fails, moto checks the condition and writes atomically by itself, and s3_standin.py can go."""
    with served(DomainDispatcherApplication(create_backend_app)) as endpoint:
        outcomes, passed, stored = race(endpoint, condition, lambda: 0, monkeypatch)
    assert outcomes == ["ok", "ok"] and len(passed) == 2 and stored in passed  # one of the two updates is lost


def test_an_answer_is_finished_before_the_next_request_runs() -> None:
    """The body is part of the turn: the first answer is held mid-body until the second request has either
    started (it must not) or is queued behind it."""
    order: list[str] = []

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterator[bytes]:
        name = environ["name"]
        order.append(f"{name} starts")
        start_response("200 OK", [])
        yield b"part"
        if name == "a":
            wait_until(lambda: serial.waiting > 0 or len(order) > 1, 60, "b to start or to wait its turn")
        order.append(f"{name} ends")
        yield b"end"

    serial = OneRequestAtATime(app)
    answers: dict[str, list[bytes]] = {}

    def call(name: str) -> None:
        answers[name] = serial({"name": name}, lambda *args: None)

    first = threading.Thread(target=call, args=("a",))
    first.start()
    wait_until(lambda: order, 60, "a to start")
    second = threading.Thread(target=call, args=("b",))
    second.start()
    first.join(60)
    second.join(60)
    assert order == ["a starts", "a ends", "b starts", "b ends"]
    assert answers == {"a": [b"part", b"end"], "b": [b"part", b"end"]}
