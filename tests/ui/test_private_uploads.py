"""Uploads are each visitor's own: Gradio's upload route stores a file under the hash of its bytes, so whoever
uploaded the same bytes under the same name got the same path back, learned that someone had uploaded that file,
and could fetch it. Here, through the real HTTP API of a launched app, visitors upload the same secret file."""
from __future__ import annotations

from pathlib import Path

import pytest
import requests
from ui_testlib import PROJECT_ROOT, code_reply, form, run_app, write_transcript

from ui.web.gradio_compat import PRIVATE_UPLOADS

SECRET = b"name,salary\nalice,123456\nbob,654321\n"


def upload(url: str, name: str, data: bytes) -> requests.Response:
    """One visitor's upload: its own connection, no cookie or header of anyone else's."""
    with requests.Session() as visitor:
        return visitor.post(url + "gradio_api/upload", files={"files": (name, data)}, timeout=30)


def fetch(url: str, path: str | Path) -> requests.Response:
    with requests.Session() as visitor:
        return visitor.get(url + f"gradio_api/file={path}", timeout=30)


@pytest.mark.slow
def test_a_visitor_cannot_confirm_or_fetch_anothers_upload_by_its_bytes(tmp_path: Path, monkeypatch) -> None:
    import gradio_client.client
    from gradio_client import Client

    transcript = write_transcript(tmp_path / "t.json",
                                  [code_reply("read it", "final_answer(open('secret.csv').read())")])
    data = tmp_path / "data"
    data.mkdir()
    cache = tmp_path / "gradio-cache"
    with run_app(transcript, data, extra_env={"GRADIO_TEMP_DIR": str(cache)}) as url:
        a = upload(url, "secret.csv", SECRET)
        b = upload(url, "secret.csv", SECRET)
        fresh = upload(url, "secret.csv", SECRET + b"carol,1\n")
        assert a.status_code == b.status_code == fresh.status_code == 200
        (path_a,), (path_b,), (path_fresh,) = a.json(), b.json(), fresh.json()
        root = (cache / PRIVATE_UPLOADS).resolve()
        parts_a, parts_b, parts_fresh = (Path(p).resolve().relative_to(root).parts
                                         for p in (path_a, path_b, path_fresh))

        # B's path is not A's, and no folder of it is A's: each request has a random folder of its own.
        assert path_a != path_b and parts_a[0] != parts_b[0] and len(parts_a[0]) >= 32
        # B's answer has the same shape whether or not someone uploaded these bytes before.
        assert len(parts_b) == len(parts_fresh) and parts_b[-1] == parts_fresh[-1] == "secret.csv"
        assert parts_b[0] not in (parts_a[0], parts_fresh[0])
        assert fetch(url, path_b).content == SECRET  # B's own upload is served to B

        # What B can work out from its own answer: the content's hash folder (the same for A's bytes) under
        # Gradio's own layout, or under the uploads' folder. Neither is a file; nor is a folder listed.
        content_folder = parts_b[-2]
        for derived in (cache / content_folder / "secret.csv", root / content_folder / "secret.csv"):
            assert not derived.exists()
            assert fetch(url, derived).status_code in (403, 404)
        assert fetch(url, root).status_code in (403, 404)

        # A sends the message with its upload (as the page does: the path the upload route gave). Once the
        # workspace has it, the upload route's copy is gone: A's path serves nothing, even to whoever learns it.
        monkeypatch.setattr(gradio_client.client.Endpoint, "_upload_file", lambda self, f, data_index: f)
        client = Client(url, verbose=False, download_files=False)
        client.predict({"text": "read it", "files": [{"path": path_a, "orig_name": "secret.csv",
                                                      "meta": {"_type": "gradio.FileData"}}]},
                       **form(f"replay:{transcript}"), approval_mode="autonomous", api_name="/run")
        kept = list(data.glob("**/workspace/secret.csv"))
        assert [p.read_bytes() for p in kept] == [SECRET]
        assert not Path(path_a).exists() and not (root / parts_a[0]).exists()
        assert fetch(url, path_a).status_code in (403, 404)
        assert fetch(url, path_b).content == SECRET  # B's own, never sent, is B's until Gradio's clean-up

    # Nothing of a visitor's lies at a path named by its content: outside the uploads' and the published files'
    # random folders, the served folder holds only copies of the app's own bundled files.
    bundled = {p.read_bytes() for p in (PROJECT_ROOT / "ui" / "assets").rglob("*") if p.is_file()}
    for path in cache.rglob("*"):
        inside = path.relative_to(cache).parts[0] in (PRIVATE_UPLOADS, "agentdeck")
        if path.is_file() and not inside:
            assert path.read_bytes() in bundled, path
