"""The calibration page shows the figures of the run that made it: on a small seeded
slice of the truth bank, every table of the page agrees with the figures computed from
the same verdicts, its reliability plot is a real PNG beside it, and the page renders
as markdown with every table and the plot. Each rule's false alarms count only the
scenarios whose model lacks the kind, and their bound is the exact binomial one."""

from __future__ import annotations

import re
import statistics
from dataclasses import replace
from pathlib import Path

import markdown
import numpy as np
import pytest
from matplotlib import image
from scipy.stats import beta

from bank import draw, truth
from bank.score import (
    Outcome,
    accuracy,
    auroc,
    brier,
    brier_constant,
    calibration,
    confusion,
    recall_precision,
    rule_rates,
    upper_bound,
    within_alpha,
)
from calibration import (
    SHORT,
    command,
    markdown_table,
    plot_path,
    profile_grid,
    run,
    sensitivity,
    write_page,
)
from latdoc.analysis import confidence_table
from latdoc.model import RUN_KINDS, Kind
from paths import ROOT

SEED = 4
SLICE = 150
MOVED_SLICE = 40
"""Scenarios the sensitivity's moved truths are scored on here (the page's own run
scores all of them)."""
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
ROUNDING = 0.0005
"""Shares are printed to a tenth of a percent."""


@pytest.fixture(scope="module")
def outcomes() -> list[Outcome]:
    assert SEED != confidence_table.FIT_SEED
    return run(SLICE, SEED)[0]


