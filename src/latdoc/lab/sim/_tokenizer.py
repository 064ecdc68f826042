"""The lab's own tokenizer: deterministic, dependency-free, and exact by definition.

A token is a run of word characters or a single punctuation character (the matches
of ``\\w+|[^\\w\\s]``), so ``"Hello, world"`` is three tokens. The simulated endpoint
counts prompts and builds its output with this tokenizer, which lets tests know the
true token counts without a model vocabulary.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

__all__ = [
    "CHAT_MESSAGE_OVERHEAD",
    "CHAT_REPLY_OVERHEAD",
    "chat_prompt_token_list",
    "chat_prompt_tokens",
    "count_tokens",
    "message_text",
    "pieces",
    "tokenize",
]

TOKEN_RE = re.compile(r"\w+|[^\w\s]")
PIECE_RE = re.compile(r"\s*(?:\w+|[^\w\s])")

CHAT_MESSAGE_OVERHEAD = 4
"""Tokens added per chat message (role and separators of a chat template)."""

CHAT_REPLY_OVERHEAD = 3
"""Tokens added once per chat prompt (the primed assistant turn)."""


def count_tokens(text: str) -> int:
    """Number of lab tokens in ``text``."""
    return sum(1 for _ in TOKEN_RE.finditer(text))


def tokenize(text: str) -> list[str]:
    """The lab tokens of ``text``, in order; ``len(tokenize(t)) == count_tokens(t)``."""
    return TOKEN_RE.findall(text)


def pieces(text: str) -> list[str]:
    """The lab tokens of ``text``, each with the whitespace before it: joined, they are the
    text without its trailing whitespace, so an answer streamed a token at a time reads
    as the text it was made from."""
    return PIECE_RE.findall(text)


def message_text(content: object) -> str:
    """The text of a chat message's ``content``: a string, ``None`` or a list of parts.

    Text parts (``{"type": "text", "text": ...}``) are joined with newlines; other
    parts (images, audio) carry no lab tokens. Raises ``TypeError`` for anything else.
    """
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts: list[str] = []
        for part in content:
            if not isinstance(part, Mapping):
                raise TypeError("a content part must be an object")
            text = part.get("text")
            if part.get("type") == "text":
                if not isinstance(text, str):
                    raise TypeError("a text content part needs a string 'text'")
                texts.append(text)
        return "\n".join(texts)
    raise TypeError("message content must be a string, a list of parts or null")


def chat_prompt_tokens(messages: Iterable[Mapping[str, object]]) -> int:
    """Prompt tokens of a chat request, mimicking OpenAI's chat template overhead.

    Each message costs its content's tokens plus :data:`CHAT_MESSAGE_OVERHEAD`; the
    prompt as a whole costs :data:`CHAT_REPLY_OVERHEAD` more.
    """
    total = CHAT_REPLY_OVERHEAD
    for message in messages:
        total += count_tokens(message_text(message.get("content"))) + CHAT_MESSAGE_OVERHEAD
    return total


def chat_prompt_token_list(messages: Iterable[Mapping[str, object]]) -> list[str]:
    """The tokens of a chat prompt as a chat template lays them out.

    Each message is ``<|start|>``, its role, ``<|sep|>``, its content's tokens and
    ``<|end|>``; the prompt ends with ``<|start|>assistant<|sep|>``. Its length is
    :func:`chat_prompt_tokens`; the prefix cache hashes blocks of these tokens.
    """
    tokens: list[str] = []
    for message in messages:
        tokens += ("<|start|>", str(message.get("role")), "<|sep|>")
        tokens += tokenize(message_text(message.get("content")))
        tokens.append("<|end|>")
    tokens += ("<|start|>", "assistant", "<|sep|>")
    return tokens
