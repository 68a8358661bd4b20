"""Talking to a cluster (deploy/cluster/cluster.py) through its proxy as browsers would: each client carries its
affinity cookie, so the proxy sends all its requests to one replica."""
from __future__ import annotations

import secrets
import sys
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "deploy" / "cluster"))

# The page's own events are undocumented (the API page shows the API's endpoints, ui/api/): ask the info route for
# all endpoints, so gradio_client knows their parameters and these clients call them by name as before.
import gradio_client.utils  # noqa: E402
from cluster import Cluster  # noqa: E402

gradio_client.utils.RAW_API_INFO_URL = "info?serialize=False&all_endpoints=True"


def upstream_for(url: str, cookie: str) -> str:
    """The replica address the proxy sends this cookie's requests to (its X-AgentDeck-Upstream header)."""
    request = urllib.request.Request(url + "gradio_api/info", headers={"Cookie": f"agentdeck_replica={cookie}"})
    with urllib.request.urlopen(request, timeout=30) as reply:
        return str(reply.headers["X-AgentDeck-Upstream"])


def cookie_for(cluster: Cluster, replica: int) -> str:
    """A random affinity cookie the proxy maps to `replica` (as a browser would get one, drawn until it fits)."""
    for _ in range(200):
        cookie = secrets.token_hex(16)
        if cluster.replica_of(upstream_for(cluster.proxy_url, cookie)) == replica:
            return cookie
    raise AssertionError(f"no cookie mapped to replica {replica} in 200 draws")


def client(url: str, cookie: str | None = None):  # type: ignore[no-untyped-def]
    from gradio_client import Client

    headers = {"Cookie": f"agentdeck_replica={cookie}"} if cookie else None
    return Client(url, verbose=False, download_files=False, headers=headers)
