"""Prompt profiles: the model's family picks the prompts, tools and imports (agents/prompts/profiles.py)."""
from __future__ import annotations

from pathlib import Path

from agents import ReplayModel
from agents.prompts import load_prompt_templates
from agents.prompts.profiles import PROFILES, describe_task, name_choice_for, profile_for
from tools import tool


class TinyReplay(ReplayModel):
    """A scripted model that says it is a very small one, as the embedded model does."""
    prompt_style = "tiny"
    supports_response_prefix = True

    def __init__(self, replies, **kwargs) -> None:
        super().__init__(replies, **kwargs)
        self.options: list[dict] = []

    def generate_stream(self, messages, stop_sequences=None, tools=None, **kwargs):
        self.options.append(dict(kwargs))
        return super().generate_stream(messages, stop_sequences, tools)


@tool
def web_lookup(query: str) -> str:
    """Looks something up on the web.

    Args:
        query: what to look up.
    """
    return query


def test_the_model_family_picks_the_profile() -> None:
    assert profile_for(TinyReplay(["x"])) is PROFILES["tiny"]
    assert profile_for(ReplayModel(["x"])) is PROFILES["default"]

    class Unknown(ReplayModel):
        prompt_style = "enormous"
    assert profile_for(Unknown(["x"])) is PROFILES["default"]


def test_a_tiny_model_gets_the_short_prompt_without_tools_and_few_imports(make_code_agent) -> None:
    agent, _ = make_code_agent(TinyReplay(["x"]), tools=[web_lookup],
                               authorized_imports=["pandas", "numpy", "matplotlib", "scipy"])
    assert agent.tools_left_out == ["web_lookup"] and "web_lookup" not in agent.tools
    system = agent.memory.messages[0]["content"]
    assert "These modules are imported: math, statistics, pandas (as pd)." in system
    for absent in ("web_lookup", "numpy", "matplotlib", "scipy"):
        assert absent not in system
    assert len(system) < 300
    # The worked examples are earlier chat turns, each reply one final_answer(...) line.
    examples = agent.memory.messages[1:len(agent.memory.system_prompt.messages)]
    assert [m["role"] for m in examples[:2]] == ["user", "assistant"]
    replies = [m["content"] for m in examples if m["role"] == "assistant"]
    assert replies and all(r.startswith("```python\nfinal_answer(") for r in replies)
    assert any("pd.read_csv(" in r for r in replies)
    assert agent.code_preamble() == "import math\nimport statistics\nimport pandas as pd"
    # The sandbox still allows what the operator authorized: only the prompt is shorter.
    assert "numpy" in agent.authorized_imports


def test_examples_that_need_pandas_are_left_out_when_it_may_not_be_imported(make_code_agent) -> None:
    agent, _ = make_code_agent(TinyReplay(["x"]))
    messages = agent.memory.messages
    assert not any("read_csv" in m["content"] for m in messages)
    assert "pandas" not in messages[0]["content"]
    assert agent.code_preamble() == "import math\nimport statistics"


def test_a_capable_model_keeps_the_full_prompt_tools_and_imports(make_code_agent) -> None:
    agent, _ = make_code_agent(ReplayModel(["x"]), tools=[web_lookup], authorized_imports=["pandas", "numpy"])
    assert "web_lookup" in agent.tools and agent.tools_left_out == []
    system = agent.memory.messages[0]["content"]
    assert "web_lookup" in system and "numpy" in system and "You are an expert assistant" in system
    assert len(agent.memory.system_prompt.messages) == 1 and agent.code_preamble() == ""


def test_a_tiny_run_answers_in_one_step_with_the_prefix_and_preamble(make_code_agent, tmp_path: Path) -> None:
    """The reply continues the prompt file's response prefix; its one line runs with pd imported for it."""
    workdir = tmp_path / "ws"
    workdir.mkdir()
    (workdir / "t.csv").write_text("x,y\n1,a\n5,b\n3,a\n")
    model = TinyReplay(['```python\nfinal_answer(pd.read_csv("t.csv")["x"].max())\n```'])
    agent, _ = make_code_agent(model, authorized_imports=["pandas"], workdir=workdir)
    task = agent.describe_task("What is the highest x?", [{"name": "t.csv", "columns": ["x", "y"]}])
    assert task == 'File t.csv is in the current directory. Columns: "x", "y".\nWhat is the highest x?'
    result = agent.run(task, return_result=True)
    assert result.output == 5 and result.state.value == "success"
    assert sum(1 for s in result.steps if s.step_type == "action") == 1
    assert [{k: v for k, v in o.items() if k != "name_choice"} for o in model.options] == [
        {"response_prefix": "```python\nfinal_answer"}]
    choice = model.options[0]["name_choice"]  # where it writes a column, one of these (name_choice.py)
    assert choice.names == ("x", "y") and choice.evidence == "What is the highest x?" and choice.task == task
    first_code = agent.memory.action_steps().__next__().code
    assert first_code.startswith("import math\nimport statistics\nimport pandas as pd\n")
    # What the model was sent: system, examples, then the task.
    sent = model.calls[0]
    assert sent[-1]["content"] == "New task:\n" + task and sent[-2]["role"] == "assistant"


