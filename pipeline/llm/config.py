"""What the LLM backend is told: the endpoint and its limits, prices, and how much to synthesize.

`LLMConfig` travels inside the run's config (a Prefect flow parameter), so it holds no secret:
the API key is read from the environment when the client is made (`api_key()`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

API_KEY_VARIABLES = ("TOOLSCALE_LLM_API_KEY", "OPENAI_API_KEY")
DEFAULT_CACHE_DIR = Path(".toolscale/llm-cache")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Price(_Strict):
    """US dollars per million tokens."""

    input: float = Field(ge=0)
    output: float = Field(ge=0)


# Public list prices (per million tokens) of a few models people point toolscale at; a config's
# `prices` adds to and overrides these. A model in neither costs 0 and is reported as unpriced.
DEFAULT_PRICES: dict[str, Price] = {
    "gpt-5": Price(input=1.25, output=10.0),
    "gpt-5-mini": Price(input=0.25, output=2.0),
    "gpt-4.1": Price(input=2.0, output=8.0),
    "gpt-4.1-mini": Price(input=0.4, output=1.6),
    "Qwen/Qwen3-8B": Price(input=0.2, output=0.2),
    "Qwen/Qwen3-32B": Price(input=0.8, output=0.8),
}


class SynthesisOptions(_Strict):
    """How much the LLM synthesizer asks for, per domain (the run's `scale` multiplies the counts)."""

    intents: int = Field(12, ge=1, description="intents kept per domain")
    tasks_per_intent: int = Field(3, ge=1, description="task candidates per intent")
    anchor_attempts: int = Field(3, ge=1, description="records a candidate may try when the model declines one")
    distractor_tools: int = Field(2, ge=0, description="tools offered beyond the intent's own")
    populate_scale: float = Field(0.15, gt=0, description="fraction of the design's row counts")
    rows_per_request: int = Field(8, ge=1, description="rows of a root table per populate request")
    parents_per_request: int = Field(6, ge=1, description="parent rows per populate request of a child table")
    slice_rows: int = Field(30, ge=1, description="most rows of one table in a task's database slice")
    harden_share: float = Field(0.5, ge=0, le=1, description="share of the tasks the model rewrites harder")
    # Measured with tests/llm_server.py putting a content fault into 30% of the answers, repairs too: of 213
    # conversations that could succeed (movie, bank, school and four draws on movie) 3.8% needed more than 2
    # rounds, 2.3% more than 3, 0.5% more than 4; at 50% (93): 11.8%, 4.3%, 2.2%. Three is the least that
    # keeps the loss near 1 in 40 at 30% (tests/test_llm_synthesizer.py guards it). Every problem of an answer
    # now comes back at once, so a first answer with several mistakes needs one round (the audit's design,
    # three mistakes, needed three rounds and failed with two); a failed design costs the whole domain.
    repair_rounds: int = Field(3, ge=0, description="times validation errors go back to the model")


class LLMConfig(_Strict):
    """An OpenAI-compatible endpoint and how to use it."""

    base_url: str
    model: str
    max_in_flight: int = Field(16, ge=1, description="requests in flight at once, across all stages")
    max_retries: int = Field(6, ge=0, description="retries of a request after 429, 5xx, timeouts")
    backoff_s: float = Field(0.5, ge=0, description="first retry delay; doubles each retry")
    backoff_max_s: float = Field(30.0, ge=0)
    timeout_s: float = Field(180.0, gt=0, description="per request")
    temperature: float = Field(0.7, ge=0, le=2)
    max_tokens: int | None = Field(None, ge=1)
    response_format: Literal["json_schema", "json_object", "none"] = Field(
        "json_schema", description="structured outputs; falls back on servers that refuse them")
    cache_dir: Path | None = Field(DEFAULT_CACHE_DIR, description="response cache; None disables it")
    prices: dict[str, Price] = Field(default_factory=dict)
    synthesis: SynthesisOptions = SynthesisOptions()
    briefs: dict[str, str] = Field(default_factory=dict, description="domain name -> one-line brief")

    def price(self, model: str) -> Price | None:
        return self.prices.get(model) or DEFAULT_PRICES.get(model)


def api_key_variable() -> str | None:
    """The first of TOOLSCALE_LLM_API_KEY and OPENAI_API_KEY that is set, if any."""
    return next((name for name in API_KEY_VARIABLES if os.environ.get(name)), None)


def api_key() -> str:
    """The key from TOOLSCALE_LLM_API_KEY or OPENAI_API_KEY; local servers take any, so 'EMPTY'."""
    name = api_key_variable()
    return os.environ[name] if name else "EMPTY"


class LLMConfigError(ValueError):
    """An LLM config file that cannot be read; the message names the file and the field."""


def load_config_file(path: Path) -> dict:
    """The fields of an LLM config file (YAML or JSON), e.g. prices, synthesis sizes, limits."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise LLMConfigError(f"{path}: {exc}") from None
    if not isinstance(data, dict):
        raise LLMConfigError(f"{path}: expected a mapping of LLMConfig fields")
    return data


def build_config(base_url: str, model: str, file: Path | None = None, **overrides: object) -> LLMConfig:
    """An LLMConfig from the command line and an optional file; LLMConfigError says what is wrong."""
    fields = load_config_file(file) if file else {}
    fields.update({k: v for k, v in overrides.items() if v is not None})
    fields.update(base_url=base_url, model=model)
    try:
        return LLMConfig.model_validate(fields)
    except ValidationError as exc:
        where = f"{file}: " if file else ""
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise LLMConfigError(f"{where}{problems}") from None
