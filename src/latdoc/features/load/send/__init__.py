"""What a load sweep sends, and from where.

- ``sweep``: the levels, closed-loop streams or open-loop arrivals, and what each sends;
- ``findmax``: levels chosen one by one until the objectives break; ``replay``: a
  trace's requests at its own times;
- ``workers``: one worker's share of a level, sent from a local process
  (``processes``) or a Ray actor (``ray``), the sweep driven across them by ``fleet``;
  ``auto``: a short calibration that chooses how many processes;
- ``meter``: what sending costs the client; ``heap``: the kept traces out of the
  collector's full passes.
"""

from latdoc.features.load.send.sweep import DEFAULT_CONCURRENCY, LoadPlan, run_load

__all__ = ["DEFAULT_CONCURRENCY", "LoadPlan", "run_load"]
