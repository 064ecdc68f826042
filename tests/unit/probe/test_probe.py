"""TLS settings with curl's meaning: one context per CA file as it stands, and a CA file
that cannot be loaded a usage error naming it (Hypothesis draws the malformed ones)."""

from __future__ import annotations

import os
import ssl
import tempfile
from pathlib import Path

import trustme
from hypothesis import given, settings
from hypothesis import strategies as st

from latdoc.errors import UsageError
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


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=600) | st.sampled_from([b"-----BEGIN CERTIFICATE-----\nMIIB\n"]))
def test_a_malformed_ca_file_is_a_usage_error_naming_it(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as directory:
        file = Path(directory, "ca.pem")
        file.write_bytes(data)
        refusal = ""
        try:
            context = make_ssl_context(str(file))
        except UsageError as exc:
            refusal = str(exc)
        if refusal:
            assert str(file) in refusal and "\n" not in refusal
        else:
            assert isinstance(context, ssl.SSLContext)
