"""Attack on a remote workspace's files during a step (issue 28): E2B's file API follows links and checks a path
(no link on the way, a regular file) in one request and reads or writes it in the next. Between steps the worker
is frozen, so it cannot swap the file for a link in between; during a step it is not, and the app does reach the
files then: a tool the code calls (speech_to_text reads an upload), the files panel, a tab's download. Code with a
thread that flips a name between a file and a link to a path the worker's layers hide (but the service's user can
read or write) then wins the race. The host must hold the worker still for every file operation it makes while
the worker runs, and let it go on afterwards."""
from __future__ import annotations

import threading
from typing import Any

import pytest

from agents.executor.backend import FileInfo
from tests.executor.test_remote_link import make_host, polite, worker_frame


class Recorded:
    """The file API and the supervisor's control requests in one log, in the order the app made them."""

    def __init__(self) -> None:
        self.log: list[str] = []

    def supervisor(self, req: dict[str, Any]) -> list[bytes]:
        self.log.append(req["op"])
        return polite(req)

    def put(self, relpath: str, data: bytes, max_bytes: int) -> None:
        self.log.append("files.put")

    def get(self, relpath: str, max_bytes: int) -> bytes:
        self.log.append("files.get")
        return b"data"

    def list(self, max_entries: int) -> dict[str, FileInfo]:
        return {"data.txt": FileInfo(4, 1)}

    def remove(self, relpath: str) -> None:
        self.log.append("files.remove")


@pytest.fixture
def running(tmp_path):
    seen = Recorded()
    host, stream, _ = make_host(tmp_path, seen.supervisor)
    host._files = seen
    stream.push(worker_frame({"op": "ready", "layers": []}))
    host.wait_ready(5)
    host.freeze()
    host.send({"op": "run", "id": "a"})  # a step runs: the supervisor thawed the worker to hand it this
    seen.log.clear()
    yield host, seen
    host.close()


@pytest.mark.parametrize("operation", ["get", "put", "remove"])
def test_attack_a_file_operation_during_a_step_holds_the_worker_still(running, operation):
    host, seen = running
    if operation == "get":
        assert host.get_file("data.txt") == b"data"
    elif operation == "put":
        host.put_file("data.txt", b"new")
    else:
        host.remove_file("data.txt")
    assert seen.log == ["freeze", f"files.{operation}", "thaw"], seen.log
    assert not host._frozen  # the step goes on


def test_between_steps_a_file_operation_costs_no_control_request(running):
    host, seen = running
    host.freeze()  # the step ended
    seen.log.clear()
    host.get_file("data.txt")
    host.put_file("data.txt", b"new")
    assert seen.log == ["files.get", "files.put"]
    assert host._frozen


def test_a_refused_operation_still_lets_the_worker_go_on(running):
    host, seen = running

    def refuse(relpath: str, max_bytes: int) -> bytes:
        seen.log.append("files.get")
        raise PermissionError("a link")

    seen.get = refuse  # type: ignore[method-assign]
    with pytest.raises(PermissionError):
        host.get_file("data.txt")
    assert seen.log == ["freeze", "files.get", "thaw"]


class Watched:
    """The host's lock, telling when a thread has to wait for it."""

    def __init__(self, lock: Any) -> None:
        self.lock, self.contended = lock, threading.Event()

    def __enter__(self) -> None:
        if not self.lock.acquire(blocking=False):
            self.contended.set()
            self.lock.acquire()

    def __exit__(self, *exc: object) -> None:
        self.lock.release()


def test_a_step_that_ends_during_a_file_operation_leaves_the_worker_frozen(running):
    """A tab reads a file while the step is ending: the step's freeze must not be undone by the read's thaw."""
    host, seen = running
    host._still = watched = Watched(host._still)
    reading, release = threading.Event(), threading.Event()

    def slow_get(relpath: str, max_bytes: int) -> bytes:
        seen.log.append("files.get")
        reading.set()
        release.wait(10)
        return b"data"

    seen.get = slow_get  # type: ignore[method-assign]
    tab = threading.Thread(target=host.get_file, args=("data.txt",))
    tab.start()
    assert reading.wait(10)
    step_end = threading.Thread(target=host.freeze)
    step_end.start()
    waited = watched.contended.wait(10)  # the step's end waits for the read to let the worker go
    release.set()
    tab.join(10)
    step_end.join(10)
    states = [op for op in seen.log if op in ("freeze", "thaw")]
    assert waited and states[-1] == "freeze", seen.log
    assert host._frozen
