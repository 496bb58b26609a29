"""Supervised warm-up on gold trajectories, so a tiny random model emits tool calls GRPO can work with.

A randomly initialized model never produces a parseable tool call, so every rollout would fail and
every group would be filtered. A few hundred steps of teacher forcing on the tasks' gold
trajectories (gold calls, their replayed results, a final answer that says the communicate_info)
fix that. Sequences are assembled exactly as rollouts build them (rollout.ChatFormat), and only
the assistant's tokens carry loss. Real models (Qwen3-8B) skip this: `warmup.steps: 0`.
"""

from __future__ import annotations

import json
import random
import time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from toolscale.agents.episode import likely_opening
from toolscale.domains import Environment

from .data import Row
from .rollout import ChatFormat, format_tool_call


class WarmupConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    steps: int = Field(0, ge=0)
    learning_rate: float = Field(3e-3, gt=0)
    batch_size: int = Field(8, ge=1)
    seed: int = 0


def final_answer(communicate_info: list[str]) -> str:
    return "Here is what I found: " + "; ".join(communicate_info) + "." if communicate_info else "Done."


def gold_sequence(row: Row, env: Environment, fmt: ChatFormat, with_user: bool = False) -> tuple[list[int], list[int]]:
    """Token ids of the row's gold trajectory, and a mask of the tokens the model writes. It opens as
    rollouts will (episode.likely_opening): solo, or with a simulated user's greeting and request."""
    messages = [{"role": "system", "content": row.system}, *likely_opening(row.task, with_user)]
    ids = fmt.prompt_ids(messages, row.tools)
    mask = [0] * len(ids)
    eos = next(iter(fmt.eos_ids))

    def write(text: str) -> None:
        turn = fmt.tokenizer.encode(text, add_special_tokens=False) + [eos]
        ids.extend(turn)
        mask.extend([1] * len(turn))

    with env.fork() as fork:
        for name, arguments in row.task.gold_calls():
            write(format_tool_call(name, arguments))
            result = fork.call(name, arguments)
            content = json.dumps(result.output if result.ok else {"error": result.error}, ensure_ascii=False)
            suffix = fmt.suffix_ids([{"role": "tool", "name": name, "content": content}])
            ids.extend(suffix)
            mask.extend([0] * len(suffix))
    write(final_answer(row.task.evaluation_criteria.communicate_info))
    return ids, mask


def _masked_loss(model: Any, input_ids: Any, attention: Any, labels: Any) -> Any:
    """Next-token loss on the labelled positions only: the head runs on ~10% of the tokens."""
    import torch

    hidden = model.base_model(input_ids=input_ids, attention_mask=attention).last_hidden_state
    targets = labels[:, 1:]
    keep = targets != -100
    logits = model.get_output_embeddings()(hidden[:, :-1][keep])
    return torch.nn.functional.cross_entropy(logits.float(), targets[keep])


def warm_up(model: Any, sequences: list[tuple[list[int], list[int]]], config: WarmupConfig,
            pad_id: int) -> list[float]:
    """Teacher-force `sequences` for `config.steps` AdamW steps; returns the loss of each step."""
    import torch

    if config.steps == 0 or not sequences:
        return []
    rng = random.Random(config.seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.learning_rate)
    model.train()
    losses = []
    started = time.perf_counter()
    for _ in range(config.steps):
        batch = [sequences[rng.randrange(len(sequences))] for _ in range(config.batch_size)]
        width = max(len(ids) for ids, _ in batch)
        input_ids = torch.full((len(batch), width), pad_id, dtype=torch.long)
        labels = torch.full((len(batch), width), -100, dtype=torch.long)
        attention = torch.zeros((len(batch), width), dtype=torch.long)
        for row, (ids, mask) in enumerate(batch):
            input_ids[row, : len(ids)] = torch.tensor(ids)
            attention[row, : len(ids)] = 1
            labels[row, : len(ids)] = torch.tensor([t if m else -100 for t, m in zip(ids, mask)])
        loss = _masked_loss(model, input_ids, attention, labels)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    print(f"warm-up: {config.steps} steps in {time.perf_counter() - started:.1f}s, "
          f"loss {losses[0]:.3f} -> {losses[-1]:.3f}", flush=True)
    return losses


__all__ = ["WarmupConfig", "final_answer", "gold_sequence", "warm_up"]