def test_models_that_cannot_continue_a_reply_never_get_the_prefix(make_code_agent) -> None:
    class TinyWithoutPrefix(TinyReplay):
        supports_response_prefix = False

    model = TinyWithoutPrefix(["```python\nfinal_answer(6 * 7)\n```"])
    agent, _ = make_code_agent(model)
    assert agent.run("What is 6 times 7?") == 42
    assert model.options == [{}]


def test_the_full_prompt_describes_uploads_with_their_previews(make_code_agent) -> None:
    agent, _ = make_code_agent(ReplayModel(["x"]))
    task = agent.describe_task("Summarise", [{"name": "a.csv", "size": "1 KB", "path": "/w/a.csv",
                                              "preview": "<data>cols</data>", "columns": ["q"]}], ["b.exe"])
    assert task.startswith("Summarise\n\nThe following files were uploaded")
    assert "--- File `a.csv` (1 KB) ---\n<data>cols</data>" in task
    assert "/w/" not in task  # the server's workspace path never reaches the model: files open by name
    assert task.endswith("not in the working directory: b.exe.")
    assert agent.describe_task("  Just text ") == "Just text"


def test_a_small_model_is_told_about_earlier_uploads_with_each_follow_up() -> None:
    """A follow-up ("and its minimum?") to a 135M model must name the file again; the full prompt leaves
    earlier files to the conversation."""
    from agents.prompts import load_prompt_templates
    from agents.prompts.profiles import describe_task

    earlier = [{"name": "weather.csv", "columns": ["date", "temp_max"]}]
    tiny = describe_task(load_prompt_templates("code_agent_tiny"), "What is the maximum of temp_max?", earlier=earlier)
    assert 'File weather.csv is in the current directory. Columns: "date", "temp_max".' in tiny
    assert tiny.endswith("What is the maximum of temp_max?")
    full = describe_task(load_prompt_templates("code_agent"), "What is the maximum of temp_max?", earlier=earlier)
    assert full == "What is the maximum of temp_max?"


def _example_tasks(messages: list[dict]) -> list[str]:
    return [m["content"].splitlines()[-1] for m in messages if m["role"] == "user"]


def test_a_tiny_model_is_shown_the_examples_most_like_its_task_the_closest_last() -> None:
    """A 135M model copies the form of the nearest examples: a string task after table examples came back as
    `pd.read_csv(...)`. The prompt file says how many to show; a task with files gets table examples."""
    from agents.prompts import load_prompt_templates
    from agents.prompts.profiles import describe_task, example_messages

    templates = load_prompt_templates("code_agent_tiny")
    imports = ["math", "statistics", "pandas"]
    count = templates["example_choice"]["count"]
    everything = example_messages(templates, imports)
    assert len(everything) > 2 * count  # without a task: every example (the agent's initial prompt)

    strings = _example_tasks(example_messages(templates, imports, 'Reverse the string "bird".'))
    assert len(strings) == count and strings[-1].startswith("Reverse ")
    assert not any("Columns" in t or "rows" in t for t in strings[-4:])

    table = describe_task(templates, "What is the highest score?", [{"name": "games.csv",
                                                                    "columns": ["player", "score"]}])
    chosen = example_messages(templates, imports, table)
    assert len(chosen) == 2 * count
    assert all("is in the current directory" in m["content"] for m in chosen if m["role"] == "user")
    assert _example_tasks(chosen)[-1].startswith("What is the highest ")
    # The examples' files are made up: none is an upload, so their names cannot be mistaken for it.
    assert "games.csv" not in "".join(m["content"] for m in chosen)

    arithmetic = _example_tasks(example_messages(templates, imports, "What is 19 times 3?"))
    assert arithmetic[-1] == "What is 6 times 8?"
    assert not any("is in the current directory" in m["content"]
                   for m in example_messages(templates, imports, "What is 19 times 3?"))


def test_each_run_of_a_tiny_model_gets_the_examples_for_its_own_task(make_code_agent) -> None:
    model = TinyReplay(['```python\nfinal_answer("dlrow"[::-1])\n```', "```python\nfinal_answer(6 * 7)\n```"])
    agent, _ = make_code_agent(model, authorized_imports=["pandas"])
    assert agent.run('Reverse the string "world".') == "world"
    assert agent.run("What is 6 times 7?", reset=False) == 42
    shown = 2 * agent.prompt_templates["example_choice"]["count"]
    first, second = (_example_tasks(call[1:1 + shown]) for call in model.calls)
    assert first[-1].startswith("Reverse the string") and second[-1] == "What is 6 times 8?"
    # A follow-up is sent its examples and its own task only: the 135M model copied earlier answers into the
    # next one. The memory keeps every step.
    assert model.calls[1][1 + shown:] == [{"role": "user", "content": "New task:\nWhat is 6 times 7?"}]
    assert not any("world" in m["content"] for m in model.calls[1])
    assert any(getattr(s, "task", "") == 'Reverse the string "world".' for s in agent.memory.steps)


