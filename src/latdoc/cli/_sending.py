"""Where a sending command sends: the shared options read once, in one order.

``probe``, ``diagnose``, ``load``, ``verify`` and ``watch`` start alike: the API key,
the target (the URL given, the ``--provider``'s or ``OPENAI_BASE_URL``; else a
built-in endpoint started for the command, the one way the core reaches the lab),
the endpoint and connection, the plan, the store masking the key. :class:`Sending` is
that prologue. The library objects are built by :mod:`latdoc.probe`
(:func:`~latdoc.probe.choose_api`, :func:`~latdoc.probe.endpoint_and_connection`),
so a library user can build them the same way.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TextIO, TypeVar

from latdoc.cli._lab_extra import require_lab
from latdoc.errors import UsageError
from latdoc.i18n import N_, Message
from latdoc.pricing import price_for
from latdoc.probe import ApiChoice, ConnectionOptions, Endpoint, choose_api, environment_key
from latdoc.probe import endpoint_and_connection as _endpoint_and_connection
from latdoc.probe import proxy_secrets as _proxy_secrets
from latdoc.store import Store
from latdoc.workload import check_money_cap

Choice = ApiChoice
"""What ``--provider``, ``--api`` and the URL choose together."""

SHARED_FIELDS = ("max_tokens", "max_requests", "token_budget", "max_seconds", "max_cost", "seed")
"""The options every sending command reads alike, each a field of its plan by the same
name: the output length, the budget's caps and the seed."""

P = TypeVar("P")


@dataclass(frozen=True)
class Target:
    """Where to send: the user's endpoint, or a built-in one started for this command."""

    url: str
    model: str | None
    cacert: str | None


def choice(args: argparse.Namespace) -> ApiChoice:
    """The dialect, the base URL and the key's variables ``--provider``, ``--api`` and the
    URL ask for (:func:`latdoc.pipeline.choose_api`)."""
    api: str | None = getattr(args, "api", None)
    provider: str | None = getattr(args, "provider", None)
    return choose_api(args.url, provider=provider, api=api)


def api_key(args: argparse.Namespace, chosen: ApiChoice | None = None) -> str | None:
    """The API key from the environment: ``--api-key-env VAR`` must be set if named;
    else the first set of the variables :func:`choice` names: the ``--provider``'s
    (``GROQ_API_KEY`` for ``--provider groq``), or the dialect's own
    (``ANTHROPIC_API_KEY`` for ``--api anthropic``, ``GOOGLE_API_KEY`` or
    ``GEMINI_API_KEY`` for ``--api gemini``); ``chosen``: :func:`choice`, made already."""
    var = args.api_key_env
    if var is not None:
        value = os.environ.get(var)
        if not value:
            raise UsageError(Message("--api-key-env {var}: the variable is not set", var=var))
        return value
    return environment_key(chosen or choice(args))


def proxy_secrets(args: argparse.Namespace) -> tuple[str, ...]:
    """The passwords of the proxies the command line and the environment name, masked
    wherever a run is written."""
    return _proxy_secrets(getattr(args, "proxy", None))


def open_store(args: argparse.Namespace, key: str | None, *more: str | None) -> Store:
    """The ``--db`` store, masking ``key`` (and any ``more`` keys) wherever it would be
    written."""
    return Store(args.db, secrets=[k for k in (key, *more, *proxy_secrets(args)) if k])


@contextlib.contextmanager
def target(
    args: argparse.Namespace,
    chosen: ApiChoice,
    err: TextIO,
    *,
    engine: bool,
    http2: bool | None = None,
) -> Iterator[Target]:
    """The URL on the command line, or the ``--provider``'s, or in ``OPENAI_BASE_URL``;
    else a built-in endpoint.

    The built-in one is the real llama.cpp engine when ``engine`` is asked for and
    installed, else the simulated endpoint (offering HTTP/2 with ``http2``, by
    default when ``--http2`` was given); it runs until the block ends. It needs the
    ``[lab]`` extra: without it, a :class:`UsageError` says how to install it.
    """
    url = chosen.url
    if url:
        yield Target(url, args.model, args.cacert)
        return
    require_lab(
        N_("the built-in endpoint (measured when no URL is given)"),
        N_(", or give an endpoint's URL"),
    )
    from latdoc.lab import builtin_endpoint

    offer_http2 = args.http2 if http2 is None else http2
    with builtin_endpoint(engine=engine, http2=offer_http2, say=lambda s: print(s, file=err)) as (
        base_url,
        model,
        ca_file,
    ):
        yield Target(base_url, args.model or model, ca_file)


def endpoint_and_connection(
    args: argparse.Namespace, chosen: ApiChoice, where: Target, key: str | None
) -> tuple[Endpoint, ConnectionOptions]:
    """The endpoint to measure and how to connect to it, from the shared options. The
    built-in endpoint, on this machine, is reached direct unless ``--proxy`` names a
    proxy: the environment's proxy is for the network beyond it."""
    if not where.model:
        raise UsageError(N_("--model is required for an endpoint other than the built-in one"))
    proxy: str | None = getattr(args, "proxy", None)
    return _endpoint_and_connection(
        where.url,
        where.model,
        api=chosen.dialect,
        key=key,
        extra_body=args.extra_body,
        http2=args.http2,
        insecure=args.insecure,
        cacert=where.cacert,
        timeout_s=args.timeout,
        proxy=proxy,
        direct=getattr(args, "no_proxy", False) or (not chosen.url and proxy is None),
        provider=chosen.provider,
        tools=getattr(args, "tools", ()),
    )


@dataclass(frozen=True)
class Sending:
    """A sending command's prologue: its options, what they choose (the dialect, the URL,
    the key's variables: looked up once) and the API key, read when it starts."""

    args: argparse.Namespace
    chosen: ApiChoice
    key: str | None

    @classmethod
    def of(cls, args: argparse.Namespace) -> Sending:
        """The options, with the choice made and the key read now: a key variable named
        and not set fails before anything starts."""
        chosen = choice(args)
        return cls(args, chosen, api_key(args, chosen))

    @contextlib.contextmanager
    def to(
        self, err: TextIO, *, engine: bool, http2: bool | None = None
    ) -> Iterator[tuple[Endpoint, ConnectionOptions]]:
        """The endpoint and the connection to it, while the :func:`target` lasts."""
        with target(self.args, self.chosen, err, engine=engine, http2=http2) as where:
            yield endpoint_and_connection(self.args, self.chosen, where, self.key)

    def plan(
        self, kind: Callable[..., P], endpoint: Endpoint, connection: ConnectionOptions, **own: Any
    ) -> P:
        """The ``kind`` of plan the command sends by: to ``endpoint`` over ``connection``,
        with the :data:`SHARED_FIELDS` the plan takes and the command has, the model's
        price where the plan holds one (``--price``, else the price library's), and the
        command's ``own`` fields."""
        fields = inspect.signature(kind).parameters
        shared = {
            name: getattr(self.args, name)
            for name in SHARED_FIELDS
            if name in fields and hasattr(self.args, name)
        }
        if "price" in fields and hasattr(self.args, "price"):
            shared["price"] = price_for(endpoint.model, endpoint.base_url, self.args.price)
            check_money_cap(getattr(self.args, "max_cost", None), shared["price"])
        return kind(endpoint=endpoint, connection=connection, **(shared | own))

    def store(self, *more: str | None) -> Store:
        """The ``--db`` store, masking the key, any ``more`` keys and the proxies'
        passwords wherever a run is written."""
        return open_store(self.args, self.key, *more)
