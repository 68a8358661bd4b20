"""Text for the exports (Markdown, notebook cells) that stays text in any renderer: the exports' one rule.

Why: an export is shared and opened elsewhere (a Markdown viewer, Jupyter, a wiki), and what it quotes was
written by whoever controls the model's input, the person, or code in the sandbox (file names, tool names,
error types). Rendered as it was, `<img src=x onerror=...>` ran, `[x](javascript:...)` was a live link, and a
fence in an answer swallowed the export's own code fence, so the code after it rendered as HTML.

The rule, for every piece of text the export did not write itself:
- prose: `&`, `<` and `>` become entities and `\\` and `[` are backslash-escaped, so no HTML, autolink, link, image
  or link definition can form; a line that would open a code fence has its first fence character escaped;
  inside what looks like inline code, `<` becomes a look-alike and `](` is split (a wrong guess about where
  inline code is can only change how those look, never let markup or a link through);
- code: in a fence longer than any backtick run in it (`fenced`); inline, a span likewise (`code_span`);
- a text that stands as its own block (`block`) keeps its fenced code blocks as written (they show literally),
  each closed at the text's end; everything else in it is prose;
- links and images only for the export's own relative file links with plain names (`file_link`).
"""
from __future__ import annotations

import bisect
import re
from urllib.parse import quote

LOOKALIKE_LT = "\uff1c"  # "＜", as the chat shows "<" inside inline code (ui/chat/safe_markdown.py)
_TICK_RUN = re.compile(r"`+")
_FENCE_LINE = re.compile(r"^( {0,3})(`{3,}|~{3,})")
_SAFE_SEGMENT = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9 _.()-]*$")
_parser = None


def longest_run(text: str, mark: str = "`") -> int:
    """The longest run of `mark` in `text` (0 if none), in one pass."""
    return max((len(run) for run in re.findall(re.escape(mark) + "+", text)), default=0)


def code_spans(line: str) -> list[tuple[int, int]]:
    """(start, end) of each inline code span in `line`: a run of backticks up to the next run of exactly as many,
    as CommonMark reads them; a run with no such partner is literal. One pass over the runs: the regex it
    replaces, `(`+)(.+?)\\1`, rescanned the rest of the line from every backtick, and a line of 20,000 of
    them (text code prints, quoted in an export or shown in the chat) took 28 s."""
    runs = [(match.start(), match.end()) for match in _TICK_RUN.finditer(line)]
    by_length: dict[int, list[int]] = {}
    for index, (start, end) in enumerate(runs):
        by_length.setdefault(end - start, []).append(index)
    spans: list[tuple[int, int]] = []
    index = 0
    while index < len(runs):
        start, end = runs[index]
        same = by_length[end - start]
        later = bisect.bisect_right(same, index)
        if later < len(same):
            spans.append((start, runs[same[later]][1]))
            index = same[later] + 1
        else:
            index += 1
    return spans


def fenced(text: str, language: str = "") -> str:
    """`text` in a code fence longer than any run of backticks in it, so nothing inside closes it early."""
    fence = "`" * max(3, longest_run(text) + 1)
    return f"{fence}{language}\n{text.rstrip()}\n{fence}"


def code_span(text: str) -> str:
    """`text` as one inline code span on one line (a name: a file's, a tool's): delimited by a backtick run
    longer than any in it, `<` as a look-alike."""
    flat = " ".join(str(text).split()).replace("<", LOOKALIKE_LT)
    ticks = "`" * (longest_run(flat) + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") or not flat else ""
    return f"{ticks}{pad}{flat}{pad}{ticks}"


def prose(text: str) -> str:
    """`text` as inert Markdown prose, line breaks kept; no block construct it holds is kept."""
    return "\n".join(_prose_line(line) for line in str(text).split("\n"))


def inline(text: str) -> str:
    """`text` as prose on one line (a title, a reason after a label)."""
    return prose(" ".join(str(text).split()))


def block(text: str) -> str:
    """A text that stands as its own block (an answer, a thought, a plan): its fenced code blocks kept as
    written (an unclosed one closed at its end), the rest prose. Only fences at the margin, outside lists and
    quotes, are kept: what an indented line belongs to depends on what comes before the text in the export
    (after a list item, a fence's lines could fall out of it); those, and indented code, are taken as prose."""
    text = str(text)
    if "```" not in text and "~~~" not in text:
        return prose(text)
    lines = text.split("\n")
    kept: dict[int, str] = {}  # line number -> the line as it is (code, or a fence line made safe)
    closers: list[str] = []
    for start, end, markup, info in _fences(text):
        kept[start] = f"{markup}{_info(info)}"
        closed = end - 1 > start and _closes(lines[end - 1], markup)
        for number in range(start + 1, end - 1 if closed else end):
            kept[number] = lines[number]
        if closed:
            kept[end - 1] = lines[end - 1]
        elif end >= len(lines):
            closers.append(markup)
    out = [kept[n] if n in kept else _prose_line(line) for n, line in enumerate(lines)]
    return "\n".join(out + closers[-1:])


def file_link(name: str, image: bool = False) -> str:
    """A link (or image) to a workspace file by its relative path, only for a plain relative name; any other
    name is shown as code, not linked."""
    parts = str(name).split("/")
    if not all(_SAFE_SEGMENT.match(part) for part in parts):
        return code_span(name)
    return f"{'!' if image else ''}[{prose(name)}]({quote(str(name))})"


def _prose_line(line: str) -> str:
    pieces: list[str] = []
    pos = 0
    for start, end in code_spans(line):
        pieces.append(_escape(line[pos:start]))
        pieces.append(line[start:end].replace("<", LOOKALIKE_LT).replace("](", "]\u200b("))
        pos = end
    pieces.append(_escape(line[pos:]))
    escaped = "".join(pieces)
    fence = _FENCE_LINE.match(escaped)
    if fence:  # it would open (or close) a code fence: its first fence character shown as itself
        escaped = fence.group(1) + "\\" + escaped[len(fence.group(1)):]
    return escaped


def _escape(segment: str) -> str:
    return (segment.replace("\\", "\\\\").replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace("[", "\\["))


def _info(info: str) -> str:
    """A fence's info string (its language) as a plain word: it reaches the rendered page as an attribute."""
    word = info.strip().split(" ")[0] if info.strip() else ""
    return re.sub(r"[^A-Za-z0-9_+.-]", "", word)


def _closes(line: str, markup: str) -> bool:
    stripped = line.strip()
    return len(line) - len(line.lstrip(" ")) <= 3 and len(stripped) >= len(markup) \
        and set(stripped) == {markup[0]}


def _fences(text: str) -> list[tuple[int, int, str, str]]:
    """(first line, end line, fence markup, info) of each fenced code block at the margin, outside any list or
    quote, found by a CommonMark parser as a renderer finds them."""
    global _parser
    if _parser is None:
        from markdown_it import MarkdownIt

        _parser = MarkdownIt("commonmark")
    found = []
    lines = text.split("\n")
    for token in _parser.parse(text):
        if token.type == "fence" and token.map and token.level == 0 and lines[token.map[0]].startswith(token.markup):
            found.append((token.map[0], token.map[1], token.markup, token.info))
    return found
