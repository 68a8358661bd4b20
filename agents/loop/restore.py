"""Restoring an agent from a saved memory: the agent continues the conversation (the memory screened for
injected instructions first), and its sandbox's variables are rebuilt by re-running the recorded code steps.

Memory itself is data (agents/memory): this is the loop's side, which knows the agent, its sandbox and its tools.
"""
from __future__ import annotations

import contextlib
import os
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents.events import InjectionFlagged
from agents.executor.tree_walk import TreeWalk, WalkError
from agents.loop.base import MultiStepAgent
from agents.loop.context import RunContext
from agents.memory.memory import STOPPED_BEFORE_RUN, AgentMemory
from agents.memory.screening import flag_loaded_observations
from agents.memory.serialize import load_memory
from agents.memory.steps import ActionStep
from agents.step_events import ToolCallRecord


@dataclass
class RestoreReport:
    steps: int
    step_number: int
    #: (source, finding) for loaded observations that look like injected instructions.
    findings: list[tuple[str, Any]] = field(default_factory=list)


def restore_agent_memory(agent: MultiStepAgent, source: AgentMemory | str | os.PathLike[str],
                         secret: bytes | str | None = None,
                         emit: Callable[[Any], None] | None = None) -> RestoreReport:
    """Install a saved memory (a path, or an AgentMemory already loaded) in `agent`, ready for
    `run(..., reset=False)`.

    Loaded observations are screened for injected instructions: each finding is returned in the report,
    emitted as `InjectionFlagged` through `emit` when given, and the flagged step's observation gets a
    warning line. Sandbox state is not restored here: see `rebuild_sandbox_state`.
    """
    memory = source if isinstance(source, AgentMemory) else load_memory(source, secret)
    findings = flag_loaded_observations(memory)
    agent.continue_from(memory)
    if emit is not None:
        for source_label, finding in findings:
            number = int(source_label.rsplit(" ", 1)[-1])
            emit(InjectionFlagged(run_id="restore", step=number, source=source_label, excerpt=finding.excerpt))
    return RestoreReport(steps=len(memory.steps), step_number=memory.last_step_number(), findings=findings)


@dataclass
class Mismatch:
    step_number: int
    expected: str
    actual: str
    error: str | None = None


@dataclass
class SandboxRebuildReport:
    """What `rebuild_sandbox_state` did: steps re-run, skipped (with why), and mismatching output."""
    rerun: list[int] = field(default_factory=list)
    skipped: list[tuple[int, str]] = field(default_factory=list)
    mismatches: list[Mismatch] = field(default_factory=list)
    #: Workspace paths (relative) the re-run created that were not there before, removed again afterwards.
    removed: list[str] = field(default_factory=list)
    #: Why the workspace could not be listed (then nothing was re-run, or re-run files may remain), or None.
    workspace_error: str | None = None

    @property
    def ok(self) -> bool:
        return not self.mismatches

    def summary(self) -> str:
        text = f"Re-ran {len(self.rerun)} code steps, skipped {len(self.skipped)}, {len(self.mismatches)} mismatches."
        for mismatch in self.mismatches:
            text += f"\n- step {mismatch.step_number}: " + (
                f"error {mismatch.error}" if mismatch.error
                else f"output {mismatch.actual[:80]!r} != {mismatch.expected[:80]!r}")
        return text


def _calls_tools(step: ActionStep, tool_names: set[str]) -> list[str]:
    names = {call.name for call in step.tool_calls}
    code = step.code or ""
    names.update(name for name in tool_names if re.search(rf"\b{re.escape(name)}\s*\(", code))
    return sorted(names)


def rebuild_sandbox_state(memory: AgentMemory, agent: Any, rerun_tools: bool = False) -> SandboxRebuildReport:
    """Re-run the recorded code steps, in order, in `agent`'s sandbox (a fresh CodeAgent) to rebuild its state.

    - Steps that errored originally, or that a person rejected (the step or one of its tool calls), are skipped
      (their partial effects are not replayed).
    - Steps that called tools (recorded tool calls, or a tool's name called in the code) are skipped by
      default, because re-running them would call the tools again (web requests, questions to the user...);
      with `rerun_tools=True` they run and call the tools for real.
    - Each re-run step's printed output is compared with the recorded logs; a difference, or an error now,
      is reported as a Mismatch with the step number. `final_answer` in re-run code only records a value.
    - The workspace's files are left as they were: what the re-run creates that was not there before (a file
      the person deleted since, say) is removed afterwards and listed in `removed`.
    """
    report = SandboxRebuildReport()
    runner = getattr(agent, "runner", None)
    tool_names = set(getattr(runner, "tools", {}) or {})
    tools = None  # without re-running tools, the sandbox's own proxies refuse any call (it is not a run)
    if rerun_tools and runner is not None:
        rebuild = RunContext(run_id="rebuild", emit_function=_ignore, interrupt_flag=threading.Event(),
                             broker=agent.broker)
        tools = runner.as_callables(rebuild)
    sandbox = agent.sandbox
    workdir = getattr(agent, "workdir", None)
    try:
        before = workspace_entries(Path(workdir)) if workdir is not None else None
    except WorkspaceListingError as exc:  # fail closed: re-run files could not be told from the person's
        report.workspace_error = f"{exc}; no step was re-run, so no file the person deleted comes back"
        return report
    try:
        _rerun_steps(memory, sandbox, tools, tool_names, rerun_tools, report)
    finally:
        if workdir is not None and before is not None:
            try:
                report.removed = remove_new_entries(Path(workdir), before)
            except WorkspaceListingError as exc:
                report.workspace_error = f"{exc}; files the re-run wrote may still be there"
    return report


