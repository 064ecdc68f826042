"""A number no stored column can hold is refused as the export is read, in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from latdoc import Store
from latdoc.errors import UsageError
from unit.store.test_store import make_sample, new_run


def _export(tmp_path: Path) -> dict[str, object]:
    with Store(tmp_path / "a.db") as store:
        run_id = new_run(store)
        store.add_samples(run_id, [make_sample(0), make_sample(1)])
        store.finish_run(run_id, status="done", diagnosis=None)
        document: dict[str, object] = json.loads(store.export_json(run_id))
    return document


@pytest.mark.parametrize("index", [2**63, -(2**63) - 1, 10**40])
def test_an_index_beyond_64_bits_is_refused_not_crashed(tmp_path: Path, index: int) -> None:
    document = _export(tmp_path)
    samples = document["samples"]
    assert isinstance(samples, list)
    samples[1]["index"] = index
    with Store(tmp_path / "b.db") as store, pytest.raises(UsageError) as refused:
        store.import_json(json.dumps(document))
    assert "beyond 64 bits" in str(refused.value)
    assert "\n" not in str(refused.value)


def test_the_largest_64_bit_index_still_imports(tmp_path: Path) -> None:
    document = _export(tmp_path)
    samples = document["samples"]
    assert isinstance(samples, list)
    samples[1]["index"] = 2**63 - 1
    with Store(tmp_path / "b.db") as store:
        run_id = store.import_json(json.dumps(document))
        assert len(list(store.iter_samples(run_id))) == 2
