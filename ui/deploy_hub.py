"""The Hub side of `python -m ui.deploy`: check the token's rights, then change the Space step by step.

Nothing changes before the token is known to be able to write to the Space's namespace. Every step prints what
it did; a step that fails stops the deployment with what was done, what to run to finish (every step is safe
to repeat) and what to run to undo it. Files go in one commit that adds and deletes, so the Space never runs a mix
of two versions. Failures say whether the network or the Hub was at fault (connection refused, DNS, timeout
are not "the Hub refused").
"""
from __future__ import annotations

import secrets
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from huggingface_hub import HfApi

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DATA_MOUNT = "/data"
KEPT_ON_SPACE = frozenset({".gitattributes"})  # made by the Hub with the repo; never deleted by a deploy


@dataclass(frozen=True)
class DeployPlan:
    space: str
    files: list[str]  # paths on the Space, POSIX separators, sorted
    bucket: str | None
    server_token: bool
    root: Path = PROJECT_ROOT  # the folder the files are read from
    private: bool = False
    hardware: str | None = None
    uploads: dict[str, str] = field(default_factory=dict)  # path on the Space -> local path (relative to root)


class DeployError(Exception):
    """The deployment cannot go ahead or stopped; the message says why and what to do."""


def describe_failure(exc: BaseException, endpoint: str, timeout: float) -> str:
    """Name what went wrong: the network (refused, DNS, timeout) or the Hub's answer (HTTP status and message)."""
    from huggingface_hub.errors import HfHubHTTPError

    host = urlsplit(endpoint).netloc or endpoint
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    names = {cls.__name__ for item in chain for cls in type(item).__mro__}
    if isinstance(exc, HfHubHTTPError) and exc.response is not None:
        detail = str(exc).splitlines()[0] if str(exc) else ""
        return f"the Hub at {host} refused the request (HTTP {exc.response.status_code}): {detail}"
    if any(isinstance(item, socket.gaierror) for item in chain):
        return (f"network error: the name {host.split(':')[0]} could not be resolved (DNS); check your network, "
                "or --endpoint / HF_ENDPOINT")
    if any(isinstance(item, ConnectionRefusedError) for item in chain):
        return (f"network error: connection refused by {host} (nothing listens there); check --endpoint / "
                "HF_ENDPOINT, a proxy, or that the Hub is reachable")
    if "TimeoutException" in names or any(isinstance(item, TimeoutError) for item in chain):
        return (f"network error: {host} did not answer within {timeout:g} s (timeout); retry, or raise it with "
                "--timeout")
    if "NetworkError" in names or "TransportError" in names or any(isinstance(i, OSError) for i in chain):
        return f"network error talking to {host}: {type(exc).__name__}: {exc}"
    return f"{type(exc).__name__}: {exc}"


def cli_prefix(endpoint: str) -> str:
    """`HF_ENDPOINT=<endpoint> ` when this deployment talks to another Hub than the `hf` command would by default
    (`--endpoint`), else "". Why: an undo command printed bare would act on the default Hub, where a Space of the
    same name may exist and the token may work."""
    import shlex

    from huggingface_hub import constants

    if endpoint.rstrip("/") == str(constants.ENDPOINT).rstrip("/"):
        return ""
    return f"HF_ENDPOINT={shlex.quote(endpoint)} "


