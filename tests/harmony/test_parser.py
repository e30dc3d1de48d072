"""The streaming Harmony parser: events, quirks, problems, and every way of feeding it.

As h11's tests do for HTTP, each reading is checked with the whole input, the input grown one
piece at a time, and (for bytes) the input split at every byte.
"""

from __future__ import annotations

import pytest

from lmc.errors import HarmonyError
from lmc.harmony.events import (
    ContentDelta,
    Event,
    Header,
    MessageEnded,
    MessageStarted,
    ParseProblem,
    Terminator,
)
from lmc.harmony.parser import StreamParser, parse_completion, split_markers

TOOL_CALL = (
    "<|channel|>analysis<|message|>Need the weather.<|end|>"
    "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json"
    '<|message|>{"location": "Tokyo"}<|call|>'
)
WEATHER = Header("assistant", None, "commentary", "functions.get_weather", "<|constrain|>json")
ANALYSIS = Header("assistant", None, "analysis", None, None)


def feed_all(pieces: list[str], role: str | None = "assistant") -> list[Event]:
    parser = StreamParser(role)
    events: list[Event] = []
    for piece in pieces:
        events += parser.feed_text(piece)
    return events + parser.finish()


def merged(events: list[Event]) -> list[Event]:
    """Events with consecutive deltas joined: the same for every split of the input."""
    out: list[Event] = []
    for event in events:
        if isinstance(event, ContentDelta) and out and isinstance(out[-1], ContentDelta):
            out[-1] = ContentDelta(out[-1].text + event.text)
        else:
            out.append(event)
    return out


def test_events_for_a_tool_call_in_order() -> None:
    assert feed_all([TOOL_CALL]) == [
        MessageStarted(ANALYSIS),
        ContentDelta("Need the weather."),
        MessageEnded(ANALYSIS, Terminator.END),
        MessageStarted(WEATHER),
        ContentDelta('{"location": "Tokyo"}'),
        MessageEnded(WEATHER, Terminator.CALL),
    ]


def test_header_is_reported_as_soon_as_message_marker_arrives() -> None:
    parser = StreamParser()
    assert parser.feed("<|channel|>", special=True) == []
    assert parser.feed("final") == []
    assert parser.feed("<|message|>", special=True) == [
        MessageStarted(Header("assistant", channel="final"))
    ]
    assert parser.feed("Hi") == [ContentDelta("Hi")]
    assert parser.messages == []
    ended = parser.feed("<|return|>", special=True)
    assert ended == [MessageEnded(Header("assistant", channel="final"), Terminator.RETURN)]
    assert [m.text for m in parser.messages] == ["Hi"]


@pytest.mark.parametrize(
    ("marker", "terminator"),
    [
        ("<|end|>", Terminator.END),
        ("<|call|>", Terminator.CALL),
        ("<|return|>", Terminator.RETURN),
        ("", Terminator.END_OF_STREAM),
        ("<|endoftext|>", Terminator.END_OF_STREAM),
    ],
)
def test_each_terminator_is_reported(marker: str, terminator: Terminator) -> None:
    events = feed_all([f"<|channel|>final<|message|>ok{marker}"])
    assert events[-1] == MessageEnded(Header("assistant", channel="final"), terminator)
    assert not [e for e in events if isinstance(e, ParseProblem)]


def test_whole_input_grown_one_character_at_a_time_and_by_markers() -> None:
    whole = feed_all([TOOL_CALL])
    assert merged(feed_all(list(TOOL_CALL))) == whole
    assert merged(feed_all([text for text, _ in split_markers(TOOL_CALL)])) == whole


def test_pieces_and_special_flags_give_the_same_as_literal_markers() -> None:
    parser = StreamParser()
    events: list[Event] = []
    for text, special in split_markers(TOOL_CALL):
        events += parser.feed(text, special=special)
    assert events + parser.finish() == feed_all([TOOL_CALL])


def test_marker_text_fed_as_plain_text_stays_text() -> None:
    parser = StreamParser()
    parser.feed("<|channel|>", special=True)
    parser.feed("final")
    parser.feed("<|message|>", special=True)
    parser.feed("the <|end|> token ends a message")
    parser.finish()
    assert parser.messages[0].text == "the <|end|> token ends a message"


