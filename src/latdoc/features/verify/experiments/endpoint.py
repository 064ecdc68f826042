"""``--remedy endpoint``: the endpoint of today against another region, provider or route
(the same model unless ``--alt-model`` names another). Only another endpoint that
answers can show it.

The API key goes only where it was given for. Another URL on the same origin (scheme,
host and port) gets it; another host gets the key ``--alt-api-key-env VAR`` names,
or the same key where ``--same-key`` says so, and otherwise nothing is sent at all:
the plan is refused. A dialect that signs with the machine's own credentials
(Bedrock's SigV4) counts as holding a key."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from latdoc.advice.verify import VERIFY_ENDPOINT
from latdoc.errors import UsageError
from latdoc.features.verify.arms import base_arm
from latdoc.features.verify.experiments._shared import ALT_MODEL, unanswered
from latdoc.features.verify.experiments._spec import Argument, Before, Experiment, options_from
from latdoc.features.verify.send import Arm
from latdoc.i18n import N_, Message
from latdoc.probe import Endpoint
from latdoc.store import redact_url
from latdoc.workload import TokenCalibration

if TYPE_CHECKING:
    from latdoc.features.verify.arms import Plan


@dataclass(frozen=True)
class EndpointOptions:
    alt_url: str | None = None
    """The other endpoint (required)."""
    alt_model: str | None = None
    """The model there, if not the same name."""
    alt_api_key: str | None = field(default=None, repr=False)
    """The key for the other endpoint (``--alt-api-key-env VAR``); sent only there."""
    same_key: bool = False
    """The endpoint's own key may go to the other endpoint's host (``--same-key``)."""


ALT_URL = Argument(
    "--alt", "endpoint: the other region or provider", dest="alt_url", metavar="URL2"
)
ALT_API_KEY_ENV = Argument(
    "--alt-api-key-env",
    "endpoint: the environment variable holding the key for URL2, sent only there "
    "(needed when URL2 is on another host, unless --same-key)",
    metavar="VAR",
)
SAME_KEY = Argument(
    "--same-key", "endpoint: send the endpoint's own API key to URL2's host too", kind=bool
)


def _read(values: Mapping[str, object]) -> EndpointOptions:
    """The given options, with the key the variable ``--alt-api-key-env`` names."""
    key = None
    if (var := values.get(ALT_API_KEY_ENV.name)) is not None:
        key = os.environ.get(str(var))
        if not key:
            raise UsageError(Message("--alt-api-key-env {var}: the variable is not set", var=var))
    options = options_from(EndpointOptions, (ALT_URL, ALT_MODEL, SAME_KEY), values)
    return replace(options, alt_api_key=key)


def origin(url: str) -> tuple[str, str, int | None]:
    """The scheme, host and port a request to ``url`` reaches (the scheme's port if none
    is given)."""
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        raise UsageError(
            Message("invalid URL {url!r}: its port is not a number", url=redact_url(url))
        ) from None
    scheme = parts.scheme.lower()
    default = {"http": 80, "https": 443}.get(scheme)
    return scheme, (parts.hostname or "").lower(), port if port is not None else default


def holds_credentials(endpoint: Endpoint) -> bool:
    """Whether requests to ``endpoint`` carry a credential: its key, or the machine's own
    credentials a signing dialect reads (Bedrock's SigV4)."""
    return endpoint.api_key is not None or endpoint.spec.signer is not None


def _check(plan: Plan, options: EndpointOptions) -> None:
    if not options.alt_url:
        raise UsageError(N_("--remedy endpoint needs --alt URL2: the endpoint to try"))
    if options.same_key and options.alt_api_key is not None:
        raise UsageError(N_("--same-key and --alt-api-key-env name two keys for --alt: give one"))
    here = plan.endpoint
    if (
        holds_credentials(here)
        and options.alt_api_key is None
        and not options.same_key
        and origin(options.alt_url) != origin(here.base_url)
    ):
        there = urlsplit(options.alt_url).netloc.rpartition("@")[2]
        raise UsageError(
            Message(
                "--alt {alt} is another host than the endpoint's, and the API key is not sent "
                "to {there} unless you say so: --alt-api-key-env VAR names the key for it, or "
                "--same-key lets the same key go there",
                alt=redact_url(options.alt_url),
                there=there,
            )
        )


def alt_key(here: Endpoint, options: EndpointOptions) -> str | None:
    """The key arm B sends: the one named for it, else the endpoint's own (which
    :func:`_check` lets go only to the same origin, or with ``--same-key``)."""
    return options.alt_api_key if options.alt_api_key is not None else here.api_key


def _describe(plan: Plan, options: EndpointOptions) -> tuple[str, str]:
    return redact_url(plan.endpoint.base_url), redact_url(str(options.alt_url))


def _arms(plan: Plan, options: EndpointOptions, calibration: TokenCalibration) -> tuple[Arm, Arm]:
    assert options.alt_url is not None
    here = plan.endpoint
    alt = Endpoint(
        options.alt_url,
        options.alt_model or here.model,
        here.dialect,
        api_key=alt_key(here, options),
    )
    base = base_arm(plan, calibration)
    return (
        replace(base, label=redact_url(here.base_url), warmup_trials=1),
        replace(base, name="B", label=redact_url(options.alt_url), endpoint=alt, warmup_trials=1),
    )


async def _answers(before: Before, options: EndpointOptions) -> EndpointOptions | str:
    _, b = _arms(before.plan, options, before.calibration)
    why = await unanswered(b)
    return options if why is None else why


ENDPOINT = Experiment(
    name=VERIFY_ENDPOINT,
    summary="another region, provider or route",
    options=EndpointOptions,
    describe=_describe,
    arms=_arms,
    arguments=(ALT_URL, ALT_MODEL, ALT_API_KEY_ENV, SAME_KEY),
    read_options=_read,
    check=_check,
    precondition=_answers,
    secrets=lambda options: () if options.alt_api_key is None else (options.alt_api_key,),
)
