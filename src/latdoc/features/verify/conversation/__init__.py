"""``latdoc verify --remedy conversation``: a multi-turn chat kept whole against the same
chat under strategies that bound it (trim, window, summary, reset).

- ``send``: the chat and its strategies; ``analysis``: each strategy's outcome by turn;
- ``run``: the conversations sent and kept as runs; ``render``: a table and a plot.
"""

from latdoc.features.verify.conversation.render import (
    CONVERSATION_SCHEMA,
    conversation_to_dict,
    render_conversation,
    render_conversation_html,
)
from latdoc.features.verify.conversation.run import ConversationVerdict, verify_conversation

__all__ = [
    "CONVERSATION_SCHEMA",
    "ConversationVerdict",
    "conversation_to_dict",
    "render_conversation",
    "render_conversation_html",
    "verify_conversation",
]