def test_partial_marker_at_end_of_a_piece_waits_and_lone_angle_brackets_pass() -> None:
    parser = StreamParser()
    parser.feed_text("<|channel|>final<|message|>a < b <|")
    assert parser.feed_text("en") == []
    assert parser.feed_text("d|>") == [
        MessageEnded(Header("assistant", channel="final"), Terminator.END)
    ]
    assert parser.messages[0].text == "a < b "
    parser = StreamParser()
    parser.feed_text("<|channel|>final<|message|>x <|not a marker")
    parser.finish()
    assert parser.messages[0].text == "x <|not a marker"


def test_utf8_split_at_every_byte_waits_for_the_rest() -> None:
    text = "<|channel|>final<|message|>héllo 世界 😀!<|return|>"
    expected = parse_completion(text)
    for cut in range(1, len(text.encode())):
        parser = StreamParser()
        events: list[Event] = []
        for run, special in split_markers(text):
            data = run.encode()
            for piece in (data[:cut], data[cut:]) if not special else (data,):
                events += parser.feed(piece, special=special)
        events += parser.finish()
        assert parser.messages == expected, cut
        assert "\ufffd" not in "".join(e.text for e in events if isinstance(e, ContentDelta))


def test_utf8_one_byte_at_a_time() -> None:
    parser = StreamParser()
    parser.feed("<|channel|>", special=True)
    parser.feed(b"final")
    parser.feed("<|message|>", special=True)
    deltas = []
    for byte in "é😀".encode():
        deltas += parser.feed(bytes([byte]))
    assert deltas == [ContentDelta("é"), ContentDelta("😀")]


def test_invalid_and_cut_utf8_become_replacement_characters() -> None:
    parser = StreamParser()
    parser.feed_text("<|channel|>final<|message|>")
    parser.feed(b"a\xffb\xe4")  # \xe4 starts a 3-byte character that never completes
    parser.feed("<|end|>", special=True)
    parser.feed_text("<|start|>assistant<|channel|>final<|message|>")
    parser.feed(b"\xf0\x9f")
    parser.finish()
    assert [m.text for m in parser.messages] == ["a\ufffdb\ufffd", "\ufffd"]


def test_role_none_needs_start_and_reads_tool_authors() -> None:
    messages = parse_completion(
        "<|start|>functions.lookup to=assistant<|channel|>commentary<|message|>{}<|end|>"
        "<|start|>user<|message|>thanks<|end|>",
        role=None,
    )
    assert [m.to_json() for m in messages] == [
        {
            "role": "tool",
            "name": "functions.lookup",
            "content": [{"type": "text", "text": "{}"}],
            "channel": "commentary",
            "recipient": "assistant",
        },
        {"role": "user", "name": None, "content": [{"type": "text", "text": "thanks"}]},
    ]


@pytest.mark.parametrize(
    ("header", "channel", "recipient", "content_type"),
    [
        ("<|channel|>commentary to=functions.f <|constrain|>json", "commentary", "functions.f",
         "<|constrain|>json"),
        ("<|channel|>commentary to=functions.f<|constrain|>json", "commentary", "functions.f",
         "<|constrain|>json"),
        (" to=functions.f<|channel|>commentary <|constrain|>json", "commentary", "functions.f",
         "<|constrain|>json"),
        ("<|channel|>commentary to=functions.f json", "commentary", "functions.f", "json"),
        ("<|channel|>commentary to=functions.f <|constrain|> json", "commentary",
         "functions.f", "<|constrain|>json"),
        ("<|channel|>analysis to=python code", "analysis", "python", "code"),
        ("<|channel|>commentary<|channel|>final", "final", None, None),
        ("<|channel|>commentary <|channel|>analysis", "analysis", None, None),
        ("", None, None, None),
    ],
)  # fmt: skip
def test_header_forms_real_models_write(
    header: str, channel: str | None, recipient: str | None, content_type: str | None
) -> None:
    events = feed_all([f"{header}<|message|>x<|call|>"])
    assert events[0] == MessageStarted(Header("assistant", None, channel, recipient, content_type))
    assert not [e for e in events if isinstance(e, ParseProblem)]


def test_stray_channel_before_a_new_start_is_accepted_quietly() -> None:
    events = feed_all(["<|channel|>commentary<|start|>assistant<|channel|>final<|message|>hi"])
    assert merged(events) == [
        MessageStarted(Header("assistant", channel="final")),
        ContentDelta("hi"),
        MessageEnded(Header("assistant", channel="final"), Terminator.END_OF_STREAM),
    ]


