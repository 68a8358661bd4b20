"""The operator's sandbox gauge counts the three states the metrics promise: live, starting and pooled (started
ahead of time by the warm pool, waiting for a session)."""
from __future__ import annotations

from agents.executor import backends
from agents.executor import pool as warm
from agents.executor.backend import SandboxSpec
from tests.waiting import wait_until
from ui.web.metrics import SessionCollector


class _Registry:
    """The two figures SessionCollector reads of the session registry."""

    def __len__(self) -> int:
        return 3

    def sandbox_counts(self) -> dict[str, int]:
        return {"live": 2, "starting": 1}


def _sandboxes() -> dict[str, float]:
    family = next(f for f in SessionCollector(_Registry()).collect() if f.name == "agentdeck_sandboxes")
    return {sample.labels["state"]: sample.value for sample in family.samples}


def test_the_sandbox_gauge_counts_live_starting_and_pooled_sandboxes():
    pool = warm.for_backend(backends.get("local"), size=1)
    spec = SandboxSpec(workspace=None, authorized_imports=())
    try:
        pool.prewarm(spec)
        wait_until(lambda: _sandboxes().get("pooled") == 1, 60, "the pooled sandbox counted")
        assert _sandboxes() == {"live": 2, "starting": 1, "pooled": 1}
    finally:
        pool.close()
    assert _sandboxes()["pooled"] == 0  # a closed pool holds none
