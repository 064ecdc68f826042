"""``latdoc export`` and ``latdoc import``: every request of a stored run out as one row
(JSON Lines, CSV or Parquet), and latdoc's own JSON Lines back into a store. Sends
nothing.

- ``run``: :func:`open_export` finds the run and checks the format against where it
  goes, and its :class:`RunExport` writes the rows; :func:`import_export` reads an
  export into a store.

The rows and their schema (``latdoc-requests``) are the store's
(:mod:`latdoc.store.requests`), which reads and writes them a few at a time.
"""

from latdoc.features.export.run import Imported, RunExport, import_export, open_export

__all__ = ["Imported", "RunExport", "import_export", "open_export"]
