"""Kinds of slow are a registry: one spec per kind in one tuple, read by the diagnosis, the
noticeable bar, the advice and every renderer. A new kind is a module and a line in
``KINDS``; here a toy kind is added to a copy of the registry and goes all the way through."""

from __future__ import annotations

import enum
import json
from collections import Counter
from collections.abc import Iterator
from typing import cast

import pytest
from rich.console import Console

import latdoc.advice.builders
import latdoc.analysis.kinds
from latdoc import (
    Diagnosis,
    Finding,
    Kind,
    Remedy,
    RunContext,
    build_diagnosis,
    diagnosis_to_dict,
    render_diagnosis,
    render_html,
    render_text,
)
from latdoc.advice.builders import BUILDERS, RemedyBuilder
from latdoc.analysis.facts import Facts
from latdoc.analysis.kinds import KINDS, KindSpec, spec_of
from latdoc.model import RUN_KINDS, CostChange, Effects
from report_samples import run_samples


class Toy(enum.StrEnum):
    """A kind the model does not know: it exists only in the registry's copy."""

    SLOW = "toy_slow"


TOY = cast(Kind, Toy.SLOW)
TOY_NAME = "Toy slowness"
TOY_MEANING = "a rule this test adds fired"
TOY_COLOUR = "#123456"


def _toy_rule(fires: bool) -> KindSpec:
    def rule(f: Facts) -> Finding | None:
        if not fires:
            return None
        ok = sum(1 for t in f.measured if t.ok)
        return Finding(TOY, "The toy rule fired", "always", {"toy_ms": 9000.0}, 9000.0, ok / 20)

    return KindSpec(TOY, TOY_NAME, TOY_MEANING, TOY_COLOUR, rule, before_first_token=True)


def _toy_remedies(f: Finding, d: Diagnosis, ctx: RunContext) -> Iterator[Remedy]:
    yield Remedy("toy_fix", "Stop the toy", f.kind, "toy.stop()", None)


def _diagnose() -> Diagnosis:
    return build_diagnosis(run_samples(), RunContext("toy", "https://x/v1", "m", cpu_count=2))


def test_every_kind_has_exactly_one_spec() -> None:
    counted = Counter(spec.kind for spec in KINDS)
    assert counted == Counter(Kind), counted
    assert all(spec_of(kind).kind is kind for kind in Kind)


def test_each_kind_has_its_own_name_and_colour() -> None:
    for field in ("name", "colour"):
        values = [getattr(spec, field) for spec in KINDS]
        assert len(set(values)) == len(values), (field, values)


def test_only_healthy_and_the_kinds_of_an_agents_run_have_no_rule() -> None:
    """``healthy`` is the verdict when no rule's finding stands out; a kind of an agent's
    run is named from its span tree; every other kind has a rule over requests."""
    without = {spec.kind for spec in KINDS if spec.rule is None}
    assert without == {Kind.HEALTHY, *RUN_KINDS}
    assert Kind.HEALTHY not in RUN_KINDS


def test_every_remedy_builder_serves_a_registered_kind() -> None:
    registered = {spec.kind for spec in KINDS}
    assert {b.kind for b in BUILDERS} <= registered
    # An agent's run ranks its own remedies (parallel tools, a window, a cached prefix,
    # a faster tool) from its span tree: :func:`latdoc.features.agent.ranked_remedies`.
    assert {b.kind for b in BUILDERS} == registered - {Kind.HEALTHY, *RUN_KINDS}


def test_a_kind_outside_the_registry_is_named_when_looked_up() -> None:
    with pytest.raises(LookupError, match="toy_slow"):
        spec_of(TOY)


@pytest.mark.parametrize("fires", [True, False])
def test_a_new_kind_is_one_spec_in_the_tuple(monkeypatch: pytest.MonkeyPatch, fires: bool) -> None:
    monkeypatch.setattr(latdoc.analysis.kinds, "KINDS", (*KINDS, _toy_rule(fires)))
    d = _diagnose()
    if not fires:
        assert TOY not in [f.kind for f in d.findings] and TOY not in d.shares_ms
        return
    assert d.findings[-1].kind == TOY  # its rule runs where the tuple lists it: last
    assert d.verdict.primary == TOY  # its share is the largest
    assert d.shares_ms[TOY] == 9000.0
    text = render_text(render_diagnosis(d), width=120)
    assert f"Verdict: {TOY_NAME} ({TOY_MEANING})" in text
    assert "The toy rule fired  [toy_slow]" in text
    document = json.loads(json.dumps(diagnosis_to_dict(d)))
    assert document["verdict"]["primary"] == "toy_slow"
    assert document["shares_ms"]["toy_slow"] == 9000.0
    assert [f["kind"] for f in document["findings"]][-1] == "toy_slow"
    page = render_html(d, run_samples())
    verdict = f'<h2 class="primary"><span class="swatch k-toy_slow"></span>{TOY_NAME} <span'
    assert verdict in page
    assert f".k-toy_slow{{background:{TOY_COLOUR}}}" in page


def test_a_new_kind_is_shown_in_its_colour(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(latdoc.analysis.kinds, "KINDS", (*KINDS, _toy_rule(True)))
    console = Console(force_terminal=True, color_system="truecolor", width=120, record=True)
    console.print(render_diagnosis(_diagnose()))
    assert "38;2;18;52;86" in console.export_text(styles=True)  # #123456


def test_a_new_kind_gets_the_remedies_registered_for_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(latdoc.analysis.kinds, "KINDS", (*KINDS, _toy_rule(True)))
    assert not [r for r in _diagnose().remedies if r.addresses == TOY]  # none registered yet
    dear = Effects(CostChange.HIGHER, cost_why="the toy is dear")
    builder = RemedyBuilder(TOY, _toy_remedies, {"toy_fix": dear})
    monkeypatch.setattr(latdoc.advice.builders, "BUILDERS", (*BUILDERS, builder))
    (toy,) = [r for r in _diagnose().remedies if r.addresses == TOY]
    assert toy.key == "toy_fix"
    assert toy.effects == dear  # as its registry entry declares


def test_without_its_spec_a_kind_is_neither_found_nor_shown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(latdoc.analysis.kinds, "KINDS", (*KINDS, _toy_rule(True)))
    d = _diagnose()
    monkeypatch.setattr(latdoc.analysis.kinds, "KINDS", KINDS)
    assert TOY not in [f.kind for f in _diagnose().findings]
    with pytest.raises(LookupError):
        render_diagnosis(d)
