"""A diagnosis as the ``latdoc.diagnosis/2`` document: one definition, shared by the
store, which keeps it, and the report, which prints it (``diagnose --json``).

Every duration is in milliseconds under a key ending ``_ms``, ``null`` when not
measured. Keys that older versions wrote in another unit (``shares`` and
``share_s`` in seconds, ``retry_after_s``, TCP_INFO's ``*_us``) stay as they
were, for the scripts that read them, with an ``_ms`` twin beside them. Keys are
added, never renamed: stored runs and scripts read them by name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from latdoc.model.cost import cost_to_dict
from latdoc.model.diagnosis import Diagnosis, Remedy
from latdoc.model.host import SystemItem
from latdoc.model.kind import Kind
from latdoc.model.server import ServerAccount

__all__ = [
    "DIAGNOSIS_SCHEMA",
    "diagnosis_to_dict",
    "item_to_dict",
    "server_to_dict",
    "with_ms_twins",
    "without_ms_twins",
]

DIAGNOSIS_SCHEMA = "latdoc.diagnosis/2"

_TO_MS = {"_s": 1000.0, "_us": 0.001}
"""Suffixes of keys in another unit, and the factor that turns their value into ms."""


def with_ms_twins(numbers: Mapping[str, float | None]) -> dict[str, float | None]:
    """The mapping with an ``<name>_ms`` key after each ``<name>_s`` or ``<name>_us`` key."""
    out: dict[str, float | None] = {}
    for key, value in numbers.items():
        out[key] = value
        for suffix, factor in _TO_MS.items():
            if key.endswith(suffix):
                twin = key.removesuffix(suffix) + "_ms"
                if twin not in numbers:
                    out[twin] = None if value is None else round(value * factor, 6)
                break
    return out


def without_ms_twins(numbers: Mapping[str, float | None]) -> dict[str, float | None]:
    """``numbers`` without the twins :func:`with_ms_twins` added: the inverse, for readers
    of a stored document."""
    twins = set()
    for key, value in numbers.items():
        for suffix, factor in _TO_MS.items():
            if key.endswith(suffix):
                twin = key.removesuffix(suffix) + "_ms"
                if twin in numbers and numbers[twin] == (
                    None if value is None else round(value * factor, 6)
                ):
                    twins.add(twin)
                break
    return {k: v for k, v in numbers.items() if k not in twins}


def diagnosis_to_dict(d: Diagnosis) -> dict[str, Any]:
    """The ``latdoc.diagnosis/2`` document: verdict, shares, findings with their top
    remedy, remedies, the numbers of each step, and what the run left out.

    The verdict's ``confidence`` is the probability that its primary kind is right,
    read from the primary rule's own confidence (``rule_confidence``) by the truth
    bank's calibration table named in ``confidence_model``; ``bank_accuracy`` is how
    often the bank's verdicts of that primary kind were right, of ``n``. The three
    are null in documents written before confidence was calibrated, whose
    ``confidence`` is the rule's own. A finding's ``confidence`` stays its rule's own.

    ``priorities`` is what the remedies were ranked for: the corners of latency, cost and
    quality in the ``order`` read, their ``weights`` where the user gave weights, those
    ``not_read`` (weighted 0), the ``scenario`` whose preset they are (null for the
    user's ``--priorities``) and the ``text`` the reports print.
    Each remedy's ``predicted_gain_ms`` is null unless ``gain_source`` says it was
    ``measured`` in this run or ``fitted`` from the length curve, with its
    ``gain_interval_ms``; ``verify_command`` is the experiment that would measure it;
    ``effects`` says what it does to cost (``lower``, ``none``, ``higher``) and to the
    answers (``none``, ``may_change``, ``may_lower``), each with why in words: classes,
    never amounts.
    ``negligible`` names the kinds too small to matter and the bar they missed;
    ``workload`` is the request the shares, that bar and the verdict are of (its prompt:
    the user's ``--prompt-tokens``, else the recorded requests' median for recorded
    traffic, else the seed's 2K, as its ``source`` says: ``told``, ``recorded`` or
    ``seed``; its time: the shortest length's typical request plus the fitted growth to
    that prompt); ``longer_prompt`` the longer
    length measured at which input length would be named, where the user told no prompt;
    ``typical_request`` splits a request on a new connection into its phases;
    ``system`` lists the client host's failing checklist items (as in
    ``latdoc.system/1``) that matter for the verdict or a contributing kind;
    ``server`` is the server's own timing (medians, the engine metrics scraped around
    the run, and where client and server disagree), null when it told nothing.
    ``cost`` is what the run's requests cost at the model's price, in US dollars, with
    the price and its source; null where latdoc knew no price (never 0).
    ``steps.network_rule`` is step 1's network rule: the setup and first byte it
    compared, its thresholds, the bottleneck it named (``network``, ``model service`` or
    null), its ``statement``, and why keep-alive's saving is null when it is."""
    return {
        "schema": DIAGNOSIS_SCHEMA,
        "run_id": d.run_id,
        "endpoint": d.endpoint,
        "model": d.model,
        "scenario": str(d.scenario),
        "priorities": _priorities(d),
        "requests": d.requests,
        "requests_by_step": dict(d.requests_by_step),
        "failed": d.failed,
        "cost": cost_to_dict(d.cost),
        "verdict": _verdict(d),
        "negligible": _negligible(d),
        "typical_request": _typical_request(d),
        "workload": _workload(d),
        "longer_prompt": _longer_prompt(d),
        "reference": None
        if d.reference is None
        else {"name": d.reference[0], "origin": d.reference[1]},
        "shares": {str(k): round(v / 1000, 6) for k, v in d.shares_ms.items()},
        "shares_ms": {str(k): round(v, 3) for k, v in d.shares_ms.items()},
        "findings": _findings(d),
        "remedies": [_remedy(r) for r in d.remedies],
        "steps": {
            "network": with_ms_twins(d.network),
            "network_rule": _network_rule(d),
            "length": _length(d),
            "load": with_ms_twins(d.load),
            "reasoning": dict(d.reasoning) or None,
        },
        "notes": [{"step": n.step, "text": n.text} for n in d.notes],
        "system": [item_to_dict(i) for i in d.system],
        "server": server_to_dict(d.server),
    }


