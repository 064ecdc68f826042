"""Remedies' effects of known size: each knob, measured by the real probe against the lab.

``latdoc verify`` asks whether a change (a lower ``max_tokens``, another model, a
shared prompt prefix, HTTP/2) makes an endpoint faster. These tests show that the
lab's knobs produce exactly the effect their truth methods say, on and off: the
measured difference lies within 15 % of the planned one when a knob is on, and
near zero when it is off. Timing runs sequentially against an in-process
:class:`LabServer`, or against a :class:`LabProcess` when requests run at once.

On a busy machine every request can be late by a few milliseconds, so each
tolerance is widened by the noise the test measured in the same run: the
machine's scheduling noise (:mod:`machine_noise`) and the spread of its own
samples, whose planned times are equal. The widening is capped below the effect,
so a knob without its effect still fails.
"""

from __future__ import annotations

import argparse

import pytest

from latdoc import UsageError
from latdoc.lab.command import add_parser, config_from_args
from latdoc.lab.sim import (
    LabConfig,
    LatencyModel,
    TimingForm,
    UsageShape,
)
from latdoc.lab.sim._process import config_from_json, config_to_json


def test_reserve_ms_is_proportional_to_max_tokens() -> None:
    model = LatencyModel(reserve_ms_per_1k_max_tokens=100)
    assert model.reserve_ms(2048) == pytest.approx(204.8)
    assert model.reserve_ms(100) == pytest.approx(10.0)
    assert LatencyModel().reserve_ms(100_000) == 0.0
    assert model.prefill_ms(10) == LatencyModel().prefill_ms(10)
    with pytest.raises(ValueError, match="reserve_ms_per_1k_max_tokens"):
        LatencyModel(reserve_ms_per_1k_max_tokens=-1)


SMALL = LatencyModel(prefill_base_ms=20, prefill_ms_per_token=0, decode_ms_per_token=2)


BIG = LatencyModel(prefill_base_ms=120, prefill_ms_per_token=0, decode_ms_per_token=10)


def test_alt_models_config() -> None:
    config = LabConfig(latency=SMALL, alt_models={"lab-big": BIG})
    assert config.models == ("lab-sim", "lab-big")
    assert config.latency_for("lab-sim") is SMALL
    assert config.latency_for("lab-big") is BIG
    with pytest.raises(KeyError):
        config.latency_for("gpt-9")
    assert config.extended and not LabConfig().extended
    assert config_from_json(config_to_json(config)) == config
    assert hash(config) == hash(LabConfig(latency=SMALL, alt_models={"lab-big": BIG}))
    assert hash(LabConfig()) == hash(LabConfig())
    with pytest.raises(ValueError, match="default model"):
        LabConfig(alt_models={"lab-sim": BIG})
    with pytest.raises(ValueError, match="non-empty"):
        LabConfig(alt_models={"": BIG})
    with pytest.raises(ValueError, match="LatencyModel"):
        LabConfig(alt_models={"x": 3})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match="answer_tokens"):
        LabConfig(answer_tokens=0)


def _serve_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="latdoc")
    add_parser(parser.add_subparsers(dest="command"), argparse.ArgumentParser)
    return parser.parse_args(["lab", "serve", *argv])


def test_serve_flags_for_the_effects() -> None:
    argv = (
        "--prefill-base-ms 20 --decode-ms-per-token 2 --jitter-ms 1 "
        "--reserve-ms-per-1k-max-tokens 50 --answer-tokens 64 --reasoning-tokens 120 "
        "--alt-model lab-big:200:25 --alt-model llama3:8b:30:4.5"
    )
    config = config_from_args(_serve_args(argv.split()))
    base = LatencyModel(
        prefill_base_ms=20,
        decode_ms_per_token=2,
        jitter_ms=1,
        reserve_ms_per_1k_max_tokens=50,
        reasoning_tokens=120,
    )
    assert config == LabConfig(
        latency=base,
        answer_tokens=64,
        alt_models={
            "lab-big": LatencyModel(
                prefill_base_ms=200,
                decode_ms_per_token=25,
                jitter_ms=1,
                reserve_ms_per_1k_max_tokens=50,
            ),
            "llama3:8b": LatencyModel(
                prefill_base_ms=30,
                decode_ms_per_token=4.5,
                jitter_ms=1,
                reserve_ms_per_1k_max_tokens=50,
            ),
        },
    )


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        ("--answer-tokens 0", "--answer-tokens must be >= 1"),
        ("--reasoning-tokens -1", "--reasoning-tokens must be >= 0"),
        ("--reserve-ms-per-1k-max-tokens -1", "--reserve-ms-per-1k-max-tokens must be"),
        ("--alt-model lab-sim:1:2", "--alt-model lab-sim: that is the --model"),
        ("--alt-model a:1:2 --alt-model a:3:4", "--alt-model a: given more than once"),
    ],
)
def test_serve_flags_for_the_effects_reject_bad_values(argv: str, needle: str) -> None:
    with pytest.raises(UsageError, match=needle):
        config_from_args(_serve_args(argv.split()))


@pytest.mark.parametrize("value", ["no-colon", ": empty name"])
def test_header_flag_names_its_format(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        _serve_args(["--header", value])
    assert "expected NAME: VALUE" in capsys.readouterr().err


@pytest.mark.parametrize("value", ["big:1", ":1:2", "big:x:2", "big:1:-2", "big:nan:2"])
def test_alt_model_flag_names_its_format(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        _serve_args(["--alt-model", value])
    assert "--alt-model" in capsys.readouterr().err


def test_lab_serve_takes_the_forms_and_a_lab_process_keeps_them() -> None:
    parser = argparse.ArgumentParser(prog="latdoc")
    add_parser(parser.add_subparsers(dest="command"), argparse.ArgumentParser)
    argv = ["lab", "serve", "--timing-form", "vllm", "--timing-form", "groq"]
    config = config_from_args(parser.parse_args(argv))
    assert config.timing_forms == (TimingForm.VLLM, TimingForm.GROQ)
    assert config_from_json(config_to_json(config)) == config
    assert config_from_args(parser.parse_args(["lab", "serve"])).timing_forms == (
        TimingForm.SERVER_TIMING,
    )
    with pytest.raises(ValueError, match="TimingForm"):
        LabConfig(timing_forms=("vllm",))  # type: ignore[arg-type]


def test_lab_serve_takes_a_usage_shape_and_a_lab_process_keeps_it() -> None:
    parser = argparse.ArgumentParser(prog="latdoc")
    add_parser(parser.add_subparsers(dest="command"), argparse.ArgumentParser)
    config = config_from_args(parser.parse_args(["lab", "serve", "--usage-shape", "moonshot"]))
    assert config.usage_shape is UsageShape.MOONSHOT
    assert config_from_json(config_to_json(config)) == config
    assert config_from_args(parser.parse_args(["lab", "serve"])).usage_shape is UsageShape.OPENAI
    with pytest.raises(ValueError, match="UsageShape"):
        LabConfig(usage_shape="moonshot")  # type: ignore[arg-type]
