"""``latdoc serve``: the store as a local web app: every run with its verdict, a run's
page as ``latdoc report --html`` draws it, an experiment beside the diagnosis that
proposed it, a watch's day, a load's curves, and a run being written followed live.

- ``analysis``: what a page reads of the store (a listing's page, the runs tied to a
  run);
- ``render``: the list, a run's page framed, a page that says why nothing is shown;
- ``app``: the app: its pages, its JSON API, its live events, the token check;
- ``run``: the server.
"""

from latdoc.features.serve.app import API_SCHEMA, ServeOptions, api_index, make_app
from latdoc.features.serve.run import check_store, serve

__all__ = [
    "API_SCHEMA",
    "ServeOptions",
    "api_index",
    "check_store",
    "make_app",
    "serve",
]
