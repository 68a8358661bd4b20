"""Prompt profiles: which prompts, tools and imports suit a family of models.

Why: a 135M model on CPU copies short examples and is lost in a long list of tools and modules, while a
capable model needs the full prompt. The model adapter says which family it belongs to
(`Model.prompt_style`); the profile of that family decides the rest, the same way in the CLI, the app and
the benchmarks.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from agents.models.name_choice import NameChoice
from agents.prompts import render


@dataclass(frozen=True)
class PromptProfile:
    """What a family of models is shown.

    `tools` and `imports` are None when the model gets everything it is given; otherwise only the names
    listed (final_answer is always there). The sandbox still allows every authorized import: the list only
    decides what the prompt names, so correct code that imports another allowed module still runs.
    """
    name: str
    code_prompts: str  # the CodeAgent's prompt file (agents/prompts/<name>.yaml)
    tools: tuple[str, ...] | None = None
    imports: tuple[str, ...] | None = None
    #: Whether the model is sent the earlier messages of the conversation with a new one (a tiny model is not:
    #: it copied earlier answers, right or wrong, into the next; it is told about earlier uploads instead).
    earlier_runs: bool = True
    #: Whether its answers are checked before they are shown, and marked as unchecked (agents/answer_checks/).
    check_answers: bool = False
    #: With its answers checked, the most steps a run takes: a tiny model that failed three times in a row kept
    #: failing (issue 31: ten steps and a minute of flailing), and the run then says it has no answer.
    checked_max_steps: int | None = None

    def keeps_tool(self, name: str) -> bool:
        return self.tools is None or name in self.tools

    def prompt_imports(self, authorized: Iterable[str]) -> list[str]:
        """The authorized modules the prompt names, in the profile's order when it has a list."""
        authorized = list(authorized)
        if self.imports is None:
            return authorized
        return [name for name in self.imports if name in authorized]


#: math and statistics for arithmetic, pandas to read an uploaded table: what the examples of the tiny
#: prompt use. Plotting and numpy-style analysis are beyond a 135M model, and naming them only distracts it.
TINY_IMPORTS = ("math", "statistics", "pandas")

PROFILES: dict[str, PromptProfile] = {
    "default": PromptProfile("default", "code_agent"),
    # No tools: a tiny model calls web tools with invented arguments and cannot use what they return.
    "tiny": PromptProfile("tiny", "code_agent_tiny", tools=(), imports=TINY_IMPORTS, earlier_runs=False,
                          check_answers=True, checked_max_steps=3),
}


def profile_for(model: Any) -> PromptProfile:
    """The profile of the model's family (`prompt_style`), the default one when unknown."""
    return PROFILES.get(str(getattr(model, "prompt_style", "default") or "default"), PROFILES["default"])


def example_messages(templates: dict[str, Any], imports: Iterable[str] = (), task: str = "") -> list[dict[str, str]]:
    """The prompt's worked examples as chat turns (a person's task, the model's reply); an example that
    `needs` a module the code may not import is left out. With a `task` and an `example_choice.count` in the
    prompt file, only that many examples are shown: those most like the task, the closest last.

    Why turns and not text in the system prompt: small chat models copy the form of earlier replies far
    more faithfully than examples quoted inside instructions. Why a choice: a 135M model copies the form of
    the nearest examples, so a string task after table examples came back as `pd.read_csv(...)`, and fewer
    turns are also faster on a CPU (measured with bench/first_message_eval.py).
    """
    imports = set(imports)
    pairs: list[tuple[str, str]] = []
    for example in templates.get("examples") or ():
        if example.get("needs") and example["needs"] not in imports:
            continue
        described = describe_task(templates, example["task"], files=example.get("files") or ())
        pairs.append((render(templates, "task", task=described), str(example["reply"]).strip()))
    choice = templates.get("example_choice") or {}
    count = int(choice.get("count") or 0)
    if task.strip() and 0 < count < len(pairs):
        marker = str(choice.get("files_marker") or "")
        pairs = nearest_examples(pairs, render(templates, "task", task=task), count, marker)
    messages: list[dict[str, str]] = []
    for text, reply in pairs:
        messages.append({"role": "user", "content": text})
        messages.append({"role": "assistant", "content": reply})
    return messages


