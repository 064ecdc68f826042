"""A new ``latdoc verify`` experiment is one module and one line of the registry.

The toy below is what such a module holds: one frozen :class:`Experiment` with its
own options record and argument. Added to a copy of
:data:`~latdoc.features.verify.experiments.EXPERIMENTS`, it gets its ``--remedy``
choice and its option in the real parser, builds its arms, and runs against the
lab to a verdict, with nothing else changed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import LabFactory
from latdoc.cli import EXIT_OK, main
from latdoc.lab.sim import LabConfig, LatencyModel
from unit.features.verify import test_experiment_registry as unit_registry

registered = unit_registry.registered
"""The toy experiment the unit tests register (a fixture)."""

DECODE = LatencyModel(prefill_base_ms=10.0, prefill_ms_per_token=0.0, decode_ms_per_token=4.0)


@pytest.mark.usefixtures("registered")
def test_it_runs_against_the_lab_to_a_verdict(
    lab: LabFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with lab(LabConfig(latency=DECODE)) as server:
        code = main(["verify", server.base_url, "-m", "lab-sim", "--remedy", "shorter-output",
                     "--shorter-output-tokens", "4", "--max-tokens", "48", "--max-requests",
                     "60", "--seed", "1", "--json", "--db", str(tmp_path / "t.db")])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == EXIT_OK, err
    assert "Plan: verify shorter-output on lab-sim at " in err
    assert "A: 48 output tokens" in err and "B: 4 output tokens" in err
    document = json.loads(out)
    assert document["remedy"] == "shorter-output"
    assert document["arms"] == {"A": "48 output tokens", "B": "4 output tokens"}
    assert (document["headline"], document["statistic"]) == ("total", "median")
    assert document["verdict"] == "better", document["summary"]
    # B decodes 44 fewer tokens: what the lab's latency model says that saves.
    truth = DECODE.total_ms(64, 48) - DECODE.total_ms(64, 4)
    assert document["gain_ms"] == pytest.approx(truth, rel=0.15)
    low, high = document["gain_interval_ms"]
    assert low <= document["gain_ms"] <= high
