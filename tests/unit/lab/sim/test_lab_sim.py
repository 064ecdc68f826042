"""The simulated endpoint against real clients on loopback: format, counting, timing, TLS, h2."""

from __future__ import annotations

import argparse
import asyncio
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from latdoc import UsageError
from latdoc.lab.command import add_parser, config_from_args
from latdoc.lab.sim import (
    Fault,
    LabConfig,
    LatencyModel,
    chat_prompt_token_list,
    chat_prompt_tokens,
    count_tokens,
    output_text,
    output_token,
    tokenize,
)
from latdoc.lab.sim._cache import PrefixCache
from latdoc.lab.sim._process import config_from_json, config_to_json
from latdoc.lab.sim._slots import SlotPool

MESSAGES = [{"role": "user", "content": "Hello, world"}]


PROMPT_TOKENS = 3 + 4 + 3


def test_count_tokens() -> None:
    assert count_tokens("Hello, world") == 3
    assert count_tokens("") == 0
    assert count_tokens("  it's 3.5 km!") == 8
    assert chat_prompt_tokens(MESSAGES) == PROMPT_TOKENS
    parts = [{"role": "user", "content": [{"type": "text", "text": "Hello, world"}]}]
    assert chat_prompt_tokens(parts) == PROMPT_TOKENS


@given(st.text(), st.text())
def test_count_tokens_adds_across_whitespace(a: str, b: str) -> None:
    assert count_tokens(f"{a} {b}") == count_tokens(a) + count_tokens(b)


@given(st.integers(min_value=0, max_value=10_000))
def test_each_output_token_is_one_lab_token(k: int) -> None:
    assert count_tokens(output_token(k)) == 1
    assert count_tokens(output_text(k)) == k


def test_latency_model() -> None:
    model = LatencyModel(prefill_base_ms=50, prefill_ms_per_token=0.5, prefill_ms_per_token2=0.01)
    assert model.prefill_ms(100) == pytest.approx(50 + 50 + 100)
    assert model.total_ms(100, 11) == pytest.approx(200 + 10 * 10.0)
    with pytest.raises(ValueError, match="decode_ms_per_token"):
        LatencyModel(decode_ms_per_token=-1)


def test_config_round_trips_to_the_child() -> None:
    config = LabConfig(
        model="m",
        latency=LatencyModel(prefill_ms_per_token2=0.001, jitter_ms=2),
        api_key="k",
        seed=3,
        stamp_chunks=True,
    )
    assert config_from_json(config_to_json(config)) == config


def test_latency_model_kv_pressure_and_cache() -> None:
    model = LatencyModel(
        prefill_base_ms=20,
        prefill_ms_per_token=0.5,
        prefill_ms_per_token2=0.01,
        decode_ms_per_token=10,
        kv_threshold_tokens=100,
        kv_penalty=3,
    )
    assert model.prefill_ms(100) == pytest.approx(20 + 50 + 100)
    assert model.prefill_ms(101) == pytest.approx((20 + 50.5 + 102.01) * 3)
    assert model.prefill_ms(100, cached_tokens=64) == pytest.approx(20 + 18 + 0.01 * (10000 - 4096))
    assert model.first_slow_token(90) == 11
    assert model.first_slow_token(150) == 1
    assert model.total_ms(90, 12) == pytest.approx(model.prefill_ms(90) + 11 * 10 + 1 * 20)
    assert LatencyModel(kv_threshold_tokens=5).first_slow_token(1) is None
    with pytest.raises(ValueError, match="kv_penalty"):
        LatencyModel(kv_penalty=0)


def test_config_validation() -> None:
    with pytest.raises(ValueError, match="needs slots"):
        LabConfig(load_profile=(0.5,))
    with pytest.raises(ValueError, match="load_profile"):
        LabConfig(slots=2, load_profile=(1.5,))
    with pytest.raises(ValueError, match="fault_rate"):
        LabConfig(fault=Fault.RESET, fault_rate=1.5)
    with pytest.raises(ValueError, match="stall_after_token"):
        LabConfig(stall_ms=10)
    with pytest.raises(ValueError, match="slots"):
        LabConfig(slots=0)
    assert not LabConfig().extended
    assert LabConfig(slots=1).extended and LabConfig(prefix_cache=True).extended