@pytest.mark.parametrize(
    "pieces",
    [
        ["I'm sorry, but I can't help with that.<|return|>"],
        list("I'm sorry, but I can't help with that.<|return|>"),
        ["  I'm", " sorry, but I can't help with that.", "<|return|>"],
    ],
)
def test_headerless_refusal_is_an_assistant_message_without_channel(pieces: list[str]) -> None:
    events = feed_all(pieces)
    header = Header("assistant")
    text = "".join(pieces).removesuffix("<|return|>")
    assert merged(events) == [
        MessageStarted(header),
        ContentDelta(text),
        MessageEnded(header, Terminator.RETURN),
    ]


def test_headerless_answer_streams_before_it_ends() -> None:
    parser = StreamParser()
    assert parser.feed("Sorry") == [MessageStarted(Header("assistant")), ContentDelta("Sorry")]
    assert parser.feed(", no") == [ContentDelta(", no")]


def test_text_that_could_still_be_a_recipient_waits() -> None:
    parser = StreamParser()
    assert parser.feed(" t") == []
    assert parser.feed("o=python") == []
    assert parser.feed("<|channel|>", special=True) == []
    parser.feed_text("commentary<|message|>print(1)<|call|>")
    assert parser.messages[0].recipient == "python"


def test_recipient_word_then_terminator_without_markers_is_content() -> None:
    messages = parse_completion("to= be or not<|end|>")
    assert [(m.channel, m.text) for m in messages] == [(None, "to= be or not")]


def test_empty_completion_gives_nothing() -> None:
    assert feed_all([""]) == []
    assert feed_all(["  \n"]) == []
    assert feed_all([""], role=None) == []


@pytest.mark.parametrize(
    ("text", "texts", "problem"),
    [
        ("<|end|>", [], "empty message ended by <|end|>"),
        ("<|channel|>final<|end|>", [], "header ended by <|end|> before <|message|>"),
        ("<|channel|>final<|message|>a<|start|>assistant<|channel|>final<|message|>b",
         ["a", "b"], "not ended before <|start|>"),
        ("<|channel|>final<|message|>a<|end|><|end|>", ["a"], "stray <|end|> outside"),
        ("<|channel|>final<|message|>a<|end|>oops<|start|>assistant<|message|>b", ["a", "b"],
         "text outside a message"),
        ("<|channel|>final<|message|>a<|end|><|message|>b", ["a", "b"],
         "<|message|> without a header"),
        ("<|channel|>final<|message|>a<|end|><|start|><|channel|>final<|message|>b",
         ["a", "b"], "without an author"),
        ("<|channel|>final<|message|>a<|end|><|start|>assistant<|channel|>final",
         ["a"], "before <|message|>"),
    ],
)  # fmt: skip
def test_problems_are_reported_and_parsing_carries_on(
    text: str, texts: list[str], problem: str
) -> None:
    parser = StreamParser()
    events = parser.feed_text(text) + parser.finish()
    problems = [e.message for e in events if isinstance(e, ParseProblem)]
    assert any(problem in p for p in problems), problems
    assert [m.text for m in parser.messages] == texts
    assert all("\n" not in p for p in problems)


@pytest.mark.parametrize("marker", ["<|channel|>", "<|constrain|>", "<|message|>"])
def test_a_header_marker_inside_content_is_text_of_the_open_message(marker: str) -> None:
    """As openai-harmony does: only <|start|> (or the completion's start) begins a message, so
    a header quoted inside the text never becomes a second message or a tool call."""
    text = f"<|channel|>analysis<|message|>a{marker}commentary to=functions.x json<|message|>b"
    for role in ("assistant", None):
        completion = text if role else "<|start|>assistant" + text
        for pieces in ([completion], list(completion)):
            parser = StreamParser(role)
            events = [e for p in pieces for e in parser.feed_text(p)] + parser.finish()
            assert not [e for e in events if isinstance(e, ParseProblem)]
            (message,) = parser.messages
            assert (message.channel, message.recipient) == ("analysis", None)
            assert message.text == text.removeprefix("<|channel|>analysis<|message|>")


def test_a_start_inside_content_still_ends_the_message() -> None:
    """A final answer after a forgotten <|end|> is not lost."""
    parser = StreamParser()
    parser.feed_text(
        "<|channel|>analysis<|message|>think<|start|>assistant<|channel|>final"
        "<|message|>answer<|return|>"
    )
    parser.finish()
    assert [(m.channel, m.text) for m in parser.messages] == [
        ("analysis", "think"),
        ("final", "answer"),
    ]


def test_unknown_special_token_is_a_problem_not_content() -> None:
    parser = StreamParser()
    parser.feed_text("<|channel|>final<|message|>a")
    assert parser.feed("<|reserved_200013|>", special=True) == [
        ParseProblem("unknown special token '<|reserved_200013|>' skipped")
    ]
    parser.feed("b")
    parser.finish()
    assert parser.messages[0].text == "ab"


