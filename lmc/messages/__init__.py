"""LMC messages and chunks: plain dict values, validation, assembly and JSON."""

from lmc.messages.assemble import (
    MessageAssembler,
    assemble,
    messages_from_json,
    messages_to_json,
)
from lmc.messages.schema import (
    CODE_FORMATS,
    FORMATS_BY_TYPE,
    ROLES,
    TYPES,
    Chunk,
    Message,
    confirmation_chunk,
    validate_chunk,
    validate_message,
)

__all__ = [
    "CODE_FORMATS",
    "FORMATS_BY_TYPE",
    "ROLES",
    "TYPES",
    "Chunk",
    "Message",
    "MessageAssembler",
    "assemble",
    "confirmation_chunk",
    "messages_from_json",
    "messages_to_json",
    "validate_chunk",
    "validate_message",
]
