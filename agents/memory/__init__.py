"""Agent memory: steps and the prompt they add up to."""
from agents.memory.memory import AgentMemory
from agents.memory.steps import (
    STEP_TYPES,
    ActionStep,
    FinalAnswerStep,
    HistoryStep,
    MemoryStep,
    PlanningStep,
    SummaryStep,
    SystemPromptStep,
    TaskStep,
    Timing,
)

__all__ = ["STEP_TYPES", "ActionStep", "AgentMemory", "FinalAnswerStep", "HistoryStep", "MemoryStep",
           "PlanningStep", "SummaryStep", "SystemPromptStep", "TaskStep", "Timing"]
