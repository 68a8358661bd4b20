"""The sandbox settings: the backend code runs on, its warm pool, its limits and the Docker engine."""
from __future__ import annotations

from pydantic import field_validator

from agents.executor import backends
from ui.config.base import SettingsPart, setting

DEFAULT_UIDS = "40000-59999"


def parse_uid_range(text: str) -> tuple[int, int]:
    """`40000-59999` -> (40000, 60000): the first id and one past the last (raises ValueError otherwise)."""
    low_text, dash, high_text = text.strip().partition("-")
    if not dash or not low_text.isdigit() or not high_text.isdigit() or not 0 < int(low_text) < int(high_text):
        raise ValueError(f"{text!r} is not a range of user ids")
    return int(low_text), int(high_text) + 1


class SandboxSettings(SettingsPart):
    sandbox: str = setting(backends.DEFAULT, "the sandbox backend code runs on (the app refuses to start on one "
                                             "this machine cannot use; `agents.executor.backends.available()`)",
                           accepts="one of " + ", ".join(backends.names()))
    sandbox_pool: int = setting(1, "sandboxes started ahead of time per sandbox setting in use, each handed to one "
                                   "session only (0: every sandbox starts cold)", ge=0, le=16)
    sandbox_uids: str = setting(DEFAULT_UIDS, "the user ids sandboxes run as when the app runs as root, one per "
                                              "live sandbox", accepts="a range of user ids, e.g. 40000-59999")
    max_sandboxes: int = setting(16, "live sandboxes on the server; idle ones are closed first and rebuilt from "
                                     "memory on their next message", ge=1, le=10_000)
    exec_timeout_s: float = setting(120.0, "time limit of one code execution, in seconds", ge=1, le=86_400)
    docker_host: str = setting("", "the Docker Engine of the `docker` backend", accepts="a Docker host URL",
                               default_text="`DOCKER_HOST`, else the private engine of `make docker-up` when it "
                                            "runs, else unix:///var/run/docker.sock")
    docker_image: str = setting("", "an image tag to use as built (`make sandbox-image` prints it) instead of "
                                    "assembling this machine's on the first start", accepts="an image tag")
    docker_cpus: float = setting(1.0, "CPUs per sandbox container", ge=0.1, le=1024)
    dockerd_dir: str = setting("/var/tmp/agentdeck-dockerd", "the private Docker engine's folder "
                                                             "(`make docker-up`)", accepts="a folder path")
    e2b_template: str = setting("", "the E2B template of the `e2b` backend: one built with AgentDeck's sandbox "
                                    "image (its key is E2B's own `E2B_API_KEY`)", accepts="a template name or id")
    e2b_timeout_s: int = setting(3600, "how long E2B keeps an idle session's sandbox alive (each step renews "
                                       "it), in seconds", ge=60, le=86_400)
    e2b_domain: str = setting("", "the E2B deployment's domain (a self-hosted one)", accepts="a domain name",
                              default_text="`E2B_DOMAIN`, else E2B's cloud")
    e2b_api_url: str = setting("", "the E2B API's address, when it is not api.<domain>", accepts="an http(s) URL",
                               default_text="https://api.<domain>")

    @field_validator("sandbox")
    @classmethod
    def _known_backend(cls, value: str) -> str:
        if value not in backends.names():
            raise ValueError(f"unknown sandbox backend {value!r}")
        return value

    @field_validator("sandbox_uids")
    @classmethod
    def _uid_range(cls, value: str) -> str:
        parse_uid_range(value)
        return value.strip()
