"""The tools a request offers the model (``--tools FILE``): :class:`Tool` and its reader.

A tool is a function the model may call: a name, a description and its parameters as
a JSON Schema object. The file is a JSON list of tools (or an object whose ``tools``
holds the list), each in the shape any of the APIs takes, so a file written for one
API works with every dialect: OpenAI chat's ``{"type": "function", "function": {...}}``,
the Responses API's flat ``{"type": "function", "name": ...}``, Anthropic's
``input_schema``, Gemini's ``functionDeclarations`` and Bedrock's ``toolSpec``. Each
dialect writes the tools in its own shape (:attr:`DialectSpec.tools
<latdoc.probe.dialects.DialectSpec.tools>`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from latdoc.errors import UsageError, message_of, nesting_checked
from latdoc.i18n import N_, Message

__all__ = ["CalledTool", "Tool", "load_tools", "parse_tools"]

_NAME = re.compile(r"^[A-Za-z0-9_.:-]{1,128}$")
"""A tool name every API takes: letters, digits, ``_``, ``.``, ``:`` and ``-``
(OpenAI's limit is 64 of ``[a-zA-Z0-9_-]``; the providers' own errors say when a name is
longer than theirs)."""
_EMPTY_OBJECT: Mapping[str, Any] = {"type": "object", "properties": {}}


@dataclass(frozen=True)
class Tool:
    """One function the model may call."""

    name: str
    description: str | None = None
    parameters: Mapping[str, Any] = field(default_factory=lambda: dict(_EMPTY_OBJECT))
    """Its arguments, as a JSON Schema object (``{"type": "object", "properties": ...}``)."""

    def described(self, **fields: Any) -> dict[str, Any]:
        """``fields`` with the description added where there is one."""
        if self.description:
            fields["description"] = self.description
        return fields


@dataclass(frozen=True)
class CalledTool:
    """A tool call a model answered with, as an agent puts it back in the conversation."""

    call_id: str
    name: str
    arguments: str
    """Its arguments' JSON text, as streamed."""

    @property
    def arguments_object(self) -> dict[str, Any]:
        """Its arguments as an object, as the APIs that take them back parsed want them
        (Anthropic's ``input``, Gemini's ``args``, Bedrock's ``input``): the streamed JSON,
        else empty."""
        try:
            value = json.loads(self.arguments or "{}")
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}


def load_tools(path: str) -> tuple[Tool, ...]:
    """The tools in the JSON file at ``path``; a file that cannot be read, or that holds
    no tool list, is a :class:`UsageError` naming the file."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(Message("tools file not found: {path}", path=path)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(
            Message("cannot read the tools file {path}: {exc}", path=path, exc=str(exc))
        ) from None
    try:
        return parse_tools(text)
    except UsageError as exc:
        raise UsageError(
            Message("tools file {path}: {problem}", path=path, problem=Message.of(message_of(exc)))
        ) from None


def parse_tools(text: str) -> tuple[Tool, ...]:
    """The tools a JSON text lists, in any API's shape; :class:`UsageError` for JSON that
    is not a list of tools, a tool without a name, parameters that are not a JSON
    Schema object, or a name given twice."""
    try:
        with nesting_checked("tools"):
            value = json.loads(text)
    except ValueError as exc:
        raise UsageError(Message("not valid JSON ({exc})", exc=str(exc))) from None
    if isinstance(value, dict) and "tools" in value:
        value = value["tools"]
    if not isinstance(value, list) or not value:
        raise UsageError(
            N_('expected a JSON list of tools, e.g. [{"name": "lookup", "parameters": {}}]')
        )
    tools = tuple(_tool(entry, n) for n, item in enumerate(value, 1) for entry in _entries(item))
    seen: set[str] = set()
    for tool in tools:
        if tool.name in seen:
            raise UsageError(Message("tool {name!r} is defined twice", name=tool.name))
        seen.add(tool.name)
    return tools


def _entries(item: Any) -> Iterator[Any]:
    """The function definitions one list item holds: Gemini's tool declares several."""
    if isinstance(item, dict) and isinstance(item.get("functionDeclarations"), list):
        yield from item["functionDeclarations"]
    elif isinstance(item, dict) and isinstance(item.get("toolSpec"), dict):
        spec = item["toolSpec"]
        schema = spec.get("inputSchema")
        yield {**spec, "parameters": schema.get("json") if isinstance(schema, dict) else None}
    elif isinstance(item, dict) and isinstance(item.get("function"), dict):
        yield item["function"]
    else:
        yield item


def _tool(entry: Any, n: int) -> Tool:
    if not isinstance(entry, dict):
        raise UsageError(Message("tool {n} is not a JSON object", n=n))
    name = entry.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise UsageError(
            Message(
                "tool {n} needs a name of letters, digits, '_', '.', ':' or '-' "
                "(at most 128), got {name!r}",
                n=n,
                name=name,
            )
        )
    description = entry.get("description")
    if description is not None and not isinstance(description, str):
        raise UsageError(Message("tool {name!r}: its description is not text", name=name))
    parameters = next(
        (
            entry[key]
            for key in ("parameters", "input_schema", "parametersJsonSchema")
            if key in entry
        ),
        None,
    )
    if parameters is None:
        parameters = dict(_EMPTY_OBJECT)
    if not isinstance(parameters, dict) or parameters.get("type", "object") != "object":
        raise UsageError(
            Message(
                "tool {name!r}: its parameters must be a JSON Schema object "
                '({{"type": "object", "properties": ...}})',
                name=name,
            )
        )
    return Tool(name, description or None, parameters)