def test_tokens_of_a_chat_prompt() -> None:
    messages = [{"role": "system", "content": "Be brief."}, *MESSAGES]
    tokens = chat_prompt_token_list(messages)
    assert len(tokens) == chat_prompt_tokens(messages)
    assert tokens[:3] == ["<|start|>", "system", "<|sep|>"]
    assert tokenize("Hello, world") == ["Hello", ",", "world"]


def test_prefix_cache_blocks_and_lru() -> None:
    cache = PrefixCache(block_tokens=4, capacity=3)
    prompt = list(range(10))
    hashes = cache.block_hashes(prompt)
    assert len(hashes) == 2
    assert cache.cached_tokens(prompt, hashes) == 0
    cache.add(hashes)
    assert cache.cached_tokens(prompt, hashes) == 8
    exact = list(range(8))
    assert cache.cached_tokens(exact, cache.block_hashes(exact)) == 4
    shifted = [99, *range(9)]
    assert cache.cached_tokens(shifted, cache.block_hashes(shifted)) == 0
    cache.add(cache.block_hashes([7] * 4))
    assert cache.cached_tokens(prompt, hashes) == 8
    cache.add(cache.block_hashes([8] * 4))
    assert cache.cached_tokens(prompt, hashes) == 8
    cache.add(cache.block_hashes([8] * 4))
    cache.add(cache.block_hashes([9] * 4))
    assert cache.cached_tokens(prompt, hashes) == 0


def test_slot_pool_is_first_come_first_served() -> None:
    async def scenario() -> list[str]:
        pool = SlotPool(1)
        order: list[str] = []

        async def user(name: str, hold_s: float) -> None:
            await pool.acquire()
            order.append(name)
            await asyncio.sleep(hold_s)
            pool.release()

        first = asyncio.create_task(user("a", 0.02))
        await asyncio.sleep(0)
        waiting = [asyncio.create_task(user(name, 0.0)) for name in "bcd"]
        await asyncio.sleep(0)
        waiting[1].cancel()
        await asyncio.gather(first, *waiting, return_exceptions=True)
        assert pool.busy == 0 and not pool.waiting
        return order

    assert asyncio.run(scenario()) == ["a", "b", "d"]


def test_new_fields_round_trip_to_the_child() -> None:
    config = LabConfig(
        latency=LatencyModel(kv_threshold_tokens=100, kv_penalty=2),
        slots=3,
        load_profile=(0.1, 0.9),
        prefix_cache=True,
        stall_after_token=4,
        stall_ms=5,
        fault=Fault.RATE_LIMIT,
        fault_rate=0.25,
        alt_models={"lab-wrong": LatencyModel()},
        wrong_models=("lab-wrong",),
    )
    assert config_from_json(config_to_json(config)) == config


def _serve_args(argv: list[str]) -> argparse.Namespace:
    """``argv`` parsed as the options of ``latdoc lab serve``."""
    parser = argparse.ArgumentParser(prog="latdoc")
    add_parser(parser.add_subparsers(dest="command"), argparse.ArgumentParser)
    return parser.parse_args(["lab", "serve", *argv])


def test_serve_cli_defaults_are_the_default_config() -> None:
    args = _serve_args([])
    assert (args.host, args.port, args.tls, args.http2) == ("127.0.0.1", 8000, False, False)
    assert config_from_args(args) == LabConfig()


