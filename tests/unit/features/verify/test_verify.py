"""``latdoc verify`` against the lab, where each remedy's effect has a known size.

With the lab's effect on, verify must measure it within 15 % of the truth the
lab's own latency model gives; with the effect off, it must say
``no_difference``; where the endpoint cannot show the remedy at all, it must say
``not_applicable`` with the reason. The keep-alive effect through a real
round trip is checked in ``test_lab_net.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from latdoc import (
    Endpoint,
    UsageError,
    VerifyPlan,
)
from latdoc.features.verify import experiments
from latdoc.features.verify.experiments.endpoint import EndpointOptions
from latdoc.features.verify.experiments.model import ModelOptions
from latdoc.features.verify.experiments.trim import TrimOptions
from latdoc.lab.sim import LabConfig, LabProcess, LabServer, LatencyModel

QUICK = LatencyModel(prefill_base_ms=20.0, prefill_ms_per_token=0.0, decode_ms_per_token=1.0)


@contextmanager
def serving(config: LabConfig, *, process: bool = False, **kw: Any) -> Iterator[Any]:
    server_class = LabProcess if process else LabServer
    with server_class(config, **kw) as server:
        yield server


def test_bad_input_is_refused_before_anything_is_sent() -> None:
    endpoint = Endpoint("http://127.0.0.1:9/v1", "m")
    for options, message in (
        ({"remedy": experiments.experiment("pool")}, "--pool-size"),
        ({"remedy": experiments.experiment("trim"), "options": TrimOptions(100, 500)}, "--to"),
        ({"remedy": experiments.experiment("endpoint")}, "--alt"),
        ({"remedy": experiments.experiment("model"), "options": ModelOptions("m")}, "another"),
    ):
        with pytest.raises(UsageError, match=message):
            VerifyPlan(endpoint=endpoint, **options)


def test_diagnose_names_only_remedies_verify_can_measure() -> None:
    import latdoc.advice.verify

    named = {v for k, v in vars(latdoc.advice.verify).items() if k.startswith("VERIFY_")}
    assert len(named) >= 10
    assert named <= set(experiments.names())


KEY_A = "sk-endpoint-a-5e1f0c9d"


KEY_B = "sk-endpoint-b-7a2b4c6e"


@pytest.mark.parametrize(
    ("here", "there", "refused"),
    [
        ("http://h.example:8000/v1", "http://h.example:8000/other/v1", False),
        ("http://H.example/v1", "http://h.example:80/v2", False),
        ("https://h.example/v1", "https://h.example:443/v1/", False),
        ("http://h.example:8000/v1", "http://h.example:8001/v1", True),
        ("http://h.example/v1", "https://h.example/v1", True),
        ("https://h.example/v1", "https://other.example/v1", True),
    ],
)
def test_the_same_origin_needs_no_leave_and_any_other_does(
    here: str, there: str, refused: bool
) -> None:
    def plan(**options: Any) -> VerifyPlan:
        return VerifyPlan(
            Endpoint(here, "m", api_key=KEY_A),
            experiments.experiment("endpoint"),
            options=EndpointOptions(there, **options),
        )

    if refused:
        with pytest.raises(UsageError, match="another host"):
            plan()
    else:
        assert plan().endpoint.api_key == KEY_A
    for leave in ({"same_key": True}, {"alt_api_key": KEY_B}):
        plan(**leave)
    with pytest.raises(UsageError, match="give one"):
        plan(same_key=True, alt_api_key=KEY_B)


def test_no_key_needs_no_leave_but_signing_with_the_machines_credentials_does() -> None:
    options = EndpointOptions("http://other.example/v1")
    VerifyPlan(
        Endpoint("http://h.example/v1", "m"), experiments.experiment("endpoint"), options=options
    )
    bedrock = Endpoint("https://bedrock-runtime.us-east-1.amazonaws.com", "m", "bedrock")
    with pytest.raises(UsageError, match="another host"):
        VerifyPlan(bedrock, experiments.experiment("endpoint"), options=options)


def test_the_other_key_is_sent_to_the_other_endpoint_only() -> None:
    from latdoc.features.verify.plan import build_arms
    from latdoc.workload import ASSUMED

    def arms(options: EndpointOptions) -> tuple[str | None, str | None]:
        plan = VerifyPlan(
            Endpoint("http://h.example/v1", "m", api_key=KEY_A),
            experiments.experiment("endpoint"),
            options=options,
        )
        a, b = build_arms(plan, ASSUMED)
        return a.endpoint.api_key, b.endpoint.api_key

    assert arms(EndpointOptions("http://o.example/v1", alt_api_key=KEY_B)) == (KEY_A, KEY_B)
    assert arms(EndpointOptions("http://o.example/v1", same_key=True)) == (KEY_A, KEY_A)
    assert arms(EndpointOptions("http://h.example/v2")) == (KEY_A, KEY_A)
    assert KEY_B not in repr(EndpointOptions("http://o.example/v1", alt_api_key=KEY_B))


def test_a_key_in_the_other_url_is_masked_in_the_plan_and_the_arms() -> None:
    from latdoc.features.verify.plan import arm_summaries, build_arms
    from latdoc.workload import ASSUMED

    leaky = f"https://me:{KEY_B}@o.example/v1?api-key={KEY_B}"
    plan = VerifyPlan(
        Endpoint("https://h.example/v1", "m"),
        experiments.experiment("endpoint"),
        options=EndpointOptions(leaky),
    )
    said = [*arm_summaries(plan), *(arm.label for arm in build_arms(plan, ASSUMED))]
    assert all(KEY_B not in text for text in said) and "o.example" in said[1]