def check_token(api: HfApi, namespace: str) -> str:
    """The token's user name, after checking it may write repos under `namespace`; raises DeployError otherwise.
    Reads `whoami` only: nothing on the Hub changes."""
    from huggingface_hub.errors import HfHubHTTPError, LocalTokenNotFoundError

    tokens_page = f"{str(api.endpoint).rstrip('/')}/settings/tokens"
    try:
        who = api.whoami()
    except LocalTokenNotFoundError as exc:
        raise DeployError("no Hugging Face token: set HF_TOKEN, pass --token, or run `hf auth login` "
                          "(a token with write access)") from exc
    except HfHubHTTPError as exc:
        if exc.response is not None and exc.response.status_code == 401:
            raise DeployError("the Hub refused the token (HTTP 401: invalid or revoked): make a new one with "
                              f"write access at {tokens_page} and pass it with --token or HF_TOKEN") from exc
        raise
    name = str(who.get("name") or "")
    orgs = {str(org.get("name")) for org in who.get("orgs") or [] if isinstance(org, dict)}
    if namespace != name and namespace not in orgs:
        raise DeployError(f"the token belongs to {name or 'an unknown account'}, which is not {namespace} and not "
                          f"a member of it (organizations: {', '.join(sorted(orgs)) or 'none'}): use {name}/<space> "
                          f"or a token of {namespace}")
    access = (who.get("auth") or {}).get("accessToken") or {}
    role = access.get("role")
    if role == "write":
        return name
    if role == "fineGrained":
        for scope in (access.get("fineGrained") or {}).get("scoped") or []:
            entity = scope.get("entity") or {}
            if entity.get("name") == namespace and "repo.write" in (scope.get("permissions") or []):
                return name
        raise DeployError(f"the fine-grained token has no 'repo.write' permission on {namespace}: give it write "
                          "access to that namespace's repos in the token's settings, or use a write token")
    raise DeployError(f"the token is {role or 'of an unknown kind'}, not a write token: deploying needs a token "
                      f"with write access (make one at {tokens_page})")


