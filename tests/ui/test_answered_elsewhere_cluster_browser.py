"""A decision shown in a tab on one replica and answered in a tab on the other (issue 28's cluster: redis, moto's
S3, two replicas behind nginx, deploy/cluster/): the first tab learns of it without a reload. A paused run has no
stream, and the tab that answered is served by another process, so the first tab finds it in the shared store
(ui/panels/answered_elsewhere.py): its panel goes, it says so, and it shows the chat as saved there."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from browser_driver import BROWSER_MARKS, EVENT_COUNTER_JS, choose_mode, launch, send, wait_for_text
from cluster_client import Cluster, cookie_for
from nothing_lost_harness import ANSWER, SET_X
from ui_testlib import write_transcript

pytestmark = [*BROWSER_MARKS, pytest.mark.cluster]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    for program in ("redis-server", "nginx"):
        if not (shutil.which(program) or Path(f"/usr/sbin/{program}").exists()):
            pytest.skip(f"{program} is not installed (make cluster-up installs it with apt as root)")
    folder = tmp_path_factory.mktemp("cluster")
    transcript = write_transcript(folder / "script.json", [SET_X, ANSWER] + [ANSWER] * 5)
    running = Cluster(folder, extra_env={"AGENTDECK_MODEL": f"replay:{transcript}"})
    running.start()
    yield running
    running.stop()


def _tab(browser, cluster: Cluster, replica: int, storage: str | None = None):
    """A page served by `replica` (the proxy's affinity cookie), with the browser's saved state `storage` (the
    same person's other browser window) if given."""
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    context.add_cookies([{"name": "agentdeck_replica", "value": cookie_for(cluster, replica),
                          "url": cluster.proxy_url}])
    context.add_init_script(EVENT_COUNTER_JS)
    if storage is not None:
        context.add_init_script(f"localStorage.setItem('agentdeck-browser', {json.dumps(storage)});")
    page = context.new_page()
    page.set_default_timeout(60_000)
    page.goto(cluster.proxy_url)
    page.wait_for_selector("#chat")
    page.wait_for_function("Object.keys(localStorage).includes('agentdeck-browser')")
    return context, page


def _code_is(page, part: str) -> None:
    page.wait_for_function("s => (document.querySelector('#edit-code .cm-content')?.innerText || '').includes(s)",
                           arg=part)


def test_a_decision_answered_on_the_other_replica_reaches_the_first_tab(cluster: Cluster) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            _, first = _tab(browser, cluster, 0)
            send(first, "Set x to 41")
            wait_for_text(first, "42", timeout=120)
            choose_mode(first, "Approve each code step")
            send(first, "Use x")
            _code_is(first, "final_answer(x + 1)")
            storage = first.evaluate("localStorage.getItem('agentdeck-browser')")
            _, second = _tab(browser, cluster, 1, storage)  # the same person, served by the other replica
            _code_is(second, "final_answer(x + 1)")
            second.locator("#approve-btn").click()
            wait_for_text(second, "Decision: approve", timeout=120)
            # The first tab shows the decision made and the run's end, and offers no Approve for it any more.
            wait_for_text(first, "Decision: approve", timeout=60)
            first.wait_for_function("!document.querySelector('#approve-btn') || "
                                    "!document.querySelector('#approve-btn').offsetParent")
        finally:
            browser.close()
