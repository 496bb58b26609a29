"""The agent harness both quality and trainer use: an agent (any OpenAI-compatible endpoint, or the
policy being trained) tries a task through its domain's tools, and the try is scored as τ²-bench
scores it. This package imports only toolscale.domains.

- endpoints.py  OpenAI-compatible chat endpoints (agent, simulated user, experts, judge)
- toolbox.py    what an agent is offered: the tool subset, experts and their prices, its system prompt
- episode.py    one try of one task in a forked Environment (tools, experts, user simulator)
- scoring.py    the outcome of a try (database, communicated values, actions) and pass^k
- tasks.py      the accepted tasks of an output folder, those the outcome can score
- evaluate.py   any agent over tasks: pass^k, cost, turns (`toolscale eval`, the reference agent)
"""

from .endpoints import ChatEndpoint, EndpointConfig, EndpointError
from .episode import Episode, UserSimulator
from .evaluate import EvalConfig, TrialResult, evaluate_tasks, run_evaluation
from .scoring import Outcome, RolloutStats, pass_hat, pass_hat_k, score_outcome
from .tasks import DataError, DomainData, load_output
from .toolbox import ExpertConfig, RolloutSpec, SamplingConfig, sample_spec

__all__ = ["ChatEndpoint", "DataError", "DomainData", "EndpointConfig", "EndpointError", "Episode", "EvalConfig",
           "ExpertConfig", "Outcome", "RolloutSpec", "RolloutStats", "SamplingConfig", "TrialResult", "UserSimulator",
           "evaluate_tasks", "load_output", "pass_hat", "pass_hat_k", "run_evaluation", "sample_spec",
           "score_outcome"]
