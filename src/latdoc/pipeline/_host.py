"""The client host, read: sysctls under ``/proc/sys``, the open-files limit, the cores this
process may use, and the versions that decide HTTP/2 and TLS 1.3.

Every reader takes the ``/proc/sys`` root so tests read a tree they wrote; a value that
cannot be read is ``None``, never a guess. :func:`host_meta` is what every run records
about its host, and :func:`host_facts_from_meta` reads the checklist's facts back from it;
``latdoc system`` reads the same facts live (:func:`latdoc.features.system.read_host`).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import platform
import resource
import ssl
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from latdoc.model import HostFacts

PROC_SYS = Path("/proc/sys")

TCP_SYSCTLS = (
    "net.ipv4.tcp_slow_start_after_idle",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
)
"""The client host's TCP settings that matter to LLM calls (read for the advice)."""

PORT_RANGE = "net.ipv4.ip_local_port_range"
CONGESTION_CONTROL = "net.ipv4.tcp_congestion_control"


def cpu_count() -> int:
    """Cores this process may run on (its affinity, not the machine's total)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _sysctl(root: Path, name: str) -> str | None:
    try:
        return root.joinpath(*name.split(".")).read_text().strip() or None
    except OSError:
        return None


def _int(text: str | None) -> int | None:
    try:
        return int(text.split()[0]) if text else None
    except ValueError:
        return None


def tcp_settings(root: Path = PROC_SYS) -> dict[str, int]:
    """The TCP sysctls of :data:`TCP_SYSCTLS` that this platform exposes."""
    values = {name: _int(_sysctl(root, name)) for name in TCP_SYSCTLS}
    return {name: value for name, value in values.items() if value is not None}


def port_range(root: Path = PROC_SYS) -> tuple[int, int] | None:
    """The first and last ephemeral port, or None when not readable."""
    text = _sysctl(root, PORT_RANGE)
    try:
        low, high = (int(part) for part in (text or "").split())
    except ValueError:
        return None
    return (low, high) if 0 < low <= high else None


def open_files() -> tuple[int, int] | None:
    """``RLIMIT_NOFILE`` as (soft, hard), ``-1`` for unlimited; None where there is none."""
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (OSError, ValueError):
        return None
    return (_limit(soft), _limit(hard))


def _limit(value: int) -> int:
    return -1 if value == resource.RLIM_INFINITY else value


def h2_version() -> str | None:
    """The installed ``h2`` (what httpx needs for HTTP/2), or None."""
    if importlib.util.find_spec("h2") is None:
        return None
    try:
        return importlib.metadata.version("h2")
    except importlib.metadata.PackageNotFoundError:
        return "unknown version"


def congestion_control(root: Path = PROC_SYS) -> str | None:
    """The TCP congestion control (``cubic``, ``bbr``), or None when not readable."""
    return _sysctl(root, CONGESTION_CONTROL)


def openssl_version() -> str:
    """The OpenSSL this Python links, as ``OpenSSL 3.0.13``."""
    return " ".join(ssl.OPENSSL_VERSION.split()[:2])


def has_tls13() -> bool:
    """Whether this Python's ``ssl`` can speak TLS 1.3."""
    return bool(getattr(ssl, "HAS_TLSv1_3", False))


def host_meta(root: Path = PROC_SYS) -> dict[str, Any]:
    """What every run records about its host: versions, cores, and the checklist's facts."""
    from latdoc._version import __version__

    ports = port_range(root)
    files = open_files()
    return {
        "latdoc": __version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "host": platform.node(),
        "cpu_count": cpu_count(),
        "tcp_settings": tcp_settings(root),
        "tcp_congestion_control": congestion_control(root),
        "ip_local_port_range": list(ports) if ports else None,
        "open_files": None if files is None else list(files),
        "h2": h2_version(),
        "openssl": openssl_version(),
        "tls13": has_tls13(),
    }


def host_facts_from_meta(meta: Mapping[str, Any]) -> HostFacts:
    """The checklist's facts as a run recorded them; what it did not record is None."""
    tcp = {str(k): int(v) for k, v in dict(meta.get("tcp_settings") or {}).items()}
    ports = meta.get("ip_local_port_range")
    files = meta.get("open_files")
    recorded_h2 = "h2" in meta
    return HostFacts(
        slow_start_after_idle=tcp.get("net.ipv4.tcp_slow_start_after_idle"),
        congestion_control=_str(meta.get("tcp_congestion_control")),
        keepalive_time_s=tcp.get("net.ipv4.tcp_keepalive_time"),
        keepalive_intvl_s=tcp.get("net.ipv4.tcp_keepalive_intvl"),
        keepalive_probes=tcp.get("net.ipv4.tcp_keepalive_probes"),
        port_range=(int(ports[0]), int(ports[1])) if ports else None,
        open_files_soft=int(files[0]) if files else None,
        open_files_hard=int(files[1]) if files else None,
        cpu_count=int(meta["cpu_count"]) if meta.get("cpu_count") else None,
        h2_version=_str(meta.get("h2")),
        http2_available=(meta.get("h2") is not None) if recorded_h2 else None,
        python_version=_str(meta.get("python")),
        openssl_version=_str(meta.get("openssl")),
        tls13=meta.get("tls13") if isinstance(meta.get("tls13"), bool) else None,
    )


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
