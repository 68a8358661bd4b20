"""AgentDeck web UI: `python app.py`.

Host and port follow GRADIO_SERVER_NAME / GRADIO_SERVER_PORT; AGENTDECK_MODEL picks the model
(e.g. `replay:transcript.yaml` to run offline); workspaces live under AGENTDECK_DATA_DIR (default ./data
beside this file). Set AGENTDECK_USERNAME and AGENTDECK_PASSWORD to require a login.
Every AGENTDECK_* setting: ui/config/ (checked here at start) and README.md's Configuration.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from agents.errors import ConfigurationError
from ui.config import SettingsError
from ui.config.apply import apply_to_libraries
from ui.server import create_app, launch
from ui.settings import AppConfig

try:
    config = AppConfig.from_env(Path(__file__).resolve().parent)  # a bad AGENTDECK_* value: SettingsError
    if config.settings is not None:  # the libraries' part first, so the models checked see the operator's server
        apply_to_libraries(config.settings)
    config.check_models()  # a bad AGENTDECK_MODEL is refused now, with the reason, not after a first run
except SettingsError as exc:  # its message already starts "AgentDeck cannot start:"
    print(exc, file=sys.stderr, flush=True)
    raise SystemExit(2) from None
except ConfigurationError as exc:
    print(f"AgentDeck cannot start: {exc}", file=sys.stderr, flush=True)
    raise SystemExit(2) from None
# At module level, as Spaces (and `gradio app.py` reload mode) look for it.
demo, controller = create_app(config)


def main() -> None:
    print(f"AgentDeck: model {config.model!r}, workspaces in {config.data_dir}", flush=True)
    if config.settings is not None and config.settings.username and not config.auth:
        print("AgentDeck: AGENTDECK_USERNAME is set without AGENTDECK_PASSWORD: login is off.", flush=True)
    try:
        launch(config, app=(demo, controller))
    except ConfigurationError as exc:  # e.g. a login Gradio would only mock (ui/web/login_guard.py)
        print(f"AgentDeck cannot start: {exc}", file=sys.stderr, flush=True)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