@dataclass
class Deployment:
    """The steps of one deployment and their journal: what was done, and how to undo each."""

    plan: DeployPlan
    api: HfApi
    token: str | None
    rerun: str  # the command that runs this deployment again (to finish after a failure)
    say: Callable[[str], None] = print
    done: list[str] = field(default_factory=list)
    undo: list[str] = field(default_factory=list)  # commands that undo what was done, in the order done
    undo_by_hand: list[str] = field(default_factory=list)  # what no command undoes (said in words)
    existing_files: set[str] = field(default_factory=set)  # the Space's files before this deploy
    cli_prefix: str = ""  # what the undo commands need to reach this Hub (see `cli_prefix`)

    def _did(self, what: str, undo: str | None = None, by_hand: str | None = None) -> None:
        self.done.append(what)
        if undo:
            self.undo.append(undo)
        if by_hand:
            self.undo_by_hand.append(by_hand)
        self.say(f"  done: {what}")

    def run(self, endpoint: str, timeout: float) -> str:
        """Every step in order; returns the Space's URL, or raises DeployError saying how to finish or undo."""
        space = self.plan.space
        self.cli_prefix = cli_prefix(endpoint)
        self.say(f"Checking the token's rights on {space.split('/')[0]} (nothing changed yet)")
        try:
            user = check_token(self.api, space.split("/")[0])
        except DeployError:
            raise
        except Exception as exc:
            raise DeployError(f"checking the token failed: {describe_failure(exc, endpoint, timeout)}. "
                              "Nothing was changed.") from exc
        self.say(f"  ok: the token of {user} may write to {space.split('/')[0]}")
        steps: list[tuple[str, Callable[[], None]]] = [
            ("create or update the Space", self._space),
            ("set the Space's secrets", self._secrets),
        ]
        if self.plan.bucket:
            steps.append(("mount the Storage Bucket", self._bucket))
        if self.plan.hardware:
            steps.append(("request the hardware", self._hardware))
        steps.append(("commit the files", self._commit))
        for title, step in steps:
            self.say(f"Step: {title}")
            try:
                step()
            except KeyboardInterrupt as exc:  # Ctrl-C midway: say where it stopped, as for any failure
                raise DeployError(self._stopped(title, "interrupted")) from exc
            except Exception as exc:
                reason = exc if isinstance(exc, DeployError) else describe_failure(exc, endpoint, timeout)
                raise DeployError(self._stopped(title, str(reason))) from exc
        return f"{endpoint.rstrip('/')}/spaces/{space}"

    def _stopped(self, title: str, reason: str) -> str:
        lines = [f"could not {title}: {reason}."]
        lines.append("Done before it: " + ("; ".join(self.done) if self.done else "nothing (the Space is unchanged)")
                     + ".")
        lines.append(f"To finish, fix the cause and run again (every step is safe to repeat): {self.rerun}")
        if self.undo:
            lines.append("To undo instead, run: " + " && ".join(self.cli_prefix + command
                                                                 for command in reversed(self.undo)))
        for words in self.undo_by_hand:
            lines.append(f"And by hand: {words}.")
        return "\n".join(lines)

    def _space(self) -> None:
        from huggingface_hub.errors import RepositoryNotFoundError

        space = self.plan.space
        try:
            info = self.api.space_info(space)
        except RepositoryNotFoundError:
            info = None
        if info is None:
            self.api.create_repo(space, repo_type="space", space_sdk="gradio", private=self.plan.private)
            visibility = "private" if self.plan.private else "public"
            self._did(f"created the {visibility} Space {space}", f"hf repos delete {space} --type space --yes")
            self.existing_files = set()
            return
        self.existing_files = {sibling.rfilename for sibling in info.siblings or []}
        if self.plan.private and not info.private:
            self.api.update_repo_settings(space, private=True, repo_type="space")
            self._did(f"made the Space {space} private (it was public)",
                      f"hf repos settings {space} --type space --public")
        else:
            self._did(f"the Space {space} exists ({'private' if info.private else 'public'}); kept as it is")

    def _secrets(self) -> None:
        space = self.plan.space
        existing = set(self.api.get_space_secrets(space) or {})
        if "AGENTDECK_SECRET" in existing:
            self._did("kept the Space's AGENTDECK_SECRET (its saved chats stay valid)")
        else:
            self.api.add_space_secret(space, "AGENTDECK_SECRET", secrets.token_hex(32),
                                      description="Signs saved chats (generated by ui.deploy; keep it to keep "
                                                  "saved chats)")
            self._did("generated the AGENTDECK_SECRET secret",
                      f"hf spaces secrets delete {space} AGENTDECK_SECRET --yes")
        if self.plan.server_token:
            if not self.token:
                raise DeployError("--server-token needs the token itself: pass --token or set HF_TOKEN")
            self.api.add_space_secret(space, "HF_TOKEN", self.token, description="The server's own Hugging Face token")
            self._did("stored your token as the HF_TOKEN secret", f"hf spaces secrets delete {space} HF_TOKEN --yes")

    def _bucket(self) -> None:
        from huggingface_hub import Volume

        space, bucket = self.plan.space, str(self.plan.bucket)
        self.api.create_bucket(bucket, private=True, exist_ok=True)
        self._did(f"created (or found) the private bucket {bucket}")
        self.api.set_space_volumes(space, [Volume(type="bucket", source=bucket, mount_path=DATA_MOUNT)])
        self._did(f"mounted {bucket} at {DATA_MOUNT}", f"hf spaces volumes delete {space} --yes")
        self.api.add_space_variable(space, "AGENTDECK_DATA_DIR", f"{DATA_MOUNT}/agentdeck",
                                    description="Saved chats and workspaces on the mounted Storage Bucket")
        self._did(f"set AGENTDECK_DATA_DIR={DATA_MOUNT}/agentdeck",
                  f"hf spaces variables delete {space} AGENTDECK_DATA_DIR --yes")

    def _hardware(self) -> None:
        hardware = str(self.plan.hardware)
        runtime = self.api.request_space_hardware(self.plan.space, hardware)  # type: ignore[arg-type]
        before = getattr(runtime, "hardware", None)
        self._did(f"requested {hardware} hardware",
                  by_hand=f"set the hardware back in the Space's settings{f' (it ran on {before})' if before else ''}")

    def _commit(self) -> None:
        from huggingface_hub import CommitOperationAdd, CommitOperationDelete

        uploads = self.plan.uploads
        stale = sorted(self.existing_files - set(uploads) - KEPT_ON_SPACE)
        operations: list[Any] = [CommitOperationAdd(path_in_repo=remote, path_or_fileobj=str(self.plan.root / local))
                                 for remote, local in sorted(uploads.items())]
        operations += [CommitOperationDelete(path_in_repo=remote, is_folder=False) for remote in stale]
        info = self.api.create_commit(self.plan.space, operations, repo_type="space",
                                      commit_message="Deploy AgentDeck with ui.deploy")
        for remote in stale:
            self.say(f"    deleted {remote} (no longer in the project)")
        self._did(f"committed {len(uploads)} files and deleted {len(stale)} in one commit "
                  f"({str(getattr(info, 'oid', ''))[:12] or 'no id'})")
