"""The lab: endpoints with known ground truth, for tests, benchmarks and demos.

- :mod:`latdoc.lab.tokenizer`: the lab's deterministic tokenizer.
- :mod:`latdoc.lab.sim`: a simulated OpenAI-compatible endpoint whose latency
  follows a :class:`~latdoc.lab.sim.LatencyModel`.
- :mod:`latdoc.lab.server`: that endpoint on a real socket, in a background thread
  (:class:`~latdoc.lab.server.LabServer`) or blocking (``serve_forever``).
- :mod:`latdoc.lab.process`: the same in a child process, for timing under load.
- :mod:`latdoc.lab.tls`: the lab's certificate authority.

Importing any of them starts nothing.
"""

from latdoc.lab.demo import DEMO_CONFIG, builtin_endpoint

__all__ = ["DEMO_CONFIG", "builtin_endpoint"]
