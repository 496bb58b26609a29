"""A tiny tokenizer and model built on the spot, for CPU smoke runs and tests: nothing is downloaded.

The tokenizer is a byte-level BPE trained on the run's own texts with Qwen2's exact pre-tokenizer
and normalizer, wrapped as a `Qwen2Tokenizer`, so it tokenizes the same after save and reload
(transformers rebuilds Qwen2's pre-tokenizer on load; a different one would silently change the
ids). Its chat template is TRL's bundled Qwen2.5 template (tool calls in the Hermes format), which
TRL recognizes. The model is a randomly initialized `Qwen2ForCausalLM` of a few hundred thousand
parameters.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, Field

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
MARKERS = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<think>", "</think>"]


class TinyModelConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    vocab_size: int = Field(2048, ge=300)
    hidden_size: int = Field(64, ge=8)
    intermediate_size: int = Field(256, ge=8)
    num_hidden_layers: int = Field(2, ge=1)
    num_attention_heads: int = Field(4, ge=1)
    num_key_value_heads: int = Field(2, ge=1)
    max_position_embeddings: int = Field(4096, ge=128)
    seed: int = 0


def build_tokenizer(corpus: Iterable[str], vocab_size: int):
    """Train a BPE on `corpus` and wrap it as a Qwen2 tokenizer with the Qwen2.5 chat template."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    from transformers import Qwen2Tokenizer
    from transformers.models.qwen2.tokenization_qwen2 import PRETOKENIZE_REGEX
    from trl.chat_template_utils import qwen2_5_chat_template

    bpe = Tokenizer(models.BPE())
    bpe.normalizer = normalizers.NFC()
    bpe.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(PRETOKENIZE_REGEX), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["<|endoftext|>"], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    bpe.train_from_iterator(list(corpus), trainer=trainer)
    state = bpe.model.__getstate__()
    import json

    model = json.loads(state)
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model["merges"]]
    tokenizer = Qwen2Tokenizer(vocab=model["vocab"], merges=merges, eos_token="<|im_end|>",
                               pad_token="<|endoftext|>", unk_token=None)
    tokenizer.add_special_tokens({"additional_special_tokens": SPECIAL[1:]})
    tokenizer.add_tokens(MARKERS)  # not special: decoding with skip_special_tokens keeps them, as Qwen's do
    tokenizer.chat_template = qwen2_5_chat_template
    tokenizer.padding_side = "left"
    return tokenizer


def build_model(tokenizer, config: TinyModelConfig):
    """A randomly initialized Qwen2 causal LM sized by `config`, deterministic in `config.seed`."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(config.seed)
    model_config = Qwen2Config(
        vocab_size=len(tokenizer), hidden_size=config.hidden_size, intermediate_size=config.intermediate_size,
        num_hidden_layers=config.num_hidden_layers, num_attention_heads=config.num_attention_heads,
        num_key_value_heads=config.num_key_value_heads, max_position_embeddings=config.max_position_embeddings,
        tie_word_embeddings=True, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None)
    model = Qwen2ForCausalLM(model_config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model


__all__ = ["TinyModelConfig", "build_model", "build_tokenizer"]
