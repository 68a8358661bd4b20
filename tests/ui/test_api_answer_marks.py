"""An API caller sees the app's check of an answer as the page shows it (issue 36: through /ask, the embedded
model's wrong answer "94" to "how many penguins of each species" came back as status "finished" with an empty
note, nothing to tell it from a right one, while the page marked it "Not sure of this answer")."""
from __future__ import annotations

import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from agents.events import AnswerCheck
from agents.memory import FinalAnswerStep, TaskStep
from ui.api.caller import ApiCaller
from ui.api.chats import ApiChats

UNSURE = AnswerCheck(verdict="unsure", problems=('The code that made it does not use column "species" from the '
                                                 "question.",),
                     advice="This is the demo model: choose a capable model in Model.")


def finished_session(tmp_path: Path, steps: list[Any], run_id: str = "r1") -> Any:
    """What ApiChats.outcome reads of a session whose run `run_id` ended with the answer "94"."""
    finished = SimpleNamespace(state="success", output="94", steps=1, error=None, run_id=run_id)
    transcript = SimpleNamespace(finished=finished, messages=lambda: [])
    record = SimpleNamespace(saved=SimpleNamespace(id="c1"), transcript=transcript, workspace=str(tmp_path),
                             workspace_files=lambda: [], publish=lambda path: None)
    return SimpleNamespace(lock=threading.Lock(), record=record, pending_request=lambda: None,
                           memory=SimpleNamespace(steps=steps))


def outcome(session: Any) -> dict[str, Any]:
    return ApiChats.outcome(ApiChats.__new__(ApiChats), ApiCaller(owner="o", visitor="v"), session)


def test_an_answer_the_app_is_not_sure_of_says_so_to_the_caller(tmp_path: Path) -> None:
    steps = [TaskStep(task="How many penguins of each species are there?", run_id="r1"),
             FinalAnswerStep(output="94", run_id="r1", check=UNSURE.as_dict())]
    result = outcome(finished_session(tmp_path, steps))
    assert result["status"] == "finished" and result["answer"] == "94"
    assert result["check"] == UNSURE.as_dict()
    assert result["note"].startswith("⚠️ Not sure of this answer.") and "capable model" in result["note"]
    assert "**" not in result["note"]  # plain text for a program, not the page's Markdown


def test_an_answer_with_no_check_and_an_earlier_runs_check_carry_no_mark(tmp_path: Path) -> None:
    unchecked = [FinalAnswerStep(output="94", run_id="r1")]  # a capable model's answers are not checked
    assert outcome(finished_session(tmp_path, unchecked))["check"] is None
    earlier = [FinalAnswerStep(output="12", run_id="r0", check=UNSURE.as_dict())]  # this run kept no answer step
    result = outcome(finished_session(tmp_path, earlier, run_id="r1"))
    assert result["check"] is None and result["note"] == ""
