"""Properties of the parser and the LMC mapping, checked with hypothesis.

- every split of a completion into pieces gives the same messages and the same chunk content;
- rendering an assistant message and parsing it back gives it back;
- random bytes, text and marker sequences never raise (only API misuse raises HarmonyError),
  and whatever comes out is valid LMC.
"""

from __future__ import annotations

import json
from typing import AnyStr

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lmc.harmony import tokens
from lmc.harmony.events import ContentDelta, Event, MessageEnded, MessageStarted
from lmc.harmony.parser import StreamParser, parse_completion, split_markers
from lmc.harmony.render import render_message
from lmc.harmony.to_lmc import LmcMapper, completion_to_chunks
from lmc.harmony.types import Message
from lmc.messages import Chunk, assemble, validate_chunk

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MARKERS = sorted(tokens.SPECIAL_TOKENS)

# Text a model writes inside a message: anything without a complete marker, with a bias
# towards the characters that make markers, JSON and UTF-8 interesting.
content_text = st.text(
    st.one_of(st.sampled_from('<|>{}":\\ \nab_.=é😀世'), st.characters(codec="utf-8")), max_size=40
).filter(lambda t: not any(m in t for m in tokens.SPECIAL_TOKENS))
word = st.from_regex(r"[a-z][a-z0-9_]{0,8}(\.[a-z][a-z0-9_]{0,8})?", fullmatch=True)
recipient = st.one_of(
    st.none(),
    st.sampled_from(["python", "functions.python", "functions.shell", "browser.search"]),
    word.map(lambda w: "functions." + w),
)
content_type = st.sampled_from([None, "json", "code", "<|constrain|>json"])
channel = st.one_of(st.sampled_from(["analysis", "commentary", "final"]), word)


@st.composite
def assistant_messages(draw: st.DrawFn) -> Message:
    to = draw(recipient)
    kind = draw(content_type) if to is not None else None
    if to is not None and kind is not None and "json" in kind and draw(st.booleans()):
        code = draw(content_text)
        text = json.dumps({"code": code}, ensure_ascii=draw(st.booleans()))
    else:
        text = draw(content_text)
    return Message.from_text(
        "assistant", text, channel=draw(channel), recipient=to, content_type=kind
    )


@st.composite
def completions(draw: st.DrawFn) -> str:
    """A completion after ``<|start|>assistant``: messages a model could write."""
    messages = draw(st.lists(assistant_messages(), min_size=1, max_size=4))
    text = "".join(render_message(m) for m in messages).removeprefix("<|start|>assistant")
    if messages[-1].channel == "final" and text.endswith("<|end|>") and draw(st.booleans()):
        text = text.removesuffix("<|end|>") + "<|return|>"
    if draw(st.booleans()):  # cut short, as max_tokens does
        text = text[: draw(st.integers(0, len(text)))]
    return text


def split(text: AnyStr, cuts: list[int]) -> list[AnyStr]:
    points: list[int] = sorted(set(cuts))
    return [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]


def run(
    pieces: list[tuple[str | bytes, bool]] | list[str], literal: bool = False
) -> tuple[list[Message], list[Chunk]]:
    parser = StreamParser()
    mapper = LmcMapper()
    events: list[Event] = []
    for piece in pieces:
        if literal:
            assert isinstance(piece, str)
            events += parser.feed_text(piece)
        else:
            assert isinstance(piece, tuple)
            events += parser.feed(piece[0], special=piece[1])
    events += parser.finish()
    return parser.messages, [c for e in events for c in mapper.feed(e)]


@SETTINGS
@given(text=completions(), cuts=st.lists(st.integers(0, 400), max_size=12))
def test_every_split_gives_the_same_messages_and_chunk_content(text: str, cuts: list[int]) -> None:
    whole_messages, whole_chunks = run([text], literal=True)
    messages, chunks = run(split(text, cuts), literal=True)
    assert messages == whole_messages
    assert assemble(chunks) == assemble(whole_chunks)
    assert [c for c in chunks if "content" not in c] == [
        c for c in whole_chunks if "content" not in c
    ]


