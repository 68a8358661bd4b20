"""Several AgentDeck replicas on this machine, for real: Redis, an S3 stand-in, two app replicas and nginx.

    python deploy/cluster/cluster.py up [--folder .cluster] [--proxy-port 8080]   (make cluster-up)
    python deploy/cluster/cluster.py down [--folder .cluster]                     (make cluster-down)

Everything listens on loopback. `up` starts Debian's redis-server (no persistence), moto's S3-compatible server
(behind s3_standin.py: one request at a time, so conditional writes are atomic as on S3; its bucket created here), the
replicas (`python app.py`, each with its own data folder for workspaces, sharing saved chats through
AGENTDECK_CHAT_STORE=s3://... and leases, presence, tombstones and limits through AGENTDECK_REDIS_URL; no
AGENTDECK_SECRET, so the first replica creates the signing secret in the store) and nginx with the project's config
(nginx.conf.template: cookie affinity by consistent hashing). It prints the proxy's address and records the processes
it started (`cluster.json` in the folder); `down` stops exactly those. The tests and bench/cluster.py use `Cluster`
directly, each in a temp folder on free ports.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = Path(__file__).with_name("nginx.conf.template")
BUCKET = "agentdeck-chats"
#: What the replicas get besides the operator's own environment: shared stores, the proxy's forwarded address.
S3_KEYS = {"AWS_ACCESS_KEY_ID": "cluster", "AWS_SECRET_ACCESS_KEY": "cluster", "AWS_DEFAULT_REGION": "us-east-1"}


class ClusterError(RuntimeError):
    """A part of the cluster did not start; the message names it and its log."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.3):
            return True
    except OSError:
        return False


def wait_for(check: Any, timeout: float, what: str, process: subprocess.Popen[bytes] | None = None,
             log: Path | None = None) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if process is not None and process.poll() is not None:
            tail = log.read_text(errors="replace")[-2000:] if log and log.exists() else ""
            raise ClusterError(f"{what}: the process exited with {process.returncode}.\n{tail}")
        if time.monotonic() > deadline:
            raise ClusterError(f"{what}: not ready after {timeout:.0f} s (log: {log}).")
        time.sleep(0.1)


def serving(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "config", timeout=3):
            return True
    except OSError:
        return False