def _verdict(d: Diagnosis) -> dict[str, Any]:
    v = d.verdict
    return {
        "primary": str(v.primary),
        "contributing": [str(k) for k in v.contributing],
        "confidence": v.confidence,
        "negligible": [str(k) for k in v.negligible],
        "rule_confidence": v.rule_confidence,
        "confidence_model": v.confidence_model,
        "bank_accuracy": None
        if v.bank_accuracy is None
        else {"accuracy": v.bank_accuracy, "n": v.bank_n},
        "runner_up": None if v.runner_up is None else str(v.runner_up),
        "near_threshold": v.near_threshold,
    }


def _longer_prompt(d: Diagnosis) -> dict[str, Any] | None:
    longer = d.longer_prompt
    if longer is None:
        return None
    return {
        "prompt_tokens": longer.prompt_tokens,
        "growth_ms": round(longer.growth_ms, 3),
        "growth_interval_ms": [round(v, 3) for v in longer.growth_interval_ms],
        "ratio": longer.ratio,
    }


def _findings(d: Diagnosis) -> list[dict[str, Any]]:
    """Each finding with the first remedy that addresses its kind."""
    top: dict[Kind, Remedy] = {}
    for r in d.remedies:
        top.setdefault(r.addresses, r)
    findings = []
    for f in d.findings:
        remedy = top.get(f.kind)
        findings.append(
            {
                "kind": str(f.kind),
                "title": f.title,
                "rule": f.rule,
                "evidence": with_ms_twins(f.evidence),
                "share_s": round(f.share_ms / 1000, 6),
                "share_ms": round(f.share_ms, 3),
                "excess_ms": round(f.excess_ms, 3),
                "beyond_alone_ms": round(f.beyond_alone_ms, 3),
                "confidence": f.confidence,
                "n": f.n,
                "remedy": remedy.title if remedy else None,
                "predicted_gain_ms": remedy.predicted_gain_ms if remedy else None,
            }
        )
    return findings


def _remedy(r: Remedy) -> dict[str, Any]:
    return {
        "key": r.key,
        "title": r.title,
        "addresses": str(r.addresses),
        "change": r.change,
        "predicted_gain_ms": r.predicted_gain_ms,
        "gain_interval_ms": list(r.gain_interval_ms) if r.gain_interval_ms else None,
        "gain_source": r.gain_source,
        "verify_command": r.verify_command,
        "how_to_measure": r.how_to_measure,
        "tradeoff": r.tradeoff,
        "effects": None
        if r.effects is None
        else {
            "cost": str(r.effects.cost),
            "cost_why": r.effects.cost_why,
            "quality": str(r.effects.quality),
            "quality_why": r.effects.quality_why,
            "text": r.effects.text(),
        },
    }


def _priorities(d: Diagnosis) -> dict[str, Any] | None:
    p = d.priorities
    if p is None:
        return None
    return {
        "order": [str(c) for c in p.order],
        "weights": None
        if p.weights is None
        else {str(c): w for c, w in zip(p.order, p.weights, strict=True)},
        "not_read": [str(c) for c in p.not_read],
        "scenario": None if p.scenario is None else str(p.scenario),
        "text": p.text(),
    }


def _length(d: Diagnosis) -> dict[str, Any] | None:
    """Step 2: the fitted length curve, its points and its rule."""
    curve = d.length
    if curve is None:
        return None
    return {
        "points": [
            {"prompt_tokens": p.prompt_tokens, "ttft_ms": p.ttft_ms, "n": p.n} for p in curve.points
        ],
        "a_ms": curve.a_ms,
        "b_ms_per_1k": curve.b_ms_per_1k,
        "c_ms_per_1k2": curve.c_ms_per_1k2,
        "prefill_ms_per_1k": curve.prefill_ms_per_1k,
        "shape": curve.shape,
        "ratio_long_short": curve.ratio_long_short,
        "rule": _length_rule(d),
        "tokens_estimated": curve.tokens_estimated,
    }


