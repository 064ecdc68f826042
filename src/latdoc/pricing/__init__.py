"""Where a model's price comes from: the user's ``--price`` (:func:`parse_price`) or the
price library latdoc pins, genai-prices (:func:`find_price`).

A price is a :class:`latdoc.model.Price`, marked with its source; what a request costs
at it is :mod:`latdoc.model`'s (``cost_of``, ``planned_cost``, ``summarise_costs``).
Prices are never fetched while latdoc runs: the library's are the ones its pinned
release bundles, so a run's prices change only when latdoc moves the pin.
"""

from latdoc.model import Price
from latdoc.pricing._library import LIBRARY_PROVIDERS, find_price
from latdoc.pricing._user import USER_SOURCE, parse_price

__all__ = ["LIBRARY_PROVIDERS", "USER_SOURCE", "find_price", "parse_price", "price_for"]


def price_for(model: str, base_url: str, given: str | None = None) -> Price | None:
    """The price a run at ``base_url`` counts ``model``'s tokens at: the user's
    ``--price`` (``given``) where there is one, else the library's, else ``None``."""
    if given is not None:
        return parse_price(given)
    return find_price(None, model, base_url)