def test_overlong_header_is_cut_and_reported() -> None:
    parser = StreamParser(role=None)
    events = parser.feed_text("<|start|>assistant" + " x" * 2000 + "<|channel|>final<|message|>ok")
    assert [e.message for e in events if isinstance(e, ParseProblem)] == [
        "message header too long: its rest is dropped"
    ]
    parser.finish()
    assert parser.messages[0].channel == "final"


def test_overlong_text_without_header_is_an_answer() -> None:
    text = "word " * 400
    assert [m.text for m in parse_completion("to=" + text)] == ["to=" + text]


def test_start_right_after_the_given_role_is_accepted() -> None:
    messages = parse_completion("<|start|>assistant<|channel|>final<|message|>hi<|return|>")
    assert [(m.role, m.channel, m.text) for m in messages] == [("assistant", "final", "hi")]


def test_misuse_raises_harmony_error_only() -> None:
    parser = StreamParser()
    parser.finish()
    assert parser.finish() == []
    with pytest.raises(HarmonyError):
        parser.feed("x")
    with pytest.raises(HarmonyError):
        parser.feed_text("x")
    with pytest.raises(HarmonyError):
        StreamParser("")
    with pytest.raises(HarmonyError):
        StreamParser().feed(12)  # type: ignore[arg-type]
    with pytest.raises(HarmonyError):
        StreamParser().feed_text(b"x")  # type: ignore[arg-type]


def test_split_markers_splits_only_known_markers() -> None:
    assert list(split_markers("a<|end|>b<|x|><|start|>")) == [
        ("a", False),
        ("<|end|>", True),
        ("b<|x|>", False),
        ("<|start|>", True),
    ]


def test_header_with_too_many_markers_is_cut_and_reported() -> None:
    parser = StreamParser()
    events = parser.feed_text("<|channel|>x" * 100 + "<|message|>ok<|end|>")
    assert [e.message for e in events if isinstance(e, ParseProblem)] == [
        "message header too long: its rest is dropped"
    ]
    assert [(m.channel, m.text) for m in parser.messages] == [("x", "ok")]


def test_named_author_of_a_role_is_role_and_name() -> None:
    messages = parse_completion("<|start|>user:alice<|message|>hi<|end|>", role=None)
    assert (messages[0].role, messages[0].name) == ("user", "alice")


def test_cut_character_then_text_or_marker_gives_replacement_first() -> None:
    parser = StreamParser()
    parser.feed_text("<|channel|>final<|message|>")
    assert parser.feed(b"a\xc3") == [ContentDelta("a")]
    assert parser.feed("x") == [ContentDelta("\ufffd"), ContentDelta("x")]
    parser.feed(b"\xe4\xb8")
    assert parser.feed_text("y<|end|>")[:2] == [ContentDelta("\ufffd"), ContentDelta("y")]
    assert parser.messages[0].text == "a\ufffdx\ufffdy"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<|channel|>finalHello!", [("assistant", "final", "Hello!")]),
        ("<|channel|>finalHello!<|return|>", [("assistant", "final", "Hello!")]),
        (
            "<|channel|>analysisLet me think.<|end|><|start|>assistant<|channel|>final42<|return|>",
            [("assistant", "analysis", "Let me think."), ("assistant", "final", "42")],
        ),
    ],
)
def test_a_header_run_into_its_text_is_recovered_when_the_intent_is_clear(
    text: str, expected: list[tuple[str, str, str]]
) -> None:
    """Engines that break the grammar (llama.cpp forks, SGLang, MLX) may drop <|message|>:
    the channel name glued to the text is that channel's message, with no problem."""
    parser = StreamParser()
    events = parser.feed_text(text) + parser.finish()
    assert [(m.role, m.channel, m.text) for m in parser.messages] == expected
    assert not [e for e in events if isinstance(e, ParseProblem)]


@pytest.mark.parametrize(
    "text",
    ["<|channel|>final json", "<|channel|>commentary to=functions.x{}", "<|channel|>finalto=x"],
)
def test_an_unclear_header_is_one_problem_that_keeps_the_raw_text(text: str) -> None:
    parser = StreamParser()
    events = parser.feed_text(text) + parser.finish()
    problems = [e.message for e in events if isinstance(e, ParseProblem)]
    assert parser.messages == []
    assert len(problems) == 1 and "\n" not in problems[0]
    assert repr(text) in problems[0]  # the dropped text, for --verbose and the stored note
