"""Loopback servers the shared-store tests run against: Debian's redis-server and moto's S3 server, each in a
temp folder on a free port, stopped (by its own pid) when the test is done. moto runs behind
deploy/cluster/s3_standin.py, one request at a time, so its conditional writes are atomic as S3's are."""
from __future__ import annotations

import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from ui_testlib import free_port
from waiting import wait_until

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"
S3_STANDIN = Path(__file__).resolve().parents[2] / "deploy" / "cluster" / "s3_standin.py"


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


@contextmanager
def redis_server(folder: Path) -> Iterator[str]:
    """A throwaway redis-server on loopback (no persistence); yields its redis:// URL."""
    if not Path(REDIS_SERVER).exists():
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    port = free_port()
    process = subprocess.Popen([REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(folder),
                                "--save", "", "--appendonly", "no", "--protected-mode", "yes"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: process.poll() is not None or _accepts(port), 20, "redis-server to listen")
        if process.poll() is not None:
            raise AssertionError(f"redis-server exited with {process.returncode}")
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        _stop(process)


@contextmanager
def moto_s3_server(folder: Path) -> Iterator[str]:
    """moto's S3-compatible server on loopback, serialised (s3_standin.py); yields its http:// endpoint."""
    port = free_port()
    log = (folder / "moto.log").open("wb")
    process = subprocess.Popen([sys.executable, str(S3_STANDIN), "--host", "127.0.0.1", "--port", str(port)],
                               stdout=log, stderr=subprocess.STDOUT, cwd=folder)
    try:
        wait_until(lambda: process.poll() is not None or _accepts(port), 60, "moto's S3 server to listen")
        if process.poll() is not None:
            raise AssertionError(f"moto's server exited with {process.returncode}: {(folder / 'moto.log').read_text()}")
        yield f"http://127.0.0.1:{port}"
    finally:
        _stop(process)
        log.close()


def s3_client(endpoint: str):  # type: ignore[no-untyped-def]
    import boto3

    return boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="testing", aws_secret_access_key="testing",
                        region_name="us-east-1")


@pytest.fixture(scope="module")
def s3_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """moto's S3 server for a test module (import this fixture by name into the module)."""
    with moto_s3_server(tmp_path_factory.mktemp("moto")) as endpoint:
        yield endpoint


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A redis-server for a test module (import this fixture by name into the module)."""
    with redis_server(tmp_path_factory.mktemp("redis")) as url:
        yield url
