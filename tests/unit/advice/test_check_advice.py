"""The remedies that can change the answers, not only their speed, name ``latdoc verify
--check`` in their advice, and only they do: every remedy of the kinds that suggest
another model, a trimmed prompt, a tighter max_tokens or a lower reasoning effort."""

from __future__ import annotations

import shlex

from latdoc import Finding, Kind, RunContext
from latdoc.advice.builders import builders_for
from latdoc.advice.verify import CHANGES_ANSWERS, CHECK_ANSWERS
from latdoc.features.verify import experiments
from latdoc.model import QualityRisk
from report_samples import ENDPOINT, make_diagnosis

FINDINGS = (
    Finding(Kind.INPUT_LENGTH, "Prefill grows", "rule", {"long_tokens": 8192.0}, 1480.0, 0.9),
    Finding(Kind.DECODE, "Decode is slow", "rule", {"tpot_ms": 40.0}, 1200.0, 0.8),
    Finding(Kind.REASONING, "It thinks first", "rule", {"reasoning_tokens": 900.0}, 900.0, 0.8),
    Finding(Kind.NETWORK_PATH, "Slow uplink", "rule", {"long_prompt_send_ms": 300.0}, 300.0, 0.7),
)


def _remedy_named(command: str) -> str:
    words = shlex.split(command)
    return words[words.index("--remedy") + 1]


def test_every_remedy_that_can_change_the_answers_names_check_and_no_other_does() -> None:
    """And a remedy that names it declares that it may change the answers (its kind's
    effects), so the two say the same."""
    diagnosis = make_diagnosis()
    ctx = RunContext("run", ENDPOINT, diagnosis.model, cpu_count=4)
    named: set[str] = set()
    for finding in FINDINGS:
        for builder in builders_for(finding.kind):
            for remedy in builder.build(finding, diagnosis, ctx):
                if remedy.verify_command is None or "latdoc verify" not in remedy.verify_command:
                    assert CHECK_ANSWERS not in remedy.change, remedy.key
                    continue
                name = _remedy_named(remedy.verify_command)
                named.add(name)
                assert (CHECK_ANSWERS in remedy.change) == (name in CHANGES_ANSWERS), remedy.key
                if name in CHANGES_ANSWERS:
                    quality = builder.effects_of(remedy).quality
                    assert quality is not QualityRisk.NONE, remedy.key
    assert named >= CHANGES_ANSWERS


def test_the_experiments_the_advice_sends_to_check_take_checks() -> None:
    """``--check`` goes with an experiment of two arms, not one that runs its own."""
    for name in CHANGES_ANSWERS:
        assert experiments.experiment(name).runner is None, name
    assert "--check FILE" in CHECK_ANSWERS
