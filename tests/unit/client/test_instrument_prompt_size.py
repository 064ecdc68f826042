"""latdoc.instrument keeps every request's prompt size, so an application whose streams
ask for no usage still shows its length curve; ``ask_usage=True`` asks the stream for
the server's own counts, and a server that refuses the field never fails the
application's request for it."""

from __future__ import annotations

import pytest

from latdoc.probe import dialects, request_body
from latdoc.probe.dialects import DialectSpec


@pytest.mark.parametrize("spec", dialects.DIALECTS, ids=lambda d: d.name)
def test_every_dialect_counts_the_prompt_text_where_it_places_it(spec: DialectSpec) -> None:
    conversation = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "How long is a piece of string?"},
    ]
    body = request_body(spec, "m", conversation, 8, include_usage=False)
    text = len("Be brief.") + len("How long is a piece of string?")
    chars = spec.prompt_chars(body)
    # A dialect that joins the messages into one prompt counts its separator too.
    assert chars is not None and text <= chars <= text + len("\n\n")
    assert spec.prompt_chars({"model": "m"}) is None
    asked = spec.with_usage_asked(body)
    if spec.usage_option is None:
        assert asked is None
    else:
        assert asked == {**body, **spec.usage_option}
        assert spec.with_usage_asked(asked) is None
        assert spec.with_usage_asked({**body, "stream": False}) is None
