"""The README's `gradio_client` example ("Calling the app from a program"), run exactly as written against the app on
loopback: only its URL is changed to the test app's. A change to the API that breaks the documented calls fails here."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from ui_testlib import PROJECT_ROOT, code_reply, run_app, write_transcript

MARKER = "<!-- api-example:"
README_URL = "http://127.0.0.1:7860/"

SCRIPT = [
    code_reply("Count the species.",
               "import pandas as pd\ndf = pd.read_csv('penguins.csv')\ncounts = df['species'].value_counts()\n"
               "counts.to_csv('species_counts.csv')\nfinal_answer(', '.join(f'{k}: {v}' for k, v in counts.items()))"),
    code_reply("Split by island with the table already loaded.",
               "sizes = df.groupby('island').size()\nfinal_answer(', '.join(f'{k}: {v}' for k, v in sizes.items()))"),
]


def readme_example() -> str:
    text = (PROJECT_ROOT / "README.md").read_text(encoding="utf-8")
    after = text.split(MARKER, 1)[1]
    found = re.search(r"```python\n(.*?)```", after, re.DOTALL)
    assert found is not None and after.index("```python") < after.index("\n\n"), "the marker must sit on the block"
    return found.group(1)


def test_the_readme_example_runs_against_a_local_app(tmp_path: Path) -> None:
    code = readme_example()
    assert code.count(README_URL) == 1
    (tmp_path / "data").mkdir()
    with run_app(write_transcript(tmp_path / "script.json", SCRIPT), tmp_path / "data") as url:
        done = subprocess.run([sys.executable, "-c", code.replace(README_URL, url)], cwd=PROJECT_ROOT,
                              capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [line for line in done.stdout.splitlines() if not line.startswith("Loaded as API")]
    assert lines[0] == "finished Adelie: 152, Gentoo: 124, Chinstrap: 68", lines
    urls = dict(line.split(" ", 1) for line in lines[1:3])
    assert set(urls) == {"penguins.csv", "species_counts.csv"} and all(u.startswith(url) for u in urls.values())
    assert lines[3] == "finished Biscoe: 168, Dream: 124, Torgersen: 52", lines
    chat_id, title = lines[4].split(" ", 1)
    assert len(lines) == 5 and re.fullmatch(r"[0-9a-f]{32}", chat_id) and title, lines
