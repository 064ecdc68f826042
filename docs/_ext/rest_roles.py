"""Docstrings as the API pages show them: reST roles become code spans.

latdoc's docstrings name other objects as Sphinx does (:func:`make_client`,
:class:`~latdoc.client.RetryPolicy`). Markdown has no roles, so mkdocstrings would print
the role's name before the code; this griffe extension, loaded from ``mkdocs.yml``,
turns each into a code span of the name (its last part where ``~`` asks for that).
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:attr|class|data|exc|func|meth|mod|obj):`(~?)([^`]+)`")


def as_code(match: re.Match[str]) -> str:
    short, name = match.groups()
    return f"`{name.rsplit('.', 1)[-1] if short else name}`"


class RestRoles(griffe.Extension):
    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = ROLE.sub(as_code, obj.docstring.value)
