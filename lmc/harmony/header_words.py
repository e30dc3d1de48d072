"""What the words of a Harmony message header mean.

The streaming parser (:mod:`lmc.harmony.parser`) decides where a header begins and ends; the
header itself is read here once, when ``<|message|>`` arrives, from its parts: runs of text
and the ``<|channel|>``/``<|constrain|>`` markers between them. The author comes first (unless
the prompt already named it); then, in any order, ``<|channel|>NAME``, ``to=RECIPIENT`` (also
written ``to= RECIPIENT``), ``<|constrain|>TYPE`` and plain words of the content type. The last
channel named wins.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from lmc.harmony import tokens
from lmc.harmony.events import Header
from lmc.harmony.types import ASSISTANT, DEVELOPER, SYSTEM, TOOL, USER

__all__ = ["RECIPIENT_PREFIX", "author_header", "read_header"]

RECIPIENT_PREFIX: Final = "to="
_AUTHOR_ROLES: Final = frozenset({SYSTEM, DEVELOPER, USER, ASSISTANT})

#: A header word: text, None for <|channel|>, "" for <|constrain|>.
_Word = str | None


def author_header(author: str) -> tuple[str, str | None]:
    """(role, name) for an author word: ``role``, ``role:name``, or a tool's name."""
    if author in _AUTHOR_ROLES:
        return author, None
    role, colon, name = author.partition(":")
    if colon and name and role in _AUTHOR_ROLES:
        return role, name
    return TOOL, author


def read_header(
    parts: Sequence[tuple[str, bool]], implicit_role: str | None
) -> tuple[Header, bool]:
    """The header ``parts`` (text, is-marker) spell, and whether it lacked an author (then it
    is read as the assistant's). ``implicit_role`` is the author the prompt already named."""
    words = _words(parts)
    authorless = False
    first = words[0] if words else None
    if implicit_role is not None:
        role, name = author_header(implicit_role)
    elif first and not first.startswith(RECIPIENT_PREFIX):
        role, name = author_header(first)
        del words[0]
    else:
        authorless = True
        role, name = ASSISTANT, None
    channel, recipient, content_type = _fields(words)
    return Header(role, name, channel, recipient, content_type), authorless


def _words(parts: Sequence[tuple[str, bool]]) -> list[_Word]:
    words: list[_Word] = []
    text_run: list[str] = []
    for part, special in parts:
        if special:
            words.extend("".join(text_run).split())
            text_run = []
            words.append(None if part == tokens.CHANNEL else "")
        else:
            text_run.append(part)
    words.extend("".join(text_run).split())
    return words


def _fields(words: Sequence[_Word]) -> tuple[str | None, str | None, str | None]:
    """(channel, recipient, content type) of the words after the author."""
    channel: str | None = None
    recipient: str | None = None
    content_type: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        following = words[i + 1] if i + 1 < len(words) else None
        if not word:  # <|channel|> or <|constrain|>: it takes the next plain word
            taken = following if following and not following.startswith("to=") else None
            if word is None:
                channel = taken or channel
            else:
                content_type.append(tokens.CONSTRAIN + (taken or ""))
            i += 2 if taken else 1
            continue
        if word.startswith(RECIPIENT_PREFIX):
            recipient = word[len(RECIPIENT_PREFIX) :] or None
            if recipient is None and following:  # "to= name"
                recipient = following
                i += 1
        else:
            content_type.append(word)
        i += 1
    return channel, recipient, " ".join(content_type) or None
