"""The README's table of settings, written from `AppSettings` (`python -m ui.config.table --write`; `--check`
exits 1 when README.md differs). Why generated: the table and the object drifted apart when each was edited by
hand (25 variables were missing from the old list); `tests/ui/test_config.py` fails when they differ."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ui.config.app_settings import PARTS
from ui.config.base import accepts, default_text, env_name

README = Path(__file__).resolve().parents[2] / "README.md"
START = "<!-- settings table: written by `python -m ui.config.table --write`; edit ui/config/, not here -->"
END = "<!-- end of settings table -->"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def table() -> str:
    """The Markdown of every setting, part by part: variable, what it does, what it accepts, its default."""
    lines = [START]
    for heading, part in PARTS:
        lines += ["", f"**{heading}**", "", "| variable | what it does | accepts | default |",
                  "| --- | --- | --- | --- |"]
        for name, info in part.model_fields.items():
            lines.append(f"| `{env_name(name)}` | {_cell(info.description or '')} | {_cell(accepts(info))} | "
                         f"{_cell(default_text(info))} |")
    return "\n".join([*lines, "", END])


def with_table(readme: str) -> str:
    """The README's text with its table replaced by the current one (the markers must be there)."""
    start, end = readme.find(START), readme.find(END)
    if start < 0 or end < start:
        raise ValueError(f"README.md has no settings table between the markers {START!r} and {END!r}")
    return readme[:start] + table() + readme[end + len(END):]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ui.config.table", description=__doc__)
    parser.add_argument("--write", action="store_true", help="rewrite README.md's table")
    parser.add_argument("--check", action="store_true", help="exit 1 when README.md's table is not the current one")
    args = parser.parse_args(argv)
    text = README.read_text(encoding="utf-8")
    wanted = with_table(text)
    if args.write:
        README.write_text(wanted, encoding="utf-8")
        return 0
    if args.check:
        if wanted != text:
            print("README.md's settings table differs from ui/config/: run `python -m ui.config.table --write`",
                  file=sys.stderr)
            return 1
        return 0
    print(table())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
