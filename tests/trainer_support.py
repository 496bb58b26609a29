"""Shared by the trainer and eval tests: one generated bank output folder, and a scripted gold agent.

`bank_output` runs the real `toolscale generate` once per test session, for all test workers
(tests/published_run.py's shared folder; tests read it). `GoldAgent` is a `fallback` for the test LLM
server (tests/llm_server.py): it plays each task's gold trajectory over the chat API, as an agent,
an expert, or the simulated user, and gives up on a seeded share of trials so pass^k has something to show.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

from published_run import shared_folder
from toolscale.domains import Task
from toolscale.agents.episode import STOP
from toolscale.agents.toolbox import CALL_EXPERT, solo_instruction
from toolscale.trainer.warmup import final_answer


def toolscale(*args: str, cwd: Path, timeout: int = 900) -> subprocess.CompletedProcess:
    exe = shutil.which("toolscale")
    cmd = [exe, *args] if exe else [sys.executable, "-m", "toolscale.flows.cli", *args]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env={**os.environ})


def bank_output(tmp_path_factory) -> Path:
    """A `toolscale generate --domains bank --scale 0.25` output folder, made once per session."""
    def generate(work: Path) -> None:
        proc = toolscale("generate", "--domains", "bank", "--scale", "0.25", "--out", str(work / "out"), cwd=work)
        assert proc.returncode == 0, proc.stderr[-3000:]
    return shared_folder(tmp_path_factory, "trainer-bank", generate) / "out"


def read_tasks(out: Path, domain: str = "bank") -> list[Task]:
    return [Task.model_validate_json(line) for line in (out / domain / "tasks.jsonl").read_text().splitlines()]


class GoldAgent:
    """Answers chat requests with the next gold action of the task the conversation is about."""

    def __init__(self, tasks: list[Task], fail_rate: float = 0.0, without_tools: str = "play") -> None:
        """`without_tools`: what it does when offered no tools: "play" the gold anyway, "decline",
        or "answer" what the task must communicate straight away (as if the instruction gave it away)."""
        self.by_instruction = {solo_instruction(t): t for t in tasks}
        self.fail_rate = fail_rate
        self.without_tools = without_tools
        self.requests: list[dict[str, Any]] = []

    def failing(self, task: Task, seed: Any) -> bool:
        return zlib.crc32(f"{task.id}:{seed}".encode()) % 1000 < self.fail_rate * 1000

    def __call__(self, body: dict[str, Any]) -> dict[str, Any] | None:
        self.requests.append(body)
        messages = body["messages"]
        if messages[0]["role"] == "system" and messages[0]["content"].startswith("You are a user"):
            return self._as_user(messages)
        task = next((self.by_instruction[m["content"]] for m in messages
                     if m["role"] == "user" and m.get("content") in self.by_instruction), None)
        if task is None:
            return None
        if self.failing(task, body.get("seed")):  # gives up at once: no state change, nothing said
            return {"content": "Sorry, I cannot help with that."}
        if not body.get("tools") and self.without_tools != "play":
            if self.without_tools == "answer":
                return {"content": final_answer(task.evaluation_criteria.communicate_info)}
            return {"content": "I cannot look that up without my tools."}
        done = sum(1 for m in messages if m["role"] == "tool" and m.get("name") != CALL_EXPERT)
        gold = task.gold_calls()
        if done < len(gold):
            name, arguments = gold[done]
            return {"content": "", "tool_calls": [{"id": f"call_{done}", "type": "function",
                                                   "function": {"name": name, "arguments": json.dumps(arguments)}}]}
        return {"content": final_answer(task.evaluation_criteria.communicate_info)}

    def _as_user(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        prompt = messages[0]["content"]
        task = next(t for t in self.by_instruction.values()
                    if all(part in prompt for part in solo_instruction(t).split("\n")))
        if len(messages) <= 2:  # the system prompt and the agent's greeting: state the request
            return {"content": solo_instruction(task)}
        return {"content": STOP}
