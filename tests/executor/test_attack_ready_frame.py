"""Attack: the worker's `ready` frame as a hostile remote sandbox sends it (a compromised supervisor or worker on
the other end of the stream: tests/executor/test_remote_link.py's scripted stream). `SupervisedHost.wait_ready`
checks only its `op`; `PythonSandbox` then reads its `layers` and `warnings` and builds the security report from
them. A malformed frame must be a clear start error with the sandbox killed (not a TypeError out of the app's
step), and the worker's claims must not stand in for the entries the app makes itself (the AST guard, the import
policy, the backend, the host's own layers).
"""

from __future__ import annotations

from typing import Any

import pytest

from agents.executor import PythonSandbox
from agents.executor.backend import SandboxSpec
from agents.executor.errors import SandboxStartError
from agents.executor.remote import SupervisedHost
from tests.executor.test_remote_link import NoFiles, ScriptedStream, polite, worker_frame

GOOD_LAYER = {"name": "landlock", "active": True, "detail": "files"}


class ScriptedBackend:
    """A remote backend whose every sandbox's worker announces `ready` (anything at all) once started."""

    name = "scripted"
    capabilities = SupervisedHost.capabilities

    def __init__(self, ready: Any) -> None:
        self.ready = ready
        self.hosts: list[SupervisedHost] = []

    def unavailable_reason(self) -> str | None:
        return None

    def start(self, spec: SandboxSpec) -> SupervisedHost:
        def handler(req: dict[str, Any]) -> list[bytes]:
            replies = polite(req)
            if req["op"] == "start":
                replies.append(worker_frame(self.ready))
            return replies

        host = SupervisedHost(ScriptedStream(handler), NoFiles(), host_id=f"s{len(self.hosts)}", on_close=lambda: None,
                              spec=spec, control_timeout_s=2.0)
        self.hosts.append(host)
        return host

    def attach(self, host_id: str) -> SupervisedHost:
        raise NotImplementedError


MALFORMED = {
    "layers-not-a-list": {"op": "ready", "layers": "landlock"},
    "layer-not-an-object": {"op": "ready", "layers": [1]},
    "layer-without-name": {"op": "ready", "layers": [{"active": True, "detail": ""}]},
    "active-not-bool": {"op": "ready", "layers": [{**GOOD_LAYER, "active": "yes"}]},
    "detail-huge": {"op": "ready", "layers": [{**GOOD_LAYER, "detail": "x" * 100_000}]},
    "name-huge": {"op": "ready", "layers": [{**GOOD_LAYER, "name": "n" * 10_000}]},
    "layers-many": {"op": "ready", "layers": [{**GOOD_LAYER, "name": f"l{i}"} for i in range(1000)]},
    "warnings-not-texts": {"op": "ready", "layers": [GOOD_LAYER], "warnings": [{"x": 1}]},
    "warnings-not-a-list": {"op": "ready", "layers": [GOOD_LAYER], "warnings": 5},
}


@pytest.mark.parametrize("ready", list(MALFORMED.values()), ids=list(MALFORMED))
def test_a_malformed_ready_frame_is_a_start_error_and_the_sandbox_is_killed(tmp_path, ready):
    backend = ScriptedBackend(ready)
    sb = PythonSandbox(workdir=str(tmp_path / "ws"), backend=backend, timeout_s=5)  # type: ignore[arg-type]
    try:
        with pytest.raises(SandboxStartError, match="ready"):
            sb.security_report()
        assert backend.hosts and all(host.dead for host in backend.hosts)
    finally:
        sb.close()


def test_the_workers_layers_do_not_replace_what_the_app_reports_itself(tmp_path):
    claims = [{"name": name, "active": True, "detail": "claimed by the worker"}
              for name in ("ast_guard", "import_policy", "backend")]
    backend = ScriptedBackend({"op": "ready", "layers": [*claims, GOOD_LAYER], "warnings": []})
    sb = PythonSandbox(workdir=str(tmp_path / "ws"), backend=backend, timeout_s=5)  # type: ignore[arg-type]
    try:
        report = sb.security_report()
        assert report["landlock"] == {"active": True, "detail": "files"}  # the worker's own layer, as it says
        for name in ("ast_guard", "import_policy", "backend"):
            assert report[name]["detail"] != "claimed by the worker", name
    finally:
        sb.close()
