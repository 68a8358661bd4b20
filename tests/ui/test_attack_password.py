"""Attack: guessing the password of a server started with AGENTDECK_USERNAME / AGENTDECK_PASSWORD.

Gradio's /login checked every guess at once (40 wrong passwords in 0.1 s, and the right one still worked).
Written as the attacker: a launched app and its real /login route, one address or many (the app trusts
X-Forwarded-For here, as behind the operator's proxy). The throttle's timing is checked with a clock of its own.
"""
from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from ui_testlib import code_reply, run_app, write_transcript

from tests.waiting import wait_until
from ui.web.login_throttle import ACCOUNT, WINDOW_S, LoginThrottle, Refusal

USER, PASSWORD = "alice", "correct-horse-battery"


def sign_in(url: str, password: str, address: str, user: str = USER,
            multipart: bool = False) -> tuple[int, str, str | None]:
    """POST the login form, urlencoded as gradio_client sends it or multipart as Gradio's page does (FormData);
    (status, detail, Retry-After)."""
    if multipart:
        fields = "".join(f'--b0undary\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'
                         for name, value in (("username", user), ("password", password)))
        body, kind = (fields + "--b0undary--\r\n").encode(), "multipart/form-data; boundary=b0undary"
    else:
        body = urllib.parse.urlencode({"username": user, "password": password}).encode()
        kind = "application/x-www-form-urlencoded"
    request = urllib.request.Request(url + "login", data=body, headers={
        "Content-Type": kind, "X-Forwarded-For": address})
    try:
        with urllib.request.urlopen(request, timeout=15) as response:
            return response.status, response.read().decode(), None
    except urllib.error.HTTPError as refused:
        detail = refused.read().decode()
        try:
            detail = str(json.loads(detail).get("detail", detail))
        except ValueError:
            pass
        return refused.code, detail, refused.headers.get("retry-after")


@pytest.mark.slow
def test_guessing_the_password_over_http_is_slowed_then_refused(tmp_path: Path) -> None:
    transcript = write_transcript(tmp_path / "t.json", [code_reply("done", "final_answer('ok')")])
    data = tmp_path / "data"
    data.mkdir()
    env = {"AGENTDECK_USERNAME": USER, "AGENTDECK_PASSWORD": PASSWORD, "AGENTDECK_TRUST_FORWARDED": "1"}
    with run_app(transcript, data, extra_env=env) as url:
        # One address, 40 guesses as fast as it can: a few are checked, the rest refused unchecked.
        started = time.monotonic()
        answers = [sign_in(url, f"guess-{n}", "203.0.113.1") for n in range(40)]
        checked = [a for a in answers if a[0] == 400]
        refused = [a for a in answers if a[0] == 429]
        assert len(checked) + len(refused) == 40, answers[:5]
        assert 3 <= len(checked) <= 3 + round(time.monotonic() - started) + 1, len(checked)
        assert all("Try again in" in detail and retry and int(retry) >= 1 for _, detail, retry in refused)
        # The right password is refused too while the address waits, with when to retry ...
        status, detail, retry = sign_in(url, PASSWORD, "203.0.113.1")
        assert status == 429 and "Try again in" in detail and "UTC" in detail, detail
        assert sign_in(url, PASSWORD, "203.0.113.1", multipart=True)[0] == 429  # the page's encoding too
        # ... and is taken once the wait is over (the address never reached the lockout: a slowdown).
        wait_until(lambda: sign_in(url, PASSWORD, "203.0.113.1")[0] == 200, timeout=30, poll_s=1.0,
                   what="the right password after the wait")
        # Another visitor of the account is not locked out by the first one's guesses (either encoding).
        assert sign_in(url, PASSWORD, "198.51.100.2")[0] == 200
        assert sign_in(url, PASSWORD, "198.51.100.3", multipart=True)[0] == 200

        # Many addresses, one guess each: the account is slowed down for strangers ...
        spread = [sign_in(url, "wrong", f"192.0.2.{n}") for n in range(1, 25)]
        slowed = [detail for status, detail, _ in spread if status == 429]
        assert slowed and all("this account" in detail for detail in slowed), spread
        assert sum(status == 400 for status, _, _ in spread) <= ACCOUNT.free + 8
        status, detail, _ = sign_in(url, PASSWORD, "192.0.2.200")
        assert status == 429 and "this account" in detail
        # ... but a visitor that signed in before still gets in, and a new one within seconds, never locked out.
        assert sign_in(url, PASSWORD, "198.51.100.2")[0] == 200
        wait_until(lambda: sign_in(url, PASSWORD, "192.0.2.201")[0] == 200, timeout=30, poll_s=1.0,
                   what="a new visitor's right password during the account's slowdown")


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def fail(throttle: LoginThrottle, visitor: str, account: str = USER) -> Refusal | None:
    """One attempt with a wrong password: the refusal, or None when it was checked (and failed)."""
    verdict = throttle.attempt(visitor, account)
    return verdict if isinstance(verdict, Refusal) else None


