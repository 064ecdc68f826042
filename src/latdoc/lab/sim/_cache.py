"""A prefix cache: prompts that start alike skip the prefill of what they share.

As in vLLM's automatic prefix caching, a prompt is cut into full blocks of
``block_tokens`` tokens and each block is named by a hash of its tokens and of
the block before it, so a block can only be reused after the same whole prefix.
The cache keeps the most recently used ``capacity`` blocks. A prompt's cached
tokens are its leading blocks found in the cache, leaving at least one token to
compute; its blocks enter the cache once its prefill is done.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Sequence

__all__ = ["PrefixCache"]


class PrefixCache:
    """An LRU set of prompt blocks, each named by the hash of its whole prefix."""

    def __init__(self, block_tokens: int, capacity: int) -> None:
        self.block_tokens = block_tokens
        self.capacity = capacity
        self.blocks: OrderedDict[int, None] = OrderedDict()

    def block_hashes(self, prompt: Sequence[Hashable]) -> list[int]:
        """The chained hashes of the prompt's full blocks, in order."""
        size = self.block_tokens
        hashes: list[int] = []
        parent = 0
        for start in range(0, len(prompt) - size + 1, size):
            parent = hash((parent, tuple(prompt[start : start + size])))
            hashes.append(parent)
        return hashes

    def cached_tokens(self, prompt: Sequence[Hashable], hashes: Sequence[int]) -> int:
        """How many leading tokens of ``prompt`` are cached; marks those blocks used."""
        hits = 0
        for block in hashes:
            if block not in self.blocks:
                break
            self.blocks.move_to_end(block)
            hits += 1
        most = (len(prompt) - 1) // self.block_tokens
        return min(hits, max(most, 0)) * self.block_tokens

    def add(self, hashes: Sequence[int]) -> None:
        """Remember the blocks of a prompt whose prefill is done."""
        for block in hashes:
            self.blocks[block] = None
            self.blocks.move_to_end(block)
        while len(self.blocks) > self.capacity:
            self.blocks.popitem(last=False)
