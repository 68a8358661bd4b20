"""The first message, measured: simple questions asked through the app's own agent, as a newcomer would.

Usage: python bench/first_message_eval.py [--model embedded:smollm2] [--only 0,3,12] [--json out.json]

Each question goes to a fresh session of the real app controller (`AgentDeckApp`: its agent factory, the
settings form's defaults, the upload path of a message with files), so the model gets exactly the prompt
the browser's first message gets. Questions cover arithmetic, short strings and one-column facts about an
uploaded table (the bundled seattle-weather.csv and penguins.csv, and airports.csv made here). The
expected answers are computed here with pandas, for grading only: the agent never sees them.

Prints one line per question, then the accuracy, the median seconds per question (from sending the message
to the end of the run) and the machine's load average before and after (other work slows the CPU model).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
ASSETS = ROOT / "ui" / "assets"


@dataclass
class Question:
    text: str
    expected: Any
    file: str | None = None  # the file sent with the message, if any


@dataclass
class Outcome:
    question: str
    file: str | None
    expected: Any
    answer: Any
    correct: bool
    state: str
    steps: int
    seconds: float


def make_airports(folder: Path) -> Path:
    """A small made-up table of airports (fixed seed), so one data set is not bundled with the app."""
    rng = random.Random(18)
    states = ["TX", "CA", "FL", "AK", "NY", "OH", "WA"]
    weights = [9, 7, 5, 4, 3, 2, 2]
    lines = ["code,state,elevation_ft,runways"]
    for index in range(48):
        code = "".join(rng.choice("ABCDEFGHJKLMNPRSTUVWXYZ") for _ in range(3)) + str(index % 10)
        state = rng.choices(states, weights)[0]
        lines.append(f"{code},{state},{rng.randint(3, 7200)},{rng.randint(1, 5)}")
    path = folder / "airports.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def questions(folder: Path) -> list[Question]:
    """The evaluation set, with expected answers computed from the data."""
    import pandas as pd

    weather_path, penguins_path = ASSETS / "seattle-weather.csv", ASSETS / "penguins.csv"
    airports_path = make_airports(folder)
    weather, penguins, airports = (pd.read_csv(p) for p in (weather_path, penguins_path, airports_path))
    w, p, a = str(weather_path), str(penguins_path), str(airports_path)
    return [
        Question("What is 17 * 23?", 17 * 23),
        Question("What is 1234 + 5678?", 1234 + 5678),
        Question("What is 2 to the power of 10?", 2 ** 10),
        Question("What is 144 divided by 12?", 144 / 12),
        Question("What is the square root of 169?", math.sqrt(169)),
        Question('Reverse the string "hello".', "olleh"),
        Question('Convert "agent deck" to upper case.', "AGENT DECK"),
        Question('How many characters are in "transformers"?', len("transformers")),
        Question('How many times does the letter s appear in "mississippi"?', "mississippi".count("s")),
        Question('Write "Hello World" in lower case.', "hello world"),
        Question("How many rows does the table have?", len(weather), w),
        Question("What is the maximum of temp_max?", weather["temp_max"].max(), w),
        Question("What is the minimum of temp_min?", weather["temp_min"].min(), w),
        Question("What is the mean of wind?", weather["wind"].mean(), w),
        Question("What is the most frequent weather?", weather["weather"].mode()[0], w),
        Question("How many different weather types are there?", weather["weather"].nunique(), w),
        Question("How many columns does the table have?", penguins.shape[1], p),
        Question("How many distinct values does species have?", penguins["species"].nunique(), p),
        Question("What is the most common island?", penguins["island"].mode()[0], p),
        Question("What is the largest body_mass_g?", penguins["body_mass_g"].max(), p),
        Question("What is the average flipper_length_mm?", penguins["flipper_length_mm"].mean(), p),
        Question("How many rows does the table have?", len(airports), a),
        Question("Which state has the most airports?", airports["state"].mode()[0], a),
        Question("What is the highest elevation_ft?", airports["elevation_ft"].max(), a),
    ]


def is_correct(answer: Any, expected: Any) -> bool:
    """Numbers within 0.5% (or 0.01), text equal ignoring case and surrounding space."""
    if isinstance(expected, str):
        return str(answer).strip().strip("'\"").lower() == expected.lower()
    try:
        value = float(answer)
    except (TypeError, ValueError):
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
    started = time.perf_counter()
    try:
        if not session.start_run(question.text, files, settings):
            raise RuntimeError("the app did not start a run")
        for _ in session.drain():
            pass
        seconds = time.perf_counter() - started
        finished = session.record.transcript.finished
        answer = finished.output if finished is not None else None
        state = str(getattr(finished, "state", "no result"))
        steps = int(getattr(finished, "steps", 0))
    finally:
        app.registry.close(session.key)
    correct = state == "success" and is_correct(answer, question.expected)
    return Outcome(question.text, Path(question.file).name if question.file else None, _plain(question.expected),
                   _plain(answer), correct, state, steps, round(seconds, 2))


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="", help="model string (default: the app's own choice)")
    parser.add_argument("--only", default="", help="comma-separated question numbers to run")
    parser.add_argument("--json", default="", help="also write every outcome to this JSON file")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.model:
        os.environ["AGENTDECK_MODEL"] = args.model
    from ui.app import AgentDeckApp
    from ui.settings import AppConfig, RunSettings, default_tool_names

    with tempfile.TemporaryDirectory(prefix="agentdeck-eval-") as folder:
        os.environ["AGENTDECK_DATA_DIR"] = str(Path(folder) / "data")
        config = AppConfig.from_env()
        app = AgentDeckApp(config)
        # The settings form's values on a fresh page (ui/layout.py): model, code agent, steps, no planning,
        # the default tools and the configured imports.
        settings = RunSettings.from_form(config, config.model, "code", config.max_steps, 0, default_tool_names(),
                                         ", ".join(config.authorized_imports))
        items = questions(Path(folder))
        chosen = [int(i) for i in args.only.split(",") if i.strip()] or list(range(len(items)))
        load_before = load_average()
        print(f"model {config.model} · {len(chosen)} questions · load average before: {load_before}")
        outcomes = []
        for index in chosen:
            outcome = ask(app, settings, items[index], index)
            outcomes.append(outcome)
            mark = "ok " if outcome.correct else "BAD"
            print(f"{mark} {index:2d} {outcome.seconds:6.1f} s {outcome.steps:2d} steps {outcome.state:9s} "
                  f"{outcome.question[:50]!r} ({outcome.file or 'no file'}) -> {str(outcome.answer)[:40]!r} "
                  f"(expected {outcome.expected!r})", flush=True)
        correct = sum(o.correct for o in outcomes)
        median = statistics.median(o.seconds for o in outcomes)
        summary = {"model": config.model, "questions": len(outcomes), "correct": correct,
                   "accuracy": round(correct / len(outcomes), 3), "median_s": round(median, 1),
                   "load_before": load_before, "load_after": load_average(), "cpus": os.cpu_count()}
        print(f"accuracy {correct}/{len(outcomes)} ({summary['accuracy']:.0%}) · median {median:.1f} s per question "
              f"· load average before {load_before}, after {summary['load_after']} ({os.cpu_count()} CPUs)")
        if args.json:
            Path(args.json).write_text(json.dumps({"summary": summary, "outcomes": [asdict(o) for o in outcomes]},
                                                  indent=1, default=str))
        return 0 if correct == len(outcomes) else 1


if __name__ == "__main__":
    raise SystemExit(main())
