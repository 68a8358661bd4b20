"""The server's own settings: where chats are kept and signed, who may sign in, what is trusted, metrics."""
from __future__ import annotations

from pydantic import SecretStr

from ui.config.base import SettingsPart, Switch01, setting


class ServerSettings(SettingsPart):
    data_dir: str = setting("", "where saved chats and their workspaces live", accepts="a folder path",
                            default_text="./data beside app.py; on a Space with storage, /data/agentdeck")
    secret: SecretStr | None = setting(None, "the server secret that signs saved chats", min_length=16,
                                       default_text="a generated file in the data folder, mode 0600; with a chat "
                                                    "store, one the first replica creates in it")
    chat_store: str = setting("", "where saved chats' files live: `s3://bucket/prefix` for object storage several "
                                  "replicas share (`AWS_*` variables), another fsspec URL for one replica",
                              accepts="empty, s3://bucket/prefix or an fsspec URL", default_text="the data folder")
    redis_url: str = setting("", "Redis for chat leases, page presence, tombstones and visitors' limits, shared by "
                                 "replicas", accepts="a redis:// URL", default_text="kept in the process's memory")
    username: str = setting("", "with the password: turn on password protection (wrong passwords slow down, then "
                                "lock out)", accepts="text")
    password: SecretStr | None = setting(None, "the password of that login")
    trust_forwarded: Switch01 = setting(False, "take the visitor's address from X-Forwarded-For's right-most hop (only "
                                           "behind a proxy that sets it; a Space does)")
    hf_login: Switch01 = setting(False, "Gradio's mocked \"Sign in with Hugging Face\" on a loopback-only server "
                                    "(everyone becomes this machine's account); a real Space needs no variable")
    metrics_port: int | None = setting(None, "serve Prometheus metrics on 127.0.0.1:<port>/metrics, a listener "
                                             "only this machine reaches", ge=1, le=65535, default_text="off")
    metrics_token: SecretStr | None = setting(None, "serve /metrics on the app's port to requests with "
                                                    "`Authorization: Bearer <token>`", min_length=16,
                                              default_text="off")