def _workload(d: Diagnosis) -> dict[str, Any] | None:
    """The request the shares, the bar and the verdict are of."""
    w = d.workload
    if w is None:
        return None
    return {
        "prompt_tokens": w.prompt_tokens,
        "output_tokens": w.output_tokens,
        "concurrency": w.concurrency,
        "total_ms": round(w.total_ms, 3),
        "short_ms": round(w.short_ms, 3),
        "growth_ms": round(w.growth_ms, 3),
        "beyond_alone_ms": round(w.beyond_alone_ms, 3),
        "rest_ms": None if (rest := d.rest_ms) is None else round(rest, 3),
        "told": w.told,
        "source": w.source,
        "asked_tokens": w.asked_tokens,
    }


def _negligible(d: Diagnosis) -> dict[str, Any] | None:
    """The bar a finding had to clear to contribute, and the kinds under it."""
    bar = d.noticeable
    if bar is None:
        return None
    return {
        "kinds": [str(k) for k in d.verdict.negligible],
        "typical_ms": round(bar.typical_ms, 3),
        "noise_ms": round(bar.noise_ms, 3),
        "ttft_noise_ms": None if bar.ttft_noise_ms is None else round(bar.ttft_noise_ms, 3),
        "fraction": bar.fraction,
        "min_share_ms": round(bar.min_share_ms, 3),
        "new_connection_ms": round(bar.new_connection_ms, 3),
    }


def _typical_request(d: Diagnosis) -> dict[str, Any] | None:
    """A request on a new connection, phase by phase (medians over the cold requests)."""
    parts = d.typical_request
    if parts is None:
        return None
    return {
        "setup_ms": round(parts.setup_ms, 3),
        "send_ms": round(parts.send_ms, 3),
        "server_wait_ms": None if parts.server_wait_ms is None else round(parts.server_wait_ms, 3),
        "prefill_ms": round(parts.prefill_ms, 3),
        "reasoning_ms": round(parts.reasoning_ms, 3),
        "decode_ms": round(parts.decode_ms, 3),
        "total_ms": round(parts.total_ms, 3),
        "requests": parts.requests,
    }


def _network_rule(d: Diagnosis) -> dict[str, Any] | None:
    """What step 1's network rule compared, what it named, and the sentence every report
    prints; why keep-alive's saving was not measured (null when it was)."""
    check = d.network_check
    if check is None:
        return None
    return {
        "setup_ms": check.setup_ms,
        "first_byte_ms": check.first_byte_ms,
        "slow_setup_ms": check.slow_setup_ms,
        "service_ratio": check.service_ratio,
        "bottleneck": check.bottleneck,
        "statement": check.statement,
        "keepalive_saving_why": check.keepalive_why,
    }


def _length_rule(d: Diagnosis) -> dict[str, Any] | None:
    """What the input-length rule compared, and whether it fired."""
    check = d.length_check
    if check is None:
        return None
    return {
        "short_tokens": check.short_tokens,
        "short_ttft_ms": round(check.short_ms, 3),
        "long_tokens": check.long_tokens,
        "long_ttft_ms": round(check.long_ms, 3),
        "ratio": round(check.ratio, 4),
        "growth_ms": round(check.growth_ms, 3),
        "noise_ms": round(check.noise_ms, 3),
        "grows_with_length": check.grows_with_length,
        "fired": check.fired,
        "why": check.why,
        "growth_interval_ms": None
        if check.growth_interval_ms is None
        else [round(v, 3) for v in check.growth_interval_ms],
        "asked_tokens": check.asked_tokens,
        "reference_growth_ms": None
        if check.reference_growth_ms is None
        else round(check.reference_growth_ms, 3),
        "excess_ms": round(check.excess_ms, 3),
    }


def item_to_dict(item: SystemItem) -> dict[str, Any]:
    return {
        "key": item.key,
        "name": item.name,
        "current": item.current,
        "recommended": item.recommended,
        "ok": item.ok,
        "why": item.why,
        "command": item.command,
        "allows": item.allows,
        "kinds": [str(k) for k in item.kinds],
    }


def server_to_dict(account: ServerAccount | None) -> dict[str, Any] | None:
    """The ``server`` object of the diagnosis document."""
    if account is None:
        return None
    return {
        "source": account.source,
        **{k: None if v is None else round(v, 3) for k, v in account.numbers.items()},
        "disagreements": [
            {
                "what": d.what,
                "requests": d.requests,
                "of": d.of,
                "worst_ms": round(d.worst_ms, 3),
            }
            for d in account.disagreements
        ],
        "metrics_source": account.metrics_source,
        "metrics": {k: None if v is None else round(v, 4) for k, v in account.metrics.items()},
    }
