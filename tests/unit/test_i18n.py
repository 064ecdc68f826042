"""The language latdoc speaks: a sentence with values is its English text wherever it is
read as a string, and its translation where it is shown; the language comes from the
flag, ``LATDOC_LANG`` or a Chinese locale; the shipped catalogue is complete."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest
from babel.messages.catalog import Catalog

from catalogue import extract, po_path, problems
from latdoc.i18n import Message, gettext, language, language_from, speaking, translate


def test_a_message_is_its_english_text() -> None:
    m = Message("{n} of {total} requests failed ({share:.0%})", n=3, total=40, share=0.075)
    assert m == "3 of 40 requests failed (8%)"
    assert json.dumps({"why": m}) == '{"why": "3 of 40 requests failed (8%)"}'
    assert f"{m}!" == "3 of 40 requests failed (8%)!"
    again = pickle.loads(pickle.dumps(m))
    assert again == m and isinstance(again, Message) and again.values == m.values


def test_english_is_returned_as_it_is() -> None:
    m = Message("Slow generation at {ms:.0f} ms", ms=80.4)
    assert language() == "en"
    assert translate(m) is m
    assert translate("Slow generation") == "Slow generation"


def test_a_message_is_said_in_chinese_with_its_own_values() -> None:
    inner = Message("in the stream's steady rhythm")
    m = Message(
        "{tpot:.0f} ms per output token ({rate:.1f} tokens/s) {where}, past the slow edge "
        "of healthy, {edge:.1f} ms (hosted endpoints decode at ~{typical:.0f} ms a token: "
        "{source})",
        tpot=80.4,
        rate=12.44,
        where=inner,
        edge=30.2,
        typical=12.7,
        source="Artificial Analysis, 2025-11-20",
    )
    with speaking("zh"):
        said = translate(m)
        assert language() == "zh"
    assert language() == "en"
    assert "80 ms" in said and "30.2 ms" in said and "12.4" in said
    assert "steady rhythm" not in said and "output token" not in said


def test_names_among_the_values_are_not_translated() -> None:
    # "decode" is in the catalogue; as a value that is not a Message, it is a name.
    with speaking("zh"):
        assert gettext("decode") != "decode"
        said = translate(Message("{kind} ({meaning})", kind="decode", meaning="x"))
    assert said.startswith("decode")


def test_an_empty_text_is_not_the_catalogue_header() -> None:
    with speaking("zh"):
        assert translate("") == ""


def test_an_unknown_language_is_refused_and_the_language_stays() -> None:
    with pytest.raises(ValueError, match="not 'fr'"), speaking("fr"):
        pass
    assert language() == "en"


@pytest.mark.parametrize(
    ("environ", "lang"),
    [
        ({}, None),
        ({"LANG": "zh_CN.UTF-8"}, "zh"),
        ({"LANG": "zh_TW"}, "zh"),
        ({"LANG": "en_US.UTF-8"}, None),
        ({"LC_ALL": "C", "LANG": "zh_CN.UTF-8"}, None),
        ({"LC_MESSAGES": "zh_CN.UTF-8", "LANG": "en_US"}, "zh"),
        ({"LATDOC_LANG": "en", "LC_ALL": "zh_CN.UTF-8"}, "en"),
        ({"LATDOC_LANG": "zh"}, "zh"),
        ({"LATDOC_LANG": "", "LANG": "zh_SG"}, "zh"),
    ],
)
def test_the_language_is_latdoc_lang_else_a_chinese_locale(
    environ: dict[str, str], lang: str | None
) -> None:
    assert language_from(environ) == lang


@pytest.fixture(scope="module")
def source() -> Catalog:
    """Every message the source marks, extracted once for the tests that check a catalogue
    against it (the check reads it, never changes it)."""
    return extract()


def test_the_shipped_catalogue_is_complete_and_compiled(source: Catalog) -> None:
    assert list(problems(po_path("zh"), source)) == []


def test_the_catalogue_check_names_each_kind_of_gap(source: Catalog, tmp_path: Path) -> None:
    po = tmp_path / "latdoc.po"
    text = po_path("zh").read_text(encoding="utf-8")
    first = next(m for m in source if m.id and "{" in str(m.id))
    second = next(m for m in source if m.id and m.id != first.id and "{" not in str(m.id))
    text += '\nmsgid "A sentence the source no longer has"\nmsgstr "来源已删除的句子"\n'
    po.write_text(text, encoding="utf-8")
    found = "\n".join(problems(po, source))
    assert "stale (the source no longer has it): 'A sentence the source no longer has'" in found
    assert "latdoc.mo is not the .po compiled" in found
    assert not found.count("untranslated")
    # Drop a translation's field and empty another.
    from babel.messages.pofile import read_po, write_po

    with po.open("rb") as f:
        catalog = read_po(f)
    catalog[str(first.id)].string = "没有数字"
    catalog[str(second.id)].string = ""
    with po.open("wb") as f:
        write_po(f, catalog)
    found = "\n".join(problems(po, source))
    assert f"the translation of {first.id!r} has fields []" in found
    assert f"untranslated: {second.id!r}" in found
