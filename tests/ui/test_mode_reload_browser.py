"""The approval mode a person chose survives a reload, in Chromium: the selector shows it again and the next
message pauses as it says (a reload used to show "Autonomous" again, and the next step ran without asking)."""
from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator

import pytest
from browser_driver import (
    BROWSER_MARKS,
    EVENT_COUNTER_JS,
    chat_text,
    choose_mode,
    handler_index,
    launch,
    open_page,
    send,
    wait_for_events,
    wait_for_handler,
    wait_for_text,
)
from ui_testlib import code_reply, run_app, write_transcript

from tests.waiting import wait_until

pytestmark = BROWSER_MARKS

SCRIPT = [code_reply("Print it.", "print('the approved code ran')\nfinal_answer('done after the reload')")]
MODE = "Approve each code step"


@pytest.fixture(scope="module")
def app_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    base = tmp_path_factory.mktemp("mode-reload")
    (base / "data").mkdir()
    with run_app(write_transcript(base / "script.json", SCRIPT), base / "data") as url:
        yield url


def test_the_chosen_mode_survives_a_reload_and_the_next_message_waits(app_url: str) -> None:
    with open_page(app_url) as page:
        # The page's load has ended (it names the owner the choice is kept for) before the person chooses: a choice
        # made during the load is the next test's case. In a full run on a loaded machine the choice once came
        # first and the reload showed "Autonomous".
        wait_for_events(page, 0, 1)
        assert page.locator("#approval-mode input").input_value() == "Autonomous: never pause"
        choose_mode(page, MODE)
        page.reload()
        page.wait_for_selector("#chat")
        page.wait_for_function("l => document.querySelector('#approval-mode input').value === l", arg=MODE,
                               timeout=15_000)
        send(page, "Print something.")
        code = page.locator("#edit-code")
        code.wait_for(state="visible")  # the code step waits for the person
        wait_for_text(page, " · ✋ waiting for you")
        assert "the approved code ran\n" not in chat_text(page)
        page.locator("#approve-btn").click()
        wait_for_text(page, "done after the reload")
        assert page.locator("#approval-mode input").input_value() == MODE


def test_a_mode_chosen_while_the_page_loads_stays_chosen(app_url: str) -> None:
    """The page's load shows the browser's saved mode when it ends: a mode the person chose before that used to
    be undone (the selector went back, and the choice was not kept). Here the load's request is held until the
    person has chosen, so the choice always comes first."""
    sync_api = pytest.importorskip("playwright.sync_api")
    with urllib.request.urlopen(app_url + "config", timeout=30) as response:
        config = json.load(response)
    load_ids = {d["id"] for d in config["dependencies"] if d.get("api_name") == "browser_session"}
    held: list = []
    joined: list[int] = []

    def hold_the_load(route) -> None:
        fn_index = (route.request.post_data_json or {}).get("fn_index")
        if fn_index in load_ids and not held:
            held.append(route)  # answered once the mode is chosen
            return
        joined.append(fn_index)
        route.continue_()

    with sync_api.sync_playwright() as playwright:
        browser = launch(playwright)
        context = browser.new_context(viewport={"width": 1440, "height": 1000})
        context.add_init_script(EVENT_COUNTER_JS)
        page = context.new_page()
        page.set_default_timeout(30_000)
        try:
            page.route("**/queue/join*", hold_the_load)
            page.goto(app_url)

            def pumped(condition):  # Playwright runs the route handler while the page is waited on
                return lambda: page.wait_for_timeout(20) or condition()

            wait_until(pumped(lambda: held), what="the page load's request")
            before = len(joined)
            page.locator("#approval-mode input").click()
            page.get_by_role("option", name=MODE).click()
            page.wait_for_function("l => document.querySelector('#approval-mode input').value === l", arg=MODE)
            # The choice's event was sent (on the server it waits for the page load, as a message does).
            wait_until(pumped(lambda: len(joined) > before), what="the choice sent to the server")
            held[0].continue_()
            page.wait_for_function("document.documentElement.classList.contains('ad-chat-shown')")
            page.wait_for_function("l => document.querySelector('#approval-mode input').value === l", arg=MODE,
                                   timeout=15_000)
            page.unroute("**/queue/join*")
            page.reload()
            page.wait_for_function("document.documentElement.classList.contains('ad-chat-shown')")
            page.wait_for_function("l => document.querySelector('#approval-mode input').value === l", arg=MODE,
                                   timeout=15_000)  # the server kept the choice for this browser
        finally:
            context.close()
            browser.close()


def test_choosing_a_mode_waits_until_the_choice_reached_the_server(app_url: str) -> None:
    """`choose_mode` (browser_driver.py) returns once the choice's own event has finished. It waited for any one
    event: a choice also starts the update of the line under the selector, which could finish first on a loaded
    machine, and the first test then reloaded before the choice had reached the server (a full run's failure: the
    selector showed "Autonomous" after the reload). Here the choice's request is held: the wait must not end."""
    sync_api = pytest.importorskip("playwright.sync_api")
    with open_page(app_url) as page:
        wait_for_events(page, 0, 1)
        set_mode = handler_index(page, "set_approval_mode")
        held: list = []

        def hold_the_choice(route) -> None:
            if (route.request.post_data_json or {}).get("fn_index") == set_mode:
                held.append(route)  # answered below
                return
            route.continue_()

        page.route("**/queue/join*", hold_the_choice)
        with pytest.raises(sync_api.TimeoutError):
            choose_mode(page, MODE, timeout=5)
        assert held  # the choice's request was held, not lost
        for route in held:
            route.continue_()
        page.unroute("**/queue/join*")
        wait_for_handler(page, set_mode, 0)
        page.reload()
        page.wait_for_selector("#chat")
        page.wait_for_function("l => document.querySelector('#approval-mode input').value === l", arg=MODE,
                               timeout=15_000)
