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


def finished_session(tmp_path: Path, steps: list[Any], run_id: str = "r1", state: str = "success",
                     output: Any = "94", chat: list[dict[str, Any]] | None = None) -> Any:
    """What ApiChats.outcome reads of a session whose run `run_id` ended with the answer "94" (or as given)."""
    finished = SimpleNamespace(state=state, output=output, steps=1, error=None, run_id=run_id)
    transcript = SimpleNamespace(finished=finished, messages=lambda: list(chat or []))
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


def test_a_run_out_of_steps_with_no_answer_tells_the_caller_what_the_page_said(tmp_path: Path) -> None:
    """Found by a review: /ask on the embedded model gave status out_of_steps, answer "" and an empty note."""
    said = ("⏱️ **No answer**: the run ended after 3 of 3 steps without a final answer. Send **continue** to let "
            "the agent go on from where it stopped")
    session = finished_session(tmp_path, [TaskStep(task="Plot body mass over the rows", run_id="r1")],
                               state="max_steps", output=None, chat=[{"role": "assistant", "content": said}])
    result = outcome(session)
    assert result["status"] == "out_of_steps" and result["answer"] == ""
    assert result["note"].startswith("⏱️ No answer: the run ended after 3 of 3 steps") and "**" not in result["note"]
