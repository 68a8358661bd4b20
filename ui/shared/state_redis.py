"""The shared state in Redis (`AGENTDECK_REDIS_URL`), for several app replicas.

Each operation that reads and then writes is one Lua script, which Redis runs atomically: two replicas taking
the last run of a visitor's minute at the same instant cannot both pass. Windows are sorted sets scored by
time (each member carries its amount); times are the replicas' wall clocks (`time.time()`), which must agree
to within a second or so (NTP). Every key is under `agentdeck:` and expires.
"""
from __future__ import annotations

import secrets
import time
from typing import Any

from ui.shared.state import SharedStateError

PREFIX = "agentdeck:"

_WINDOW_TRIM = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', tonumber(ARGV[1]) - tonumber(ARGV[2]))
local total = 0
for _, member in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  total = total + tonumber(string.match(member, '^[^|]*|([^|]*)|'))
end
"""

_WINDOW_TAKE = _WINDOW_TRIM + """
local now, window, limit, amount = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
if total + amount > limit then
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  if oldest[2] then return tostring(math.max(tonumber(oldest[2]) + window - now, 0.001)) end
  return tostring(window)
end
redis.call('ZADD', KEYS[1], now, ARGV[5])
redis.call('PEXPIRE', KEYS[1], math.ceil(window * 1000))
return '0'
"""

_WINDOW_USED = _WINDOW_TRIM + "return tostring(total)"

_SLOT_TAKE = """
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
if used >= tonumber(ARGV[1]) then return 0 end
redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
"""

_SLOT_RELEASE = """
local left = redis.call('DECR', KEYS[1])
if left <= 0 then redis.call('DEL', KEYS[1]) end
return left
"""

_COUNT_ADD = """
local value = redis.call('INCRBY', KEYS[1], ARGV[1])
if value <= 0 then redis.call('DEL', KEYS[1]); return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return value
"""

_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""

_TAKE = """
local held = redis.call('GET', KEYS[1])
if held and held ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
"""

_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
"""


def _ms(seconds: float) -> int:
    return max(1, int(seconds * 1000))


class RedisState:
    def __init__(self, url: str, client: Any = None) -> None:
        import redis

        self.url = url
        self._errors = (redis.RedisError, OSError)
        self.client = client or redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5,
                                                     decode_responses=True)
        self._scripts = {name: self.client.register_script(body) for name, body in (
            ("take", _WINDOW_TAKE), ("used", _WINDOW_USED), ("slot", _SLOT_TAKE), ("free", _SLOT_RELEASE),
            ("count", _COUNT_ADD), ("release", _RELEASE),
            ("lease_take", _TAKE), ("lease_renew", _RENEW))}

    def _call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except self._errors as exc:
            raise SharedStateError(f"Redis at AGENTDECK_REDIS_URL could not {what}: {exc}. Check that it runs and "
                                   "the URL is right.") from None

    def _run(self, script: str, name: str, *args: Any) -> Any:
        return self._call(f"run {script}", self._scripts[script], keys=[PREFIX + name], args=list(args))

    def lease_set(self, name: str, holder: str, ttl_s: float) -> None:
        self._call("set a lease", self.client.set, PREFIX + name, holder, px=_ms(ttl_s))

    def lease_get(self, name: str) -> str | None:
        value = self._call("read a lease", self.client.get, PREFIX + name)
        return None if value is None else str(value)

    def lease_release(self, name: str, holder: str) -> bool:
        return bool(self._run("release", name, holder))

    def lease_take(self, name: str, holder: str, ttl_s: float) -> bool:
        return bool(self._run("lease_take", name, holder, str(_ms(ttl_s))))

    def lease_renew(self, name: str, holder: str, ttl_s: float) -> bool:
        return bool(self._run("lease_renew", name, holder, str(_ms(ttl_s))))

    def mark(self, name: str, ttl_s: float) -> None:
        self._call("mark", self.client.set, PREFIX + name, "1", px=_ms(ttl_s))

    def is_marked(self, name: str) -> bool:
        return bool(self._call("read a mark", self.client.exists, PREFIX + name))

    def window_take(self, name: str, limit: float, window_s: float, amount: float = 1.0,
                    now: float | None = None) -> float:
        now = time.time() if now is None else now
        member = f"{now!r}|{amount!r}|{secrets.token_hex(6)}"
        return float(self._run("take", name, repr(now), repr(window_s), repr(limit), repr(amount), member))

    def window_add(self, name: str, amount: float, window_s: float, now: float | None = None) -> None:
        now = time.time() if now is None else now
        key = PREFIX + name
        member = f"{now!r}|{amount!r}|{secrets.token_hex(6)}"

        def add() -> None:
            pipe = self.client.pipeline()
            pipe.zadd(key, {member: now})
            pipe.pexpire(key, _ms(window_s))
            pipe.execute()

        self._call("add to a window", add)

    def window_used(self, name: str, window_s: float, now: float | None = None) -> float:
        now = time.time() if now is None else now
        return float(self._run("used", name, repr(now), repr(window_s)))

    def slot_take(self, name: str, limit: int, ttl_s: float) -> bool:
        return bool(self._run("slot", name, str(int(limit)), str(_ms(ttl_s))))

    def slot_release(self, name: str) -> None:
        self._run("free", name)

    def count_add(self, name: str, delta: int, ttl_s: float) -> int:
        return int(self._run("count", name, str(int(delta)), str(_ms(ttl_s))))

    def count_get(self, name: str) -> int:
        return int(self._call("read a counter", self.client.get, PREFIX + name) or 0)
