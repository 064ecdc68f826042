"""Count tokens as llama.cpp does, from a GGUF model file's own vocabulary.

:class:`GGUFTokenizer` reads the file's metadata (the GGUF header is parsed here,
with the standard library only: :func:`read_metadata`), builds a byte-level BPE
tokenizer with the ``tokenizers`` package from ``tokenizer.ggml.tokens``,
``tokenizer.ggml.merges`` and the pre-tokenizer that ``tokenizer.ggml.pre``
names, and renders chat prompts with the file's ``tokenizer.chat_template``
(``jinja2``, sandboxed), so :meth:`GGUFTokenizer.chat_prompt_tokens` counts what
the engine reports as ``usage.prompt_tokens``.

Only ``gpt2``-style BPE vocabularies with the pre-tokenizers in
:data:`PRE_TOKENIZER_SPLITS` are supported; anything else raises
:class:`~latdoc.errors.LabError` rather than counting wrong.

Control and user-defined tokens (``<|im_start|>``) are matched in the text, as
llama.cpp's ``/tokenize`` and its chat path do (``parse_special``).
"""

from __future__ import annotations

import importlib.util
import struct
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO, Final, NoReturn, Self

from latdoc.errors import LabError
from latdoc.lab.sim._tokenizer import message_text

__all__ = [
    "PRE_TOKENIZER_SPLITS",
    "GGUFTokenizer",
    "read_metadata",
    "tokenizer_available",
]

_GPT2_SPLIT = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)"

PRE_TOKENIZER_SPLITS: Final[Mapping[str, tuple[str, ...]]] = {
    "gpt2": (_GPT2_SPLIT,),
    "mpt": (_GPT2_SPLIT,),
    "olmo": (_GPT2_SPLIT,),
    "smollm": (r"\p{N}", _GPT2_SPLIT),
    "starcoder": (r"\p{N}", _GPT2_SPLIT),
    "refact": (r"\p{N}", _GPT2_SPLIT),
    "codeshell": (r"\p{N}", _GPT2_SPLIT),
}
"""llama.cpp's pre-tokenizer regexes (``llama-vocab.cpp``) by ``tokenizer.ggml.pre``;
each splits every piece the previous one left, keeping the matches as pieces."""

_GGUF_MAGIC = b"GGUF"
_TOKEN_CONTROL = 3
_TOKEN_USER_DEFINED = 4

_SCALARS: Final[Mapping[int, str]] = {
    0: "B",
    1: "b",
    2: "H",
    3: "h",
    4: "I",
    5: "i",
    6: "f",
    7: "?",
    10: "Q",
    11: "q",
    12: "d",
}
_STRING = 8
_ARRAY = 9


def tokenizer_available() -> str | None:
    """``None`` when ``tokenizers`` and ``jinja2`` can be imported, else what is missing."""
    missing = [name for name in ("tokenizers", "jinja2") if importlib.util.find_spec(name) is None]
    if missing:
        return f"{' and '.join(missing)} not installed: pip install 'llm-latency-doctor[engine]'"
    return None


class _Reader:
    """Little- or big-endian GGUF values from a binary file."""

    def __init__(self, file: BinaryIO, path: Path) -> None:
        self.file = file
        self.path = path
        self.order = "<"

    def fail(self, what: str) -> NoReturn:
        raise LabError(f"{self.path}: not a readable GGUF file ({what})")

    def read(self, size: int) -> bytes:
        data = self.file.read(size)
        if len(data) != size:
            self.fail("truncated metadata")
        return data

    def scalar(self, code: str) -> Any:
        fmt = self.order + code
        return struct.unpack(fmt, self.read(struct.calcsize(fmt)))[0]

    def string(self) -> str:
        return self.read(self.scalar("Q")).decode("utf-8", errors="replace")

    def value(self, kind: int) -> Any:
        if kind == _STRING:
            return self.string()
        if kind == _ARRAY:
            item_kind = self.scalar("I")
            count = self.scalar("Q")
            code = _SCALARS.get(item_kind)
            if code is not None:
                fmt = f"{self.order}{count}{code}"
                return list(struct.unpack(fmt, self.read(struct.calcsize(fmt))))
            return [self.value(item_kind) for _ in range(count)]
        code = _SCALARS.get(kind)
        if code is None:
            self.fail(f"unknown value type {kind}")
        return self.scalar(code)


def read_metadata(path: Path) -> dict[str, Any]:
    """The key-value metadata of a GGUF file (version 2 or 3), without its tensors."""
    try:
        with path.open("rb") as file:
            reader = _Reader(file, path)
            if reader.read(4) != _GGUF_MAGIC:
                reader.fail("bad magic")
            version = reader.scalar("I")
            if version > 0xFFFF:
                reader.order = ">"
                version = struct.unpack(">I", struct.pack("<I", version))[0]
            if version not in (2, 3):
                reader.fail(f"unsupported version {version}")
            reader.scalar("Q")
            count = reader.scalar("Q")
            metadata: dict[str, Any] = {}
            for _ in range(count):
                key = reader.string()
                metadata[key] = reader.value(reader.scalar("I"))
            return metadata
    except OSError as exc:
        raise LabError(f"cannot read {path}: {exc.strerror or exc}") from None


def _require(metadata: Mapping[str, Any], key: str, kind: type, path: Path) -> Any:
    value = metadata.get(key)
    if not isinstance(value, kind):
        raise LabError(f"{path}: metadata {key!r} is missing or not a {kind.__name__}")
    return value


