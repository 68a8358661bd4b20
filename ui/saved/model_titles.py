"""A saved chat's title written by the chat's own model (issue 31): whether to ask, what to ask, and what of the
reply may become a title.

Why: a title made from the task's first clause (ui/saved/titles.py) reads like the task; a capable model names
the chat by what it was about. The reply is model text shown in the person's chat list, so it is cleaned hard:
one line, no markup, quotes or links, short, and refused (the task's title stays) when it is empty, looks like
garbage, a refusal or an instruction. The asking itself runs after the run, in the background
(ui/session/title_job.py).
"""
from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from typing import Any

from agents.injection import detect_injection, fence
from ui.saved.titles import cut_at_word

#: Who wrote a saved chat's title (meta.json's "title_by"): made from the task and files, the chat's model, the
#: person (renamed). Only a task title is ever replaced by the model's.
BY_TASK, BY_MODEL, BY_PERSON = "task", "model", "person"
TITLE_BY = (BY_TASK, BY_MODEL, BY_PERSON)
#: A model's title, at most (cut at a word).
MODEL_TITLE_CHARS = 60
#: How long the model may take to answer before the task's title is kept for good (seconds).
TITLE_TIMEOUT_S = 20.0
#: Model strings never asked: the embedded demo model and local transformers models (too weak, and their call
#: takes the CPU the next run needs), and replayed transcripts (a title request would take a scripted reply).
NOT_ASKED = ("embedded", "transformers:", "replay:")
_TASK_CHARS, _ANSWER_CHARS, _MAX_FILES = 1500, 1500, 12
_REPLY_CHARS = 600  # a longer reply is an essay, not a title
#: A thinking block's opening or closing tag (the blocks are cut in one pass: `_without_thinking`).
_THINK_TAG = re.compile(r"<(/?)think(?:ing)?>", re.IGNORECASE)
_LEAD = re.compile(r"^(?:#{1,6}\s*|[-*+>]\s+|\d+[.)]\s+|(?:chat\s+|suggested\s+)?title\s*[:\-–]\s*)+", re.IGNORECASE)
_WRAP = "\"'`*_“”‘’«»„「」 "
_REFUSAL = re.compile(r"^(?:i'?m sorry|sorry|i can(?:no|')t|i am unable|i'?m unable|as an ai|i do not|i don'?t|"
                      r"unfortunately)\b", re.IGNORECASE)
_LINKISH = re.compile(r"https?:|www\.|<[^>]*>|\]\(|```|\{\{|\}\}", re.IGNORECASE)


def capable(model_string: str, model: Any) -> bool:
    """Whether a chat's model is asked for its title: a hosted, litellm (Ollama too) or OpenAI-compatible model;
    not the embedded or a local transformers model, a replayed transcript, or any model with the tiny prompts."""
    text = str(model_string or "").strip().lower()
    if not text or model is None or text.startswith(NOT_ASKED):
        return False
    return getattr(model, "prompt_style", "default") != "tiny"


def should_ask(title_by: str, model_string: str, model: Any, answer: str, asked_before: bool) -> bool:
    """Ask the model for the chat's title now: its title is still the task's (not renamed, not the model's),
    its run ended with an answer, it was not asked before in this session, and its model is capable."""
    return (title_by == BY_TASK and bool(str(answer or "").strip()) and not asked_before
            and capable(model_string, model))


def title_messages(task: str, answer: str, files: Iterable[str] = ()) -> list[dict[str, Any]]:
    """The request (agents/prompts/chat_title.yaml): the task, the answer and the file names, fenced as data."""
    from agents.prompts import load_prompt_overlay, render

    templates = load_prompt_overlay("chat_title")
    names = [str(name) for name in files if str(name).strip()][:_MAX_FILES]
    user = render(templates, "user", task=fence(str(task or "")[:_TASK_CHARS], "chat:task"),
                  answer=fence(str(answer)[:_ANSWER_CHARS], "chat:answer") if str(answer or "").strip() else "",
                  files=fence(", ".join(names), "chat:file_names") if names else "")
    return [{"role": "system", "content": render(templates, "system")}, {"role": "user", "content": user}]


def clean_reply(reply: Any) -> str | None:
    """The title in a model's reply, or None when none may be shown (empty, an essay, garbage, a refusal, a link
    or markup, or what looks like an instruction): one line, no quotes or markdown, at most MODEL_TITLE_CHARS."""
    text = _without_thinking(str(reply or "")).strip()
    if not text or len(text) > _REPLY_CHARS or "```" in text:
        return None  # nothing, an essay, or code
    line = next((ln for ln in text.splitlines() if ln.strip()), "")
    line = "".join(ch for ch in line if unicodedata.category(ch)[0] != "C")  # controls, bidi overrides, zero-widths
    line = _LEAD.sub("", " ".join(line.split()))
    previous = None
    while previous != line:
        previous = line
        line = _LEAD.sub("", line.strip(_WRAP)).rstrip(".").strip()
    line = line.replace("**", "").replace("__", "").replace("`", "")
    if not _looks_like_title(line):
        return None
    return cut_at_word(line, MODEL_TITLE_CHARS)


def _without_thinking(text: str) -> str:
    """`text` without its `<think>...</think>` blocks (each from an opening tag to the next closing one; an opening
    tag never closed stays, so the reply is refused as markup). One pass over the tags: a lazy `.*?` regex
    between them rescans the rest of the reply for every opening tag, and a reply of 10,000 of them (70 KB, a
    visitor's task can ask for it) held the interpreter for 30 s."""
    kept: list[str] = []
    done, opened = 0, -1
    for tag in _THINK_TAG.finditer(text):
        if opened < 0 and not tag.group(1):
            opened = tag.start()
        elif opened >= 0 and tag.group(1):
            kept.append(text[done:opened])
            done, opened = tag.end(), -1
    kept.append(text[done:])
    return "".join(kept)


def _looks_like_title(line: str) -> bool:
    visible = [ch for ch in line if not ch.isspace()]
    words = [ch for ch in visible if ch.isalnum()]
    if len(words) < 2 or len(words) < 0.6 * len(visible):
        return False  # empty, punctuation or symbols
    if line.casefold() in {"untitled", "untitled chat", "title", "none", "n/a"}:
        return False
    if len(line) > 3 * MODEL_TITLE_CHARS:
        return False  # a paragraph: the model did not write a title
    return not (_REFUSAL.search(line) or _LINKISH.search(line) or detect_injection(line))
