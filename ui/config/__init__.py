"""The app's settings: one typed object (`AppSettings`, pydantic-settings) for every `AGENTDECK_*` variable.

Parts by concept: `models.py`, `sandbox.py`, `limits.py` (with `MAX_STEPS_LIMIT`, the form's and the
variable's one maximum), `uploads.py`, `server.py`, `tools.py`; `base.py` the `setting(...)` helper and the
words for what a variable accepts; `app_settings.py` the object and `load_settings()`; `table.py` the README's
table (`python -m ui.config.table --check` / `--write`).
"""
from ui.config.app_settings import PARTS, AppSettings, fields, load_settings, variable_names
from ui.config.base import SettingsError, accepts, env_name
from ui.config.limits import DEFAULT_AUTHORIZED_IMPORTS, MAX_STEPS_LIMIT

__all__ = ["DEFAULT_AUTHORIZED_IMPORTS", "MAX_STEPS_LIMIT", "PARTS", "AppSettings", "SettingsError", "accepts",
           "env_name", "fields", "load_settings", "variable_names"]
