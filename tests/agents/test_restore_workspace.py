"""Rebuilding a restored chat's variables (agents/loop/restore.py) leaves the workspace's files as they were, and
the note after it names steps as the chat does (issue 19: a deleted file came back; "Step 4" named no step)."""
from __future__ import annotations

import os
from pathlib import Path

from agents.loop.restore import rebuild_sandbox_state, remove_new_entries, workspace_entries
from agents.memory import ActionStep, AgentMemory, PlanningStep, TaskStep
from tests.agents.conftest import code
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
    assert workspace_entries(workspace) == before == {"upload.csv", "old"}
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