def test_a_tiny_models_retry_sees_its_own_run_and_a_capable_model_sees_the_conversation(make_code_agent) -> None:
    tiny = TinyReplay(["```python\nfinal_answer(1)\n```", "```python\nfinal_answer(undefined_name)\n```",
                       "```python\nfinal_answer(2)\n```"])
    agent, _ = make_code_agent(tiny, max_steps=3)
    assert agent.run("What is 0 + 1?") == 1
    assert agent.run("What is 1 + 1?", reset=False) == 2
    retry = tiny.calls[-1]
    assert "What is 1 + 1?" in retry[-3]["content"] and "NameError" in retry[-1]["content"]
    assert not any("0 + 1" in m["content"] for m in retry)

    capable = ReplayModel(["```python\nfinal_answer(1)\n```", "```python\nfinal_answer(2)\n```"])
    agent, _ = make_code_agent(capable)
    agent.run("What is 0 + 1?")
    assert agent.run("What is 1 + 1?", reset=False) == 2
    assert any("What is 0 + 1?" in m["content"] for m in capable.calls[-1])


def test_the_reply_prefix_stops_before_the_bracket_so_a_quote_can_follow_in_one_token() -> None:
    """The tokenizer writes `("` as one token: a prefix ending in `(` left the model only a lone `"`, and it
    answered `""[::-1]` for "reverse hello". Every example reply continues the prefix."""
    from agents.prompts import load_prompt_templates

    templates = load_prompt_templates("code_agent_tiny")
    prefix = templates["response_prefix"]
    assert prefix.endswith("final_answer")
    assert all(str(e["reply"]).startswith(prefix + "(") for e in templates["examples"])


def test_a_tiny_models_step_after_a_failed_one_samples_instead_of_repeating_itself(make_code_agent) -> None:
    """Greedy decoding with the same prompt wrote the same failing line at every retry."""
    model = TinyReplay(["```python\nfinal_answer(missing)\n```", "```python\nfinal_answer(3)\n```",
                        "```python\nfinal_answer(4)\n```"])
    agent, _ = make_code_agent(model)
    assert agent.run("What is 1 + 2?") == 3
    prefix = {"response_prefix": "```python\nfinal_answer"}
    temperature = agent.prompt_templates["retry_temperature"]
    assert model.options == [prefix, {**prefix, "do_sample": True, "temperature": temperature}]
    assert agent.run("What is 2 + 2?", reset=False) == 4
    assert model.options[-1] == prefix  # a new run starts greedy again


def test_a_tiny_task_with_uploads_lets_the_reply_choose_only_their_columns() -> None:
    """The names a reply may write after `["` are the uploads' columns; each variant lists one name alone (what
    the model's likelihood of the question is measured under); the question is the evidence."""
    templates = load_prompt_templates("code_agent_tiny")
    files = [{"name": "a.csv", "columns": ["day", "wind"]}, {"name": "b.csv", "columns": ["city", "wind"]}]
    task = describe_task(templates, "What is the mean of wind?", files)
    choice = name_choice_for(templates, task)
    assert choice is not None and choice.names == ("day", "wind", "city")
    assert choice.evidence == "What is the mean of wind?"
    assert choice.variants["day"] == ('File a.csv is in the current directory. Columns: "day".\n'
                                      'File b.csv is in the current directory. \nWhat is the mean of wind?')
    assert choice.variants["wind"].count('Columns: "wind".') == 2
    assert choice.pattern.search('final_answer(pd.read_csv("a.csv")["') is not None
    assert choice.pattern.search('final_answer(pd.read_csv("a.csv")') is None
    # No uploads, or a prompt file without `name_choice` (the full prompt): nothing to choose.
    assert name_choice_for(templates, "What is 2 + 2?") is None
    full = load_prompt_templates("code_agent")
    assert name_choice_for(full, describe_task(full, "What is the mean of wind?", files)) is None


def test_every_table_example_of_the_tiny_prompt_starts_by_reading_its_file() -> None:
    """A 135M model chooses its reply's first token before anything else: when the rows and columns examples
    began with `len(`, "how many distinct X" questions began so too and came back as the table's length
    (bench/first_message_eval.py). Every table example starts the same way, so what to take of the table
    (`.index`, `.columns` or a column after `["`) comes after the file, where the column choice applies."""
    templates = load_prompt_templates("code_agent_tiny")
    tables = [e for e in templates["examples"] if e.get("needs") == "pandas"]
    assert len(tables) >= 10
    for example in tables:
        name = example["files"][0]["name"]
        assert example["reply"].startswith(f'```python\nfinal_answer(pd.read_csv("{name}")'), example["task"]
