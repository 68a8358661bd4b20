"""One E2B sandbox of one session: created (or reconnected) through the SDK, its supervisor's stream, its files.

Why apart from the host: this is everything that is E2B's (the requests to the service and what they hold); the
host that `PythonSandbox` talks to is the remote package's `SupervisedHost`, the same for every remote backend.
What the service is asked for: the template, internet access off, the sandbox's lifetime (renewed on each step,
so a sandbox whose app died ends itself), metadata naming the session so an operator can tell whose it is.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import shlex
from pathlib import Path
from typing import Any

from ..errors import SandboxError, SandboxStartError
from .errors import describe
from .files import E2BFiles
from .settings import E2BSettings
from .stream import CommandStream

APP_METADATA = "agentdeck"
RECORD = "/root/.agentdeck/host.json"  # root's: the worker's layers keep it from reading it, its uid from changing it
RECORD_MAX_BYTES = 1024 * 1024
RECORD_LABEL = b"agentdeck-e2b-host-record\0"


def relay_source() -> str:
    """`relay.py`'s text, run with `python -c` in the sandbox (standard library only)."""
    return Path(__file__).with_name("relay.py").read_text(encoding="utf-8")


class E2BSession:
    """A live E2B sandbox: `id` (what a chat records; `E2BBackend.attach` takes it), `stream`, `files`."""

    def __init__(self, settings: E2BSettings, sandbox: Any) -> None:
        self.settings = settings
        self.sandbox = sandbox
        self.id: str = str(sandbox.sandbox_id)
        self.hint = f"E2B sandbox {self.id}: "
        self.files = E2BFiles(sandbox, settings.workdir, self.hint)
        self.stream: CommandStream | None = None
        self.paused = False
        self.closed = False

    @classmethod
    def create(cls, settings: E2BSettings, session_name: str, owner: str = "") -> E2BSession:
        """A new sandbox from the template; `SandboxStartError` naming the setting when the service refuses."""
        from e2b import Sandbox

        try:
            sandbox = Sandbox.create(template=settings.template, timeout=settings.timeout_s,
                                     metadata={APP_METADATA: "1", "session": session_name[:200],
                                               **({"owner": owner[:200]} if owner else {})},
                                     allow_internet_access=False,
                                     **settings.connection())
        except Exception as exc:
            raise SandboxStartError(describe(exc, "could not start an E2B sandbox: ")) from exc
        return cls(settings, sandbox)

    @classmethod
    def connect(cls, settings: E2BSettings, sandbox_id: str) -> E2BSession:
        """The running (or paused: the service resumes it) sandbox of that id; `SandboxError` if it is gone."""
        from e2b import Sandbox

        try:
            sandbox = Sandbox.connect(sandbox_id, timeout=settings.timeout_s,
                                      **settings.connection())
        except Exception as exc:
            raise SandboxError(describe(exc, f"could not reattach E2B sandbox {sandbox_id}: ")) from exc
        return cls(settings, sandbox)

    @staticmethod
    def owner_of(settings: E2BSettings, sandbox_id: str) -> str:
        """The owner the sandbox was created with (its metadata, read from the service's listing: a paused
        sandbox stays paused); `SandboxError` if it is gone. Checked before `connect`, which would resume it."""
        from e2b import Sandbox

        try:
            info = Sandbox.get_info(sandbox_id, **settings.connection())
        except Exception as exc:
            raise SandboxError(describe(exc, f"could not reattach E2B sandbox {sandbox_id}: ")) from exc
        metadata = getattr(info, "metadata", None)
        owner = metadata.get("owner") if isinstance(metadata, dict) else None
        return owner if isinstance(owner, str) else ""

    def command(self) -> str:
        """The shell command line that starts the supervisor: the relay's source run by the template's Python
        (the image holds the executor package, not `agents`), the supervisor's command line as its arguments."""
        if self.settings.command:
            return self.settings.command
        from ..remote.interface import supervisor_command

        argv = [self.settings.python, "-I", "-S", "-c", relay_source(),
                *supervisor_command(workdir=self.settings.workdir, python=self.settings.python)]
        return shlex.join(argv)

    def start_supervisor(self) -> CommandStream:
        """Start the supervisor (through the relay) as the sandbox's root (it starts the worker as the worker's
        user and watches it), stdin open, no time limit on the stream (the sandbox's lifetime bounds it)."""
        try:
            if not self.sandbox.files.exists(self.settings.workdir):
                self.sandbox.files.make_dir(self.settings.workdir)
            handle = self.sandbox.commands.run(self.command(), background=True, stdin=True, timeout=0,
                                               cwd=self.settings.workdir, user="root")
        except Exception as exc:
            raise SandboxStartError(describe(exc, f"{self.hint}could not start the supervisor: ")) from exc
        self.stream = CommandStream(self.sandbox, handle, self.hint)
        return self.stream

    def reattach_supervisor(self) -> CommandStream:
        """Take over the stream of the supervisor already running in a reconnected sandbox (found among the
        sandbox's commands by its command line); `SandboxError` if it is not running any more."""
        try:
            running = self.sandbox.commands.list()
            pid = next((p.pid for p in running if self.command() in " ".join(p.args)), None)
            if pid is None:
                raise SandboxError(f"{self.hint}its supervisor is no longer running (the sandbox restarted or the "
                                   f"worker ended): the chat's variables are gone")
            handle = self.sandbox.commands.connect(pid, timeout=0)
        except SandboxError:
            raise
        except Exception as exc:
            raise SandboxError(describe(exc, f"{self.hint}could not reattach the supervisor: ")) from exc
        self.stream = CommandStream(self.sandbox, handle, self.hint)
        return self.stream

    def _record_mac(self, body: bytes) -> str:
        """The app's seal on this sandbox's record: an HMAC keyed by the team's API key (which never enters a
        sandbox) and bound to this sandbox's id, so a record changed in the sandbox, or copied from another
        sandbox, does not verify."""
        key = hmac.new(str(self.settings.api_key or "").encode(), RECORD_LABEL + self.id.encode(),
                       hashlib.sha256).digest()
        return hmac.new(key, body, hashlib.sha256).hexdigest()

    def save_record(self, record: dict[str, Any]) -> None:
        """What another replica needs to reattach (the spec, the worker's ready frame), kept in the sandbox as
        root (`RECORD`, out of the worker's reach) and sealed (`_record_mac`): the file comes back from the
        sandbox, so a later attach takes nothing from it that the app did not write (issue: a rewritten record
        named a folder of the app's machine as the workspace, which the attach then copied into the sandbox)."""
        body = json.dumps(record, separators=(",", ":"), sort_keys=True)
        data = json.dumps({"record": body, "mac": self._record_mac(body.encode())}).encode()
        try:
            self.sandbox.files.write(RECORD, data, user="root")
        except Exception as exc:
            raise SandboxError(describe(exc, f"{self.hint}could not record the sandbox for reattaching: ")) from exc

    def load_record(self) -> dict[str, Any]:
        """The record `save_record` kept; `SandboxError` if it is missing, too large, not sealed by this app for
        this sandbox, or not a JSON object."""
        try:
            reader = self.sandbox.files.read(RECORD, format="stream", user="root")
            data = bytearray()
            try:
                for chunk in reader:
                    data += chunk
                    if len(data) > RECORD_MAX_BYTES:
                        raise SandboxError(f"{self.hint}its record is over {RECORD_MAX_BYTES} bytes")
            finally:
                reader.close()
            envelope = json.loads(bytes(data))
        except SandboxError:
            raise
        except Exception as exc:
            raise SandboxError(describe(exc, f"{self.hint}no usable record to reattach it: ")) from exc
        body, mac = (envelope.get("record"), envelope.get("mac")) if isinstance(envelope, dict) else (None, None)
        if not isinstance(body, str) or not isinstance(mac, str) \
                or not hmac.compare_digest(self._record_mac(body.encode()), mac):
            raise SandboxError(f"{self.hint}its record was not written by this app for this sandbox (changed in "
                               "the sandbox, copied from another, or sealed with another E2B API key): not "
                               "reattached")
        try:
            record = json.loads(body)
        except ValueError as exc:
            raise SandboxError(f"{self.hint}its record is not JSON") from exc
        if not isinstance(record, dict):
            raise SandboxError(f"{self.hint}its record is not an object")
        return record

    def renew(self) -> None:
        """Extend the sandbox's life by `timeout_s` from now (each step: an active chat never times out)."""
        try:
            self.sandbox.set_timeout(self.settings.timeout_s)
        except Exception as exc:
            raise SandboxError(describe(exc, self.hint)) from exc

    def pause(self) -> bool:
        """Pause at the service (memory, processes and files kept; no CPU). False where it cannot (then the
        sandbox keeps running and its lifetime still ends it)."""
        if not self.settings.pause_on_suspend or not hasattr(self.sandbox, "pause"):
            return False
        if self.stream is not None:
            self.stream.begin_pause()
        try:
            self.sandbox.pause()
        except Exception as exc:
            if self.stream is not None:
                self.stream.pause_failed()
            raise SandboxError(describe(exc, self.hint)) from exc
        self.paused = True
        return True

    def resume(self) -> None:
        """Resume a paused sandbox (the SDK's connect); its processes continue where they were."""
        if not self.paused:
            return
        try:
            self.sandbox.connect(timeout=self.settings.timeout_s)
        except Exception as exc:
            raise SandboxError(describe(exc, self.hint)) from exc
        self.paused = False

    def disconnect(self) -> None:
        """Let go of the sandbox without ending it (another replica attached it): the stream, already taken over
        there, is dropped here; nothing is killed."""
        if self.closed:
            return
        self.closed = True
        if self.stream is not None:
            self.stream.disconnect()

    def close(self) -> None:
        """Stop the stream and kill the sandbox at the service (nothing is left running or billed). Idempotent;
        a sandbox already gone is fine."""
        if self.closed:
            return
        self.closed = True
        if self.stream is not None:
            self.stream.close()
        try:
            self.sandbox.kill()
        except Exception:  # gone already, or the service is unreachable: its lifetime ends it
            pass
