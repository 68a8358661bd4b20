"""Runs inside the E2B sandbox around the supervisor: its stdout goes out as base64 lines, stdin passes through.

Why: the E2B SDK hands a command's stdout to the app only as text decoded from UTF-8 with errors replaced, and
the supervisor's frames carry a binary length prefix, so bytes would be lost. Base64 lines survive that decoding
exactly (stdin needs nothing: `send_stdin` carries bytes). The relay is the parent of the supervisor and exits
with its exit code, so the service's view of the command is the supervisor's. Standard library only: it runs in
the sandbox's Python before anything of the app does.

`python3 -m agents.executor.e2b.relay PROGRAM [ARGS...]`, or `python3 -I -S -c "$(cat relay.py)" PROGRAM ...`
(how the backend runs it: the sandbox image holds the executor package, not `agents`).
"""

from __future__ import annotations

import base64
import os
import subprocess
import sys
import threading

CHUNK = 48 * 1024  # the most one line carries (each line is one read, encoded and decoded on its own)


def _pump_stdin(child: subprocess.Popen[bytes]) -> None:
    """Copy our stdin to the child's until either ends (EOF closes the child's stdin: it sees the app leave)."""
    assert child.stdin is not None
    try:
        while True:
            data = os.read(0, CHUNK)
            if not data:
                break
            child.stdin.write(data)
            child.stdin.flush()
    except OSError:
        pass
    finally:
        try:
            child.stdin.close()
        except OSError:
            pass


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python3 -m agents.executor.e2b.relay PROGRAM [ARGS...]", file=sys.stderr)
        return 2
    child = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    assert child.stdout is not None
    threading.Thread(target=_pump_stdin, args=(child,), daemon=True).start()
    out = sys.stdout.buffer
    while True:
        data = os.read(child.stdout.fileno(), CHUNK)
        if not data:
            break
        out.write(base64.b64encode(data) + b"\n")
        out.flush()
    return child.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
