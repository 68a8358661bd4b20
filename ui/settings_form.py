"""The agent settings form, defined once: its fields, the components the page shows for them, and how a saved
chat's settings come back into it.

A setting is one field of `SettingsForm` and one component in `build`; `RunSettings.from_form` (ui/settings.py)
checks its value. Nothing else names the settings: the handlers take the form's values by name (Gradio's
`inputs_kwargs`, `SettingsForm.by_name`) as one `FormValues`, the views show it with `values()`, and the tests
build it with `tests/ui/ui_testlib.py` `form()`. Why: a form passed positionally had to be repeated in every
handler, and a handler left out shifted the values after it (its approval mode got the new setting).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import gradio as gr

from ui.chat.formatting import first_words
from ui.settings import AGENT_TYPES, MAX_STEPS_LIMIT, AppConfig
from ui.tool_offer import available_tools, default_tool_names, tools_note

V = TypeVar("V")


@dataclass
class SettingsForm(Generic[V]):
    """One field per setting, named as the API names its parameter. The page holds its components
    (`SettingsForm[Any]` built by `build`); a handler gets the values a page or an API client sent (`FormValues`),
    unchecked: any type, any value, until `RunSettings.from_form`."""
    model: V
    agent_type: V
    max_steps: V
    planning_interval: V
    tools: V
    imports: V

    def by_name(self) -> dict[str, V]:
        """The fields by name, in order: a handler's `inputs_kwargs` (it takes them as `**form`)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def values(self) -> list[V]:
        """The fields in order: the form as a handler's outputs (the order of `by_name`)."""
        return list(self.by_name().values())


#: The values of the form as a handler receives them (from the page or an API client: unchecked).
FormValues = SettingsForm[Any]


def field_names() -> list[str]:
    return [f.name for f in dataclasses.fields(SettingsForm)]


def skipped() -> list[Any]:
    """The form left as it is, as a handler's outputs."""
    return [gr.skip()] * len(field_names())


def build(config: AppConfig, model: Any) -> SettingsForm[Any]:
    """The settings' components (call inside the settings accordion); `model` is the picker built above it."""
    tools = available_tools()
    agent_type = gr.Radio(list(AGENT_TYPES), value="code", label="Agent type", elem_id="settings-agent-type")
    # Its top is AGENTDECK_MAX_STEPS's own maximum (ui/config/limits.py): the operator's default always fits.
    max_steps = gr.Slider(1, MAX_STEPS_LIMIT, value=config.max_steps, step=1, label="Max steps",
                          elem_id="settings-max-steps")
    # No minimum: Gradio refuses a value under it before any handler runs, so a typed -3 failed every message
    # with a bare "Error"; RunSettings.from_form reads 0 or less as no planning.
    planning = gr.Number(0, label="Planning interval (0 = no planning)", precision=0, elem_id="settings-planning")
    tool_names = gr.CheckboxGroup(
        [(f"{name}: {first_words(desc)}" if desc else name, name) for name, desc in tools],
        value=default_tool_names(), label="Tools", elem_id="settings-tools",
        info=tools_note(tools),
    )
    imports = gr.Textbox(", ".join(config.authorized_imports), label="Code agent may import",
                         info="Besides the safe standard modules. Comma-separated.", elem_id="settings-imports")
    return SettingsForm(model=model, agent_type=agent_type, max_steps=max_steps, planning_interval=planning,
                        tools=tool_names, imports=imports)


def saved_values(saved: Any, form: FormValues) -> FormValues:
    """The form for a reopened chat: its saved settings (`settings_dict` of its RunSettings) where usable, else
    the form's current values. A saved setting whose name and shape are the form's is taken as it is
    (`RunSettings.from_form` checks it, as it checks the page's)."""
    if not isinstance(saved, dict):
        return dataclasses.replace(form, planning_interval=form.planning_interval or 0, tools=list(form.tools or []))
    known = {name for name, _ in available_tools()}
    shown = {name: saved[name] for name in field_names() if name in saved}  # a setting of the form's own shape
    model = saved.get("model")
    shown["model"] = model if isinstance(model, str) and model else form.model
    shown["agent_type"] = saved.get("agent_type") if saved.get("agent_type") in AGENT_TYPES else form.agent_type
    shown["max_steps"] = saved["max_steps"] if isinstance(saved.get("max_steps"), int) else form.max_steps
    interval = saved.get("planning_interval")
    shown["planning_interval"] = interval if isinstance(interval, int) and interval else 0
    tools = saved.get("tools")
    shown["tools"] = [t for t in tools if isinstance(t, str) and t in known] if isinstance(tools, list) \
        else list(form.tools or [])
    imports = saved.get("authorized_imports")
    shown["imports"] = ", ".join(str(i) for i in imports) if isinstance(imports, list) else form.imports
    return dataclasses.replace(form, **shown)


def initial_values(config: AppConfig) -> FormValues:
    """The values of a fresh page's form (the server's model, each component's first value): what a run that
    no page started (bench/first_message_eval.py) uses."""
    shown = build(config, model=None).by_name()
    return FormValues(**{name: getattr(component, "value", None) for name, component in shown.items()}
                      | {"model": config.model})
