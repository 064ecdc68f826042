"""The reference profile: every quantity cited and shown in the docs as the file says,
and a user's file laid over it, or refused with what is wrong."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from latdoc import ReferenceProfile, healthy_reference, load_reference
from latdoc.errors import UsageError
from latdoc.reference import QUANTITIES, reference_from_record, reference_to_record
from paths import ROOT

DOCS = ROOT / "docs" / "method.md"


def test_the_shipped_profile_has_every_quantity_each_with_its_sources() -> None:
    profile = healthy_reference()
    assert isinstance(profile, ReferenceProfile)
    assert [q.key for q in profile] == list(QUANTITIES)
    assert profile.origin == "latdoc" and profile.compiled
    for q in profile:
        assert q.label and q.unit and q.why, q.key
        backed = {s.supports for s in q.sources}
        assert backed & {"slow_edge", "both"} and backed & {"typical", "both"}, q.key
        assert all(s.url.startswith(("https://", "seed/")) for s in q.sources), q.key
        # The typical value is on the healthy side of the edge.
        assert not q.is_slow(q.typical), q.key


def test_the_slow_edges_are_the_seeds_where_the_seed_gives_one() -> None:
    profile = healthy_reference()
    # The seed: DNS over 200 ms fixes the network; a TCP handshake takes 10–50 ms; a
    # TLS handshake 30–100 ms.
    assert (profile.edge("dns_ms"), profile.edge("rtt_ms")) == (200.0, 50.0)
    assert profile.edge("tls_handshake_ms") == 100.0
    for key in ("dns_ms", "rtt_ms", "tls_handshake_ms", "ttft_p95_over_p50", "stall_ms"):
        assert any(s.url == "seed/" for s in profile[key].sources), key


def test_beyond_the_edge_reads_which_way_is_slower() -> None:
    profile = healthy_reference()
    assert profile["tpot_ms"].beyond_edge(40.2) == pytest.approx(10.0)
    assert profile["tpot_ms"].beyond_edge(12.0) == 0.0
    # A rate is slower when lower.
    assert profile["upload_mbit_s"].beyond_edge(4.0) == pytest.approx(6.0)
    assert not profile["upload_mbit_s"].is_slow(100.0)


def test_the_docs_table_shows_every_value_of_the_file() -> None:
    text = DOCS.read_text()
    section = text[text.index("## What healthy is: the reference profile") :]
    section = section[: section.index("\n## ")]
    rows = {
        key: (float(edge), float(typical), unit.strip())
        for key, edge, typical, unit in re.findall(
            r"^\| `([a-z0-9_]+)` \| [^|]+ \| ([0-9.]+) \| ([0-9.]+) \| ([^|]+) \|",
            section,
            flags=re.MULTILINE,
        )
    }
    assert set(rows) == set(QUANTITIES)
    for q in healthy_reference():
        assert rows[q.key] == (q.slow_edge, q.typical, q.unit), q.key


def test_a_users_file_replaces_what_it_names_and_keeps_the_rest(tmp_path: Path) -> None:
    mine = tmp_path / "mine.toml"
    mine.write_text(
        "[profile]\nname = 'our fleet'\n\n[quantity.tpot_ms]\nslow_edge = 20.0\ntypical = 9.0\n"
    )
    theirs = load_reference(mine)
    assert theirs.name == "our fleet" and theirs.origin == str(mine)
    assert (theirs.edge("tpot_ms"), theirs.typical("tpot_ms")) == (20.0, 9.0)
    # Values the file does not give stay the shipped ones; the sources of a value the
    # user set are theirs (none), not the shipped ones.
    assert theirs["tpot_ms"].sources == () and theirs["tpot_ms"].unit == "ms"
    assert theirs["dns_ms"] == healthy_reference()["dns_ms"]
    assert [q.key for q in theirs] == list(QUANTITIES)


def test_an_edge_set_alone_below_the_typical_value_takes_the_typical_with_it(
    tmp_path: Path,
) -> None:
    mine = tmp_path / "mine.toml"
    mine.write_text("[quantity.tpot_ms]\nslow_edge = 10\n[quantity.dns_ms]\nslow_edge = 50\n")
    theirs = load_reference(mine)
    assert (theirs.edge("tpot_ms"), theirs.typical("tpot_ms")) == (10.0, 10.0)
    assert theirs.name == "mine", "a file that names no profile is called after itself"
    assert (theirs.edge("dns_ms"), theirs.typical("dns_ms")) == (50.0, 10.0)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("[quantity.tpot]\nslow_edge = 1\n", "unknown quantity tpot; known: dns_ms"),
        ("[quantity.tpot_ms]\nslow_edge = 'fast'\n", "slow_edge must be a number"),
        ("[quantity.tpot_ms]\nslow_edge = -1\n", "slow_edge must be a number of at least 0"),
        ("[quantity.tpot_ms]\ntypical = 40.0\n", "typical 40.0 lies past its slow edge 30.2"),
        ("[quantity.upload_mbit_s]\ntypical = 5\n", "typical 5.0 lies past its slow edge 10.0"),
        ("[quantity.tpot_ms]\nslower = 'up'\n", "slower must be 'higher' or 'lower'"),
        ("[quantity.tpot_ms]\nedge = 20\n", "unknown fields edge"),
        ("[profile]\nname = 'x'\n", "it names no [quantity.NAME]"),
        ("quantity = 3\n", "must be tables"),
        ("[quantity.tpot_ms\n", "is not TOML"),
    ],
)
def test_a_file_latdoc_cannot_use_says_what_is_wrong(tmp_path: Path, text: str, said: str) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(text)
    with pytest.raises(UsageError) as caught:
        load_reference(bad)
    assert said in str(caught.value) and str(bad) in str(caught.value)


def test_a_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="cannot read the reference file"):
        load_reference(tmp_path / "absent.toml")


def test_a_run_keeps_only_what_differs_from_the_shipped_profile(tmp_path: Path) -> None:
    assert reference_to_record(healthy_reference()) is None
    assert reference_from_record(None) == healthy_reference()
    mine = tmp_path / "mine.toml"
    mine.write_text("[profile]\nname = 'ours'\n[quantity.rtt_ms]\nslow_edge = 20\ntypical = 5\n")
    theirs = load_reference(mine)
    kept = reference_to_record(theirs)
    assert kept is not None and set(kept["quantity"]) == {"rtt_ms"}
    back = reference_from_record(kept)
    assert back.name == "ours" and back.origin == str(mine)
    assert [(q.key, q.slow_edge, q.typical) for q in back] == [
        (q.key, q.slow_edge, q.typical) for q in theirs
    ]
