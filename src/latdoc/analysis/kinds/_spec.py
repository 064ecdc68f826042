"""What latdoc knows of one kind of slow, as data: :class:`KindSpec`.

A spec holds everything that differs between kinds: the name a user reads and what it
means, the rule that detects it, whether it acts before the first token, its colour in
the reports, and the few places where the verdict or a report treats it apart. Code
that serves every kind reads these fields; it never asks which kind it has.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from latdoc.analysis._rule import Rule
from latdoc.analysis.facts import Facts
from latdoc.model import Kind

__all__ = ["KindSpec"]


@dataclass(frozen=True, slots=True)
class KindSpec:
    """One kind of slow: how it is found, weighed and shown."""

    kind: Kind
    name: str
    """Its short name, as every report shows it (``Input length``)."""
    meaning: str
    """What it means, in the user's words (``prefill grows with the prompt``)."""
    colour: str
    """Its colour in the terminal, the page and the plots: a mid-tone that reads on a
    light and a dark background."""
    rule: Rule | None
    """The rule that reads a run's facts and returns this kind's finding, or ``None``
    when it did not fire. ``None`` for the kind that is the verdict when no other kind
    stands out (``healthy``) and for a kind named of an agent's run as a whole
    (:data:`~latdoc.model.RUN_KINDS`)."""
    before_first_token: bool = False
    """Its share is time before the first token, so it is held against how much the
    first token varies rather than the whole request (:mod:`latdoc.analysis.noticeable`)."""
    network: bool = False
    """A kind of the network (step 1 of the seed's method): as the verdict, the network is
    the main bottleneck (:mod:`latdoc.analysis.network_check`)."""
    always_noticeable: bool = False
    """A user notices it whatever its share: it is never negligible. No kind is so
    today: failed requests count by what retrying them costs (``errors``)."""
    first_when: Callable[[Facts], bool] | None = None
    """When this holds for a run, the verdict names this kind first whatever the other
    kinds add (``errors``, when a quarter of the requests failed)."""
    on_new_connection: bool = False
    """It acts only on a request that opens a connection, so it is weighed on such a
    request (:attr:`~latdoc.model.NoticeableBar.new_connection_ms`), not on a warm one
    it never touches (``network_setup``)."""
    in_the_slot: bool = False
    """Its time is spent holding a server slot (prefill, reasoning, decode, a stall), so
    where the user's requests queue for slots each request ahead of theirs holds its slot
    that much longer too: what it saves counts for those as well
    (:func:`latdoc.analysis.attribution.diagnose`)."""
    shows_request_parts: bool = False
    """As the verdict, the reports show where a typical request's time goes, phase by
    phase, instead of what each kind adds (``healthy``: no kind adds anything)."""
