"""``latdoc system``: the client host as a checklist, sending nothing.

- ``run``: the host's facts read live (:func:`read_host`), the proxy each API URL would
  go through, and the checklist of both (:func:`check_system`).

The checklist's rules are the advice's (:func:`latdoc.advice.system.checklist`), its
table and document the report's (:func:`latdoc.report.render_system`,
:func:`latdoc.report.system_to_dict`).
"""

from latdoc.features.system.run import check_system, default_urls, proxy_routes, read_host

__all__ = ["check_system", "default_urls", "proxy_routes", "read_host"]