@dataclass
class Cluster:
    folder: Path
    replicas: int = 2
    proxy_port: int = 0
    extra_env: dict[str, str] = field(default_factory=dict)
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    ports: dict[str, int] = field(default_factory=dict)

    @property
    def proxy_url(self) -> str:
        return f"http://127.0.0.1:{self.ports['proxy']}/"

    def replica_url(self, index: int) -> str:
        return f"http://127.0.0.1:{self.ports[f'replica-{index}']}/"

    def replica_of(self, upstream: str) -> int:
        """Which replica an `X-AgentDeck-Upstream` value names (the last address nginx tried)."""
        port = int(upstream.split(",")[-1].strip().rsplit(":", 1)[-1])
        return next(i for i in range(self.replicas) if self.ports[f"replica-{i}"] == port)

    def _spawn(self, name: str, argv: list[str], env: dict[str, str] | None = None,
               cwd: Path | None = None) -> subprocess.Popen[bytes]:
        log = (self.folder / f"{name}.log").open("ab")
        process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=cwd,
                                   start_new_session=True)  # outlives `make cluster-up`; `down` stops it by pid
        log.close()
        self.processes[name] = process
        self._record()
        return process

    def _record(self) -> None:
        (self.folder / "cluster.json").write_text(json.dumps({
            "pids": {name: p.pid for name, p in self.processes.items()}, "ports": self.ports}, indent=1))

    def start(self) -> str:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.ports = {"redis": free_port(), "s3": free_port(), "proxy": self.proxy_port or free_port(),
                      **{f"replica-{i}": free_port() for i in range(self.replicas)}}
        try:
            self._start_stores()
            for index in range(self.replicas):
                self.start_replica(index)
            self._start_proxy()
            for index in range(self.replicas):
                wait_for(lambda i=index: serving(self.replica_url(i)), 180, f"replica {index}",
                         self.processes[f"replica-{index}"], self.folder / f"replica-{index}.log")
            wait_for(lambda: serving(self.proxy_url), 30, "nginx", self.processes["nginx"],
                     self.folder / "nginx-error.log")
        except BaseException:
            self.stop()
            raise
        return self.proxy_url

    def _start_stores(self) -> None:
        redis_server = shutil.which("redis-server") or "/usr/sbin/redis-server"
        (self.folder / "redis").mkdir(exist_ok=True)
        redis = self._spawn("redis", [redis_server, "--port", str(self.ports["redis"]), "--bind", "127.0.0.1",
                                      "--dir", str(self.folder / "redis"), "--save", "", "--appendonly", "no"])
        s3 = self._spawn("s3", [sys.executable, str(Path(__file__).with_name("s3_standin.py")), "--host", "127.0.0.1",
                                "--port", str(self.ports["s3"])], cwd=self.folder)  # moto, one request at a time
        wait_for(lambda: accepts(self.ports["redis"]), 20, "redis-server", redis, self.folder / "redis.log")
        wait_for(lambda: accepts(self.ports["s3"]), 60, "moto's S3 server", s3, self.folder / "s3.log")
        import boto3  # type: ignore[import-untyped]

        client = boto3.client("s3", endpoint_url=self.s3_endpoint, aws_access_key_id=S3_KEYS["AWS_ACCESS_KEY_ID"],
                              aws_secret_access_key=S3_KEYS["AWS_SECRET_ACCESS_KEY"], region_name="us-east-1")
        client.create_bucket(Bucket=BUCKET)

    @property
    def s3_endpoint(self) -> str:
        return f"http://127.0.0.1:{self.ports['s3']}"

    @property
    def redis_url(self) -> str:
        return f"redis://127.0.0.1:{self.ports['redis']}/0"

    def replica_env(self, index: int) -> dict[str, str]:
        data = self.folder / f"replica-{index}"
        data.mkdir(exist_ok=True)
        return {**os.environ, **S3_KEYS, "AWS_ENDPOINT_URL": self.s3_endpoint,
                "AGENTDECK_CHAT_STORE": f"s3://{BUCKET}/chats", "AGENTDECK_REDIS_URL": self.redis_url,
                "AGENTDECK_DATA_DIR": str(data), "AGENTDECK_TRUST_FORWARDED": "1",
                "GRADIO_SERVER_NAME": "127.0.0.1", "GRADIO_SERVER_PORT": str(self.ports[f"replica-{index}"]),
                "GRADIO_ANALYTICS_ENABLED": "False", "MPLBACKEND": "Agg", "PYTHONUNBUFFERED": "1",
                **self.extra_env}

    def start_replica(self, index: int) -> subprocess.Popen[bytes]:
        return self._spawn(f"replica-{index}", [sys.executable, str(ROOT / "app.py")], env=self.replica_env(index),
                           cwd=ROOT)

    def _start_proxy(self) -> None:
        nginx = shutil.which("nginx") or "/usr/sbin/nginx"
        temp = self.folder / "nginx-tmp"
        temp.mkdir(exist_ok=True)
        as_root = os.geteuid() == 0
        if as_root:  # nginx's workers run as nobody: they write request bodies here
            for path in (self.folder, temp):
                path.chmod(0o755 if path == self.folder else 0o1777)
        servers = "\n".join(f"        server 127.0.0.1:{self.ports[f'replica-{i}']} max_fails=1 fail_timeout=30s;"
                            for i in range(self.replicas))
        config = TEMPLATE.read_text().format(
            folder=self.folder, servers=servers, listen=f"127.0.0.1:{self.ports['proxy']}",
            max_body_mb=200, user_line="user nobody nogroup;" if as_root else "")
        (self.folder / "nginx.conf").write_text(config)
        self._spawn("nginx", [nginx, "-p", str(self.folder), "-c", str(self.folder / "nginx.conf"),
                              "-e", str(self.folder / "nginx-error.log"), "-g", "daemon off;"])

    def kill_replica(self, index: int, sig: int = signal.SIGKILL) -> None:
        process = self.processes[f"replica-{index}"]
        os.kill(process.pid, sig)
        process.wait(30)

    def stop(self) -> None:
        stop_recorded(self.folder, self.processes)


def stop_recorded(folder: Path, processes: dict[str, subprocess.Popen[bytes]] | None = None) -> list[str]:
    """Stop the processes `up` started (by the pids it recorded; each a session leader, so its children too)."""
    record = folder / "cluster.json"
    pids: dict[str, int] = {name: p.pid for name, p in (processes or {}).items()}
    if not pids and record.exists():
        pids = json.loads(record.read_text()).get("pids", {})
    stopped = []
    for name, pid in pids.items():
        try:
            os.killpg(pid, signal.SIGTERM)  # the session `up` started it in: the app's sandbox workers too
            stopped.append(name)
        except ProcessLookupError:
            continue
    deadline = time.monotonic() + 20
    for name, pid in pids.items():
        process = (processes or {}).get(name)
        while time.monotonic() < deadline:
            if process is not None:
                if process.poll() is not None:
                    break
            else:
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    break
            time.sleep(0.1)
        else:
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    record.unlink(missing_ok=True)
    return stopped


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["up", "down"])
    parser.add_argument("--folder", default=str(ROOT / ".cluster"), help="logs, data and the pids (.cluster)")
    parser.add_argument("--proxy-port", type=int, default=int(os.environ.get("CLUSTER_PORT", "8080")))
    args = parser.parse_args(argv)
    folder = Path(args.folder).resolve()
    if args.command == "down":
        stopped = stop_recorded(folder)
        print(f"Stopped: {', '.join(stopped) or 'nothing was running'}.")
        return 0
    if (folder / "cluster.json").exists():
        print(f"A cluster started from {folder} may still run: `make cluster-down` first.", file=sys.stderr)
        return 1
    cluster = Cluster(folder, proxy_port=args.proxy_port)
    try:
        url = cluster.start()
    except ClusterError as exc:
        print(f"The cluster did not start: {exc}", file=sys.stderr)
        return 1
    print(f"Redis {cluster.redis_url}, S3 stand-in {cluster.s3_endpoint} (bucket {BUCKET}), replicas "
          f"{', '.join(cluster.replica_url(i) for i in range(cluster.replicas))}; logs in {folder}.")
    print(f"Open {url}  (stop with: make cluster-down)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
