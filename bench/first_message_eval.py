"""The first message, measured: simple questions asked through the app's own agent, as a newcomer would.

Usage: python bench/first_message_eval.py [--model embedded:smollm2] [--only 0,3,12] [--set new] [--kind table]
                                         [--max-steps 1] [--json out.json] [--trace trace.json] [--structured both]
                                         [--checks both]

Each question goes to a fresh session of the real app controller (`AgentDeckApp`: its agent factory, the
settings form's defaults, the upload path of a message with files), so the model gets exactly the prompt
the browser's first message gets. The questions, their four sets and their expected answers (computed with
pandas, for grading only: the agent never sees them) are in bench/first_message_sets/; set accuracies are
reported apart, so a prompt fitted to the sets it was tuned on shows. `--structured both` asks every question
twice in one run, with fenced code and with structured code steps (`{"thought", "code"}` JSON, the CodeAgent's
`use_structured_outputs_internally`), and reports both; `--structured on` asks with structured steps only.
`--checks both` asks every question twice in one run, without and with the embedded model's answer checks
(agents/answer_checks/, `AppConfig.answer_checks`), and counts each variant's answers as right, wrong but marked
(the chat said it could not stand behind it, or gave none) and wrong and unmarked (shown as if it were right).

Prints one line per question, then the accuracy (per set), the median seconds per question (from sending
the graded message to the end of its run) and the machine's load average before and after (other work
slows the CPU model).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.first_message_sets import SETS, Question, questions


@dataclass
class Outcome:
    question: str
    set: str
    kind: str
    file: str | None
    expected: Any
    answer: Any
    correct: bool
    state: str
    steps: int
    seconds: float
    #: The answer check's verdict shown with the answer ("" when none was made): see agents/answer_checks/.
    verdict: str = ""
    charts: int = 0  # images the graded run made in the workspace

    @property
    def grade(self) -> str:
        """right, wrong-marked (the chat did not stand behind it) or wrong-unmarked (shown as if right)."""
        if self.correct:
            return "right"
        return "wrong-marked" if self.verdict == "unsure" or self.state != "success" else "wrong-unmarked"


def is_correct(answer: Any, expected: Any) -> bool:
    """Numbers within 0.5% (or 0.01), text equal ignoring case and surrounding space."""
    if isinstance(expected, str):
        return str(answer).strip().strip("'\"").lower() == expected.lower()
    try:
        value = float(answer)
    except (TypeError, ValueError, OverflowError):  # a model's 10**400 is a wrong answer, not the bench's crash
        return False
    return abs(value - float(expected)) <= max(0.01, 0.005 * abs(float(expected)))


def load_average() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def ask(app: Any, settings: Any, question: Question, index: int) -> Outcome:
    """One message on a fresh session of the app, waited for to the end of its run."""
    session = app.registry.get(f"eval-{index}-{time.time_ns()}")
    files = [(question.file, Path(question.file).name)] if question.file else []
    try:
        for earlier in question.before:  # a follow-up: the earlier messages first, the file with the first
            _send(session, earlier, files, settings)
            files = []
        images_before = _images(session.record.workspace)
        started = time.perf_counter()
        _send(session, question.text, files, settings)
        seconds = time.perf_counter() - started
        finished = session.record.transcript.finished
        answer = finished.output if finished is not None else None
        state = str(getattr(finished, "state", "no result"))
        steps = int(getattr(finished, "steps", 0))
        verdict = str(getattr(getattr(session.record.transcript, "answer_check", None), "verdict", "") or "")
        charts = len(_images(session.record.workspace) - images_before)
    finally:
        app.registry.close(session.key)
    if question.expects == "chart":
        correct = state == "success" and charts > 0
    else:
        correct = state == "success" and is_correct(answer, question.expected)
    return Outcome(question.text, question.set, question.kind, Path(question.file).name if question.file else None,
                   _plain(question.expected),
                   _plain(answer), correct, state, steps, round(seconds, 2), verdict, charts)


def _images(folder: Path) -> set[tuple[str, int]]:
    """The images in a workspace, with their modification times (a chart written again counts as new)."""
    return {(str(p), p.stat().st_mtime_ns) for p in folder.rglob("*") if p.suffix.lower() in (".png", ".jpg", ".svg")
            and p.is_file()}


def _send(session: Any, text: str, files: list[tuple[str, str]], settings: Any) -> None:
    """One message, waited for to the end of its run."""
    if not session.start_run(text, files, settings):
        raise RuntimeError("the app did not start a run")
    for _ in session.drain():
        pass


class ModelTrace:
    """Records every model call of local models (the turns they were sent, their reply) while it is entered."""

    def __init__(self, enabled: bool = True) -> None:
        self.enabled, self.calls = enabled, []
        self._original: Any = None

    def __enter__(self) -> ModelTrace:
        if not self.enabled:
            return self
        from agents.models.chat_messages import to_text_turns
        from agents.models.transformers_model import TransformersModel

        self._original = original = TransformersModel.generate_stream
        calls = self.calls

        def traced(model: Any, messages: list, *args: Any, **kwargs: Any) -> Any:
            call = {"turns": to_text_turns(messages), "options": {k: v for k, v in kwargs.items() if k != "tools"}}
            calls.append(call)
            for delta in original(model, messages, *args, **kwargs):
                if delta.reply is not None:
                    call["reply"] = delta.reply.content
                yield delta

        TransformersModel.generate_stream = traced  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc_info: Any) -> None:
        if self._original is not None:
            from agents.models.transformers_model import TransformersModel

            TransformersModel.generate_stream = self._original  # type: ignore[method-assign]


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="", help="model string (default: the app's own choice)")
    parser.add_argument("--only", default="", help="comma-separated question numbers to run")
    parser.add_argument("--set", default="", choices=["", *SETS],
                        help="run only this set")
    parser.add_argument("--kind", default="", choices=["", "arithmetic", "string", "table", "chart"],
                        help="run only questions of this kind")
    parser.add_argument("--max-steps", type=int, default=0,
                        help="steps per run (default: the app's); 1 measures the first reply alone, quickly")
    parser.add_argument("--json", default="", help="also write every outcome to this JSON file")
    parser.add_argument("--trace", default="", help="write what the model was sent and replied, per question, to "
                                                     "this JSON file (to see why an answer is wrong)")
    parser.add_argument("--structured", default="off", choices=["off", "on", "both"],
                        help="code steps as JSON objects (on), fenced code (off), or each question both ways (both)")
    parser.add_argument("--checks", default="app", choices=["app", "off", "on", "both"],
                        help="the answer checks as the app has them (app), off, on, or each question both ways")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.model:
        os.environ["AGENTDECK_MODEL"] = args.model
    from ui.app import AgentDeckApp
    from ui.settings import AppConfig, RunSettings
    from ui.settings_form import initial_values

    with tempfile.TemporaryDirectory(prefix="agentdeck-eval-") as folder:
        os.environ["AGENTDECK_DATA_DIR"] = str(Path(folder) / "data")
        config = AppConfig.from_env()
        variants = {"off": [("fenced", False)], "on": [("structured", True)],
                    "both": [("fenced", False), ("structured", True)]}[args.structured]
        checks = {"app": [("", None)], "off": [("unchecked", False)], "on": [("checked", True)],
                  "both": [("unchecked", False), ("checked", True)]}[args.checks]
        apps = {}
        for name, flag in variants:
            for check_name, check_flag in checks:
                changes: dict[str, Any] = {"structured_code": flag}
                if check_flag is not None:
                    changes["answer_checks"] = check_flag
                label = "+".join(n for n in (name if len(variants) > 1 else "", check_name) if n) or name
                apps[label] = AgentDeckApp(dataclasses.replace(config, **changes))
        # The settings form's values on a fresh page (ui/settings_form.py).
        fresh = initial_values(config)
        if args.max_steps:
            fresh = dataclasses.replace(fresh, max_steps=args.max_steps)
        settings = RunSettings.from_form(config, **fresh.by_name())
        items = questions(Path(folder))
        chosen = [int(i) for i in args.only.split(",") if i.strip()] or list(range(len(items)))
        chosen = [i for i in chosen if (not args.set or items[i].set == args.set)
                  and (not args.kind or items[i].kind == args.kind)]
        load_before = load_average()
        print(f"model {config.model} · {len(chosen)} questions · load average before: {load_before}")
        by_variant: dict[str, list[Outcome]] = {name: [] for name in apps}
        traces = []
        for index in chosen:
            for name, app in apps.items():
                with ModelTrace(enabled=bool(args.trace)) as trace:
                    outcome = ask(app, settings, items[index], index)
                traces.append({"question": index, "variant": name, "calls": trace.calls})
                by_variant[name].append(outcome)
                mark = {"right": "ok ", "wrong-marked": "BAD (marked)", "wrong-unmarked": "BAD"}[outcome.grade]
                follow = " (follow-up)" if items[index].before else ""
                label = f"[{name}] " if len(apps) > 1 else ""
                print(f"{label}{mark} {index:2d} {outcome.seconds:6.1f} s {outcome.steps:2d} steps {outcome.state:9s} "
                      f"{outcome.question[:50]!r} ({outcome.file or 'no file'}){follow} -> "
                      f"{str(outcome.answer)[:40]!r} (expected {outcome.expected!r})"
                      f"{' [' + outcome.verdict + ']' if outcome.verdict else ''}", flush=True)
        results = {name: _summary(outcomes, config.model, load_before, f"[{name}] " if len(apps) > 1 else "")
                   for name, outcomes in by_variant.items()}
        if args.json:
            written = {name: {"summary": summary, "outcomes": [asdict(o) for o in by_variant[name]]}
                       for name, summary in results.items()}
            Path(args.json).write_text(json.dumps(written if len(apps) > 1 else next(iter(written.values())),
                                                  indent=1, default=str))
        if args.trace:
            Path(args.trace).write_text(json.dumps(traces, indent=1, default=str))
        return 0 if all(r["correct"] == r["questions"] for r in results.values()) else 1


def _summary(outcomes: list[Outcome], model: str, load_before: str, label: str) -> dict[str, Any]:
    """Print and return the accuracy, per set and kind, and the median time of one variant's outcomes."""
    correct = sum(o.correct for o in outcomes)
    median = statistics.median(o.seconds for o in outcomes)
    grades = {grade: sum(o.grade == grade for o in outcomes) for grade in ("right", "wrong-marked", "wrong-unmarked")}
    summary: dict[str, Any] = {"model": model, "questions": len(outcomes), "correct": correct, "grades": grades,
                               "accuracy": round(correct / len(outcomes), 3), "median_s": round(median, 1),
                               "load_before": load_before, "load_after": load_average(), "cpus": os.cpu_count(),
                               "sets": {}, "kinds": {}}
    groups = [("set", name) for name in SETS]
    groups += [("kind", name) for name in ("arithmetic", "string", "table", "chart")]
    for field, name in groups:
        part = [o for o in outcomes if getattr(o, field) == name]
        if part:
            summary["sets" if field == "set" else "kinds"][name] = {
                "questions": len(part), "correct": sum(o.correct for o in part),
                "grades": {g: sum(o.grade == g for o in part) for g in grades},
                "median_s": round(statistics.median(o.seconds for o in part), 1)}
            part_grades = " · ".join(f"{g} {sum(o.grade == g for o in part)}" for g in grades)
            print(f"{label}{name} {field}: {sum(o.correct for o in part)}/{len(part)} correct ({part_grades}) · median "
                  f"{statistics.median(o.seconds for o in part):.1f} s")
    print(f"{label}answers: " + " · ".join(f"{g} {n}" for g, n in grades.items()))
    print(f"{label}accuracy {correct}/{len(outcomes)} ({summary['accuracy']:.0%}) · median {median:.1f} s per question "
          f"· load average before {load_before}, after {summary['load_after']} ({os.cpu_count()} CPUs)")
    return summary


if __name__ == "__main__":
    raise SystemExit(main())
