"""Ray, joined when ``--ray`` is used: the cluster's connection, and the measuring done
on vantage nodes (``latdoc probe|diagnose --ray ADDRESS --vantage a,b``).

A vantage's measuring is a Ray task that asks for a sliver of the node's
``vantage:NAME`` resource, so it runs on a node labelled so and nowhere else. Ray is
imported only here and in the load workers' Ray backend
(:mod:`latdoc.features.load.send.ray`), and only when ``--ray`` is used: ``import latdoc``
never imports it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any, TypeVar

from latdoc.errors import LatdocError, UsageError
from latdoc.i18n import N_, Message

INSTALL_HINT = N_("--ray needs Ray, an optional extra: pip install 'llm-latency-doctor[ray]'")
VANTAGE_SHARE = 0.001
"""How much of a node's ``vantage:NAME`` resource one measuring task takes."""
_Plan = TypeVar("_Plan")
_Result = TypeVar("_Result")


def import_ray() -> ModuleType:
    """The ``ray`` module, or a :class:`UsageError` saying how to install it."""
    try:
        import ray
    except ImportError:
        raise UsageError(INSTALL_HINT) from None
    return ray


def connect(address: str) -> ModuleType:
    """Join the Ray cluster at ``address`` (``auto``: the one this machine is part of)."""
    ray = import_ray()
    if not ray.is_initialized():
        try:
            ray.init(
                address=address,
                logging_level=logging.WARNING,
                log_to_driver=False,
                configure_logging=False,
            )
        except (ConnectionError, ValueError, RuntimeError) as exc:
            raise UsageError(
                Message("cannot join the Ray cluster at {address}: {exc}", address=address, exc=exc)
            ) from None
    return ray


def run_at_vantages(
    address: str,
    vantages: Sequence[str],
    measure: Callable[[_Plan, str], _Result],
    plan: _Plan,
) -> list[_Result]:
    """``measure(plan, name)`` on a node carrying ``vantage:NAME``, for every name at once;
    the results in the order of ``vantages``. Ctrl-C cancels every task."""
    ray = connect(address)
    try:
        have = ray.cluster_resources()
        missing = [n for n in vantages if f"vantage:{n}" not in have]
        if missing:
            labels = ", ".join(f"vantage:{n}" for n in missing)
            raise UsageError(
                Message(
                    "no node of the Ray cluster at {address} carries {labels}; start one with ray "
                    "start --address ... --resources '{{\"vantage:{missing}\": 1}}'",
                    address=address,
                    labels=labels,
                    missing=missing[0],
                )
            )
        task = ray.remote(measure)
        refs = [
            task.options(
                num_cpus=0, max_retries=0, resources={f"vantage:{n}": VANTAGE_SHARE}
            ).remote(plan, n)
            for n in vantages
        ]
        try:
            return [_result(ray, ref, name) for ref, name in zip(refs, vantages, strict=True)]
        except BaseException:
            for ref in refs:
                ray.cancel(ref, force=True)
            raise
    finally:
        ray.shutdown()


def _result(ray: ModuleType, ref: Any, name: str) -> Any:
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as exc:
        cause = exc.cause if isinstance(exc.cause, BaseException) else None
        if isinstance(cause, LatdocError):
            raise cause from None
        raise LatdocError(
            Message("the measuring at vantage {name} failed: {exc}", name=name, exc=first_line(exc))
        ) from None
    except ray.exceptions.RayError as exc:
        raise LatdocError(
            Message(
                "the measuring at vantage {name} was lost: {exc}", name=name, exc=first_line(exc)
            )
        ) from None


def first_line(exc: BaseException) -> str:
    """The first line of what ``exc`` says, or its type's name when it says nothing."""
    text = str(exc).strip().splitlines()
    return f"Ray: {text[0] if text else type(exc).__name__}"
