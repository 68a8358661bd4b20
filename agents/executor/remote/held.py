"""The glue every remote backend needs to hold its sandboxes once among all app replicas (issue 28).

Why shared: the E2B and k8s backends both give out sandboxes that another replica can attach by id, so both must
take a hold (agents/executor/holds.py) when they start or attach one, refuse an attach while another session
holds it, stop driving a sandbox whose hold was lost, and end it at close only under a hold still their own. What
differs is how a host lets a sandbox go: an E2B host leaves the one supervisor to the host that took it over; a
k8s host ends its own supervisor (each attach starts one) but leaves the claim.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from ..backend import SEND_DEADLINE_S
from ..holds import HOLD_TTL_S, Hold, SandboxHeldElsewhere, SandboxHolds, configured_holds
from .host import SupervisedHost

T = TypeVar("T")


def end_held(hold: Hold | None, end: Callable[[], None]) -> bool:
    """`end()` (delete or kill the sandbox) only under `hold` renewed just before, so no attacher can take the
    sandbox meanwhile, and `hold` released after; False, with nothing ended, once the hold is another's."""
    if hold is not None and not hold.renew():
        return False
    try:
        end()
    finally:
        if hold is not None:
            hold.release()
    return True


class HoldingBackend:
    """A remote backend's side: where its holds live (`holds`: given to the constructor, else the store the app
    configured) and how a start or an attach takes one."""

    #: How the backend's messages name its sandboxes ("E2B", "k8s").
    kind = "remote"

    def __init__(self, holds: SandboxHolds | None = None, hold_ttl_s: float = HOLD_TTL_S) -> None:
        self._holds = holds
        self.hold_ttl_s = hold_ttl_s

    @property
    def holds(self) -> SandboxHolds:
        """Where this backend's sandboxes are held (agents/executor/holds.py): given, else the app's."""
        return self._holds if self._holds is not None else configured_holds()

    def hold_new(self, sandbox_id: str, discard: Callable[[], None]) -> Hold:
        """The hold on a sandbox just made (nobody else can hold it); `discard` ends the sandbox if it fails."""
        hold = Hold(self.holds, sandbox_id, self.hold_ttl_s)
        try:
            hold.take()
        except BaseException:
            discard()
            raise
        return hold

    def attach_held(self, sandbox_id: str, attach: Callable[[Hold], T]) -> T:
        """`attach(hold)` under a new hold on the sandbox, released if it fails. `SandboxHeldElsewhere` (nothing
        of the sandbox touched) while another session, of this replica or another, holds it."""
        hold = Hold(self.holds, sandbox_id, self.hold_ttl_s)
        hold.take()
        try:
            return attach(hold)
        except BaseException:
            hold.release()
            raise

    def in_use_here(self, sandbox_id: str) -> SandboxHeldElsewhere:
        """The refusal for an attach (by a caller that checks: another session) of a host live in this process."""
        return SandboxHeldElsewhere(f"the {self.kind} sandbox {sandbox_id} cannot be attached: it is in use by "
                                    "another session of this app")


class HeldHost(SupervisedHost):
    """A remote backend's host holding its sandbox (`hold`; None: not held). A subclass says how it lets the
    sandbox go (`_let_go`) and ends it at close through `_end_held`."""

    kind = "remote"

    def __init__(self, *args: Any, hold: Hold | None = None, **kwargs: Any) -> None:
        #: This host's claim on the sandbox among all replicas (agents/executor/holds.py); None: not held.
        self.hold = hold
        self.let_go = False  # closed without ending the sandbox: another session holds it now
        super().__init__(*args, **kwargs)

    def hold_kept(self) -> bool:
        """Whether this host still holds its sandbox, asked of the store now (True when it has no hold)."""
        return self.hold is None or self.hold.renew()

    def hold_lost(self) -> bool:
        """Another session holds the sandbox now (asked of the store at most every half expiry, `Hold.current`)."""
        return self.hold is not None and not self.dead and not self.hold.current()

    def check_held(self) -> None:
        """`SandboxHeldElsewhere` once another session holds the sandbox: this host drives it no more."""
        if self.hold_lost():
            raise SandboxHeldElsewhere(f"the {self.kind} sandbox {self.id} is held by another session now (the "
                                       "chat was opened elsewhere): this session no longer drives it")

    def send(self, msg: dict[str, Any], deadline_s: float = SEND_DEADLINE_S) -> None:
        self.check_held()
        self._before_send()
        super().send(msg, deadline_s)

    def _before_send(self) -> None:
        """A subclass's work before a step's bytes go out (E2B renews the sandbox's lifetime)."""

    def _let_go(self) -> None:
        """Stop using a sandbox another session holds now, ending nothing of it (sets `let_go`)."""
        raise NotImplementedError

    def _end_held(self, end: Callable[[], None]) -> None:
        """`close`'s end of the sandbox: `end()` only under a hold renewed just before (no attacher can take it
        meanwhile), the hold released after; a host whose hold was lost lets the sandbox go instead."""
        self.let_go = False
        if not end_held(self.hold, end):
            self._let_go()
