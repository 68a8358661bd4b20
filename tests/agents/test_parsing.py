"""Reading actions out of replies."""
from agents.loop.parsing import extract_code, parse_tool_calls


def test_fenced_python_block():
    assert extract_code("Thought: x\n```python\nx = 1\nprint(x)\n```\n") == "x = 1\nprint(x)"


def test_code_tags_and_unclosed_blocks():
    assert extract_code("Thought: y\n<code>\ny = 2\n</code>") == "y = 2"
    assert extract_code("Thought\n<code>z = 3\n") == "z = 3"
    assert extract_code("```py\na = 1\n") == "a = 1"


def test_several_blocks_are_joined_and_json_blocks_ignored():
    text = "```python\na = 1\n```\nthen\n```python\nb = 2\n```\n```json\n{\"k\": 1}\n```"
    assert extract_code(text) == "a = 1\n\nb = 2"


def test_no_code():
    assert extract_code("I think the answer is 4.") is None
    assert extract_code("```\n```") is None


def test_json_tool_calls_in_text():
    text = 'Action:\n{"name": "add", "arguments": {"a": 1}}\nand {"name": "final_answer", "arguments": "done"}'
    calls = parse_tool_calls(text)
    assert [(c.name, c.arguments) for c in calls] == [("add", {"a": 1}), ("final_answer", {"answer": "done"})]


def test_json_tool_calls_tolerate_junk():
    assert parse_tool_calls("{not json} {\"x\": 1} plain text") == []
    calls = parse_tool_calls('```json\n{"tool": "search", "args": {"q": "cats"}}\n```')
    assert calls[0].name == "search" and calls[0].arguments == {"q": "cats"}
