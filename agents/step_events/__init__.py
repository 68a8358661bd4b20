"""One mapping from memory steps to events: what a run streams, and what a reopened chat replays.

A step's record (agents/memory/steps.py) holds everything the person was shown of it. The functions here turn
that record into the typed events of agents/events.py. The loop calls them while a step happens, each at the
moment its part of the record is written (the code before it runs, the error when it fails), and streams what
they return; `replay` calls the same functions, in the same order, over a finished memory. So a live chat and a
reopened one are built from the same events by the same renderer, and a change to how a step shows is made
here, once. tests/ui/test_replay_round_trip.py runs an app session, saves and reopens it, and checks that the
events and the chat agree.

The mapping is one, in parts by concept; callers import it from here:
  frames.py      a run's and a step's frame: start, model output, observation, end, the best guess, a compaction;
  decisions.py   a person's decisions, and what the model proposed before they edited it;
  tool_calls.py  a tool call's record (ToolCallRecord) and its events;
  actions.py     what a step did (plan, code, printed output, files, error) and a whole step's events in order;
  replaying.py   a saved memory replayed step by step, and a live stream cut to what a replay gives back.

Replayed (`replay` gives them back from a saved memory):
  RunStarted, StepStarted, ModelOutput, PlanProposed, CodeProposed, DecisionRequested, DecisionMade,
  ToolCallProposed, InjectionFlagged (a tool's output), ToolCallResult, ExecutionLog, ArtifactCreated,
  StepError, Observation, MemoryCompacted, StepFinished, FinalAnswer, RunFinished.
Streaming only (`STREAMING_ONLY`; what they said is in the events above, or it left nothing to show):
  ModelTextDelta is the reply while it arrives: ModelOutput carries all of it.
  ModelRetrying is a wait for the provider: once the reply came, nothing of it remains.
  SandboxRun is how the sandbox ran the step's code (backend, time, state lost): for traces and metrics.
  A step's printed output streams as many ExecutionLog pieces; it is replayed as one piece per stretch between
  two tool calls (`replayable` joins neighbouring pieces before comparing).
Not replayed, because the chat's memory does not hold them:
  the events of a managed agent's run (`parent_id` set): the sub-agent's memory is its own;
  the events of a step or run that never ended (the server stopped mid-step, Stop during a planning call):
  its record was never written. Parallel tool calls are replayed in the order they started.

Times the chat shows (when a step, a tool call or a decision started and ended) are recorded with the step and
given to the events, live and replayed alike.
"""
from agents.step_events.actions import (
    IMAGE_SUFFIXES,
    action_events,
    artifact_created,
    artifact_kind,
    code_proposed,
    execution_log,
    plan_proposed,
    planning_events,
    step_error,
)
from agents.step_events.decisions import decision_events, decision_made, decision_requested
from agents.step_events.frames import (
    Fields,
    final_answer,
    guess_finished,
    guess_output,
    guess_started,
    memory_compacted,
    model_output,
    observation,
    run_finished,
    run_started,
    run_usage,
    step_finished,
    step_started,
)
from agents.step_events.replaying import RESTORED_RUN, STREAMING_ONLY, replay, replayable
from agents.step_events.tool_calls import ToolCallRecord, injection_flagged, tool_call_proposed, tool_call_result

__all__ = [
    "IMAGE_SUFFIXES", "RESTORED_RUN", "STREAMING_ONLY", "Fields", "ToolCallRecord", "action_events",
    "artifact_created", "artifact_kind", "code_proposed", "decision_events", "decision_made", "decision_requested",
    "execution_log", "final_answer", "guess_finished", "guess_output", "guess_started", "injection_flagged",
    "memory_compacted", "model_output", "observation", "plan_proposed", "planning_events", "replay", "replayable",
    "run_finished", "run_started", "run_usage", "step_error", "step_finished", "step_started", "tool_call_proposed",
    "tool_call_result",
]
