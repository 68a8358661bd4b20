"""Worker side of one run: capture output, call tools, run the code, shape the result.

Everything here runs inside the worker process. The code itself is executed
with ``exec`` of a code object CPython compiled from the checked tree, in one
persistent namespace, so the language behaves exactly as Python.
"""

from __future__ import annotations

import importlib
import itertools
import linecache
import operator
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from types import CodeType, FrameType
from typing import TYPE_CHECKING, Any

from .ast_guard import FINAL_ANSWER, GuardError, format_syntax_error, guard_source
from .figures import SAVED_MARK, drawn, track_explicit_figure_saves
from .guarded_runtime import SecurityError, ToolCallError
from .output import FrameWriter, LogFlusher, OutputCapture
from .plain_compile import Interactive, compile_plain_or_parse
from .protocol import MAX_FRAME_BYTES, encode_json, frame
from .wire_values import NotPlain, frame_table, plain

if TYPE_CHECKING:
    from .audit import AuditPolicy
    from .guarded_runtime import Runtime

# What signal.getsignal() returns and signal.signal() takes.
SignalHandler = Callable[[int, FrameType | None], Any] | int | signal.Handlers | None

_os_write = os.write
# The C functions under `signal.getsignal`/`signal.signal`: the module's wrappers turn every handler into an enum
# member (a failed lookup and an exception for each Python handler), which made checking the ~64 handlers after
# each step cost 45-50 us of a tiny step's CPU. Raw handlers are what `signal_handlers()` records.
_signal = importlib.import_module("_signal")
_getsignal: Callable[[int], Any] = _signal.getsignal
_setsignal: Callable[[int, Any], Any] = _signal.signal


class FinalAnswerSignal(BaseException):
    """Stops the code after final_answer(); BaseException so ``except Exception`` lets it through."""


def _filter_tb(te: traceback.TracebackException, seen: set[int]) -> None:
    if id(te) in seen:
        return
    seen.add(id(te))
    te.stack = traceback.StackSummary.from_list(
        [f for f in te.stack if f.filename.startswith("<step ")])
    for sub in (te.__cause__, te.__context__, *(getattr(te, "exceptions", None) or ())):
        if sub is not None:
            _filter_tb(sub, seen)


def format_user_exception(exc: BaseException, hints: dict[type[BaseException], str], file_size_hint: str = "") -> str:
    """Traceback trimmed to the code's own frames, plus a hint for limit errors (`file_size_hint`: EFBIG)."""
    te = traceback.TracebackException(type(exc), exc, exc.__traceback__, lookup_lines=False,
                                      compact=True, max_group_width=15, max_group_depth=5)
    _filter_tb(te, set())
    text = "".join(te.format()).rstrip()
    for kind, hint in hints.items():
        if isinstance(exc, kind):
            text += f"\n{hint}"
            break
    if isinstance(exc, OSError) and exc.errno == 27:
        text += f"\n{file_size_hint}"
    elif isinstance(exc, FileNotFoundError) and str(exc.filename or "").startswith("/"):
        text += ("\nInside the sandbox only the workspace and the library folders exist; "
                 "use paths relative to the workspace.")
    elif isinstance(exc, PermissionError) and exc.errno == 13:
        text += ("\nThe sandbox can read only its workspace and library folders and write only in "
                 "the workspace (use relative paths).")
    return text