@SETTINGS
@given(text=completions(), cuts=st.lists(st.integers(0, 400), max_size=12))
def test_backend_pieces_as_utf8_bytes_split_anywhere(text: str, cuts: list[int]) -> None:
    pieces: list[tuple[str | bytes, bool]] = []
    for run_text, special in split_markers(text):
        if special:
            pieces.append((run_text, True))
        else:
            pieces += [(part, False) for part in split(run_text.encode(), cuts)]
    messages, chunks = run(pieces)
    assert messages == parse_completion(text)
    assert assemble(chunks) == assemble(completion_to_chunks(text))


@SETTINGS
@given(message=assistant_messages())
def test_rendered_assistant_message_parses_back(message: Message) -> None:
    rendered = render_message(message)
    assert parse_completion(rendered, role=None) == [message]
    assert parse_completion(rendered.removeprefix("<|start|>assistant")) == [message]


@SETTINGS
@given(message=assistant_messages())
def test_streamed_events_describe_the_rendered_message(message: Message) -> None:
    parser = StreamParser(role=None)
    events = parser.feed_text(render_message(message)) + parser.finish()
    started, *deltas, ended = events
    assert isinstance(started, MessageStarted)
    assert isinstance(ended, MessageEnded)
    assert started.header == ended.header
    assert (started.header.channel, started.header.recipient) == (
        message.channel,
        message.recipient,
    )
    assert "".join(d.text for d in deltas if isinstance(d, ContentDelta)) == message.text
    assert ended.terminator == ("call" if message.recipient else "end")


piece = st.one_of(
    st.tuples(st.binary(max_size=12), st.just(False)),
    st.tuples(st.text(max_size=12), st.just(False)),
    st.tuples(st.sampled_from([*MARKERS, "<|bogus|>", "", "x"]), st.just(True)),
)


@SETTINGS
@given(
    role=st.sampled_from([None, "assistant", "user", "functions.x"]),
    pieces=st.lists(piece, max_size=40),
)
def test_random_pieces_never_raise_and_give_valid_lmc(
    role: str | None, pieces: list[tuple[str | bytes, bool]]
) -> None:
    parser = StreamParser(role)
    mapper = LmcMapper()
    events: list[Event] = []
    for text, special in pieces:
        events += parser.feed(text, special=special)
    events += parser.finish()
    open_header = None
    for event in events:  # started, deltas, ended: never nested, never a delta outside
        if isinstance(event, MessageStarted):
            assert open_header is None
            open_header = event.header
        elif isinstance(event, ContentDelta):
            assert open_header is not None and event.text
        elif isinstance(event, MessageEnded):
            assert event.header == open_header
            open_header = None
        for chunk in mapper.feed(event):
            validate_chunk(chunk)
    assert open_header is None
    assert len(parser.messages) == sum(isinstance(e, MessageEnded) for e in events)


@SETTINGS
@given(
    role=st.sampled_from([None, "assistant"]),
    parts=st.lists(
        st.one_of(st.sampled_from(MARKERS), st.sampled_from(["to=", " json", "python"]),
                  st.text(max_size=8)),
        max_size=40,
    ),
    cuts=st.lists(st.integers(0, 300), max_size=10),
)  # fmt: skip
def test_random_marker_sequences_never_raise_and_are_split_invariant(
    role: str | None, parts: list[str], cuts: list[int]
) -> None:
    text = "".join(parts)
    whole = StreamParser(role)
    whole_events = whole.feed_text(text) + whole.finish()
    pieces = StreamParser(role)
    for part in split(text, cuts):
        pieces.feed_text(part)
    pieces.finish()
    assert pieces.messages == whole.messages
    mapper = LmcMapper()
    for event in whole_events:
        for chunk in mapper.feed(event):
            validate_chunk(chunk)
