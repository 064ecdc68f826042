"""A stored run shown again, sending nothing: the kinds of run the store keeps, one entry
each (:data:`RUN_KINDS`), with what ``latdoc report RUN`` shows of a run of each kind
and what a page of it shows (``latdoc serve``).

- ``run``: the registry, and a stored run read back as its kind shows it
  (:func:`report_run`, :func:`page_of`).
"""

from latdoc.features.report.run import RUN_KINDS, RunKind, page_of, report_run, run_kind

__all__ = ["RUN_KINDS", "RunKind", "page_of", "report_run", "run_kind"]
