"""Run an agent in a terminal: `python -m agents "What is 17 * 23?" --model openai/gpt-4.1-mini`."""
from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agents.tooling.base import Tool

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m agents", description="Run an AgentDeck agent on a task.")
    parser.add_argument("task", help="What the agent should do.")
    parser.add_argument("--model", default=None,
                        help="Model string, e.g. openai/gpt-4.1-mini, hf:Qwen/Qwen2.5-Coder-32B-Instruct, "
                             "transformers:<id or folder>, replay:<transcript.yaml>, embedded "
                             "(default: chosen from the provider keys in the environment).")
    parser.add_argument("--agent", choices=("code", "tool"), default="code", help="Code agent or tool-calling agent.")
    parser.add_argument("--max-steps", type=int, default=10)
    parser.add_argument("--planning-interval", type=int, default=None)
    parser.add_argument("--tools", default="",
                        help="Comma-separated tools to enable, e.g. web_search,visit_webpage: the built-in "
                             "ones and those of AGENTDECK_TOOLS_PATH and AGENTDECK_MCP_SERVERS.")
    parser.add_argument("--imports", default="", help="Comma-separated extra modules the code may import.")
    parser.add_argument("--approval", default="autonomous",
                        help="autonomous, review_plans, approve_code, approve_tools or all (answered at the prompt).")
    parser.add_argument("--image", action="append", default=[], metavar="PATH",
                        help="A picture (PNG, JPEG, WebP, GIF) given with the task, for a vision model; repeatable.")
    parser.add_argument("--structured", action="store_true",
                        help="Code steps as {thought, code} JSON through the model's structured output.")
    parser.add_argument("--workdir", default=None, help="Folder the code works in (default: a temporary folder).")
    parser.add_argument("--sandbox", default=None,
                        help="Sandbox backend the code runs on: local, docker (default: local; "
                             "`python -c 'from agents.executor import backends; print(backends.available())'` "
                             "lists the ones this machine can use).")
    parser.add_argument("--record", default=None, metavar="PATH",
                        help="Record every model exchange to this transcript (play it back with replay:PATH).")
    parser.add_argument("-v", "--verbosity", type=int, default=1, help="0 quiet, 1 steps, 2 debug (streamed text).")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from agents import CodeAgent, ToolCallingAgent
    from agents.decisions import TerminalDecider
    from agents.errors import AgentDeckError
    from agents.executor import backends
    from agents.executor.errors import SandboxError
    from agents.models import load_model
    from agents.models.selection import default_model_string
    from agents.tooling.ask_user import AskUserTool

    try:
        model = load_model(args.model or default_model_string(), record_to=args.record)
        tools = [AskUserTool(), *_chosen_tools(args.tools)]
        common = dict(tools=tools, model=model, max_steps=args.max_steps, planning_interval=args.planning_interval,
                      approval_policy=args.approval, decider=TerminalDecider(), verbosity=args.verbosity)
        if args.agent == "code":
            imports = [m.strip() for m in args.imports.split(",") if m.strip()]
            backend = backends.resolve(args.sandbox)  # a backend this machine cannot use is refused before any step
            agent = CodeAgent(authorized_imports=imports, workdir=args.workdir, sandbox=backend,
                              use_structured_outputs_internally=args.structured, **common)
        else:
            agent = ToolCallingAgent(**common)
        with agent:
            result = agent.run(args.task, return_result=True, images=args.image or None)
    except (AgentDeckError, SandboxError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("stopped", file=sys.stderr)
        return 130
    if result.error:
        print(f"error: {result.error}", file=sys.stderr)
        return 1
    if args.verbosity <= 0:
        print(result.output)
    return 0 if result.state.value == "success" else 1


def _chosen_tools(names: str) -> list[Tool]:
    """The tools named on the command line, from every tool the registry finds (built-in, user files, MCP)."""
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    if not wanted:
        return []
    from agents.errors import ConfigurationError
    from tools.registry import all_tools, unavailable_builtin_tools

    available = all_tools()
    missing = [n for n in wanted if n not in available]
    if missing:
        absent = unavailable_builtin_tools()  # a built-in this install lacks: say what would add it
        why = "".join(f" {n} {absent[n]}" for n in missing if n in absent)
        unknown = [n for n in missing if n not in absent]
        head = f"Unknown tool(s) {', '.join(unknown)};" if unknown else "Not available here:"
        raise ConfigurationError(f"{head}{why} Available: {', '.join(sorted(available))}.")
    return [available[n] for n in wanted]


if __name__ == "__main__":
    sys.exit(main())
