"""The Gradio workarounds (ui/web/gradio_compat.py) are for the Gradio installed: its version is in their tested
range, and one outside it is reported at start-up."""
from __future__ import annotations

import logging

import gradio as gr
import pytest

from ui.web import gradio_compat
from ui.web.gradio_compat import TESTED_VERSIONS, browser_value, check_version, is_update


def test_the_installed_gradio_is_the_one_the_workarounds_were_tested_with() -> None:
    assert gradio_compat.tested(gr.__version__), (
        f"Gradio {gr.__version__} is installed; ui/web/gradio_compat.py was tested with >={TESTED_VERSIONS[0]},"
        f"<{TESTED_VERSIONS[1]}: re-check each workaround there, then widen TESTED_VERSIONS")


def test_the_range_includes_its_start_and_excludes_its_end() -> None:
    low, high = TESTED_VERSIONS
    assert gradio_compat.tested(low) and not gradio_compat.tested(high)
    assert not gradio_compat.tested("5.49.1") and not gradio_compat.tested("7.0.0")


@pytest.mark.parametrize("version, warned", [(gr.__version__, False), ("7.0.0", True), ("6.0.0", True)])
def test_start_up_warns_about_an_untested_gradio(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
                                                 version: str, warned: bool) -> None:
    monkeypatch.setattr(gr, "__version__", version)
    with caplog.at_level(logging.WARNING, logger="agentdeck"):
        assert check_version() is not warned
    messages = [r.getMessage() for r in caplog.records if r.name == "agentdeck"]
    assert bool(messages) is warned
    if warned:
        assert version in messages[0] and "gradio_compat.py" in messages[0]


def test_update_dicts_keep_their_properties_and_only_their_value_is_postprocessed() -> None:
    box = gr.Textbox()
    assert is_update(gr.skip()) and browser_value(box, gr.skip()) == gr.skip()
    update = browser_value(box, gr.update(value=12, visible=False))
    assert is_update(update) and update["visible"] is False and update["value"] == box.postprocess(12)
    assert browser_value(box, "plain") == "plain" and not is_update("plain")
    assert gradio_compat.chat_message_values(gr.Chatbot(), {"role": "user", "content": "hi"})[0]["content"]


def test_the_app_never_fetches_a_file_an_event_names_by_url(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Gradio moves an event's files into its cache, and one named `{"path": "https://..."}` it downloads: whole
    into memory, with no size limit, past the upload route's limits (size, disk floor). The app takes files
    only as uploads. A loopback server stands for a public host (Gradio's own address check refuses loopback,
    so its transport is swapped for a plain one)."""
    import asyncio
    import http.server
    import threading

    import httpx
    from gradio import processing_utils
    from gradio.state_holder import SessionState
    from ui_testlib import code_reply, write_transcript

    from ui.server import create_app
    from ui.settings import AppConfig
    from ui.web.gradio_compat import RemoteFileRefusedError

    asked: list[str] = []

    class Host(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.path)
            self.send_response(200)
            self.send_header("Content-Length", "8")
            self.end_headers()
            self.wfile.write(b"a,b\n1,2\n")

        def log_message(self, *args: object) -> None:
            pass

    host = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Host)
    threading.Thread(target=host.serve_forever, daemon=True).start()
    monkeypatch.setattr(processing_utils, "async_transport", httpx.AsyncHTTPTransport())
    transcript = write_transcript(tmp_path / "t.json", [code_reply("done", "final_answer(1)")])
    demo, _ = create_app(AppConfig(model=f"replay:{transcript}", data_dir=tmp_path / "data"))
    run = next(fn for fn in demo.fns.values() if fn.api_name == "run")
    message = {"text": "hi", "files": [{"path": f"http://127.0.0.1:{host.server_address[1]}/big.csv",
                                        "meta": {"_type": "gradio.FileData"}}]}
    inputs = [message, *(getattr(block, "value", None) for block in run.inputs[1:])]  # the form as it starts
    try:
        with pytest.raises(RemoteFileRefusedError, match="only as uploads"):
            asyncio.run(demo.preprocess_data(run, inputs, SessionState(demo)))
    finally:
        host.shutdown()
        host.server_close()
    assert asked == []


def test_discarding_an_upload_touches_nothing_outside_the_uploads_folder(tmp_path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A message may name a bundled example or any path (an API client sends what it likes): only a file the upload
    route stored is deleted once taken in, with its folders when empty (another file of its request stays)."""
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "cache"))
    root = gradio_compat.private_uploads_root()
    request = root / ("f" * 32)
    (request / "h1").mkdir(parents=True)
    (request / "h2").mkdir()
    first, second = request / "h1" / "a.csv", request / "h2" / "b.csv"
    first.write_text("a")
    second.write_text("b")
    outside = tmp_path / "example.csv"
    outside.write_text("x")
    escape = root / ".." / ".." / "example.csv"
    assert not gradio_compat.discard_upload(outside) and not gradio_compat.discard_upload(escape)
    assert not gradio_compat.discard_upload(root) and outside.exists() and root.is_dir()
    assert gradio_compat.discard_upload(first) and not first.parent.exists() and second.exists()
    assert gradio_compat.discard_upload(second) and not request.exists() and root.is_dir()