def test_serve_cli_sets_every_knob(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAB_KEY", "sk-lab")
    argv = (
        "--model m --api-key-env LAB_KEY --seed 4 --prefill-base-ms 1 --prefill-ms-per-token 2 "
        "--prefill-ms-per-token2 3 --decode-ms-per-token 4 --jitter-ms 5 "
        "--kv-threshold-tokens 100 --kv-penalty 2.5 --max-context-tokens 4096 --slots 8 "
        "--load-profile 0.1,0.9 --day-seconds 120 --background-request-ms 300 --prefix-cache "
        "--prefix-block-tokens 32 --prefix-cache-blocks 10 --stall-after-token 7 "
        "--stall-ms 900 --stall-rate 0.3 --fault 429 --fault-rate 0.2 --fault-after-tokens 5 "
        "--retry-after-s 9 --drip-interval-ms 3 --hang-s 30 --default-max-tokens 16 "
        "--headers-after-prefill --reject-stream-options --stamp-chunks "
        "--answer-tokens 12 --reserve-ms-per-1k-max-tokens 6 --alt-model big:7:8 "
        "--batch-slowdown 0.25 --tokens-per-event 2 --tokens-per-event-max 6 --wrong-model big"
    )
    config = config_from_args(_serve_args(argv.split()))
    latency = LatencyModel(
        1,
        2,
        3,
        4,
        5,
        kv_threshold_tokens=100,
        kv_penalty=2.5,
        reserve_ms_per_1k_max_tokens=6,
        batch_slowdown=0.25,
    )
    assert config == LabConfig(
        model="m",
        latency=latency,
        alt_models={"big": LatencyModel(7, 2, 3, 8, 5, 100, 2.5, 6, batch_slowdown=0.25)},
        wrong_models=("big",),
        default_max_tokens=16,
        answer_tokens=12,
        headers_after_prefill=True,
        reject_stream_options=True,
        stamp_chunks=True,
        api_key="sk-lab",
        seed=4,
        max_context_tokens=4096,
        slots=8,
        load_profile=(0.1, 0.9),
        day_seconds=120,
        background_request_ms=300,
        prefix_cache=True,
        prefix_block_tokens=32,
        prefix_cache_blocks=10,
        stall_after_token=7,
        stall_ms=900,
        stall_rate=0.3,
        fault=Fault.RATE_LIMIT,
        fault_rate=0.2,
        fault_after_tokens=5,
        retry_after_s=9,
        drip_interval_ms=3,
        hang_s=30,
        tokens_per_event=2,
        tokens_per_event_max=6,
    )


def test_serve_cli_sets_keepalive_comments() -> None:
    config = config_from_args(_serve_args(["--keepalive-comment-ms", "40"]))
    assert config == LabConfig(keepalive_comment_ms=40)


def test_serve_cli_sets_the_base_resp_code() -> None:
    config = config_from_args(_serve_args(["--fault", "base-resp", "--base-resp-code", "1004"]))
    assert config == LabConfig(fault=Fault.BASE_RESP, base_resp_code=1004)


def test_serve_cli_writes_reasoning_into_the_text() -> None:
    config = config_from_args(_serve_args(["--reasoning-in-text"]))
    assert config == LabConfig(reasoning_in_text=True)


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        ("--load-profile 0.2,0.8", "--load-profile needs --slots"),
        ("--tokens-per-event 0", "--tokens-per-event must be >= 1"),
        ("--tokens-per-event 4 --tokens-per-event-max 2", "--tokens-per-event-max must be >= 4"),
        ("--keepalive-comment-ms -5", "--keepalive-comment-ms must be"),
        ("--keepalive-comment-ms 50 --headers-after-prefill", "not --headers-after-prefill"),
        ("--batch-slowdown -0.5", "--batch-slowdown must be"),
        ("--slots 2 --load-profile 0.2,1.2", "between 0 and 1"),
        ("--fault reset --fault-rate 1.5", "--fault-rate must be between 0 and 1"),
        ("--stall-after-token 3 --stall-rate -0.1", "--stall-rate must be between 0 and 1"),
        ("--fault-rate 0.5", "--fault-rate needs --fault"),
        ("--stall-ms 100", "--stall-ms needs --stall-after-token"),
        ("--kv-penalty 3", "--kv-penalty needs --kv-threshold-tokens"),
        ("--http2", "--http2 needs --tls"),
        ("--slots 0", "--slots must be >= 1"),
        ("--decode-ms-per-token -1", "--decode-ms-per-token must be"),
        ("--api-key-env LATDOC_UNSET_VARIABLE", "not set"),
        ("--wrong-model big", "--wrong-model big: not a model served"),
    ],
)
def test_serve_cli_rejects_bad_options(argv: str, needle: str) -> None:
    with pytest.raises(UsageError, match=re.escape(needle)):
        config_from_args(_serve_args(argv.split()))