def _words(text: str) -> set[str]:
    """The words of a text; numbers left out (which numbers a question holds says nothing of its form)."""
    return {word for word in re.findall(r"[a-z0-9_]+", text.lower()) if not word.isdigit()}


def nearest_examples(pairs: list[tuple[str, str]], task: str, count: int,
                     files_marker: str = "") -> list[tuple[str, str]]:
    """The `count` examples whose task shares the most words with `task`, rarer words weighing more (so
    "reverse" or "columns" count, "the" and "what" hardly). The closest comes last, next to the task;
    ties keep the prompt file's order.

    `files_marker`: the text that says a task has uploaded files. An example of the same kind as the task
    (both with files or both without) counts as sharing one more word of the rarest kind, so a question
    without files is shown arithmetic and strings before tables, yet a strong match of words can still win.
    """
    example_words = [_words(text) for text, _ in pairs]
    seen_in = Counter(word for words in example_words for word in words)
    weight = {word: math.log((len(pairs) + 1) / (n + 0.5)) for word, n in seen_in.items()}
    wanted = _words(task)
    scores = [sum(weight[w] for w in words & wanted) for words in example_words]
    if files_marker:
        bonus, with_files = max(weight.values(), default=0.0), files_marker in task
        scores = [score + bonus * ((files_marker in text) == with_files)
                  for score, (text, _) in zip(scores, pairs, strict=True)]
    chosen = sorted(range(len(pairs)), key=lambda i: (-scores[i], i))[:count]
    return [pairs[i] for i in sorted(chosen, key=lambda i: (scores[i], -i))]


def describe_task(templates: dict[str, Any], text: str, files: Sequence[dict[str, Any]] = (),
                  unusable: Sequence[str] = (), earlier: Sequence[dict[str, Any]] = ()) -> str:
    """The task an agent receives: the person's message and how to reach their uploaded files.

    `files` are dicts with `name` and, where known, `columns`, `size`, `path` and `preview` (fenced data).
    Each prompt file words this its own way (`uploaded_files`): the full prompt shows previews, the tiny one
    only the file names and their columns, in the form its examples use. `earlier`: files uploaded with
    earlier messages (name and columns), which a small model needs told again with each follow-up; the full
    prompt leaves them to the conversation.
    """
    text = text.strip()
    if not files and not unusable and not earlier:
        return text
    files = [{"columns": [], "size": "", "path": "", "preview": "", **dict(f)} for f in files]
    earlier = [{"columns": [], **dict(f)} for f in earlier]
    return render(templates, "uploaded_files", text=text, files=files, unusable=list(unusable), earlier=earlier)


def name_choice_for(templates: dict[str, Any], task: str) -> NameChoice | None:
    """Which names a reply to `task` may write where a name starts, as the prompt file says (`name_choice`):
    the names its `listing` pattern finds in the task (group 1 holds them quoted, as `uploaded_files` wrote
    them), each with the task rewritten to list it alone (`single`), and the text after the last listing (the
    person's message) as the evidence the model's likelihood is measured on. None when the prompt file has no
    `name_choice` or the task lists no names."""
    spec = templates.get("name_choice") or {}
    if not spec or not task:
        return None
    found = list(re.finditer(str(spec["listing"]), task))
    listed = [re.findall(r'"([^"]*)"', match.group(1)) for match in found]
    names = tuple(dict.fromkeys(name for group in listed for name in group if name))
    evidence = task[found[-1].end():].strip() if found else ""
    if not names or not evidence:
        return None
    variants = {}
    for name in names:
        parts, position = [], 0
        for match, group in zip(found, listed, strict=True):
            parts.append(task[position:match.start()])
            if name in group:
                parts.append(str(spec["single"]).replace("{name}", name))
            position = match.end()
        variants[name] = "".join(parts) + task[position:]
    extra = {key: str(spec[key]) for key in ("opener",) if key in spec}
    return NameChoice(names=names, task=task, variants=variants, evidence=evidence, **extra)
