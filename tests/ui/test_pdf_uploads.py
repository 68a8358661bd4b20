"""PDF uploads: parsed in the preview child with pypdf (page count, start of the text, how to read it), refused
clearly when damaged or password-protected, and read by the agent's own code in the sandbox."""
from __future__ import annotations

from pathlib import Path

import pytest
from ui_testlib import code_reply

from ui.settings import DEFAULT_AUTHORIZED_IMPORTS
from ui.uploads.intake import agent_task_text, ingest_upload

pytestmark = pytest.mark.usefixtures("preview_route")  # each format in the fast loop and through the child


def make_pdf(path: Path, pages: list[str]) -> Path:
    """A PDF with one line of text per page, written by matplotlib's PDF backend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.backends.backend_pdf import PdfPages

    with PdfPages(path) as pdf:
        for line in pages:
            fig = plt.figure(figsize=(8.5, 11))
            if line:
                fig.text(0.1, 0.9, line)
            pdf.savefig(fig)
            plt.close(fig)
    return path


def test_pdf_preview_shows_pages_text_and_how_to_read_it(tmp_path: Path) -> None:
    source = make_pdf(tmp_path / "Quarterly Report.pdf", ["Revenue grew 12 percent in Q3", "Costs fell in Oslo",
                                                          "Outlook: steady"])
    result = ingest_upload(source, tmp_path / "ws")
    assert result.ok, result.error
    assert result.kind == "pdf" and result.safe_name == "Quarterly_Report.pdf"
    assert (tmp_path / "ws" / "Quarterly_Report.pdf").read_bytes() == source.read_bytes()  # copied as it is
    assert result.preview.startswith("PDF document: 3 pages, text on 3 of the first 3")
    assert "from pypdf import PdfReader" in result.preview
    start = result.preview.split("Start of the text:\n", 1)[1]
    assert start.index("Revenue grew 12 percent in Q3") < start.index("Costs fell in Oslo")
    task = agent_task_text("Summarise the report", [result])
    assert "Quarterly_Report.pdf" in task and "Revenue grew 12 percent" in task and "PdfReader" in task


def test_pdf_without_text_says_so(tmp_path: Path) -> None:
    result = ingest_upload(make_pdf(tmp_path / "scan.pdf", ["", ""]), tmp_path / "ws")
    assert result.ok and "PDF document: 2 pages. No text found" in result.preview


def test_damaged_and_fake_pdfs_are_refused_clearly(tmp_path: Path) -> None:
    good = make_pdf(tmp_path / "good.pdf", ["hello"]).read_bytes()
    damaged = tmp_path / "damaged.pdf"
    damaged.write_bytes(good[: len(good) // 3])
    fake = tmp_path / "fake.pdf"
    fake.write_text("this is not a PDF at all\n")
    for path in (damaged, fake):
        result = ingest_upload(path, tmp_path / "ws")
        assert not result.ok and result.error.startswith(f"`{path.name}` ")
        assert "PDF" in result.error and str(tmp_path) not in result.error, result.error
        assert not (tmp_path / "ws" / path.name).exists()  # a refused file never reaches the workspace


def test_password_protected_pdf_is_refused(tmp_path: Path) -> None:
    from pypdf import PdfReader, PdfWriter

    plain = make_pdf(tmp_path / "plain.pdf", ["secret numbers"])
    writer = PdfWriter()
    for page in PdfReader(str(plain)).pages:
        writer.add_page(page)
    writer.encrypt("hunter2")
    locked = tmp_path / "locked.pdf"
    with open(locked, "wb") as fh:
        writer.write(fh)
    result = ingest_upload(locked, tmp_path / "ws")
    assert not result.ok and "password" in result.error


@pytest.mark.slow
def test_the_agent_reads_the_pdf_in_its_sandbox(tmp_path: Path) -> None:
    from agents.loop.code_agent import CodeAgent
    from agents.models.replay import ReplayModel

    workspace = tmp_path / "ws"
    result = ingest_upload(make_pdf(tmp_path / "report.pdf", ["Page one intro", "Revenue grew 12 percent"]), workspace)
    assert "pypdf" in DEFAULT_AUTHORIZED_IMPORTS
    model = ReplayModel([code_reply("Read page 2.", "from pypdf import PdfReader\n"
                                    "text = PdfReader('report.pdf').pages[1].extract_text()\n"
                                    "final_answer(text.strip())")])
    agent = CodeAgent(tools=[], model=model, workdir=str(workspace),
                      authorized_imports=list(DEFAULT_AUTHORIZED_IMPORTS), max_steps=2)
    try:
        assert agent.run(agent_task_text("What does page 2 say?", [result])) == "Revenue grew 12 percent"
    finally:
        agent.close()
