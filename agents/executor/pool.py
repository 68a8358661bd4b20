"""Warm starts: sandboxes started ahead of time, before a session needs one, and handed out once.

Why: a sandbox's start is dominated by loading its libraries (numpy and pandas: most of a second of CPU on a
2-core machine), which does not depend on the session. A backend with `Capabilities.warm_start` starts a host
from a spec without a workspace; the pool keeps `size` of them ready per spec (the spec less its workspace and
tools: the key) and `take` completes one for the session (`SandboxHost.assign`). A host is taken once and never
comes back: a used sandbox (one that ran a session's code, or that was assigned a workspace) is never pooled,
so nothing of one session can reach another. Refilling runs in a background thread, one start at a time, at the
worker's low priority. Sizes: `size` of `for_backend`/`CodeAgent.warm_up` (default 1 ready sandbox per spec in use;
0 turns it off; the app passes its AGENTDECK_SANDBOX_POOL).
"""

from __future__ import annotations

import atexit
import dataclasses
import logging
import threading
from collections.abc import Hashable

from .backend import SandboxBackend, SandboxHost, SandboxSpec
from .errors import SandboxError

log = logging.getLogger("agents.executor")
DEFAULT_SIZE = 1
MAX_SIZE = 16
CLOSE_WAIT_S = 60.0  # at most a start's own timeout
MAX_KEYS = 4  # specs kept warm at once (each key holds `size` sandboxes): the most recently asked for


def _key(spec: SandboxSpec) -> Hashable:
    """What a warm host must share with the session's spec: everything but the workspace and the tools."""
    bare = dataclasses.replace(spec, workspace=None, tools=(), env={})
    return (repr(bare), tuple(sorted(spec.env.items())))


class WarmPool:
    """Ready sandboxes of one backend, per spec; see the module docstring."""

    def __init__(self, backend: SandboxBackend, size: int = DEFAULT_SIZE) -> None:
        self.backend = backend
        self.size = max(0, min(MAX_SIZE, int(size)))
        self._lock = threading.Lock()
        self._ready: dict[Hashable, list[SandboxHost]] = {}
        self._templates: dict[Hashable, SandboxSpec] = {}
        self._wanted = threading.Event()
        self._closed = False
        self._thread: threading.Thread | None = None

    @property
    def enabled(self) -> bool:
        return self.size > 0 and self.backend.capabilities.warm_start and not self._closed

    def prewarm(self, spec: SandboxSpec) -> None:
        """Keep sandboxes of `spec` ready from now on (the app calls this at start with its default spec)."""
        if not self.enabled:
            return
        key = _key(spec)
        with self._lock:
            self._templates.pop(key, None)
            self._templates[key] = dataclasses.replace(spec, workspace=None, tools=())
            while len(self._templates) > MAX_KEYS:  # the least recently asked for goes, with its sandboxes
                old = next(iter(self._templates))
                del self._templates[old]
                for host in self._ready.pop(old, []):
                    host.close()
            if self._thread is None:
                self._thread = threading.Thread(target=self._refill, name="sandbox-pool", daemon=True)
                self._thread.start()
        self._wanted.set()

    def take(self, spec: SandboxSpec) -> SandboxHost | None:
        """A ready host completed for `spec` (its workspace assigned), or None when none is ready (the caller
        starts one cold). Asking marks `spec` as wanted, so the next session with the same spec finds one."""
        if not self.enabled or spec.workspace is None:
            return None
        key = _key(spec)
        host: SandboxHost | None = None
        with self._lock:
            ready = self._ready.get(key, [])
            while ready and host is None:
                candidate = ready.pop(0)
                if candidate.dead:
                    candidate.close()
                else:
                    host = candidate
        self.prewarm(spec)  # refill (and keep this spec among the most recent)
        if host is None:
            return None
        try:
            host.assign(spec)
        except SandboxError as exc:
            log.warning("a warm sandbox could not be used (%s); starting one cold", exc)
            host.close()
            return None
        return host

    def ready_count(self, spec: SandboxSpec) -> int:
        return len(self.ready_hosts(spec))

    def ready_hosts(self, spec: SandboxSpec) -> list[SandboxHost]:
        """The started, not yet taken hosts for `spec` (for the bench and tests: to wait until they settle)."""
        with self._lock:
            return [h for h in self._ready.get(_key(spec), []) if not h.dead]

    def pooled(self) -> int:
        """How many started hosts wait to be taken, for every spec (the operator's metrics)."""
        with self._lock:
            return sum(1 for hosts in self._ready.values() for h in hosts if not h.dead)

    def _next_missing(self) -> tuple[Hashable, SandboxSpec] | None:
        with self._lock:
            for key, template in reversed(self._templates.items()):  # the most recent first
                if len(self._ready.get(key, [])) < self.size:
                    return key, template
        return None

    def _refill(self) -> None:
        while not self._closed:
            missing = self._next_missing()
            if missing is None:
                self._wanted.wait()
                self._wanted.clear()
                continue
            key, template = missing
            try:
                host = self.backend.start(template)
            except Exception as exc:  # a backend that cannot start now: try again when next asked
                log.warning("the sandbox pool could not start a sandbox: %s", exc)
                self._wanted.wait()
                self._wanted.clear()
                continue
            with self._lock:
                if self._closed or key not in self._templates:
                    keep = False
                else:
                    self._ready.setdefault(key, []).append(host)
                    keep = True
            if not keep:
                host.close()

    def close(self) -> None:
        """Close every ready sandbox and stop refilling."""
        with self._lock:
            self._closed = True
            hosts = [h for ready in self._ready.values() for h in ready]
            self._ready.clear()
        self._wanted.set()
        for host in hosts:
            host.close()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            # A start in flight closes its host when it ends (the pool is closed); waited for, so that an exiting
            # app does not leave it behind half-made (a container and its workspace slot, on the Docker backend).
            thread.join(CLOSE_WAIT_S)


_pools: dict[str, WarmPool] = {}
_pools_lock = threading.Lock()


def _close_all() -> None:
    """At exit: ready sandboxes hold a worker and temp folders nobody else will release."""
    for pool in list(_pools.values()):
        try:
            pool.close()
        except Exception:
            pass


atexit.register(_close_all)


def pooled_sandboxes() -> int:
    """Ready sandboxes in all of the process's pools (`agentdeck_sandboxes{state="pooled"}`)."""
    with _pools_lock:
        pools = list(_pools.values())
    return sum(pool.pooled() for pool in pools)


def for_backend(backend: SandboxBackend, size: int | None = None) -> WarmPool:
    """The process's pool for `backend`: `size` ready sandboxes per spec when given (a pool made without one keeps
    `DEFAULT_SIZE`; a later `size` resizes it, ready sandboxes past it are kept until taken)."""
    with _pools_lock:
        pool = _pools.get(backend.name)
        if pool is None or pool.backend is not backend or pool._closed:
            pool = _pools[backend.name] = WarmPool(backend, DEFAULT_SIZE if size is None else size)
        elif size is not None:
            pool.size = max(0, min(MAX_SIZE, int(size)))
        return pool
