"""The chat's dispatch from event classes to handlers covers every event the loop can emit."""
from __future__ import annotations

import inspect

from agents import events as ev
from ui.chat.render import HANDLERS, NOT_SHOWN, Transcript


def test_event_types_lists_the_events_the_loop_emits() -> None:
    names = {cls.__name__ for cls in ev.event_types()}
    assert {"RunStarted", "StepStarted", "CodeProposed", "FinalAnswer", "RunFinished"} <= names
    assert "Event" not in names


def test_every_event_class_is_shown_or_listed_as_not_shown() -> None:
    missing = [cls.__name__ for cls in ev.event_types() if cls not in HANDLERS and cls not in NOT_SHOWN]
    assert not missing, (f"ui/chat/render.py has no handler for {missing}: add one to HANDLERS, or list the event in "
                         "NOT_SHOWN with the reason the chat does not show it")
    both = [cls.__name__ for cls in HANDLERS if cls in NOT_SHOWN]
    assert not both, f"{both} both have a handler and are listed as not shown"


def test_not_shown_events_say_why() -> None:
    assert all(reason.strip() for reason in NOT_SHOWN.values())


def test_every_handler_method_is_registered() -> None:
    """A handler method written but left out of HANDLERS would never run."""
    registered = {handler.__name__ for handler in HANDLERS.values()}
    methods = {name for name, _ in inspect.getmembers(Transcript, inspect.isfunction) if name.startswith("_on_")}
    assert methods - registered == set()


def test_dispatch_is_by_class_not_by_name() -> None:
    """A subclass of an event, whatever its name, is shown as that event; a class merely named like one is not."""
    class Renamed(ev.CodeProposed):
        pass

    class CodeProposed(ev.Event):  # the name of a real event, but not one
        code = "print('impostor')"

    shown = Transcript()
    shown.apply(ev.StepStarted(run_id="r", step=1, step_type="action"))
    shown.apply(CodeProposed(run_id="r", step=1))
    assert "impostor" not in str(shown.messages())
    shown.apply(Renamed(run_id="r", step=1, code="print('renamed')"))
    assert "print('renamed')" in str(shown.messages())
