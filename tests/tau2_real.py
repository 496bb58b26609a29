"""A scripted τ²-bench agent that replays a task's gold, for tests/e2e/test_tau2_real.py.

Runs inside τ²'s own virtualenv (tests/tau2_install.sh), never toolscale's: the test puts tests/ on
PYTHONPATH and has the copied τ² tree's registry.py call `register(registry)`, so
`tau2 run --agent toolscale_gold` finds it. Each turn it sends the next of bench/tau2_gold.py's
`gold_turns(task)` (one gold tool call a turn, then the message that says the answers), the same
messages that script scores through τ²'s evaluators directly; once they are spent it stops.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Optional

from pydantic import BaseModel
from tau2.agent.base_agent import HalfDuplexAgent
from tau2.data_model.message import AssistantMessage, Message
from tau2.data_model.tasks import Task
from tau2.user.user_simulator_base import STOP
from tau2.utils.utils import get_now

AGENT_NAME = "toolscale_gold"
_GOLD = Path(__file__).resolve().parents[1] / "bench" / "tau2_gold.py"  # loaded by path: bench/ is not a package


def _gold_turns():
    spec = importlib.util.spec_from_file_location("toolscale_tau2_gold", _GOLD)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.gold_turns


gold_turns = _gold_turns()


class GoldState(BaseModel):
    sent: int = 0


class GoldReplayAgent(HalfDuplexAgent[GoldState]):
    """Says nothing of its own: the gold's tool calls one per turn, then the answers, then STOP."""

    def __init__(self, tools: list, domain_policy: str, task: Task) -> None:
        super().__init__(tools=tools, domain_policy=domain_policy)
        self.turns = gold_turns(task)

    def get_init_state(self, message_history: Optional[list[Message]] = None) -> GoldState:
        return GoldState()

    def generate_next_message(self, message, state: GoldState) -> tuple[AssistantMessage, GoldState]:
        if state.sent < len(self.turns):
            # stamped now: τ² orders a trajectory by its messages' timestamps, not by when they were sent
            reply = self.turns[state.sent].model_copy(update={"timestamp": get_now()}, deep=True)
        else:
            reply = AssistantMessage(role="assistant", content=STOP)
        state.sent += 1
        return reply, state

    @classmethod
    def is_stop(cls, message: AssistantMessage) -> bool:
        return message.content is not None and STOP in message.content

    def set_seed(self, seed: int) -> None:
        """Nothing to seed: the agent is deterministic."""


def create_gold_agent(tools, domain_policy, **kwargs) -> GoldReplayAgent:
    """τ²'s agent factory signature; `task` is the task being run (build_agent passes it)."""
    return GoldReplayAgent(tools, domain_policy, kwargs["task"])


def register(registry) -> None:
    """Add the agent to τ²'s registry, as registry.py registers its own."""
    registry.register_agent_factory(create_gold_agent, AGENT_NAME)
