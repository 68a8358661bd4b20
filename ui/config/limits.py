"""What visitors and runs may use: steps, tokens, runs, sessions, and the time-outs that free what they hold.

`MAX_STEPS_LIMIT` is the one source of the step limit: the variable's range here and the settings form's slider
(ui/settings_form.py) both read it, so a default the operator sets is always one the form can show.
"""
from __future__ import annotations

from typing import Literal

from ui.config.base import CommaList, SettingsPart, setting

MAX_STEPS_LIMIT = 50  # the settings slider's top: a visitor's run never takes more steps
DEFAULT_AUTHORIZED_IMPORTS = ("pandas", "numpy", "matplotlib", "seaborn", "openpyxl", "scipy", "pypdf")
ApprovalMode = Literal["autonomous", "review_plans", "approve_code", "approve_tools", "all"]


class LimitSettings(SettingsPart):
    max_steps: int = setting(10, "the default step limit of a run (the settings form offers 1 to the same maximum)",
                             ge=1, le=MAX_STEPS_LIMIT)
    max_tokens_per_run: int = setting(0, "model tokens one run may use before it stops (0: no cap)", ge=0,
                                      le=1_000_000_000)
    approval_mode: ApprovalMode = setting("autonomous", "the approval mode a new tab starts with (see Human in the "
                                                        "loop)")
    authorized_imports: CommaList = setting(DEFAULT_AUTHORIZED_IMPORTS,
                                            "modules the code agent may import besides the safe standard ones "
                                            "(set but empty: none); visitors may narrow it, never widen it")
    tools: CommaList | None = setting(None, "the tools visitors may enable", default_text="every built-in tool")
    runs_per_minute: int = setting(10, "runs one visitor (one address; an IPv6 /64) may start per minute; "
                                       "re-running a reopened chat's code counts as a run", ge=1, le=1_000_000)
    runs_at_once: int = setting(2, "runs one visitor may have going at once, runs waiting for a decision included",
                                ge=1, le=100_000)
    max_runs: int = setting(32, "runs streaming at once on the server", ge=1, le=100_000)
    session_idle_s: int = setting(3600, "seconds without activity before a session is closed", ge=1, le=31_536_000)
    session_grace_s: int = setting(300, "seconds a closed tab's workspace is kept before it is deleted", ge=0,
                                   le=31_536_000)
    pageless_idle_s: int = setting(180, "seconds idle before a session no browser page holds (an API client) is "
                                        "closed", ge=1, le=31_536_000)
    reattach_grace_s: int = setting(120, "seconds a run whose page went away goes on, for a reloaded page to "
                                         "re-attach", ge=0, le=86_400)
    max_sessions: int = setting(2000, "live sessions (tabs and API clients) at once; the longest idle without a "
                                      "run or decision are closed first", ge=10, le=1_000_000)
    decision_timeout_s: int = setting(1800, "seconds a run paused for a decision nobody makes holds its sandbox",
                                      ge=60, le=31_536_000)
