"""Every way a request can fail gives a typed error naming its phase, and the run goes on."""

from __future__ import annotations

import asyncio

import pytest

from conftest import LabFactory
from latdoc import (
    Endpoint,
    ProbeSession,
    RequestTrace,
)

SECRET = "sk-test-0123456789abcdef"


def _one(base_url: str, **options: object) -> RequestTrace:
    async def go() -> RequestTrace:
        endpoint = Endpoint(base_url, "lab-sim", api_key=SECRET)
        async with ProbeSession(endpoint, **options) as session:  # type: ignore[arg-type]
            return await session.request("hi", 4)

    return asyncio.run(go())


def test_missing_cacert_file_is_a_usage_error(lab: LabFactory) -> None:
    from latdoc.errors import UsageError

    with pytest.raises(UsageError, match="not found"):
        _one("https://localhost:1/v1", cacert="/nonexistent/ca.pem")
