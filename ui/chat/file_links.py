"""File names in an answer as links to their published copies: only files of the session's workspace.

Why: an answer that says "saved to species_summary.csv" left the person to find the file in the panel. A name
becomes a link only when it names a regular file inside the workspace (as the session's WorkspaceFiles reads
it: ui/session/workspace_access.py, whatever runs the sandbox) (a relative path, or an absolute path
that lies in it, shown as its relative path so no server path reaches the chat); the link is to the file's
published copy (ui/chat/published_files.py), the only way files leave a session. Code blocks, existing links
and URLs are left alone. In the chat the URL is relative to the page, so it holds behind a proxy's path prefix
too; an answer returned through the API (ui/api/) links the copies' absolute URLs, as it has no page.
"""
from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any

from ui.session.workspace_access import relative_name
from ui.web.gradio_compat import page_file_url

#: At most this many names are linked in one text (each costs a publish: a copy of a new file).
MAX_LINKS = 20

_NAME = r"(?:[\w\-][\w.\-]*/)*[\w\-][\w.\-]*\.[A-Za-z0-9]{1,8}"
_CANDIDATE = re.compile(rf"(?<![\w/.\-:@%~\\])(/?{_NAME})(?![\w/\-]|\.\w)")
_INLINE_CODE = re.compile(r"(`+)([^`\n]+?)\1(?!`)")
#: Existing links and URLs. Each part stops at the first character that could start another match (a label at
#: `[`, a target at `(`, a scheme after 32 characters): with `[^\]]*` and `[^)]*` every `[` rescanned the rest of
#: the line, and an answer of "[a](" repeated (40 KB, any code can return it) held the app for 5 s.
_LEAVE = re.compile(r"\[[^\[\]\n]*\]\([^()\n]*\)|<[a-z]+://[^>\s]*>|\b[a-z][a-z0-9+.\-]{0,31}://\S+", re.IGNORECASE)
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]])")


class FileLinker:
    """Turns names of workspace files into Markdown links, publishing each file once per text."""

    def __init__(self, workdir: str | None, publish: Callable[[str], Any] | None,
                 url_of: Callable[[str], str] = page_file_url) -> None:
        self.workdir = os.path.abspath(workdir) if workdir else None
        self.publish = publish
        self.url_of = url_of  # a published copy's URL: relative to the page, or absolute for an API caller
        self._links: dict[str, str | None] = {}

    def link(self, text: str) -> str:
        """`text` with every name of a workspace file made a link (code blocks left as they are)."""
        if self.workdir is None or self.publish is None or "." not in text:
            return text
        out: list[str] = []
        fence: str | None = None
        for line in text.split("\n"):
            opener = _FENCE.match(line)
            if fence is None and opener:
                fence = opener.group(1)[0] * len(opener.group(1))
            elif fence is not None and line.strip().startswith(fence) and not line.strip().strip(fence[0]):
                fence = None
            elif fence is None:
                line = self._link_line(line)
            out.append(line)
        return "\n".join(out)

    def _link_line(self, line: str) -> str:
        pieces: list[str] = []
        pos = 0
        for match in _LEAVE.finditer(line):
            pieces.append(self._link_prose(line[pos:match.start()]))
            pieces.append(match.group(0))
            pos = match.end()
        pieces.append(self._link_prose(line[pos:]))
        return "".join(pieces)

    def _link_prose(self, text: str) -> str:
        pieces: list[str] = []
        pos = 0
        for match in _INLINE_CODE.finditer(text):
            pieces.append(_CANDIDATE.sub(self._replace_bare, text[pos:match.start()]))
            name = match.group(2).strip()
            found = self._target(name) if _CANDIDATE.fullmatch(name) else None
            pieces.append(f"[`{found[0]}`]({found[1]})" if found else match.group(0))
            pos = match.end()
        pieces.append(_CANDIDATE.sub(self._replace_bare, text[pos:]))
        return "".join(pieces)

    def _replace_bare(self, match: re.Match) -> str:
        found = self._target(match.group(1))
        return f"[{_escape(found[0])}]({found[1]})" if found else match.group(0)

    def _target(self, name: str) -> tuple[str, str] | None:
        """(the name as shown: relative to the workspace, the URL of its published copy), or None."""
        if self.workdir is None or self.publish is None:
            return None
        relpath = relative_name(name, self.workdir)  # by name only: the files are the sandbox's, maybe elsewhere
        if relpath is None:
            return None
        if relpath in self._links:
            url = self._links[relpath]
            return (relpath, url) if url else None
        url = None
        if len(self._links) < MAX_LINKS:
            try:  # published through the session's WorkspaceFiles: a regular file, no link at any depth
                url = self.url_of(self.publish(os.path.join(self.workdir, relpath)).path)
            except (OSError, ValueError):  # not publishable (missing, a link, a folder, unreadable): left as text
                url = None
        self._links[relpath] = url
        return (relpath, url) if url else None


def _escape(name: str) -> str:
    return _MARKDOWN_SPECIAL.sub(r"\\\1", name)


def link_files(text: str, workdir: str | None, publish: Callable[[str], Any] | None,
               url_of: Callable[[str], str] = page_file_url) -> str:
    return FileLinker(workdir, publish, url_of).link(text)