class Executor:
    """Runs steps in one persistent namespace and turns outcomes into result messages."""

    def __init__(self, runtime: Runtime, audit: AuditPolicy, settings: dict[str, Any],
                 write: Callable[[dict[str, Any]], None], read: Callable[[], dict[str, Any]]) -> None:
        self.runtime = runtime
        self.audit = audit
        self.settings = settings
        self.write = FrameWriter(write)  # logs from the flusher thread and results never interleave
        self.read = read
        self.flusher = LogFlusher()
        self.run_id: str | None = None
        self.calls = itertools.count(1)
        self.tool_names: list[str] = []
        self.run_flag = [False]  # read by the SIGINT handler (a list, so the handler never holds the executor)
        self.signal_defaults: dict[int, SignalHandler] = {}  # restored after every run (set by the worker)
        self._signal_source: dict[int, SignalHandler] | None = None  # the dict the two tuples below were made of
        self._signal_numbers: tuple[int, ...] = ()
        self._signal_handlers: tuple[SignalHandler, ...] = ()
        self.workdir_fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)  # cwd is the workspace
        self._final_live: list[bool] = [False]
        self._final_box: list[Any] = []
        main = type(sys)("__main__")
        sys.modules["__main__"] = main  # typing/dataclasses resolve user classes here
        self.ns = main.__dict__
        self.ns["__builtins__"] = runtime.builtins
        mem = settings["memory_limit_mb"]
        self.hints: dict[type[BaseException], str] = {
            MemoryError: f"The sandbox memory limit is {mem} MB; the app can raise it with memory_limit_mb=....",
            RecursionError: "Hint: the recursion is too deep; use a loop or a smaller input.",
        }
        self.file_size_hint = (f"The sandbox limits each file to {settings['max_file_size_mb']} MB; the app can "
                               "raise it with max_file_size_mb=....")

    # --- tools and final_answer -------------------------------------------
    def set_tools(self, names: list[str]) -> None:
        self.tool_names = list(names)
        self._install_callables()

    def _install_callables(self) -> None:
        tools = {name: self._make_tool(name) for name in self.tool_names}
        tools[FINAL_ANSWER] = self._make_final_answer()
        self.runtime.set_tools(tools)

    def _make_tool(self, name: str) -> Callable[..., Any]:
        def tool(*args: Any, **kwargs: Any) -> Any:
            return self._call_tool(name, args, kwargs)

        tool.__name__ = tool.__qualname__ = name
        return tool

    def _make_final_answer(self) -> Callable[[Any], None]:
        # The function closes over two lists only, never over the executor: nothing reachable from it
        # leads to the worker's channel or its hooks. One kept from an earlier step is inert.
        self._final_live[0] = False
        live: list[bool] = [True]
        box: list[Any] = []
        self._final_live, self._final_box = live, box

        def final_answer(answer: Any = None) -> None:
            """Give the final answer and stop the code."""
            if not live[0]:
                raise SecurityError("this final_answer belongs to an earlier step")
            box.append(answer)
            raise FinalAnswerSignal()

        return final_answer

    def _call_tool(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        capture = sys.stdout
        if isinstance(capture, OutputCapture) and capture.send is not None:
            capture.stream()
        call_id = next(self.calls)
        msg = {"op": "tool", "id": self.run_id, "call_id": call_id, "name": name,
               "args": list(args), "kwargs": kwargs}
        data = frame(msg, lenient=True)
        if len(data) > MAX_FRAME_BYTES:
            raise ToolCallError(f"tool '{name}': arguments are too large to send")
        view = memoryview(data)
        with self.write.lock:
            while view:
                view = view[_os_write(self.settings["fd_out"], view):]
        while True:
            reply = self.read()
            if reply.get("op") == "tool_result" and reply.get("call_id") == call_id:
                break
        if reply.get("ok"):
            return reply.get("value")
        raise ToolCallError(f"tool '{name}' failed: {reply.get('error')}")

    # --- running a step -----------------------------------------------------
    def run(self, msg: dict[str, Any]) -> dict[str, Any]:
        self.run_id = msg["id"]
        step = msg.get("step", 0)
        filename = f"<step {step}>"
        code = msg["code"]
        result: dict[str, Any] = {"op": "result", "id": self.run_id, "output": None, "output_type": "NoneType",
                  "is_final": False, "error": None, "error_type": None, "logs": ""}
        try:
            compiled = (compile_plain_or_parse(code, self.runtime.protected, filename)
                        if self.settings.get("python_layers", True) else _compile_unguarded(code, filename, self.ns))
            shown: list[Any] | None = None  # an `Interactive` one-liner's last value shown (sys.displayhook)
            last_shown = False
            if isinstance(compiled, Interactive):
                body, expr, shown, last_shown = compiled.code, None, [None], compiled.last_shown
            elif isinstance(compiled, tuple):
                body, expr = compiled
            else:
                guarded = guard_source(code, self.runtime.protected, filename, tree=compiled)
                body = compile(guarded.body, filename, "exec", dont_inherit=True)
                expr = (compile(guarded.last_expr, filename, "eval", dont_inherit=True)
                        if guarded.last_expr else None)
        except SyntaxError as exc:
            result.update(error=format_syntax_error(exc), error_type=type(exc).__name__)
            return result
        except GuardError as exc:
            result.update(error=f"SecurityError: {exc}", error_type="SecurityError")
            return result
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
        send: Callable[[str], None] | None = None
        if msg.get("stream"):
            def send(text: str) -> None:
                self.write({"op": "log", "id": self.run_id, "text": text})
        capture = OutputCapture(self.settings["max_output_chars"], send)
        if send is not None:
            self.flusher.watch(capture)
        self._install_callables()
        box = self._final_box
        os.fchdir(self.workdir_fd)
        saved = sys.stdout, sys.stderr, sys.displayhook
        sys.stdout = sys.stderr = capture
        if shown is not None:
            sys.displayhook = _catch_into(shown)
        track_explicit_figure_saves()
        self.audit.start_run()
        value = None
        try:
            self.run_flag[0] = True
            try:
                exec(body, self.ns)
                if expr is not None:
                    value = eval(expr, self.ns)
                elif shown is not None and last_shown:
                    value = shown[0]
            except FinalAnswerSignal:
                pass
            except BaseException as exc:
                result["error"] = format_user_exception(exc, self.hints, self.file_size_hint)
                result["error_type"] = type(exc).__name__
            self.run_flag[0] = False
            if box:
                value = box[0]
                result["is_final"] = True
            # The workspace is the current folder again only where a file is written next (a figure saved): the
            # next run changes to it before its code anyway, so a step that saves nothing spares the call.
            self._save_figures(step, capture, keep=result["error"] is None)
            result["output"], result["output_type"] = self._to_wire(value, step, final=result["is_final"])
            if result["error"] is None:  # a step's last expression, or a final answer: a frame's table
                table = frame_table(value)
                if table is not None:
                    result["table"] = table
        finally:
            self.run_flag[0] = False
            self._final_live[0] = False
            self.flusher.stop()
            sys.stdout, sys.stderr, sys.displayhook = saved
            for name in self.runtime.protected:
                self.ns.pop(name, None)
            self._restore_signals()
        result["logs"] = capture.tail()
        left = _wait_for_threads(THREAD_GRACE_S)
        if left:
            result["threads_left"] = left
        return result

    def _restore_signals(self) -> None:
        """Handlers the code installed (asyncio's, for one) must not outlive its step. All ~64 are read in one
        C-level pass and compared by identity; only a step that changed one pays for the loop that restores."""
        defaults = self.signal_defaults
        if self._signal_source is not defaults:
            self._signal_source = defaults
            self._signal_numbers = tuple(defaults)
            self._signal_handlers = tuple(defaults.values())
        now = tuple(map(_getsignal, self._signal_numbers))
        if not all(map(operator.is_, now, self._signal_handlers)):
            for sig, handler, current in zip(self._signal_numbers, self._signal_handlers, now, strict=True):
                if current is not handler:
                    try:
                        _setsignal(sig, handler)
                    except (OSError, ValueError, TypeError):
                        pass
        try:
            signal.set_wakeup_fd(-1)
        except (ValueError, OSError):
            pass
        # An interval timer the code armed (setitimer, alarm) would fire once its handler is gone: the default
        # action ends the worker, at the latest when the next step thaws it. Three syscalls, a few microseconds.
        for which in _ITIMERS:
            signal.setitimer(which, 0)

    def _save_figures(self, step: int, capture: OutputCapture, keep: bool = True) -> None:
        """Save the figures the code left open as the step's charts, then close them all. A failed step's
        figures (`keep` False) and blank ones (no axes, nothing drawn) are closed unsaved: published, they
        showed as an empty `figure_step3_1.png` in the files panel."""
        plt = sys.modules.get("matplotlib.pyplot")
        if plt is None:
            return
        os.fchdir(self.workdir_fd)  # the code may have changed the current folder: figures go to the workspace
        try:
            for num in plt.get_fignums() if keep else ():
                figure = plt.figure(num)
                if getattr(figure, SAVED_MARK, False) or not drawn(figure):
                    continue  # saved by the code itself (a second copy would show the chart twice), or blank
                figure.savefig(self._free_name(f"figure_step{step}_{num}.png"))
            plt.close("all")
        except Exception as exc:
            capture.write(f"\n[could not save open matplotlib figures: {type(exc).__name__}: {exc}]\n")

    def _free_name(self, name: str) -> str:
        """A file name not yet taken in the workspace (the current folder), relative to it."""
        base, ext = os.path.splitext(name)
        path, n = name, 1
        while os.path.lexists(path):
            path = f"{base}_{n}{ext}"
            n += 1
        return path

    def _to_wire(self, value: Any, step: int, final: bool = True) -> tuple[Any, str]:
        """The output as JSON-able data when it is plain data, else its (bounded) repr. A figure left as a step's
        last expression was saved as the step's chart already (`_save_figures`): nothing more, as a notebook
        shows it once."""
        limit = self.settings["max_result_chars"]
        kind = type(value).__name__
        if type(value).__module__ == "numpy" and hasattr(value, "item") and getattr(value, "ndim", 1) == 0:
            value = value.item()
        if type(value).__name__ == "Figure" and hasattr(value, "savefig"):
            if not final and getattr(value, SAVED_MARK, False):
                return None, kind
            os.fchdir(self.workdir_fd)  # as in `_save_figures`
            path = self._free_name(f"final_answer_step{step}.png")
            value.savefig(path)
            return path, "image"
        if value is None or type(value) in (bool, float):
            return value, kind
        if type(value) is int:
            return (value, kind) if value.bit_length() < 3000 else (f"<int with {value.bit_length()} bits>", kind)
        if type(value) is str:
            if len(value) > limit:
                value = value[:limit] + f"\n[truncated {len(value) - limit} characters]"
            return value, kind
        if type(value) in (list, tuple, dict):
            try:
                copied = plain(value)
                if len(encode_json(copied)) <= limit:
                    return copied, kind
            except NotPlain:
                pass
        try:
            text = repr(value)
        except Exception as exc:
            text = f"<{kind} (repr failed: {type(exc).__name__})>"
        if len(text) > limit:
            text = text[:limit] + f"\n[truncated {len(text) - limit} characters]"
        return text, kind


THREAD_GRACE_S = 0.5


_ITIMERS = (signal.ITIMER_REAL, signal.ITIMER_VIRTUAL, signal.ITIMER_PROF)


def _catch_into(slot: list[Any]) -> Callable[[Any], None]:
    """A `sys.displayhook` for an `Interactive` step: keeps the last value shown in `slot[0]` (it closes over
    that list only)."""
    def show(value: Any) -> None:
        slot[0] = value

    return show


def signal_handlers() -> dict[int, SignalHandler]:
    """Every signal's handler now, as the C module reports it (what `Executor.signal_defaults` holds)."""
    return {sig: _getsignal(sig) for sig in signal.valid_signals() if sig not in (signal.SIGKILL, signal.SIGSTOP)}


def _compile_unguarded(code: str, filename: str, ns: dict[str, Any]) -> tuple[CodeType, CodeType | None]:
    """No guard and the real builtins: what code that bypassed every Python-level layer would have.

    Used only when the app starts a sandbox with ``python_layers=False`` (the attack test suite), to
    show that the kernel layers hold on their own.
    """
    import ast
    import builtins

    ns["__builtins__"] = builtins
    tree = ast.parse(code, filename)
    last = None
    final = tree.body[-1] if tree.body else None
    if isinstance(final, ast.Expr):
        tree.body.pop()
        last = ast.Expression(final.value)
    body = compile(tree, filename, "exec", dont_inherit=True)
    return body, (compile(last, filename, "eval", dont_inherit=True) if last is not None else None)


def _wait_for_threads(grace_s: float) -> int:
    """Give threads the code started a moment to finish; return how many are still running.

    Python cannot stop a thread, so the app restarts a worker that reports (or shows, in its own
    view of the process) a thread left running after the step.
    """
    if threading.active_count() <= 1:  # the main thread alone: nothing to wait for (no list made)
        return 0
    main = threading.main_thread()
    deadline = time.monotonic() + grace_s
    left = [t for t in threading.enumerate() if t is not main]
    for thread in left:
        thread.join(max(0.0, deadline - time.monotonic()))
    return sum(1 for t in left if t.is_alive())
