"""Tool and @tool: typed inputs, validation with clear messages, schemas, functions without source."""
from __future__ import annotations

import subprocess
import sys
from typing import Literal

import pytest

from agents import Tool, tool
from agents.errors import ToolDefinitionError, ToolInputError
from tests.conftest import PROJECT_ROOT


@tool
def scale(value: float, factor: int = 2, label: str | None = None) -> str:
    """Multiply a value by a factor.

    Args:
        value: The number to scale.
        factor: How many times bigger
            the result should be.
        label (str): A label to prefix.

    Returns:
        The scaled value as text.
    """
    return f"{label or ''}{value * factor}"


def test_decorator_reads_hints_and_google_docstring():
    assert scale.name == "scale"
    assert scale.description.startswith("Multiply a value by a factor.")
    assert scale.inputs["value"] == {"type": "number", "description": "The number to scale."}
    assert scale.inputs["factor"]["description"] == "How many times bigger the result should be."
    assert scale.inputs["factor"]["nullable"] is True
    assert scale.inputs["label"]["type"] == "string" and scale.inputs["label"]["nullable"]
    assert scale.output_type == "string"


def test_tool_call_uses_defaults_and_positional_arguments():
    assert scale(1.5) == "3.0"
    assert scale(2, 3, "x=") == "x=6"
    assert scale(value=1, factor=4) == "4"


@pytest.mark.parametrize("args,kwargs,message", [
    ((), {}, "missing required argument 'value'"),
    (("a",), {}, "should be of type number, got str"),
    ((True,), {}, "should be of type number, got bool"),
    ((1,), {"colour": "red"}, "unexpected argument 'colour'"),
    ((1, 2, "a", 4), {}, "takes 3 argument(s)"),
    ((1,), {"value": 2}, "got argument 'value' twice"),
])
def test_bad_arguments_give_clear_errors(args, kwargs, message):
    with pytest.raises(ToolInputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        scale(*args, **kwargs)


def test_openai_schema():
    schema = scale.to_openai_schema()
    assert schema["type"] == "function"
    function = schema["function"]
    assert function["name"] == "scale"
    assert function["parameters"]["required"] == ["value"]
    assert function["parameters"]["properties"]["factor"] == {
        "type": "integer", "description": "How many times bigger the result should be."}


def test_literal_becomes_enum_and_is_enforced():
    @tool
    def pick(colour: Literal["red", "blue"]) -> str:
        """Pick a colour.

        Args:
            colour: Which colour.
        """
        return colour

    assert pick.inputs["colour"]["enum"] == ["red", "blue"]
    assert pick("red") == "red"
    with pytest.raises(ToolInputError, match="must be one of"):
        pick("green")


@pytest.mark.parametrize("source,message", [
    ("def f(x: int) -> int:\n    return x", "add a docstring"),
    ("def f(x) -> int:\n    '''Doc.\n\n    Args:\n        x: a\n    '''\n    return x", "needs a type hint"),
    ("def f(x: int) -> int:\n    '''Doc.'''\n    return x", "describe parameter 'x'"),
    ("def f(*xs: int) -> int:\n    '''Doc.\n\n    Args:\n        xs: a\n    '''\n    return 1", "not supported"),
])
def test_bad_definitions_are_refused(source, message):
    namespace: dict = {}
    exec(source, namespace)
    with pytest.raises(ToolDefinitionError, match=message):
        tool(namespace["f"])


def test_tool_subclass_validation_and_call():
    class Greeter(Tool):
        name = "greet"
        description = "Say hello."
        inputs = {"who": {"type": "string", "description": "Whom to greet."}}
        output_type = "string"

        def forward(self, who: str) -> str:
            return f"hello {who}"

    greeter = Greeter()
    assert greeter("ann") == "hello ann"
    assert greeter("bob") == "hello bob"
    assert greeter.signature_text() == "greet(who: string) -> string"

    class Broken(Tool):
        name = "broken"
        description = "x"
        inputs = {"a": {"type": "weird", "description": "?"}}

    with pytest.raises(ToolDefinitionError, match="unknown type 'weird'"):
        Broken()


def test_decorator_works_without_source_in_python_c():
    code = (
        "from agents import tool\n"
        "@tool\n"
        "def shout(text: str) -> str:\n"
        "    '''Upper-case text.\n\n    Args:\n        text: What to shout.\n    '''\n"
        "    return text.upper()\n"
        "print(shout('hi'), shout.inputs['text']['description'])\n"
    )
    completed = subprocess.run([sys.executable, "-c", code], cwd=PROJECT_ROOT, capture_output=True, text=True,
                               timeout=60)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "HI What to shout."
