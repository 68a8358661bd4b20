"""Pauses for a human decision: plan review, code approval, tool-call approval and questions."""
from agents.decisions.broker import DecisionBroker, Rejected
from agents.decisions.deciders import Decider, ExternalDecider, ScriptedDecider, TerminalDecider
from agents.decisions.policy import APPROVAL_MODES, ApprovalPolicy
from agents.decisions.types import Decision, DecisionKind, DecisionRecord, DecisionRequest, Outcome

__all__ = ["APPROVAL_MODES", "ApprovalPolicy", "Decider", "Decision", "DecisionBroker", "DecisionKind",
           "DecisionRecord", "DecisionRequest", "ExternalDecider", "Outcome", "Rejected", "ScriptedDecider",
           "TerminalDecider"]
