"""A dialect travels to another process by its name: load's worker processes and Ray's
actors receive plans whose endpoint holds its dialect."""

from __future__ import annotations

import pickle

import pytest

from latdoc.probe import Endpoint, dialects


@pytest.mark.parametrize("name", dialects.names())
def test_a_dialect_pickles_to_the_same_registered_spec(name: str) -> None:
    spec = dialects.get(name)
    assert pickle.loads(pickle.dumps(spec)) is spec


def test_an_endpoint_pickles_with_its_dialect() -> None:
    endpoint = Endpoint("http://127.0.0.1:9/v1", "m", "anthropic")
    again = pickle.loads(pickle.dumps(endpoint))
    assert again.dialect is dialects.get("anthropic")
    assert (again.base_url, again.model) == (endpoint.base_url, endpoint.model)
