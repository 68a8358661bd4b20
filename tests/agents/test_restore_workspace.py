"""Rebuilding a restored chat's variables (agents/loop/restore.py) leaves the workspace's files as they were, and
the note after it names steps as the chat does (issue 19: a deleted file came back; "Step 4" named no step)."""
from __future__ import annotations

import os
from pathlib import Path
from unittest import mock

import pytest

from agents.loop.restore import WorkspaceListingError, rebuild_sandbox_state, remove_new_entries, workspace_entries
from agents.memory import ActionStep, AgentMemory, PlanningStep, TaskStep
from tests.agents.conftest import code
from tests.deep_trees import PATH_MAX, make_deep, read_deep
from tests.memory.conftest import needs_sandbox
from ui.saved.restore import rebuild_note


def test_only_what_was_not_there_before_is_removed_and_links_are_not_followed(tmp_path: Path) -> None:
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    (outside / "keep.txt").write_text("not the workspace's")
    (workspace / "upload.csv").write_text("a\n1\n")
    (workspace / "old").mkdir()
    before = workspace_entries(workspace)
    (workspace / "chart.png").write_bytes(b"png")
    (workspace / "old" / "new.txt").write_text("new")
    (workspace / "made" / "deep").mkdir(parents=True)
    (workspace / "made" / "deep" / "table.csv").write_text("t")
    os.symlink(outside, workspace / "link")
    removed = remove_new_entries(workspace, before)
    assert removed == ["chart.png", "link", "made/deep/table.csv", "old/new.txt"]
    assert workspace_entries(workspace) == before == {"upload.csv": None, "old": {}}
    assert (outside / "keep.txt").read_text() == "not the workspace's"  # the link went, not what it pointed to


@needs_sandbox
def test_a_file_the_person_deleted_does_not_come_back_when_variables_are_rebuilt(make_code_agent,
                                                                                 tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    agent, _ = make_code_agent([
        code("rows = [1, 2, 3]\nopen('summary.csv', 'w').write('n\\n1\\n')\nopen('kept.txt', 'w').write('k')"),
        code("final_answer(sum(rows))"),
    ], workdir=workspace)
    assert agent.run("Count") == 6
    (workspace / "summary.csv").unlink()  # the person deletes it in the files panel
    (workspace / "kept.txt").write_text("the person's version")
    fresh, _ = make_code_agent([code("final_answer(sum(rows) * 2)")], workdir=workspace)
    report = rebuild_sandbox_state(agent.memory, fresh)
    assert report.rerun == [1, 2] and report.removed == ["summary.csv"]
    assert not (workspace / "summary.csv").exists()
    assert (workspace / "kept.txt").exists()  # there before the rebuild: left alone
    assert fresh.run("Double it", reset=False) == 12  # the variables are back
    note = rebuild_note(report, len(agent.memory.steps), memory=agent.memory)
    assert "removed again" in note and "`summary.csv`" in note


def test_the_note_names_steps_as_the_chat_does_and_says_rejected(tmp_path: Path) -> None:
    """The chat numbers steps within each message's run; the agent across the conversation."""
    from agents.loop.restore import SandboxRebuildReport

    memory = AgentMemory("system")
    memory.add_step(TaskStep(task="Analyse the penguins: look, chart, summary.", run_id="r1"))
    for number in (1, 2, 3):
        memory.add_step(ActionStep(step_number=number, run_id="r1", code="print(1)"))
    memory.add_step(TaskStep(task="What does the PDF say?\n\nFiles: report.pdf", run_id="r2"))
    memory.add_step(PlanningStep(step_number=4, plan="1. Read it."))
    for number in (4, 5, 6):
        memory.add_step(ActionStep(step_number=number, run_id="r2", code="print(2)"))
    report = SandboxRebuildReport(rerun=[1, 2, 5], skipped=[(3, "errored originally"), (4, "rejected"),
                                                            (6, "rejected call: web_search")])
    note = rebuild_note(report, len(memory.steps), memory=memory)
    assert "Step 3 of “Analyse the penguins: look, chart, summary.” was not re-run (errored originally)" in note
    assert "- Step 1 of “What does the PDF say?” was not re-run: you rejected it, so it never ran." in note
    assert "- Step 3 of “What does the PDF say?” was not re-run (you rejected its call to web_search)" in note
    assert "Step 4" not in note and "Step 6" not in note


@needs_sandbox
def test_a_rejected_step_is_skipped_as_rejected(make_code_agent) -> None:
    from agents.decisions import Decision, ScriptedDecider

    agent, _ = make_code_agent([code("import os\nprint('cleaning')"), code("final_answer('kept')")],
                               approval_policy="approve_code",
                               decider=ScriptedDecider([Decision.reject("keep the files"), Decision.approve()]))
    assert agent.run("Clean up") == "kept"
    fresh, _ = make_code_agent([])
    report = rebuild_sandbox_state(agent.memory, fresh)
    assert report.skipped == [(1, "rejected")]


def test_a_file_deeper_than_a_path_can_name_is_found_and_removed(tmp_path: Path) -> None:
    """The walk went by path strings and skipped what it could not open: a file the re-run wrote 4,000+
    characters down stayed (a deleted file came back)."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    kept = make_deep(str(workspace), 45, b"kept", name="k" * 100)
    before = workspace_entries(workspace)
    new = make_deep(str(workspace), 50, b"new")
    assert len("/".join(new)) > PATH_MAX
    removed = remove_new_entries(workspace, before)
    assert len(removed) == 1 and "50 folders deep" in removed[0]
    assert read_deep(str(workspace), new) is None and not (workspace / new[0]).exists()  # folders went too
    assert read_deep(str(workspace), kept) == b"kept"
    assert workspace_entries(workspace) == before


def test_a_workspace_that_cannot_be_listed_reruns_nothing_and_says_so(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    for i in range(30):
        (workspace / f"f{i}").write_text("x")
    with pytest.raises(WorkspaceListingError, match="more than 10 entries"):
        workspace_entries(workspace, max_entries=10)

    class Agent:
        workdir = str(workspace)
        sandbox = None

    memory = AgentMemory()
    memory.steps.append(ActionStep(step_number=1, code="open('x', 'w')"))
    with mock.patch("agents.loop.restore.MAX_ENTRIES", 10):
        report = rebuild_sandbox_state(memory, Agent())
    assert report.rerun == [] and "more than 10 entries" in (report.workspace_error or "")
    note = rebuild_note(report, 1)
    assert "not re-run" in note and "more than 10 entries" in note
