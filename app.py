"""AgentDeck web UI: `python app.py`.

Host and port follow GRADIO_SERVER_NAME / GRADIO_SERVER_PORT; AGENTDECK_MODEL picks the model
(e.g. `replay:transcript.yaml` to run offline); workspaces live under AGENTDECK_DATA_DIR (default ./data
beside this file). Set AGENTDECK_USERNAME and AGENTDECK_PASSWORD to require a login.
See ui/settings.py for the other settings.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ui.app import create_app, launch  # noqa: E402
from ui.settings import AppConfig  # noqa: E402

config = AppConfig.from_env(Path(__file__).resolve().parent)
# At module level, as Spaces (and `gradio app.py` reload mode) look for it.
demo, controller = create_app(config)


def main() -> None:
    print(f"AgentDeck: model {config.model!r}, workspaces in {config.data_dir}", flush=True)
    if os.environ.get("AGENTDECK_USERNAME") and not config.auth:
        print("AgentDeck: AGENTDECK_USERNAME is set without AGENTDECK_PASSWORD: login is off.", flush=True)
    launch(config, app=(demo, controller))


if __name__ == "__main__":
    main()
