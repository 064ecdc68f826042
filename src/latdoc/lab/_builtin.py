"""The built-in endpoint the command line measures when it is given no URL."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from latdoc.lab.sim import DEMO_CONFIG, LabConfig, LabProcess


@contextlib.contextmanager
def builtin_endpoint(
    *, engine: bool, http2: bool = False, say: Callable[[str], None] = lambda _: None
) -> Iterator[tuple[str, str, str | None]]:
    """(base URL, model, CA file) of a built-in endpoint, running until the block ends.

    With ``engine``, the real llama.cpp engine where it is installed, else the
    simulated :data:`DEMO_CONFIG`; without, the simulated default endpoint.
    ``say`` hears which one was started and why.
    """
    if not engine:
        with LabProcess(LabConfig(), tls=True, http2=http2) as lab:
            say(f"Probing the built-in simulated endpoint at {lab.base_url}")
            yield lab.base_url, LabConfig().model, lab.ca_file
        return
    try:
        from latdoc.lab.engine import EngineServer, engine_available
    except ImportError:
        reason: str | None = "the engine module is missing"
    else:
        reason = engine_available()
    if reason is None:
        say("Starting the built-in llama.cpp engine (SmolLM2-135M) …")
        with EngineServer() as server:
            yield server.base_url, server.model, None
        return
    say(f"Using the built-in simulated endpoint ({reason}).")
    with LabProcess(DEMO_CONFIG, tls=True, http2=http2) as lab:
        yield lab.base_url, DEMO_CONFIG.model, lab.ca_file
