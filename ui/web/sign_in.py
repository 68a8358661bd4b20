"""Sign in with Hugging Face: whether the page gets the button, what a visitor without a token is told, and the
page's notes that change once someone is signed in.

Why a module of its own: Gradio attaches its OAuth routes as soon as a `gr.LoginButton` is on the page. On a Space
(SYSTEM=spaces) they need the `OAUTH_*` variables `hf_oauth: true` sets; anywhere else Gradio mocks the login with
the machine's own Hugging Face token and a `whoami` call, and without a token it raises at start-up. So the button
goes on the page only where it can work, and the operator's log says why when it does not.
"""
from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from typing import Any

import gradio as gr

from ui.model_choice import model_note as generic_note
from ui.settings import AppConfig
from ui.web.gradio_compat import MOCK_ACCESS_TOKEN
from ui.web.hf_login_env import on_a_space

LOG = logging.getLogger("agentdeck")
BUTTON_PLACE = "the **Sign in with Hugging Face** button at the top of the right-hand column"


def build_page(config: AppConfig, build: Callable[[], gr.Blocks]) -> gr.Blocks:
    """`build()`; when Gradio's local mock of the login fails while the page is put together (it checks the
    token with the Hub: offline, or a token the Hub refuses), the page again without the button, and one line
    in the log. On a Space any failure is raised as it is."""
    try:
        return build()
    except Exception as exc:
        if not config.hf_login or on_a_space():
            raise
        LOG.warning("AgentDeck: no Sign in with Hugging Face button: Gradio's local mock of the login could not "
                    "check this machine's token with the Hub (%s: %s).", type(exc).__name__,
                    " ".join(str(exc).split())[:200])
        config.hf_login = False
        return build()




def visitor_token(token: gr.OAuthToken | None) -> str | None:
    """The Hugging Face token to run a signed-in visitor's models with. Gradio's local mock login hands out a
    placeholder that the Hub refuses; it stands for this machine's own login, so that token is used."""
    value = getattr(token, "token", None) if token is not None else None
    if not value:
        return None
    if value == MOCK_ACCESS_TOKEN and not on_a_space():
        try:
            from huggingface_hub import get_token

            return get_token() or None
        except Exception:
            return None
    return str(value)


def demo_buttons_phrase(labels: Sequence[str]) -> str:
    """"the 🎬 Penguins and 🎬 Seattle weather buttons": the recorded-demo buttons as the page names them."""
    names = [label.split(":", 1)[0].strip() for label in labels]
    joined = " and ".join(names) if len(names) <= 2 else ", ".join(names[:-1]) + " and " + names[-1]
    return f"the {joined} button{'s' if len(names) > 1 else ''}"


def sign_in_message(hf_login: bool, has_page: bool, demo_labels: Sequence[str]) -> str:
    """What a visitor without a Hugging Face token is told, for where they are: a page with the sign-in button,
    an API client, or a local page without the button."""
    if not has_page:
        return ("This model runs on Hugging Face inference providers and needs a Hugging Face token: pass yours "
                "with gradio_client's `Client(url, oauth_token=\"hf_…\")` (a token with the inference permission), "
                "or pick another model.")
    demos = demo_buttons_phrase(demo_labels)
    if hf_login:
        return (f"🔑 **Sign in to chat.** This model runs with your own Hugging Face account's inference credits: "
                f"use {BUTTON_PLACE} (your chats are then kept under your name). Meanwhile, {demos} under the "
                f"message box replay recorded analyses.")
    if os.environ.get("SPACE_ID"):  # a Space whose owner did not turn sign-in on: nothing the visitor can set
        return (f"🔑 **Chatting is not available on this Space yet**: its owner has not turned on Sign in with "
                f"Hugging Face (nor set a server token). Meanwhile, {demos} under the message box replay recorded "
                f"analyses.")
    return (f"🔑 **This model needs a Hugging Face token.** Set `HF_TOKEN` before starting the app, or pick another "
            f"model in the right-hand column. Meanwhile, {demos} under the message box replay recorded analyses.")


# ----- the page's notes ------------------------------------------------------------------------------
SIGNED_OUT_NOTE = ("Sign in with Hugging Face to chat: your own account's inference credits are used and your chats "
                   "are kept under your name.")
BROWSER_LIST_NOTE = "Chats are saved on this server for this browser. Click one to reopen it."


def sign_in_note(profile: gr.OAuthProfile | None) -> str:
    if profile is None:
        return SIGNED_OUT_NOTE
    return (f"Signed in as **{_name(profile)}**: your own account's inference credits are used and your chats are "
            f"kept under your name.")


def list_note(profile: gr.OAuthProfile | None, request: gr.Request | None = None) -> str:
    if profile is not None:
        return (f"Chats are saved on this server under your Hugging Face name ({_name(profile)}), on any browser. "
                f"Click one to reopen it.")
    if getattr(request, "username", None):
        return "Chats are saved on this server under your login. Click one to reopen it."
    return BROWSER_LIST_NOTE


def _name(profile: gr.OAuthProfile) -> str:
    """The signed-in user's name, safe to put in Markdown."""
    name = str(getattr(profile, "username", "") or "")
    return "".join(ch for ch in name if ch.isalnum() or ch in "-_.")[:80] or "you"


def model_note(config: AppConfig, model: str, profile: gr.OAuthProfile | None) -> str:
    """The note under the model picker, for whether the visitor can use an `hf:` model as they are."""
    model = str(model or "")
    if model.startswith("hf:") and not os.environ.get("HF_TOKEN", "").strip():
        if profile is not None:
            return (f"ℹ️ A Hugging Face model: it runs with your own account's inference credits (signed in as "
                    f"{_name(profile)}).")
        if not config.hf_login:
            return "ℹ️ A Hugging Face model: set `HF_TOKEN` before starting the app to use it (or pick another model)."
    return generic_note(model, config.configured_model)


def wire(demo: gr.Blocks, config: AppConfig, model: Any, note: Any, list_note_md: Any,
         sign_in_md: Any | None) -> None:
    """Page load and model changes: the notes say what holds for this visitor (signed in or not)."""
    outputs = [note, list_note_md] + ([sign_in_md] if sign_in_md is not None else [])

    def on_load(model_value: str, request: gr.Request, profile: gr.OAuthProfile | None = None) -> tuple:
        notes = (model_note(config, model_value, profile), list_note(profile, request))
        return notes + ((sign_in_note(profile),) if sign_in_md is not None else ())

    def on_model(model_value: str, profile: gr.OAuthProfile | None = None) -> str:
        return model_note(config, model_value, profile)

    demo.load(on_load, inputs=[model], outputs=outputs, api_visibility="private", concurrency_limit=None,
              show_progress="hidden")
    model.change(on_model, inputs=[model], outputs=[note], api_visibility="private", concurrency_limit=None,
                 show_progress="hidden")
