"""The LLM synthesizer backend: every stage through any OpenAI-compatible endpoint.

`LLMSynthesizer` implements the Synthesizer protocol (pipeline/synthesizer.py); `LLMClient` is the
one client layer (bounded in flight, retries, response cache, usage); `LLMConfig` says which
endpoint and model, and how much to synthesize.
"""

from .client import Answer, LLMClient, LLMRequestError, shared_client
from .config import LLMConfig, LLMConfigError, Price, SynthesisOptions, api_key, build_config
from .synthesizer import LLMStageError, LLMSynthesizer
from .usage import Usage, merge_reports

__all__ = ["Answer", "LLMClient", "LLMConfig", "LLMConfigError", "LLMRequestError", "LLMStageError",
           "LLMSynthesizer", "Price", "SynthesisOptions", "Usage", "api_key", "build_config", "merge_reports",
           "shared_client"]