def skip_reason(step: ActionStep) -> str | None:
    """Why a recorded code step is not re-run when it failed or a person rejected it (None: it may be)."""
    if step.error_type == "RejectedByUser":
        return "rejected"
    if step.stopped:
        return "stopped before it ran" if step.error == STOPPED_BEFORE_RUN else "stopped"
    calls = [ToolCallRecord.from_dict(data) for data in step.call_records]
    rejected = [call.name for call in calls if call is not None and call.rejected]
    if rejected:
        return "rejected call: " + ", ".join(dict.fromkeys(rejected))
    if step.error:
        return "errored originally"
    return None


def _rerun_steps(memory: AgentMemory, sandbox: Any, tools: Any, tool_names: set[str], rerun_tools: bool,
                 report: SandboxRebuildReport) -> None:
    for step in memory.action_steps():
        if not step.code:
            continue
        why = skip_reason(step)
        if why is not None:
            report.skipped.append((step.step_number, why))
            continue
        tools_called = _calls_tools(step, tool_names)
        if tools_called and not rerun_tools:
            report.skipped.append((step.step_number, "called tools: " + ", ".join(tools_called)))
            continue
        result = sandbox.run(step.code, tools=tools)
        report.rerun.append(step.step_number)
        actual = result.logs or ""
        if result.error or actual != (step.logs or ""):
            report.mismatches.append(Mismatch(step.step_number, step.logs or "", actual, result.error or None))


# ----- the workspace's files, as they were before the rebuild -------------------------------------------
#: A folder's entries by name: a folder maps to its own entries, anything else to None. Nested, not paths, so a
#: tree deeper than a path can name takes memory by its entries, not by their depth squared.
Tree = dict[str, "Tree | None"]
MAX_ENTRIES = 100_000  # a workspace past this is not rebuilt (re-run files could not all be found again)
SHOWN_PATH = 300  # characters of a removed file's path kept for the note


class WorkspaceListingError(OSError):
    """The workspace's entries could not all be listed; the message says why."""


def workspace_entries(root: Path, max_entries: int | None = None) -> Tree:
    """Every entry under `root` (files, folders, links; links not followed), at any depth (tree_walk.py). Why:
    re-run code writes its files again, and a file the person deleted since must not come back (issue 19).
    Raises WorkspaceListingError when they cannot all be listed."""
    tree: Tree = {}
    folders: list[Tree] = [tree]  # the folder being listed at each depth
    walk = TreeWalk(str(root), max_entries or MAX_ENTRIES)
    try:
        for entry in walk:
            del folders[entry.depth + 1:]
            inner: Tree | None = {} if entry.is_dir else None
            folders[entry.depth][entry.name] = inner
            if inner is not None:
                folders.append(inner)
    except WalkError as exc:
        raise WorkspaceListingError(f"the workspace could not be listed: {exc}") from exc
    return tree


def remove_new_entries(root: Path, before: Tree, max_entries: int | None = None) -> list[str]:
    """Remove what is under `root` now that was not in `before` (links themselves, never what they point to;
    folders once emptied); returns the files removed (relative, sorted; very long paths shortened). What cannot
    be removed is left as it is. Raises WorkspaceListingError when the walk could not finish."""
    removed: list[str] = []
    known: list[Tree | None] = [before]  # per depth: the folder's entries before, or None for a new folder

    def leave(parent_fd: int, name: str) -> None:
        if known[walk.depth + 1] is None:  # a folder the re-run made: empty by now, unless removal failed
            with contextlib.suppress(OSError):
                os.rmdir(name, dir_fd=parent_fd)

    walk = TreeWalk(str(root), max_entries or MAX_ENTRIES, on_leave=leave)
    try:
        for entry in walk:
            del known[entry.depth + 1:]
            folder = known[entry.depth]
            was_there = folder is not None and entry.name in folder
            if entry.is_dir:
                inner = folder.get(entry.name) if folder is not None and was_there else None
                known.append(inner if inner is not None else ({} if was_there else None))
                continue
            if was_there:
                continue
            try:
                os.unlink(entry.name, dir_fd=entry.dir_fd)
            except OSError:
                continue
            path = walk.relpath(entry.name) if walk.relpath_length(entry.name) <= SHOWN_PATH else (
                f"{entry.name[:SHOWN_PATH // 2]}… ({entry.depth} folders deep)")
            removed.append(path)
    except WalkError as exc:
        raise WorkspaceListingError(f"the workspace could not be listed again: {exc}") from exc
    return sorted(removed)


def _ignore(event: Any) -> None:
    """Where the events of re-run tool calls go: nobody watches a rebuild."""
