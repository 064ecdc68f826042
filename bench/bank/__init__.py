"""A truth bank: endpoints with a known latency model, the samples a diagnosis run of
each would record, and what each truly is.

- :mod:`bank.scenario`: :class:`Scenario`, the latency model, and its draws;
- :mod:`bank.generate`: :func:`generate`, the samples of a diagnosis run;
- :mod:`bank.truth`: :func:`truth`, the primary and contributing kinds from the model;
- :mod:`bank.draw`: seeded mixes of causes, strengths and noise.

It lives beside the benchmarks, not in :mod:`latdoc.lab`: it builds
:class:`~latdoc.records.RequestTrace` records, and the lab may know nothing of the
core but its errors.
"""

from bank.draw import CAUSES, NOISE, draw, draw_many
from bank.generate import context, generate
from bank.scenario import Scenario
from bank.truth import Truth, truth

__all__ = [
    "CAUSES",
    "NOISE",
    "Scenario",
    "Truth",
    "context",
    "draw",
    "draw_many",
    "generate",
    "truth",
]
