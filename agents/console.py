"""ConsoleRenderer: prints a run's events in a terminal with rich. Verbosity 0 is silent."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agents import events as ev
from agents.answer_checks.marks import answer_mark

QUIET, NORMAL, DEBUG = 0, 1, 2


class ConsoleRenderer:
    def __init__(self, verbosity: int = NORMAL, console: Any = None) -> None:
        self.verbosity = verbosity
        self._console = console
        self._step_offsets: dict[str, int] = {}  # per run: the agent's step number before the run's first step

    @property
    def console(self) -> Any:
        if self._console is None:
            from rich.console import Console
            self._console = Console(highlight=False)
        return self._console

    def handle(self, event: ev.Event) -> None:
        if self.verbosity <= QUIET:
            return
        for cls in type(event).__mro__:  # a subclass of an event prints as that event
            handler = HANDLERS.get(cls)
            if handler is not None:
                handler(self, event)
                return

    def _indent(self, event: ev.Event) -> str:
        return "  " if event.parent_id else ""

    def _on_run_started(self, event: ev.RunStarted) -> None:
        from rich.panel import Panel
        self.console.print(Panel(event.task, title=f"{event.agent_name} · {event.model_id}", border_style="cyan"))

    def _on_step_started(self, event: ev.StepStarted) -> None:
        if event.step_type == "action":  # numbered within the run (the agent counts across a conversation)
            number = event.step - self._step_offsets.setdefault(event.run_id, event.step - 1)
            self.console.rule(f"{self._indent(event)}Step {number}", style="dim")

    def _on_model_text_delta(self, event: ev.ModelTextDelta) -> None:
        if self.verbosity >= DEBUG:
            self.console.print(event.text, end="", style="dim")

    def _on_model_retrying(self, event: ev.ModelRetrying) -> None:
        dropped = " (the partial reply is discarded)" if event.discarded_text else ""
        self.console.print(f"{self._indent(event)}[yellow]⏳ {event.reason}: retry {event.attempt}/"
                           f"{event.max_retries} in {event.wait_s:.1f} s{dropped}[/yellow]")

    def _on_plan_proposed(self, event: ev.PlanProposed) -> None:
        from rich.markdown import Markdown
        self.console.print(f"[bold]{'Updated plan' if event.is_update else 'Plan'}[/bold]")
        self.console.print(Markdown(event.plan))

    def _on_code_proposed(self, event: ev.CodeProposed) -> None:
        from rich.syntax import Syntax
        self.console.print(Syntax(event.code, "python", theme="monokai", line_numbers=False))

    def _on_tool_call_proposed(self, event: ev.ToolCallProposed) -> None:
        self.console.print(f"{self._indent(event)}[magenta]→ {event.tool_name}[/magenta]({event.arguments})")

    def _on_tool_call_result(self, event: ev.ToolCallResult) -> None:
        if event.rejected:
            reason = f": {event.output[:500]}" if event.output else ""
            self.console.print(f"{self._indent(event)}[yellow]← rejected{reason}[/yellow]")
            return
        if self.verbosity >= DEBUG or event.is_error:
            style = "red" if event.is_error else "dim"
            self.console.print(f"{self._indent(event)}[{style}]← {event.output[:500]}[/{style}]")

    def _on_execution_log(self, event: ev.ExecutionLog) -> None:
        self.console.print(f"[dim]Execution logs:[/dim]\n{event.text.rstrip()}")

    def _on_artifact_created(self, event: ev.ArtifactCreated) -> None:
        self.console.print(f"[green]{event.artifact_kind}[/green]: {event.relative_path}")

    def _on_step_error(self, event: ev.StepError) -> None:
        self.console.print(f"[bold red]{event.error_type}[/bold red]: {event.message}")

    def _on_decision_requested(self, event: ev.DecisionRequested) -> None:
        self.console.print(f"[yellow]Waiting for your decision on the {event.request_kind}…[/yellow]")

    def _on_decision_made(self, event: ev.DecisionMade) -> None:
        """Say what the person chose; after an edit, that their version is what runs."""
        if event.outcome == "edit":
            self.console.print(f"[yellow]You edited the {event.request_kind.replace('_', ' ')}: your version runs, "
                               "and the agent is told.[/yellow]")
        elif event.outcome == "reject":
            self.console.print(f"[yellow]Rejected{': ' + event.detail if event.detail else ''}[/yellow]")

    def _on_injection_flagged(self, event: ev.InjectionFlagged) -> None:
        self.console.print(f"[bold yellow]Possible prompt injection in {event.source}:[/bold yellow] {event.excerpt}")

    def _on_memory_compacted(self, event: ev.MemoryCompacted) -> None:
        self.console.print(f"[dim]Memory compacted: {event.steps_folded} older steps summarised, prompt "
                           f"{event.tokens_before} → {event.tokens_after} tokens (budget {event.budget}).[/dim]")

    def _on_step_finished(self, event: ev.StepFinished) -> None:
        usage = event.token_usage
        self.console.print(f"[dim]{event.step_type} step {event.step}: {event.duration_s:.2f}s · "
                           f"{usage.input_tokens} in / {usage.output_tokens} out tokens[/dim]")

    def _on_second_attempt_started(self, event: ev.SecondAttemptStarted) -> None:
        if not event.parent_id:
            self.console.print("[dim]Checking the answer: the model is asked again, afresh…[/dim]")

    def _on_second_attempt_finished(self, event: ev.SecondAttemptFinished) -> None:
        if event.parent_id:
            return
        said = f"gave {event.value!r}" if event.answered else f"gave no answer ({event.error})"
        agreed = " (agrees)" if event.agrees else ""
        self.console.print(f"Second attempt {said}{agreed}, {event.duration_s:.1f}s.", markup=False)

    def _on_final_answer(self, event: ev.FinalAnswer) -> None:
        if not event.parent_id:
            self.console.print(f"[bold green]Final answer:[/bold green] {event.value}")
            if event.check is not None:  # the app's checks of a small model's answer (agents/answer_checks/)
                self.console.print(answer_mark(event.check).replace("**", ""), markup=False)

    def _on_run_finished(self, event: ev.RunFinished) -> None:
        if event.error:
            self.console.print(f"[bold red]Run failed:[/bold red] {event.error}")
        elif event.state != "success" and not event.parent_id:
            self.console.print(f"[yellow]Run ended: {event.state}[/yellow]")


_Handler = Callable[[ConsoleRenderer, Any], None]


# Which method prints which event, by class (tests/agents/test_console_cli.py checks every event is here or in
# NOT_SHOWN).
HANDLERS: dict[type[ev.Event], _Handler] = dict([
    ev.handles(ev.RunStarted, ConsoleRenderer._on_run_started),
    ev.handles(ev.StepStarted, ConsoleRenderer._on_step_started),
    ev.handles(ev.ModelTextDelta, ConsoleRenderer._on_model_text_delta),
    ev.handles(ev.ModelRetrying, ConsoleRenderer._on_model_retrying),
    ev.handles(ev.PlanProposed, ConsoleRenderer._on_plan_proposed),
    ev.handles(ev.CodeProposed, ConsoleRenderer._on_code_proposed),
    ev.handles(ev.ToolCallProposed, ConsoleRenderer._on_tool_call_proposed),
    ev.handles(ev.ToolCallResult, ConsoleRenderer._on_tool_call_result),
    ev.handles(ev.ExecutionLog, ConsoleRenderer._on_execution_log),
    ev.handles(ev.ArtifactCreated, ConsoleRenderer._on_artifact_created),
    ev.handles(ev.StepError, ConsoleRenderer._on_step_error),
    ev.handles(ev.DecisionRequested, ConsoleRenderer._on_decision_requested),
    ev.handles(ev.DecisionMade, ConsoleRenderer._on_decision_made),
    ev.handles(ev.SecondAttemptStarted, ConsoleRenderer._on_second_attempt_started),
    ev.handles(ev.SecondAttemptFinished, ConsoleRenderer._on_second_attempt_finished),
    ev.handles(ev.InjectionFlagged, ConsoleRenderer._on_injection_flagged),
    ev.handles(ev.MemoryCompacted, ConsoleRenderer._on_memory_compacted),
    ev.handles(ev.StepFinished, ConsoleRenderer._on_step_finished),
    ev.handles(ev.FinalAnswer, ConsoleRenderer._on_final_answer),
    ev.handles(ev.RunFinished, ConsoleRenderer._on_run_finished),
])

# Events the console does not print, and why.
NOT_SHOWN: dict[type[ev.Event], str] = {
    ev.ModelOutput: "the reply was already printed as it streamed (ModelTextDelta, at debug verbosity)",
    ev.SandboxRun: "how the sandbox ran the code (for traces and metrics); its output and errors are printed",
    ev.Observation: "what the model is told next, made of the logs, errors and tool results printed before it",
}