def test_one_address_is_slowed_down_then_locked_out_for_the_window() -> None:
    clock = Clock()
    throttle = LoginThrottle(clock=clock)
    checked, waits = 0, []
    while checked < 10:  # each guess made as soon as it is allowed
        verdict = throttle.attempt("203.0.113.1", USER)
        if isinstance(verdict, Refusal):
            waits.append(round(verdict.wait_s))
            clock.now += verdict.wait_s + 0.01
        else:
            checked += 1  # a wrong password: the counted failure stays
    assert waits == [1, 2, 4, 8, 16, 32, 64], waits  # three free, then doubling
    # Locked out: the right password too, with when to retry. The same address on another account is only
    # slowed by its own counter (its tenth failure: a second), not locked out.
    locked = throttle.attempt("203.0.113.1", USER)
    assert isinstance(locked, Refusal) and locked.wait_s > WINDOW_S - 1
    assert "Try again in 15 minutes" in locked.message and "UTC" in locked.message
    other = throttle.attempt("203.0.113.1", "bob")
    assert isinstance(other, Refusal) and other.wait_s <= 1.0
    clock.now += WINDOW_S + 1
    assert not isinstance(throttle.attempt("203.0.113.1", USER), Refusal)  # the window is over


def test_one_address_spraying_account_names_is_stopped_by_its_own_counter() -> None:
    clock = Clock()
    throttle = LoginThrottle(clock=clock)
    outcomes = [fail(throttle, "203.0.113.9", f"name{n}") for n in range(40)]
    assert outcomes[:10] == [None] * 10 and all(isinstance(o, Refusal) for o in outcomes[10:])
    checked = 10
    while checked < 18:  # each next name as soon as the address may: then it is locked out on every name
        verdict = throttle.attempt("203.0.113.9", f"other{checked}")
        if isinstance(verdict, Refusal):
            assert verdict.wait_s <= 128
            clock.now += verdict.wait_s + 0.01
        else:
            checked += 1
    locked = throttle.attempt("203.0.113.9", "yet-another")
    assert isinstance(locked, Refusal) and locked.wait_s > WINDOW_S - 1


def test_many_addresses_only_slow_the_account_and_its_owner_still_gets_in() -> None:
    clock = Clock()
    throttle = LoginThrottle(clock=clock)
    owner = throttle.attempt("198.51.100.2", USER)
    assert not isinstance(owner, Refusal)
    throttle.succeeded("198.51.100.2", USER, owner)
    longest = 0.0
    for n in range(2000):  # a botnet guessing as fast as the account allows, for hours
        refusal = fail(throttle, f"10.{n // 250}.{n % 250}.1")
        if refusal is not None:
            longest = max(longest, refusal.wait_s)
            clock.now += refusal.wait_s
        clock.now += 0.01
    assert longest <= ACCOUNT.cap_s  # a slowdown, never a lockout
    assert not isinstance(throttle.attempt("198.51.100.2", USER), Refusal)  # the owner's known address
    stranger = throttle.attempt("203.0.113.77", USER)
    assert isinstance(stranger, Refusal) and stranger.wait_s <= ACCOUNT.cap_s


def test_parallel_guesses_cannot_share_one_free_place() -> None:
    throttle = LoginThrottle(clock=Clock())
    verdicts = [throttle.attempt("203.0.113.5", USER) for _ in range(20)]  # none has finished yet
    assert sum(not isinstance(v, Refusal) for v in verdicts) == 3


class _Gradio:
    """Stands for Gradio's /login: records that a form reached it."""

    def __init__(self) -> None:
        self.reached = 0

    async def __call__(self, scope: dict, receive, send) -> None:
        self.reached += 1
        await send({"type": "http.response.start", "status": 400, "headers": []})
        await send({"type": "http.response.body", "body": b'{"detail": "Incorrect credentials."}'})


def _post_login(app, body: bytes, kind: str) -> int:
    import asyncio

    sent: list[dict] = []

    async def receive() -> dict:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/login", "headers": [(b"content-type", kind.encode())],
             "client": ("203.0.113.9", 5000)}
    asyncio.run(app(scope, receive, send))
    return next(m["status"] for m in sent if m["type"] == "http.response.start")


@pytest.mark.parametrize("form", ["padded", "file", "file-username"])
def test_a_form_the_throttle_cannot_read_never_reaches_gradios_login(form: str) -> None:
    """Gradio reads the login form with wider limits than the throttle (1,000 fields and files): a form padded past
    the throttle's, or with a file part, was counted as a guess at the account "" while Gradio checked the real
    name's password. What the throttle cannot read is refused, so each guess counts against the name it tries."""
    from ui.web.login_throttle import LoginThrottleMiddleware

    if form == "padded":
        body = urllib.parse.urlencode([("username", USER), ("password", "guess")]
                                      + [(f"pad{n}", "x") for n in range(30)]).encode()
        kind = "application/x-www-form-urlencoded"
    else:
        name = "username" if form == "file-username" else "note"
        parts = [f'--b0undary\r\nContent-Disposition: form-data; name="{name}"; filename="a.txt"\r\n\r\n{USER}\r\n']
        if form == "file":
            parts.append(f'--b0undary\r\nContent-Disposition: form-data; name="username"\r\n\r\n{USER}\r\n')
        parts.append('--b0undary\r\nContent-Disposition: form-data; name="password"\r\n\r\nguess\r\n--b0undary--\r\n')
        body, kind = "".join(parts).encode(), "multipart/form-data; boundary=b0undary"
    gradio = _Gradio()
    throttle = LoginThrottle(clock=Clock())
    assert _post_login(LoginThrottleMiddleware(gradio, throttle), body, kind) == 400
    assert gradio.reached == 0
    plain = urllib.parse.urlencode({"username": USER, "password": "guess"}).encode()
    assert _post_login(LoginThrottleMiddleware(gradio, throttle), plain, "application/x-www-form-urlencoded") == 400
    assert gradio.reached == 1  # an ordinary form still reaches it
