"""The transcript: Harmony text per message, dropped chain-of-thought, dropped turns."""

from __future__ import annotations

from lmc.agent.history import (
    Entry,
    Transcript,
    assistant_call_harmony,
    derive_harmony,
    tool_result_harmony,
    user_harmony,
)
from lmc.harmony.parser import parse_completion
from lmc.messages import Message, validate_message

PREFIX = "<|start|>system<|message|>S<|end|>"


def user(text: str) -> Entry:
    return Entry({"role": "user", "type": "message", "content": text}, user_harmony(text))


def assistant(kind: str, text: str, harmony: str, fmt: str | None = None) -> Entry:
    message = {"role": "assistant", "type": kind, "content": text}
    if fmt:
        message["format"] = fmt
    return Entry(validate_message(message), harmony)


def output(text: str, harmony: str) -> Entry:
    return Entry(
        {"role": "computer", "type": "console", "format": "output", "content": text}, harmony
    )


# What a model wrote, word order and spacing included, must come back as it was.
THINK = "<|start|>assistant<|channel|>analysis<|message|>Let me compute.<|end|>"
CALL = "<|start|>assistant<|channel|>analysis to=python code<|message|>34 / 24<|call|>"
RESULT = tool_result_harmony("python", "analysis", "1.4166666666666667\n")
FINAL = "<|start|>assistant<|channel|>final<|message|>About 1.42.<|end|>"


def first_turn() -> list[Entry]:
    return [
        user("What's 34/24?"),
        assistant("reasoning", "Let me compute.", THINK),
        assistant("code", "34 / 24", CALL, "python"),
        output("1.4166666666666667\n", RESULT),
        assistant("message", "About 1.42.", FINAL),
    ]


def test_tool_result_header_is_the_tools_answer_to_the_assistant() -> None:
    assert RESULT == (
        "<|start|>python to=assistant<|channel|>analysis<|message|>1.4166666666666667\n<|end|>"
    )
    assert tool_result_harmony("functions.shell", "commentary", "x") == (
        "<|start|>functions.shell to=assistant<|channel|>commentary<|message|>x<|end|>"
    )


def test_a_turn_in_progress_renders_exactly_what_the_model_wrote() -> None:
    entries = first_turn()[:4]
    prompt = Transcript(entries).render(PREFIX)
    assert prompt == (
        PREFIX + user_harmony("What's 34/24?") + THINK + CALL + RESULT + "<|start|>assistant"
    )


def test_reasoning_of_an_ended_turn_is_dropped_but_not_of_the_current_one() -> None:
    entries = [*first_turn(), user("And 1/3?"), assistant("reasoning", "Again.", THINK)]
    prompt = Transcript(entries).render(PREFIX)
    assert prompt.count("Let me compute.") == 1  # only the current turn's reasoning
    assert prompt.index(CALL) < prompt.index(FINAL) < prompt.index("And 1/3?")
    assert prompt.endswith(THINK + "<|start|>assistant")


def test_a_turn_that_ended_without_a_final_answer_keeps_its_reasoning() -> None:
    entries = [*first_turn()[:4], user("stop"), user("go on")]
    assert Transcript(entries).render(PREFIX).count("Let me compute.") == 1


def test_dropping_turns_never_drops_the_current_one() -> None:
    entries = [*first_turn(), user("second"), user("third")]
    transcript = Transcript(entries)
    assert transcript.turn_count() == 3
    one = transcript.render(PREFIX, 1)
    assert "What's 34/24?" not in one and "second" in one and "third" in one
    assert transcript.render(PREFIX, 99) == PREFIX + user_harmony("third") + "<|start|>assistant"


def test_notes_for_the_person_add_nothing_to_the_prompt() -> None:
    entries = [user("hi"), output("Stopped: the step limit.\n", "")]
    assert Transcript(entries).render(PREFIX) == PREFIX + user_harmony("hi") + "<|start|>assistant"


def test_lmc_messages_from_elsewhere_get_harmony_that_parses_back() -> None:
    messages: list[Message] = [
        {"role": "user", "type": "message", "content": "list files"},
        {"role": "assistant", "type": "message", "content": "Listing."},
        {"role": "assistant", "type": "code", "format": "shell", "content": 'ls\necho "done"'},
        {"role": "computer", "type": "console", "format": "output", "content": "a\n"},
        {"role": "computer", "type": "image", "format": "base64.png", "content": "AAAA"},
        {"role": "assistant", "type": "code", "format": "python", "content": "1+1"},
        {"role": "assistant", "type": "message", "content": "Done."},
    ]
    texts = derive_harmony(messages, bound=lambda t: t[:100])
    assert texts[3] == ""  # the result is written once, on the last computer message
    parsed = parse_completion("".join(texts), role=None)
    assert [(m.role, m.name, m.channel, m.recipient) for m in parsed] == [
        ("user", None, None, None),
        ("assistant", None, "commentary", None),  # code follows: a preamble
        ("assistant", None, "commentary", "functions.shell"),
        ("tool", "functions.shell", "commentary", "assistant"),
        ("assistant", None, "analysis", "python"),
        ("tool", "python", "analysis", "assistant"),  # never ran: the model is told
        ("assistant", None, "final", None),
    ]
    assert parsed[2].text == '{"code": "ls\\necho \\"done\\""}'
    assert parsed[3].text == "a\n\n[an image was shown to the user]\n"
    assert parsed[5].text == "(the code was not run)"
    assert assistant_call_harmony("python", "1+1") in "".join(texts)


def test_unknown_harmony_is_derived_only_where_missing() -> None:
    entries = [user("hi"), Entry({"role": "assistant", "type": "message", "content": "Hello"})]
    prompt = Transcript(entries).render(PREFIX)
    assert prompt.endswith(
        "<|start|>assistant<|channel|>final<|message|>Hello<|end|><|start|>assistant"
    )


def test_markers_in_text_from_people_and_programs_stay_text() -> None:
    entries = [
        user("what does <|end|> mean?"),
        assistant("code", "print('<|return|>')", CALL, "python"),
        output("<|return|>\n", tool_result_harmony("python", "analysis", "<|return|>\n")),
    ]
    prompt = Transcript(entries).render(PREFIX)
    parsed = parse_completion(prompt, role=None)
    assert [m.role for m in parsed] == ["system", "user", "assistant", "tool"]
    assert parsed[1].text == "what does <\u200b|end|> mean?"
    assert parsed[3].text == "<\u200b|return|>\n"


def test_a_patch_is_derived_as_gpt_oss_writes_it() -> None:
    """A stored apply_patch call (no Harmony text kept) becomes the raw call and its result."""
    patch = "*** Begin Patch\n*** Delete File: a.txt\n*** End Patch"
    messages: list[Message] = [
        {"role": "user", "type": "message", "content": "remove a.txt"},
        {"role": "assistant", "type": "tool_call", "format": "apply_patch", "content": patch},
        {"role": "computer", "type": "console", "format": "output", "content": "Done!"},
    ]
    texts = derive_harmony(messages)
    header = "<|start|>assistant to=functions.apply_patch<|channel|>commentary<|message|>"
    assert texts[1] == f"{header}{patch}<|call|>"
    assert texts[2] == (
        "<|start|>functions.apply_patch to=assistant<|channel|>commentary<|message|>Done!<|end|>"
    )
