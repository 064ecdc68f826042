"""Happy eyeballs (RFC 8305) and TLS resumption in the probe's network backend.

The race is driven through its transport seam (the function that opens one
connection) where a black-holed address is needed without root; the probe itself
connects to a real loopback server. ``tests/integration/test_lab_net.py`` black-holes IPv6 for
real inside a network namespace.
"""

from __future__ import annotations

import asyncio

from conftest import LabFactory
from latdoc import Endpoint, ProbeSession, RequestTrace
from latdoc.store.codec import trace_from_record, trace_to_record


def _requests(url: str, *resume: bool, **options: object) -> list[RequestTrace]:
    async def go() -> list[RequestTrace]:
        async with ProbeSession(Endpoint(url, "lab-sim"), **options) as session:  # type: ignore[arg-type]
            return [await session.request("hi", 2, resume_tls=r) for r in resume]

    return asyncio.run(go())


def test_the_probe_records_every_attempt_of_a_new_connection(lab: LabFactory) -> None:
    async def both_families(host: str, port: int) -> list[str]:
        return ["::1", "127.0.0.1"]

    with lab() as server:
        # The lab listens on IPv4 loopback only: the IPv6 attempt is refused.
        url = server.base_url.replace("127.0.0.1", "api.lab.test")
        first, again = _requests(url, False, False, resolver=both_families)
    assert first.error is None, first.error
    assert [(a.address, a.family, a.outcome) for a in first.connect_attempts] == [
        ("::1", 6, "failed"),
        ("127.0.0.1", 4, "connected"),
    ]
    assert first.remote_ip == "127.0.0.1"
    assert first.connect_ms is not None and first.connect_ms < 100
    assert first.dns_done_ns is not None
    assert first.connect_attempts[1].start_ns >= first.dns_done_ns
    assert again.new_connection is False and again.connect_attempts == ()
    assert trace_from_record(trace_to_record(first)) == first


def test_a_second_connection_resumes_the_first_ones_tls_session(lab: LabFactory) -> None:
    with lab(tls=True) as server:
        full, resumed = _requests(server.base_url, False, True, insecure=True)
    assert full.error is None and resumed.error is None, (full.error, resumed.error)
    assert (full.tls_resumed, full.tls_session_offered) == (False, False)
    assert (resumed.tls_resumed, resumed.tls_session_offered) == (True, True)
    assert resumed.new_connection and resumed.connection_id != full.connection_id
    assert trace_from_record(trace_to_record(resumed)) == resumed
