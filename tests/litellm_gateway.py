"""A real LiteLLM proxy in front of an OpenAI-compatible URL, on loopback, for tests.

LiteLLM's proxy pins a ``rich`` older than the project's linters need, so it lives in an
environment of its own (``make .venv-litellm/.installed``) and runs as a subprocess:
:func:`litellm_executable` finds it there, through ``LATDOC_LITELLM``, or on ``PATH``.
The proxy reads no cost map from the network and sends no telemetry; a pre-call hook
holds each request ``delay_ms`` before it goes upstream, a gateway's own work (a
guardrail, a budget check) whose length the test knows.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

__all__ = ["MASTER_KEY", "Gateway", "litellm_executable", "litellm_gateway"]

MASTER_KEY = "sk-latdoc-lab-gateway-0123456789abcdef"
"""The proxy's key: a client sends it as its bearer token."""
_READY_TIMEOUT_S = 90.0
_ROOT = Path(__file__).resolve().parent.parent

_HOOK = """
import asyncio

from litellm.integrations.custom_logger import CustomLogger


class Hold(CustomLogger):
    async def async_pre_call_hook(self, user_api_key_dict, cache, data, call_type):
        await asyncio.sleep({delay_s!r})
        return data


hold = Hold()
"""


def litellm_executable() -> str | None:
    """The ``litellm`` proxy command, or ``None`` when none is installed."""
    named = os.environ.get("LATDOC_LITELLM")
    if named:
        return named
    local = _ROOT / ".venv-litellm" / "bin" / "litellm"
    if local.exists():
        return str(local)
    return shutil.which("litellm")


@dataclass(frozen=True)
class Gateway:
    base_url: str
    delay_ms: float
    log: Path


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def litellm_gateway(
    executable: str, upstream: str, model: str, workdir: Path, delay_ms: float
) -> Iterator[Gateway]:
    """LiteLLM's proxy routing ``model`` to ``upstream`` (an OpenAI-compatible base URL)."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "latdoc_hold.py").write_text(_HOOK.format(delay_s=delay_ms / 1000))
    config = workdir / "config.yaml"
    config.write_text(
        "model_list:\n"
        f"  - model_name: {model}\n"
        "    litellm_params:\n"
        f"      model: openai/{model}\n"
        f"      api_base: {upstream}\n"
        "      api_key: none\n"
        "litellm_settings:\n"
        "  callbacks: latdoc_hold.hold\n"
    )
    port = _free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(workdir),
        "LITELLM_MASTER_KEY": MASTER_KEY,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "LITELLM_TELEMETRY": "False",
        "NO_PROXY": "*",
        "HOME": str(workdir),
    }
    log = workdir / "litellm.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [executable, "--config", str(config), "--host", "127.0.0.1", "--port", str(port)],
            cwd=workdir,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        _wait_ready(port, proc, log)
        yield Gateway(f"http://127.0.0.1:{port}/v1", delay_ms, log)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _wait_ready(port: int, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + _READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"litellm exited with {proc.returncode}:\n{log.read_text()[-2000:]}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health/liveliness", timeout=1).is_success:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"litellm was not ready in {_READY_TIMEOUT_S:.0f} s")
