"""The first message, measured: simple questions asked through the app's own agent, as a newcomer would.

Usage: python bench/first_message_eval.py [--model embedded:smollm2] [--only 0,3,12] [--set new] [--kind table]
                                         [--max-steps 1] [--json out.json] [--trace trace.json]

Each question goes to a fresh session of the real app controller (`AgentDeckApp`: its agent factory, the
settings form's defaults, the upload path of a message with files), so the model gets exactly the prompt
the browser's first message gets. Questions cover arithmetic, short strings and one-column facts about an
uploaded table (the bundled seattle-weather.csv and penguins.csv, and airports.csv and cities.csv made here),
and a few follow-ups (a second message in the same chat, only the second graded). The expected answers are
computed here with pandas, for grading only: the agent never sees them.

Three sets: "original" (the first 24 questions, measured before the small-model prompt's examples were
chosen), "new" (written after, of the same kinds, not used to tune the first prompt, then looked at while
tuning the second) and "held-out" (written before the second round of tuning over two more made-up files,
students.csv and sales.csv, and run only to measure it; read after, for the third round) and "held-out-2"
(written before the third round over one more made-up file, plants.csv, and run only to measure it): their
accuracies are reported apart, so a prompt fitted to the sets it was tuned on shows.

Prints one line per question, then the accuracy (per set), the median seconds per question (from sending
the graded message to the end of its run) and the machine's load average before and after (other work
slows the CPU model).
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
    file: str | None = None  # the file sent with the (first) message, if any
    before: tuple[str, ...] = ()  # messages sent first in the same chat, not graded (a follow-up)
    set: str = "original"
    table: bool | None = None  # whether the graded question is about the file; None: when it comes with it

    @property
    def kind(self) -> str:
        """arithmetic, string or table: what the graded question asks about."""
        if self.table if self.table is not None else bool(self.file and not self.before):
            return "table"
        return "string" if '"' in self.text else "arithmetic"


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


def make_cities(folder: Path) -> Path:
    """A small made-up table of cities (fixed seed)."""
    rng = random.Random(42)
    countries = ["Norway", "Chile", "Kenya", "Japan", "Peru"]
    weights = [3, 6, 4, 2, 2]
    lines = ["city,country,population,area_km2"]
    for _ in range(30):
        name = "".join(rng.choice("bcdfglmnprstv") + rng.choice("aeiou") for _ in range(3)).title()
        lines.append(f"{name},{rng.choices(countries, weights)[0]},{rng.randint(2000, 900000)},"
                     f"{rng.randint(5, 800)}.{rng.randint(0, 9)}")
    path = folder / "cities.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def make_students(folder: Path) -> Path:
    """A small made-up table of students (fixed seed), for the held-out set."""
    rng = random.Random(7)
    schools = ["Hillside", "Riverside", "Oakwood", "Lakeview"]
    lines = ["student,school,grade,math_score,reading_score,absences"]
    for index in range(40):
        school = rng.choices(schools, [5, 3, 2, 2])[0]
        lines.append(f"S{index:03d},{school},{rng.choice([6, 7, 8, 9])},{rng.randint(35, 100)},"
                     f"{rng.randint(30, 100)},{rng.randint(0, 14)}")
    path = folder / "students.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def make_sales(folder: Path) -> Path:
    """A small made-up table of sales (fixed seed), for the held-out set."""
    rng = random.Random(11)
    regions, products = ["North", "South", "East", "West", "Central"], ["lamp", "chair", "desk", "shelf"]
    lines = ["order,region,product,units,price_eur,discount,month"]
    for index in range(60):
        product = rng.choices(products, [2, 5, 3, 1])[0]
        lines.append(f"{1000 + index},{rng.choice(regions)},{product},{rng.randint(1, 25)},"
                     f"{rng.randint(15, 480)}.{rng.randint(0, 99):02d},{rng.choice([0, 5, 10, 15, 20])},"
                     f"{rng.randint(1, 12)}")
    path = folder / "sales.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def make_plants(folder: Path) -> Path:
    """A small made-up table of garden plants (fixed seed), for the second held-out set."""
    rng = random.Random(29)
    families = ["Rosaceae", "Lamiaceae", "Asteraceae", "Poaceae", "Fabaceae", "Solanaceae"]
    light = ["sun", "shade", "partial"]
    lines = ["plant,family,light,height_cm,leaf_count,water_ml,bloom_week"]
    for index in range(36):
        name = "".join(rng.choice("bdklmnrstvz") + rng.choice("aeiou") for _ in range(2)).title() + f"-{index}"
        lines.append(f"{name},{rng.choices(families, [2, 6, 3, 2, 1, 1])[0]},{rng.choices(light, [5, 2, 3])[0]},"
                     f"{rng.randint(8, 240)},{rng.randint(4, 310)},{rng.randint(50, 900)},{rng.randint(1, 52)}")
    path = folder / "plants.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def questions(folder: Path) -> list[Question]:
    """The evaluation set, with expected answers computed from the data."""
    import pandas as pd

    weather_path, penguins_path = ASSETS / "seattle-weather.csv", ASSETS / "penguins.csv"
    airports_path, cities_path = make_airports(folder), make_cities(folder)
    weather, penguins, airports, cities = (pd.read_csv(p) for p in (weather_path, penguins_path, airports_path,
                                                                    cities_path))
    w, p, a, c = str(weather_path), str(penguins_path), str(airports_path), str(cities_path)
    original = [
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
    new = [
        Question("What is 250 - 73?", 250 - 73),
        Question("What is 36 times 11?", 36 * 11),
        Question("What is 7 to the power of 3?", 7 ** 3),
        Question('Reverse "stressed".', "desserts"),
        Question('How many letters are in the word "encyclopedia"?', len("encyclopedia")),
        Question('Write "open source" in upper case.', "OPEN SOURCE"),
        Question('How many times does the letter a appear in "banana bread"?', "banana bread".count("a")),
        Question("How many rows are in the table?", len(penguins), p),
        Question("What is the minimum of bill_depth_mm?", penguins["bill_depth_mm"].min(), p),
        Question("What is the highest precipitation?", weather["precipitation"].max(), w),
        Question("What is the average temp_min?", weather["temp_min"].mean(), w),
        Question("Which country appears most often?", cities["country"].mode()[0], c),
        Question("How many distinct values does country have?", cities["country"].nunique(), c),
        Question("What is the largest population?", cities["population"].max(), c),
        Question("How many columns does the table have?", cities.shape[1], c),
        # Follow-ups: the second message of a chat is graded.
        Question("What is the smallest area_km2?", cities["area_km2"].min(), c,
                 before=("What is the largest population?",), table=True),
        Question('Reverse the string "python".', "nohtyp", before=("What is 17 * 23?",)),
        Question("What is 9 times 9?", 81, w, before=("What is the mean of wind?",)),
    ]
    students_path, sales_path = make_students(folder), make_sales(folder)
    students, sales = pd.read_csv(students_path), pd.read_csv(sales_path)
    s, t = str(students_path), str(sales_path)
    held_out = [
        Question("What is 48 + 19?", 48 + 19),
        Question("What is 15 times 15?", 15 * 15),
        Question("What is 1000 divided by 8?", 1000 / 8),
        Question('Reverse the string "drawer".', "reward"),
        Question('Convert "machine learning" to upper case.', "MACHINE LEARNING"),
        Question('How many characters are in "keyboard"?', len("keyboard")),
        Question('How many times does the letter e appear in "excellence"?', "excellence".count("e")),
        Question("How many rows does the table have?", len(students), s),
        Question("What is the average math_score?", students["math_score"].mean(), s),
        Question("Which school appears most often?", students["school"].mode()[0], s),
        Question("What is the lowest reading_score?", students["reading_score"].min(), s),
        Question("How many distinct values does grade have?", students["grade"].nunique(), s),
        Question("How many columns does the table have?", sales.shape[1], t),
        Question("What is the maximum of price_eur?", sales["price_eur"].max(), t),
        Question("What is the most common product?", sales["product"].mode()[0], t),
        Question("How many different regions are there?", sales["region"].nunique(), t),
        Question("What is the mean of discount?", sales["discount"].mean(), t),
        Question("What is the maximum of bill_length_mm?", penguins["bill_length_mm"].max(), p),
        Question("What is the highest wind?", weather["wind"].max(), w),
        Question("What is the minimum of absences?", students["absences"].min(), s,
                 before=("How many rows does the table have?",), table=True),
    ]
    plants_path = make_plants(folder)
    plants = pd.read_csv(plants_path)
    g = str(plants_path)
    held_out_2 = [
        Question("What is 64 + 29?", 64 + 29),
        Question("What is 13 times 7?", 13 * 7),
        Question('Reverse the string "planet".', "tenalp"),
        Question('How many times does the letter o appear in "cocoon"?', "cocoon".count("o")),
        Question("How many rows does the table have?", len(plants), g),
        Question("How many columns are in the table?", plants.shape[1], g),
        Question("What is the maximum of height_cm?", plants["height_cm"].max(), g),
        Question("What is the lowest water_ml?", plants["water_ml"].min(), g),
        Question("What is the average leaf_count?", plants["leaf_count"].mean(), g),
        Question("Which family appears most often?", plants["family"].mode()[0], g),
        Question("What is the most common light?", plants["light"].mode()[0], g),
        Question("How many distinct values does family have?", plants["family"].nunique(), g),
        Question("How many different light values are there?", plants["light"].nunique(), g),
        Question("What is the mean of bloom_week?", plants["bloom_week"].mean(), g),
        Question("How many distinct values does island have?", penguins["island"].nunique(), p),
        Question("What is the highest leaf_count?", plants["leaf_count"].max(), g,
                 before=("What is the average leaf_count?",), table=True),
    ]
    return (original + [Question(q.text, q.expected, q.file, q.before, "new", q.table) for q in new]
            + [Question(q.text, q.expected, q.file, q.before, "held-out", q.table) for q in held_out]
            + [Question(q.text, q.expected, q.file, q.before, "held-out-2", q.table) for q in held_out_2])


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
    try:
        for earlier in question.before:  # a follow-up: the earlier messages first, the file with the first
            _send(session, earlier, files, settings)
            files = []
        started = time.perf_counter()
        _send(session, question.text, files, settings)
        seconds = time.perf_counter() - started
        finished = session.record.transcript.finished
        answer = finished.output if finished is not None else None
        state = str(getattr(finished, "state", "no result"))
        steps = int(getattr(finished, "steps", 0))
    finally:
        app.registry.close(session.key)
    correct = state == "success" and is_correct(answer, question.expected)
    return Outcome(question.text, question.set, question.kind, Path(question.file).name if question.file else None,
                   _plain(question.expected),
                   _plain(answer), correct, state, steps, round(seconds, 2))


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
    parser.add_argument("--set", default="", choices=["", "original", "new", "held-out", "held-out-2"],
                        help="run only this set")
    parser.add_argument("--kind", default="", choices=["", "arithmetic", "string", "table"],
                        help="run only questions of this kind")
    parser.add_argument("--max-steps", type=int, default=0,
                        help="steps per run (default: the app's); 1 measures the first reply alone, quickly")
    parser.add_argument("--json", default="", help="also write every outcome to this JSON file")
    parser.add_argument("--trace", default="", help="write what the model was sent and replied, per question, to "
                                                     "this JSON file (to see why an answer is wrong)")
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
        settings = RunSettings.from_form(config, config.model, "code", args.max_steps or config.max_steps, 0,
                                         default_tool_names(),
                                         ", ".join(config.authorized_imports))
        items = questions(Path(folder))
        chosen = [int(i) for i in args.only.split(",") if i.strip()] or list(range(len(items)))
        chosen = [i for i in chosen if (not args.set or items[i].set == args.set)
                  and (not args.kind or items[i].kind == args.kind)]
        load_before = load_average()
        print(f"model {config.model} · {len(chosen)} questions · load average before: {load_before}")
        outcomes, traces = [], []
        for index in chosen:
            with ModelTrace(enabled=bool(args.trace)) as trace:
                outcome = ask(app, settings, items[index], index)
            traces.append({"question": index, "calls": trace.calls})
            outcomes.append(outcome)
            mark = "ok " if outcome.correct else "BAD"
            follow = " (follow-up)" if items[index].before else ""
            print(f"{mark} {index:2d} {outcome.seconds:6.1f} s {outcome.steps:2d} steps {outcome.state:9s} "
                  f"{outcome.question[:50]!r} ({outcome.file or 'no file'}){follow} -> {str(outcome.answer)[:40]!r} "
                  f"(expected {outcome.expected!r})", flush=True)
        correct = sum(o.correct for o in outcomes)
        median = statistics.median(o.seconds for o in outcomes)
        summary = {"model": config.model, "questions": len(outcomes), "correct": correct,
                   "accuracy": round(correct / len(outcomes), 3), "median_s": round(median, 1),
                   "load_before": load_before, "load_after": load_average(), "cpus": os.cpu_count(),
                   "sets": {}, "kinds": {}}
        groups = [("set", name) for name in ("original", "new", "held-out", "held-out-2")]
        groups += [("kind", name) for name in ("arithmetic", "string", "table")]
        for field, name in groups:
            part = [o for o in outcomes if getattr(o, field) == name]
            if part:
                summary["sets" if field == "set" else "kinds"][name] = {
                    "questions": len(part), "correct": sum(o.correct for o in part),
                    "median_s": round(statistics.median(o.seconds for o in part), 1)}
                print(f"{name} {field}: {sum(o.correct for o in part)}/{len(part)} correct · median "
                      f"{statistics.median(o.seconds for o in part):.1f} s")
        print(f"accuracy {correct}/{len(outcomes)} ({summary['accuracy']:.0%}) · median {median:.1f} s per question "
              f"· load average before {load_before}, after {summary['load_after']} ({os.cpu_count()} CPUs)")
        if args.json:
            Path(args.json).write_text(json.dumps({"summary": summary, "outcomes": [asdict(o) for o in outcomes]},
                                                  indent=1, default=str))
        if args.trace:
            Path(args.trace).write_text(json.dumps(traces, indent=1, default=str))
        return 0 if correct == len(outcomes) else 1


if __name__ == "__main__":
    raise SystemExit(main())
