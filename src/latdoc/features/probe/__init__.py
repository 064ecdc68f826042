"""``latdoc probe``: a series of streamed requests, every phase timed, kept as a run.

- ``run``: the probes sent and kept as a run (:func:`probe_endpoint`);
- ``render``: the first request's waterfall, how the prompt length was calibrated, and
  the series summed up.

A probe run can be compared with another (:mod:`latdoc.features.compare`).
"""

from latdoc.features.probe.render import render_probe
from latdoc.features.probe.run import StoredProbe, probe_endpoint

__all__ = ["StoredProbe", "probe_endpoint", "render_probe"]