@pytest.fixture(scope="module")
def page(outcomes: list[Outcome], tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("docs") / "calibration.md"
    write_page(outcomes, SLICE, SEED, path, moved=sensitivity(MOVED_SLICE, SEED, True))
    return path


Table = tuple[list[str], list[list[str]]]


def tables(text: str) -> dict[str, Table]:
    """Every markdown table of ``text`` by its first header cell: its header and rows,
    bold marks taken off."""
    found: dict[str, Table] = {}
    for block in re.findall(r"(?:^\|.*\|\n)+", text, re.M):
        lines = [
            [c.strip().strip("*") for c in re.split(r"(?<!\\)\|", line)[1:-1]]
            for line in block.splitlines()
        ]
        header, _, *rows = lines
        found[header[0]] = (header, rows)
    return found


def share(cell: str) -> float:
    """The first percentage in ``cell`` as a share."""
    match = re.search(r"(-?[\d.]+)%", cell)
    assert match, cell
    return float(match[1]) / 100


def test_the_goals_are_the_figures_of_the_verdicts(outcomes: list[Outcome], page: Path) -> None:
    _, rows = tables(page.read_text(encoding="utf-8"))["figure"]
    goals = {row[0]: row[1:] for row in rows}
    assert share(
        goals["primary accuracy (the slices' mix: no goal of its own)"][0]
    ) == pytest.approx(accuracy(outcomes), abs=ROUNDING)
    rec, prec, true_n, named_n = recall_precision(outcomes, contributing_only=False)
    assert share(goals["kinds named: recall"][0]) == pytest.approx(rec, abs=ROUNDING)
    assert goals["kinds named: recall"][0].endswith(f"of {true_n}")
    assert share(goals["kinds named: precision"][0]) == pytest.approx(prec, abs=ROUNDING)
    assert goals["kinds named: precision"][0].endswith(f"of {named_n}")
    ece = next(v for k, v in goals.items() if k.startswith("expected calibration error"))
    assert float(ece[0]) == pytest.approx(calibration(outcomes)[1], abs=0.0005)
    median = statistics.median(o.requests for o in outcomes)
    assert goals["requests per verdict"][0].startswith(f"median {median:.0f} ")


def test_the_slices_are_the_figures_of_the_verdicts(outcomes: list[Outcome], page: Path) -> None:
    _, rows = tables(page.read_text(encoding="utf-8"))["measure"]
    shown = {row[0]: row[1] for row in rows}
    hard = [o for o in outcomes if o.hard]
    (slice_row,) = [k for k in shown if k.startswith("hard slice")]
    assert slice_row == f"hard slice ({len(hard)} scenarios)"
    assert share(shown[slice_row]) == pytest.approx(accuracy(hard), abs=ROUNDING)
    auroc_row = next(k for k in shown if k.startswith("AUROC"))
    assert float(shown[auroc_row]) == pytest.approx(auroc(outcomes), abs=0.005)
    brier_row = next(k for k in shown if k.startswith("Brier"))
    assert shown[brier_row] == f"{brier(outcomes):.4f} vs {brier_constant(outcomes):.4f}"


def test_where_the_truths_disagree_counts_every_disagreement(
    outcomes: list[Outcome], page: Path
) -> None:
    _, rows = tables(page.read_text(encoding="utf-8"))["counterfactual"]
    apart = [o for o in outcomes if o.other_truth is not o.truth.primary]
    assert sum(int(row[2]) for row in rows) == len(apart)


def test_the_confusion_matrix_counts_every_verdict(outcomes: list[Outcome], page: Path) -> None:
    header, rows = tables(page.read_text(encoding="utf-8"))["true ↓ named →"]
    kind = {short: k for k, short in SHORT.items()}
    named = [kind[h] for h in header[1:-2]]
    cells = confusion(outcomes)
    assert {t for t, _ in cells} | {v for _, v in cells} == set(named)
    for row in rows:
        true = kind[row[0]]
        counts = [0 if c == "·" else int(c) for c in row[1:-2]]
        assert counts == [cells[(true, v)] for v in named], row[0]
        assert int(row[-2]) == sum(counts)
    assert sum(int(row[-2]) for row in rows) == len(outcomes)


def test_each_rule_row_is_its_kinds_false_alarms_and_power(
    outcomes: list[Outcome], page: Path
) -> None:
    _, rows = tables(page.read_text(encoding="utf-8"))["kind"]
    shown = {row[0]: row for row in rows}
    assert set(shown) == {k.value for k in Kind if k is not Kind.HEALTHY and k not in RUN_KINDS}
    for r in rule_rates(outcomes):
        row = shown[r.kind.value]
        absent = [o for o in outcomes if r.kind not in o.truth.sizes_ms]
        material = [o for o in outcomes if r.kind in o.truth.named]
        assert int(row[1]) == len(absent)
        named = sum(r.kind in o.named for o in absent)
        assert share(row[2]) == pytest.approx(named / len(absent), abs=ROUNDING)
        assert share(row[2].split("≤")[1]) == pytest.approx(
            upper_bound(named, len(absent)), abs=ROUNDING
        )
        found = sum(r.kind in o.found for o in absent)
        assert share(row[4]) == pytest.approx(found / len(absent), abs=ROUNDING)
        assert int(row[6]) == len(material)
        if material:
            detected = sum(r.kind in o.named for o in material)
            assert share(row[7]) == pytest.approx(detected / len(material), abs=ROUNDING)
        else:
            assert row[7] == "—"
        small = [o for o in outcomes if r.kind in o.truth.sizes_ms]
        small = [o for o in small if r.kind not in o.truth.named]
        assert row[9] == f"{sum(r.kind in o.named for o in small)} of {len(small)}"


def test_the_bins_hold_every_verdict_at_its_accuracy(outcomes: list[Outcome], page: Path) -> None:
    _, rows = tables(page.read_text(encoding="utf-8"))["confidence"]
    bins = {f"{b.low:.1f}–{b.high:.1f}": b for b in calibration(outcomes)[0]}
    printed = {row[0]: row[1:5] for row in rows if row[1] != "·"}
    assert set(printed) == set(bins)
    for name, (n, mean, acc, _) in printed.items():
        assert int(n) == bins[name].n
        # Printed to two decimals: within half their last digit, and a float's error.
        assert float(mean) == pytest.approx(bins[name].confidence, abs=0.005 + 1e-9)
        assert float(acc) == pytest.approx(bins[name].accuracy, abs=0.005 + 1e-9)
    assert sum(int(n) for n, *_ in printed.values()) == len(outcomes)
    own = sum(int(row[5]) for row in rows if row[5] != "·")
    assert own == sum(1 for o in outcomes if o.rule_confidence)


def test_the_page_says_what_made_it(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    assert command(SLICE, SEED, page) in text
    assert f"{SLICE} scenarios drawn with seed {SEED}" in text
    assert f"`{confidence_table.VERSION}`" in text
    # The dates are the profile's sources', never the run's.
    rest = text.replace(markdown_table(profile_grid()), "")
    assert re.search(r"\d{4}-\d{2}-\d{2}", rest) is None, "the page carries no date"


def test_the_reliability_plot_is_a_png_beside_the_page(page: Path) -> None:
    plot = plot_path(page)
    assert plot.parent == page.parent
    assert plot.read_bytes().startswith(PNG_SIGNATURE)
    pixels = image.imread(plot)
    assert pixels.ndim == 3 and min(pixels.shape[:2]) > 200
    assert np.ptp(pixels[..., :3]) > 0.5, "a plot, not a blank image"
    assert f"]({plot.name})" in page.read_text(encoding="utf-8")


def test_the_page_renders_every_table_and_the_plot(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    html = markdown.markdown(text, extensions=["tables", "admonition", "attr_list"])
    found = tables(text)
    assert html.count("<table>") == len(found) == 10
    assert html.count("<tr>") == sum(1 + len(rows) for _, rows in found.values())
    assert f'src="{plot_path(page).name}"' in html
    assert 'class="admonition note"' in html


def test_a_false_alarm_is_counted_only_where_the_kind_is_absent() -> None:
    base = truth(draw(5, causes=(), noise="low"))
    stalls = Kind.STALLS

    def outcome(sizes: dict[Kind, float], primary: Kind, named: Kind) -> Outcome:
        t = replace(base, primary=primary, contributing=(), sizes_ms=sizes)
        return Outcome("x @low", t, named, (), 0.9, 10, 0.9, frozenset({named}))

    outcomes = [
        outcome({}, Kind.HEALTHY, stalls),  # absent, named: a false alarm
        outcome({}, Kind.HEALTHY, Kind.DECODE),  # absent, not named
        outcome({stalls: 5.0}, Kind.HEALTHY, stalls),  # present, too small: neither
        outcome({stalls: 900.0}, stalls, Kind.HEALTHY),  # matters, missed
        outcome({stalls: 900.0}, stalls, stalls),  # matters, named
    ]
    r = next(r for r in rule_rates(outcomes) if r.kind is stalls)
    assert (r.absent, r.named, r.found, r.material, r.detected) == (2, 1, 1, 2, 1)
    assert (r.small, r.small_named) == (1, 1)
    assert r.named_rate == 0.5 and r.power == 0.5


@pytest.mark.parametrize(("hits", "n"), [(0, 100), (3, 100), (30, 1500), (7, 20)])
def test_the_bound_is_the_exact_one_sided_binomial_bound(hits: int, n: int) -> None:
    assert upper_bound(hits, n) == pytest.approx(beta.ppf(0.95, hits + 1, n - hits))


def test_a_rate_is_within_alpha_only_when_its_bound_is() -> None:
    assert within_alpha(0, 100) is True  # bound 3.0%
    assert within_alpha(4, 100) is None  # 4% seen, bound 9.2%
    assert within_alpha(10, 100) is False
    assert within_alpha(0, 10) is None  # nothing seen, but too few to tell


def test_the_committed_page_is_of_the_current_confidence_table() -> None:
    """The page names the table its confidence was read through: a table fitted again
    leaves it stale until it is made again."""
    text = (ROOT / "docs" / "calibration.md").read_text(encoding="utf-8")
    assert f"the confidence table `{confidence_table.VERSION}`" in text
    assert (ROOT / "docs" / "calibration-reliability.png").read_bytes().startswith(PNG_SIGNATURE)
    assert "calibration.md" in (ROOT / "mkdocs.yml").read_text(encoding="utf-8")


def test_the_page_shows_the_profile_and_how_the_figures_move_with_it(page: Path) -> None:
    found = tables(page.read_text(encoding="utf-8"))
    header, rows = found["quantity"]
    assert header == ["quantity", "slow edge", "typical", "sources"]
    assert rows[0][:3] == ["DNS lookup", "200 ms", "10 ms"]
    header, rows = found["moved"]
    assert header[1:] == ["the reference −25%", "as cited", "the reference +25%"]
    assert all(cell != "—" for row in rows for cell in row[1:]), rows


def test_a_laxer_reference_names_fewer_kinds_and_a_stricter_one_more() -> None:
    """Moving every value of the truth's reference up takes causes back to a slower
    healthy endpoint: each saves less, so no more kinds matter; down, no fewer."""
    from bank import draw_many
    from bank.counterfactual import counterfactual, moved

    scenarios = draw_many(60, SEED, realistic=True)
    named = {
        factor: sum(len(counterfactual(s, moved(factor)).named) for s in scenarios)
        for factor in (0.75, 1.0, 1.25)
    }
    assert named[1.25] <= named[1.0] <= named[0.75], named
    assert named[1.25] < named[0.75], named
