"""ToolCallingAgent: the model acts with tool calls, native where the adapter supports them, else JSON in text."""
from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from agents.decisions import Rejected
from agents.errors import ImageRefusedError, ToolError
from agents.executor.tree_walk import remove_tree
from agents.loop.base import MultiStepAgent
from agents.loop.context import RunContext
from agents.loop.parsing import parse_tool_calls
from agents.loop.step_runner import show_step_error
from agents.loop.tool_images import save_tool_image
from agents.loop.tool_runner import fenced_output
from agents.memory import ActionStep
from agents.models.base import Model, ModelReply, ToolCall
from agents.models.images import ImageData, TextAndImage, is_image, to_image
from agents.prompts import render
from agents.tooling.base import Tool
from agents.tooling.final_answer import FinalAnswerTool

MAX_PARALLEL_CALLS = 4


class ToolCallingAgent(MultiStepAgent):
    prompt_kind = "tool_calling_agent"
    stop_sequences = ["Observation:"]

    def __init__(self, tools: Iterable[Tool] = (), model: Model | None = None,
                 max_parallel_calls: int = MAX_PARALLEL_CALLS, workdir: str | os.PathLike[str] | None = None,
                 **kwargs: Any) -> None:
        """`workdir`: where the images tools return (screenshots) are saved so the chat shows them (the
        workbench gives the session's workspace); without one, a folder of the agent's own, made when the first
        image comes and removed by `close()`."""
        tools = list(tools)
        if not any(t.name == "final_answer" for t in tools):
            tools.append(FinalAnswerTool())
        self.max_parallel_calls = max(1, max_parallel_calls)
        self._workdir = Path(workdir) if workdir is not None else None
        self._owns_workdir = workdir is None
        self._workdir_lock = threading.Lock()
        super().__init__(tools=tools, model=model, **kwargs)

    @property
    def workdir(self) -> Path:
        """The folder the step's images are saved in (made on first use when the agent was given none)."""
        with self._workdir_lock:
            if self._workdir is None:
                self._workdir = Path(tempfile.mkdtemp(prefix="agentdeck-tools-"))
            return self._workdir

    def close(self) -> None:
        super().close()
        with self._workdir_lock:
            if self._owns_workdir and self._workdir is not None:
                remove_tree(str(self._workdir))
                self._workdir = None

    def native_tool_schemas(self, run: RunContext | None = None) -> list[dict[str, Any]] | None:
        if not getattr(self.model, "supports_native_tools", False):
            return None
        tools = self.run_tools(run) if run is not None else self.runner.tools
        return [tool.to_openai_schema() for tool in tools.values()]

    def act(self, step: ActionStep, reply: ModelReply, context: RunContext) -> None:
        calls = list(reply.tool_calls) or parse_tool_calls(reply.content)
        if not calls:
            step.error = render(self.prompt_templates, "parse_error")
            show_step_error(step, "ParsingError", "The reply held no tool call.", context)
            return
        for index, call in enumerate(calls):
            call.id = call.id or f"call_{context.step}_{index}"
        step.tool_calls = calls
        step.native_tool_calls = bool(reply.tool_calls)
        results = self._run_calls(calls, context)
        lines: list[str] = []
        errors: list[str] = []
        shown_images: list[ImageData] = []  # to the chat, after the step's calls (where a replay puts them)
        for call, (output, error) in zip(calls, results, strict=True):
            if error is not None:
                errors.append(f"{call.name}: {error}")
            elif call.name == "final_answer":
                step.is_final_answer, step.action_output = True, output
            elif isinstance(output, TextAndImage):  # a page and its screenshot
                shown = fenced_output(call.name, call.id, output.text, context)
                note = self._observe_image(call.name, output.image, context, shown_images)
                lines.append((f"{call.name} returned:\n" if len(calls) > 1 else "") + f"{shown}\n{note}")
            elif is_image(output):  # a screenshot, a chart: to a vision model with the next step
                lines.append(self._observe_image(call.name, output, context, shown_images))
            else:
                shown = fenced_output(call.name, call.id, output, context)  # outside data, fenced
                lines.append(f"{call.name} returned:\n{shown}" if len(calls) > 1 else shown)
        for number, image in enumerate(shown_images, 1):
            save_tool_image(self.workdir, image, number, step, context)
        step.observations = "\n\n".join(lines)
        if errors:
            step.is_final_answer = False
            step.error = "\n".join(errors)

    def _observe_image(self, name: str, output: Any, context: RunContext, shown: list[ImageData]) -> str:
        """What the model is told of a tool's image; the image itself goes with the next step when it can, and
        to the chat (`shown`) whatever the model reads, as long as it is an image within the limits."""
        try:
            image = to_image(output, self.observation_image_budget.limits)  # checked again: its type from its bytes
        except ImageRefusedError as exc:
            return f"{name} returned an image that is not shown to you: {exc}"
        shown.append(image)
        if not self.sends_observation_images():
            return f"{name} returned an image, which this model cannot see."
        if len(context.observation_images) >= self.observation_image_budget.max_images:
            return f"{name} returned an image; not shown to you (too many images in this step)."
        if len(image.data_url()) > self.image_room(context):
            return f"{name} returned an image; not shown to you (this conversation holds as many images as it may)."
        context.observation_images.append(image)
        return f"{name} returned an image of {image.width} x {image.height} pixels (attached)."

    def _run_calls(self, calls: list[ToolCall], context: RunContext) -> list[tuple[Any, str | None]]:
        """Run the calls, in parallel when there are several (up to max_parallel_calls); (output, error) per call,
        in the calls' order. A final_answer among them runs alongside the others; it ends the run only if no call
        failed (see above)."""
        def run_one(call: ToolCall) -> tuple[Any, str | None]:
            try:
                return self.runner.call(call.name, dict(call.arguments), context, call_id=call.id), None
            except Rejected as exc:
                return None, render(self.prompt_templates, "observations.rejected_by_user", reason=exc.reason)
            except ToolError as exc:
                return None, str(exc)

        if len(calls) == 1 or self.max_parallel_calls == 1:
            results = [run_one(call) for call in calls]
        else:
            with ThreadPoolExecutor(max_workers=min(self.max_parallel_calls, len(calls))) as pool:
                results = list(pool.map(run_one, calls))
        context.check_interrupt()
        return results
