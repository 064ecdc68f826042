"""The probe against real servers on loopback: phases, reuse, HTTP/2, and the lab's truth."""

from __future__ import annotations

import os
from pathlib import Path

import trustme

from latdoc.probe._endpoint import make_ssl_context


def test_one_tls_context_serves_every_session_until_the_ca_file_changes(tmp_path: Path) -> None:
    ca = trustme.CA()
    pem = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(pem))
    first = make_ssl_context(str(pem))
    assert make_ssl_context(str(pem)) is first
    assert make_ssl_context(str(pem), insecure=True) is not first
    stat = pem.stat()
    os.utime(pem, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert make_ssl_context(str(pem)) is not first
