"""Fixtures for the executor tests: one sandbox for the whole session where possible (a worker that preloads
numpy, pandas and matplotlib costs about 0.7 s of CPU to start; tests that need a fresh or special one make
their own).

Backends: the `sandbox` and `open_sandbox` fixtures, and every sandbox of a module marked
`pytest.mark.usefixtures("sandbox_backend")` (the attack suites), run once per backend this machine can use
(`agents.executor.backends.available()`), so a new backend is held to the same promises without a new test;
plus the test-only backends `AGENTDECK_TEST_BACKENDS` names (`TEST_BACKENDS`: remote sandboxes' stand-ins)."""

from __future__ import annotations

import os

import pytest

from agents.executor import PythonSandbox, backends

#: Test-only backends the suites also run on when AGENTDECK_TEST_BACKENDS names them (comma-separated): stand-ins
#: for remote sandboxes, slower to start than the real backends (a container per sandbox).
TEST_BACKENDS = {"supervised-docker": "tests.executor.remote_container:SupervisedDockerBackend",
                 "e2b-standin": "tests.executor.e2b_standin_docker:StandInE2BBackend",
                 "k8s-standin": "tests.executor.k8s_standin_docker:StandInK8sBackend"}
for _name in filter(None, os.environ.get("AGENTDECK_TEST_BACKENDS", "").split(",")):
    if _name.strip() in TEST_BACKENDS:
        backends.KNOWN.setdefault(_name.strip(), TEST_BACKENDS[_name.strip()])
BACKENDS = backends.available()
#: Backends whose worker runs in a sandbox elsewhere, watched by the supervisor beside it (agents/executor/remote/).
REMOTE_BACKENDS = frozenset({"e2b", "k8s", *TEST_BACKENDS})

SECRET = "sk-agentdeck-test-secret-9f3b2c"
os.environ["AGENTDECK_TEST_SECRET"] = SECRET  # the app's environment: must never reach a worker


def make_sandbox(tmp_path_factory, name="ws", **kwargs) -> PythonSandbox:
    workdir = tmp_path_factory.mktemp(name)
    kwargs.setdefault("authorized_imports", ["numpy", "pandas", "matplotlib"])
    kwargs.setdefault("timeout_s", 10)
    return PythonSandbox(workdir=str(workdir), **kwargs)


def pytest_collection_modifyitems(items) -> None:
    """Per backend pass of an attack suite: on a remote backend, `app_side_worker` tests are skipped (they read the
    worker's process on this machine; the supervisor's own readings are tested in test_remote_supervisor.py) and
    `remote_gap(why)` tests become strict xfails naming the promise the remote backends cannot hold (their
    security_report and the README's table of backends must say so too)."""
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is None or callspec.params.get("sandbox_backend") not in REMOTE_BACKENDS:
            continue
        side = item.get_closest_marker("app_side_worker")
        if side is not None:
            item.add_marker(pytest.mark.skip(reason=f"reads the worker on the app's machine: {side.args[0]}"))
        gap = item.get_closest_marker("remote_gap")
        if gap is not None:
            item.add_marker(pytest.mark.xfail(strict=True, reason=f"a remote backend's gap: {gap.args[0]}"))


@pytest.fixture(scope="module", params=BACKENDS)
def sandbox_backend(request):
    """The backend every sandbox of the module runs on (as `backends.DEFAULT`, the backend of `sandbox=None`, so
    sandboxes the tests build themselves are included); one pass of the module per usable backend."""
    old = backends.DEFAULT
    backends.DEFAULT = request.param
    yield request.param
    backends.DEFAULT = old


@pytest.fixture(scope="session", params=BACKENDS)
def sandbox(request, tmp_path_factory):
    sb = make_sandbox(tmp_path_factory, backend=request.param)
    yield sb
    sb.close()


@pytest.fixture(scope="session", params=BACKENDS)
def open_sandbox(request, tmp_path_factory):
    """authorized_imports=["*"]: layers 1-2 let everything import, so the OS layers are tested."""
    sb = make_sandbox(tmp_path_factory, "wild", authorized_imports=["*"], memory_limit_mb=512, backend=request.param)
    yield sb
    sb.close()


@pytest.fixture(scope="session")
def landlock_active(sandbox) -> bool:
    return sandbox.security_report()["landlock"]["active"]


@pytest.fixture
def assert_no_secret():
    """Check that the app's secret appears nowhere in an ExecutionResult."""

    def check(result) -> None:
        blob = f"{result.logs}{result.output}{result.error}"
        assert SECRET not in blob

    return check
