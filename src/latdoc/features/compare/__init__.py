"""``latdoc compare``: two stored runs compared like with like, sending nothing.

- ``analysis``: two runs and their comparison (:class:`RunComparison`);
- ``run``: the runs read back and compared, the gates checked on B against A
  (:func:`compare_runs`);
- ``render``: what the command shows of a comparison: its document, its terminal
  blocks, its page (:class:`ShownComparison`).
"""

from latdoc.features.compare.analysis import RunComparison
from latdoc.features.compare.render import ShownComparison, describe
from latdoc.features.compare.run import compare_runs

__all__ = ["RunComparison", "ShownComparison", "compare_runs", "describe"]
