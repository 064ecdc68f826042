"""The runs a ``latdoc verify`` experiment keeps in the store: one per arm, tied by one
experiment id, each named by its remedy, arm and label."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from secrets import token_hex
from typing import Any

from latdoc.model import Price, price_to_dict
from latdoc.pipeline import host_meta
from latdoc.store import VERIFY_KIND, Store


@dataclass(frozen=True)
class ArmRun:
    """One arm of an experiment, as its run is opened in the store."""

    name: str
    label: str
    endpoint: str
    model: str
    options: Mapping[str, Any]
    price: Price | None = None
    """The arm's model's price, kept so the run's cost can be read again."""


def open_verify_runs(store: Store, remedy: str, arms: Sequence[ArmRun]) -> dict[str, str]:
    """A ``verify`` run per arm, tied by one experiment id; run ids by arm name."""
    experiment = token_hex(4)
    return {
        arm.name: store.new_run(
            endpoint=arm.endpoint,
            model=arm.model,
            scenario="",
            kind=VERIFY_KIND,
            meta={
                **host_meta(),
                "experiment": experiment,
                "remedy": remedy,
                "arm": arm.name,
                "arm_label": arm.label,
                "options": dict(arm.options),
                **({} if arm.price is None else {"price": price_to_dict(arm.price)}),
            },
        )
        for arm in arms
    }