class GGUFTokenizer:
    """The tokenizer and chat template of one GGUF model file."""

    def __init__(
        self,
        tokenizer: Any,
        *,
        chat_template: str | None,
        bos_token: str | None,
        eos_token: str | None,
        bos_id: int | None,
        eos_id: int | None,
    ) -> None:
        self._tokenizer = tokenizer
        self.chat_template = chat_template
        self.bos_token = bos_token
        self.eos_token = eos_token
        self._bos_id = bos_id
        self._eos_id = eos_id
        self._render: Callable[..., str] | None = None

    @classmethod
    def from_file(cls, path: Path | str) -> Self:
        """Read ``path``'s vocabulary, merges, pre-tokenizer and chat template."""
        reason = tokenizer_available()
        if reason is not None:
            raise LabError(reason)
        path = Path(path)
        metadata = read_metadata(path)
        model = metadata.get("tokenizer.ggml.model")
        if model != "gpt2":
            raise LabError(f"{path}: tokenizer model {model!r} is not supported (only 'gpt2' BPE)")
        pre = metadata.get("tokenizer.ggml.pre", "default")
        splits = PRE_TOKENIZER_SPLITS.get(pre)
        if splits is None:
            raise LabError(
                f"{path}: pre-tokenizer {pre!r} is not supported "
                f"(supported: {', '.join(sorted(PRE_TOKENIZER_SPLITS))})"
            )
        tokens: list[str] = _require(metadata, "tokenizer.ggml.tokens", list, path)
        merges: list[str] = _require(metadata, "tokenizer.ggml.merges", list, path)
        types: list[int] = metadata.get("tokenizer.ggml.token_type") or []
        special = [
            (token, kind == _TOKEN_CONTROL)
            for token, kind in zip(tokens, types, strict=False)
            if kind in (_TOKEN_CONTROL, _TOKEN_USER_DEFINED)
        ]
        tokenizer = _build(tokens, merges, splits, special)

        def token_id(key: str, flag: str, default: bool) -> int | None:
            index = metadata.get(key)
            if not isinstance(index, int) or not 0 <= index < len(tokens):
                return None
            return index if metadata.get(flag, default) else None

        bos = metadata.get("tokenizer.ggml.bos_token_id")
        eos = metadata.get("tokenizer.ggml.eos_token_id")
        template = metadata.get("tokenizer.chat_template")
        return cls(
            tokenizer,
            chat_template=template if isinstance(template, str) else None,
            bos_token=tokens[bos] if isinstance(bos, int) and 0 <= bos < len(tokens) else None,
            eos_token=tokens[eos] if isinstance(eos, int) and 0 <= eos < len(tokens) else None,
            bos_id=token_id("tokenizer.ggml.bos_token_id", "tokenizer.ggml.add_bos_token", True),
            eos_id=token_id("tokenizer.ggml.eos_token_id", "tokenizer.ggml.add_eos_token", False),
        )

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` as llama.cpp's ``/tokenize`` gives them (``add_special``
        adds BOS/EOS when the model asks for them; special tokens in the text match)."""
        encoding = self._tokenizer.encode(text, add_special_tokens=False)
        ids: list[int] = list(encoding.ids)
        if self._bos_id is not None:
            ids.insert(0, self._bos_id)
        if self._eos_id is not None:
            ids.append(self._eos_id)
        return ids

    def count(self, text: str) -> int:
        """Number of tokens in ``text`` (as :meth:`encode`)."""
        return len(self.encode(text))

    def decode(self, ids: Sequence[int]) -> str:
        """The text of ``ids``, special tokens included."""
        text: str = self._tokenizer.decode(list(ids), skip_special_tokens=False)
        return text

    def render_chat(self, messages: Iterable[Mapping[str, object]]) -> str:
        """The prompt the model's chat template makes of ``messages``, primed for the
        assistant's reply. A list of content parts becomes its text parts joined by
        newlines (see :func:`latdoc.lab.sim._tokenizer.message_text`)."""
        if self._render is None:
            self._render = self._compile_template()
        plain = [
            {**message, "content": message_text(message.get("content"))} for message in messages
        ]
        return self._render(
            messages=plain,
            add_generation_prompt=True,
            bos_token=self.bos_token or "",
            eos_token=self.eos_token or "",
        )

    def chat_prompt_tokens(self, messages: Iterable[Mapping[str, object]]) -> int:
        """Prompt tokens of a chat request, as the engine reports ``usage.prompt_tokens``."""
        return self.count(self.render_chat(messages))

    def _compile_template(self) -> Callable[..., str]:
        if self.chat_template is None:
            raise LabError("the model file has no chat template (tokenizer.chat_template)")
        from jinja2 import TemplateError
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        def raise_exception(message: str) -> NoReturn:
            raise TemplateError(message)

        def strftime_now(fmt: str) -> str:
            return datetime.now().strftime(fmt)

        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
        env.globals["raise_exception"] = raise_exception
        env.globals["strftime_now"] = strftime_now
        try:
            template = env.from_string(self.chat_template)
        except TemplateError as exc:
            raise LabError(f"the model's chat template does not compile: {exc}") from None

        def render(**variables: object) -> str:
            try:
                return template.render(**variables)
            except TemplateError as exc:
                raise LabError(f"the model's chat template failed: {exc}") from None

        return render


def _build(
    tokens: Sequence[str],
    merges: Sequence[str],
    splits: Sequence[str],
    special: Sequence[tuple[str, bool]],
) -> Any:
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers

    vocab = {token: index for index, token in enumerate(tokens)}
    pairs: list[tuple[str, str]] = []
    for merge in merges:
        left, sep, right = merge.partition(" ")
        if sep:
            pairs.append((left, right))
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=pairs, fuse_unk=False))
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Split(Regex(pattern), behavior="isolated") for pattern in splits]
        + [pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]
    )
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_special_tokens(
        [
            AddedToken(content, special=is_control, normalized=False)
            for content, is_control in special
        ]
    )
    return tokenizer
