"""Read a server's Prometheus ``/metrics`` page: one GET, no credentials sent."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

import httpx

from latdoc.probe._endpoint import make_ssl_context

__all__ = ["metrics_url", "scrape_metrics"]

SCRAPE_TIMEOUT_S = 5.0


def metrics_url(base_url: str) -> str:
    """``/metrics`` on the endpoint's own host: ``http://h:8000/v1`` → ``http://h:8000/metrics``."""
    parts = urlsplit(base_url)
    return urlunsplit((parts.scheme, parts.netloc, "/metrics", "", ""))


def scrape_metrics(
    url: str, *, cacert: str | None = None, insecure: bool = False
) -> tuple[str | None, str | None]:
    """(the page's text, None), or (None, why it could not be read, in a few words).

    The API key is never sent: engines serve their metrics without one, and a page
    that asks for it is left unread.
    """
    verify = make_ssl_context(cacert, insecure=insecure)
    try:
        with httpx.Client(verify=verify, timeout=SCRAPE_TIMEOUT_S, trust_env=False) as client:
            response = client.get(url, headers={"accept": "text/plain"})
    except httpx.HTTPError as exc:
        return None, f"no answer ({type(exc).__name__})"
    if response.status_code != 200:
        return None, f"HTTP {response.status_code}"
    return response.text, None
