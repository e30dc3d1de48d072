"""The agent loop end to end: the tiny model replaying scripts through llama.cpp, real kernels."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from support.agent_testing import MakeInterpreter

from lmc.agent.display import PlainRenderer
from lmc.agent.storage import ConversationStore
from lmc.computer import Computer
from lmc.messages import Block, Chunk, assemble, text_of

FINAL = "<|channel|>final<|message|>{}<|return|>"


def python_call(code: str, think: str = "") -> str:
    prefix = f"<|channel|>analysis<|message|>{think}<|end|><|start|>assistant" if think else ""
    return f"{prefix}<|channel|>analysis to=python code<|message|>{code}<|call|>"


def function_call(name: str, arguments: str) -> str:
    return (
        f"<|channel|>commentary to=functions.{name} <|constrain|>json<|message|>{arguments}<|call|>"
    )


def shape(chunks: list[Chunk]) -> list[tuple[Any, ...]]:
    """The chunk stream with runs of content chunks of one kind folded into one step."""
    out: list[tuple[Any, ...]] = []
    for chunk in chunks:
        flag = "start" if chunk.get("start") else "end" if chunk.get("end") else "content"
        step: tuple[Any, ...] = (chunk["role"], chunk["type"], chunk.get("format"), flag)
        if chunk.get("format") == "active_line":
            step = (*step, chunk["content"])
        if flag == "content" and out and out[-1] == step:
            continue
        out.append(step)
    return out


def outputs(chunks: list[Chunk]) -> str:
    return "".join(text_of(c) for c in chunks if c.get("format") == "output" and "content" in c)


def said(chunks: list[Chunk]) -> str:
    """What the computer said: console output and lmc's own notes (computer messages)."""
    notes = [
        text_of(c)
        for c in chunks
        if (c["role"], c["type"]) == ("computer", "message") and "content" in c
    ]
    return outputs(chunks) + "\n".join(notes)


# -- the seed's own example --------------------------------------------------------------------


def test_the_seed_example_streams_in_the_seeds_shape(make_interpreter: MakeInterpreter) -> None:
    interpreter, _ = make_interpreter(
        [
            python_call("34 / 24"),
            FINAL.format("The result of the division 34/24 is approximately 1.42."),
        ]
    )
    chunks = list(interpreter.chat("What's 34/24?", stream=True, display=False))
    assert shape(chunks) == [
        ("assistant", "code", "python", "start"),
        ("assistant", "code", "python", "content"),
        ("assistant", "code", "python", "end"),
        ("computer", "confirmation", "execution", "content"),
        ("computer", "console", None, "start"),
        ("computer", "console", "active_line", "content", "1"),
        ("computer", "console", "output", "content"),
        ("computer", "console", "active_line", "content", None),
        ("computer", "console", None, "end"),
        ("assistant", "message", None, "start"),
        ("assistant", "message", None, "content"),
        ("assistant", "message", None, "end"),
    ]
    confirmation = next(c for c in chunks if c["type"] == "confirmation")
    assert confirmation["content"] == {"type": "code", "format": "python", "content": "34 / 24"}
    # Code and message arrive piece by piece, as the model writes them.
    assert sum(1 for c in chunks if c["type"] == "code" and "content" in c) > 1
    assert outputs(chunks) == "1.4166666666666667\n"
    assert interpreter.messages == [
        {"role": "user", "type": "message", "content": "What's 34/24?"},
        {"role": "assistant", "type": "code", "format": "python", "content": "34 / 24"},
        {
            "role": "computer",
            "type": "console",
            "format": "output",
            "content": outputs(chunks),
        },
        {
            "role": "assistant",
            "type": "message",
            "content": "The result of the division 34/24 is approximately 1.42.",
        },
    ]
    # What a consumer assembles from the stream is what the Interpreter keeps.
    assert assemble(chunks) == interpreter.messages[1:]


def test_chat_without_stream_returns_the_new_messages_and_displays_them(
    make_interpreter: MakeInterpreter,
) -> None:
    out = io.StringIO()
    interpreter, _ = make_interpreter(
        [python_call("print('hi')", think="Say hi."), FINAL.format("Said hi.")],
        auto_run=True,
        renderer=PlainRenderer(out),
    )
    new = interpreter.chat("greet")
    assert [m["type"] for m in new] == ["reasoning", "code", "console", "message"]
    assert new == interpreter.messages[1:]
    text = out.getvalue()
    assert "```python\nprint('hi')\n```\nhi\n" in text
    assert text.endswith("Said hi.\n")
    assert "Say hi." not in text  # reasoning is not shown by default


# -- several steps, and the KV cache -----------------------------------------------------------


def test_python_then_shell_then_final_evaluates_only_new_tokens(
    make_interpreter: MakeInterpreter,
) -> None:
    interpreter, backend = make_interpreter(
        [
            python_call("x = 6 * 7\nprint(x)", think="First python."),
            "<|channel|>analysis<|message|>Now the shell.<|end|><|start|>assistant"
            + function_call("shell", '{"code": "echo $((40 + 2))"}'),
            FINAL.format("Both gave 42."),
        ],
        auto_run=True,
    )
    chunks = list(interpreter.chat("compute 42 twice", stream=True, display=False))
    codes = [m for m in interpreter.messages if m["type"] == "code"]
    assert [(m["format"], m["content"]) for m in codes] == [
        ("python", "x = 6 * 7\nprint(x)"),
        ("shell", "echo $((40 + 2))"),
    ]
    assert outputs(chunks).count("42") == 2
    assert len(backend.generations) == 3
    for before, after in zip(backend.prompts, backend.prompts[1:], strict=False):
        assert after.startswith(before.removesuffix("<|start|>assistant"))
    # The shell's answer comes back as the function's message on commentary.
    assert (
        "<|start|>functions.shell to=assistant<|channel|>commentary<|message|>42"
        in backend.prompts[2]
    )
    assert "<|start|>python to=assistant<|channel|>analysis<|message|>42" in backend.prompts[1]
    # The second prompt extends the first plus what the model wrote: only the tool's answer
    # (and the stop token, sampled but never evaluated) is new to the model.
    for index in (1, 2):
        generation = backend.generations[index]
        previous = backend.prompts[index - 1]
        reused = backend.count_tokens(previous) + backend.generations[index - 1].completion_tokens
        new = generation.prompt_tokens - reused + 1
        assert generation.prompt_tokens_evaluated == new
        assert new < 80 < generation.prompt_tokens


def test_a_second_message_keeps_the_answer_and_drops_earlier_reasoning(
    make_interpreter: MakeInterpreter,
) -> None:
    interpreter, backend = make_interpreter(
        [
            python_call("1 + 1", think="Secret plan."),
            FINAL.format("Two."),
            FINAL.format("Bye."),
        ],
        auto_run=True,
    )
    interpreter.chat("one plus one", display=False)
    interpreter.chat("thanks", display=False)
    last = backend.prompts[-1]
    assert "Secret plan." not in last
    assert "<|channel|>final<|message|>Two.<|end|><|start|>user<|message|>thanks<|end|>" in last
    assert "to=python code<|message|>1 + 1<|call|>" in last


# -- confirmation ------------------------------------------------------------------------------


def test_declined_code_has_no_side_effects_and_the_model_is_told(
    make_interpreter: MakeInterpreter, tmp_path: Path
) -> None:
    target = tmp_path / "should-not-exist.txt"
    interpreter, backend = make_interpreter(
        [python_call(f"open({str(target)!r}, 'w').write('x')"), FINAL.format("Fine.")]
    )
    asked: list[Block] = []

    def confirm(block: Block) -> bool:
        asked.append(block)
        return False

    chunks = list(interpreter.chat("make a file", stream=True, display=False, confirm=confirm))
    assert not target.exists()
    assert asked == [{"type": "code", "format": "python", "content": asked[0]["content"]}]
    assert "The user declined to run this code." in outputs(chunks)
    assert (
        "<|start|>python to=assistant<|channel|>analysis<|message|>"
        "The user declined to run this code.<|end|>"
    ) in backend.prompts[1]
    assert interpreter.messages[-1]["content"] == "Fine."


def test_without_a_way_to_ask_nothing_runs(
    make_interpreter: MakeInterpreter, tmp_path: Path
) -> None:
    target = tmp_path / "nope.txt"
    interpreter, _ = make_interpreter(
        [python_call(f"open({str(target)!r}, 'w')"), FINAL.format("Ok.")]
    )
    interpreter.chat("make a file", display=False)
    assert not target.exists()
    assert any("declined" in text_of(m) for m in interpreter.messages if m["role"] == "computer")


def test_edited_code_runs_instead_and_the_model_is_told(
    make_interpreter: MakeInterpreter,
) -> None:
    interpreter, backend = make_interpreter(
        [python_call("print('original')"), FINAL.format("Done.")]
    )
    chunks = list(
        interpreter.chat(
            "print something",
            stream=True,
            display=False,
            confirm=lambda block: "print('edited')",
        )
    )
    assert outputs(chunks).strip() == "edited"
    code = next(m for m in interpreter.messages if m["type"] == "code")
    assert code["content"] == "print('edited')"  # the history shows what ran
    # The model's own message is kept as it wrote it (the cache), and it is told of the edit.
    assert "<|message|>print('original')<|call|>" in backend.prompts[1]
    assert (
        "The user edited the code before running it. It ran as:\nprint('edited')"
        in (backend.prompts[1])
    )
    stored = ConversationStore(interpreter.store.path).load(interpreter.conversation_id or "")
    assert stored == interpreter.messages


def test_breaking_at_the_confirmation_runs_nothing_and_leaves_it_usable(
    make_interpreter: MakeInterpreter, tmp_path: Path
) -> None:
    target = tmp_path / "broken.txt"
    interpreter, backend = make_interpreter(
        [
            python_call(f"open({str(target)!r}, 'w').write('x')"),
            FINAL.format("Understood."),
        ]
    )
    seen = []
    for chunk in interpreter.chat("make a file", stream=True, display=False):
        seen.append(chunk)
        if chunk["type"] == "confirmation":
            break
    assert not target.exists()
    assert interpreter.messages[-1]["content"] == "The user declined to run this code.\n"
    new = interpreter.chat("never mind", display=False)
    assert new[-1]["content"] == "Understood."
    assert "The user declined to run this code.<|end|><|start|>user" in backend.prompts[-1]
    assert not target.exists()


def test_asking_for_the_next_chunk_after_the_confirmation_runs_the_code(
    make_interpreter: MakeInterpreter, computer: Computer
) -> None:
    assert computer.cwd is not None
    target = computer.cwd / "made.txt"  # the working directory: the sandbox lets it write
    interpreter, _ = make_interpreter(
        [python_call(f"open({str(target)!r}, 'w').write('x')"), FINAL.format("Made.")]
    )
    stream = iter(interpreter.chat("make a file", stream=True, display=False))
    for chunk in stream:
        if chunk["type"] == "confirmation":
            assert not target.exists()
            break
    next(stream)
    list(stream)
    assert target.read_text() == "x"


# -- the model misbehaving ---------------------------------------------------------------------


def test_an_unknown_tool_is_reported_to_the_model_and_the_person(
    make_interpreter: MakeInterpreter,
) -> None:
    raw_call = function_call("nope", '{"code": "1"}')
    interpreter, backend = make_interpreter([raw_call, FINAL.format("Sorry.")], auto_run=True)
    chunks = list(interpreter.chat("do it", stream=True, display=False))
    assert "There is no tool named 'functions.nope'" in said(chunks)
    assert not any(c["type"] == "confirmation" for c in chunks)
    prompt = backend.prompts[1]
    assert "<|start|>assistant" + raw_call in prompt  # the call, exactly as written
    assert (
        "<|start|>functions.nope to=assistant<|channel|>commentary<|message|>"
        "There is no tool named 'functions.nope'"
    ) in prompt
    assert interpreter.messages[-1]["content"] == "Sorry."


def test_arguments_that_are_not_json_are_reported_and_the_loop_goes_on(
    make_interpreter: MakeInterpreter,
) -> None:
    interpreter, backend = make_interpreter(
        [function_call("shell", '{"code": "echo hi'), FINAL.format("Oops.")], auto_run=True
    )
    chunks = list(interpreter.chat("say hi", stream=True, display=False))
    assert "The arguments to functions.shell are not valid JSON" in said(chunks)
    assert not any(c["type"] == "confirmation" for c in chunks)
    assert (
        "functions.shell to=assistant<|channel|>commentary<|message|>The arguments"
        in (backend.prompts[1])
    )
    assert interpreter.messages[-1]["content"] == "Oops."


def test_output_cut_by_max_tokens_stops_cleanly_and_keeps_the_partial_message(
    make_interpreter: MakeInterpreter,
) -> None:
    interpreter, backend = make_interpreter(
        [FINAL.format("x" * 200), FINAL.format("Short.")], max_tokens=40, auto_run=True
    )
    chunks = list(interpreter.chat("talk", stream=True, display=False))
    assert "token limit (max_tokens=40)" in said(chunks)
    partial = interpreter.messages[1]
    assert partial["type"] == "message" and 0 < len(partial["content"]) < 200
    # The next turn sees the cut message closed, and works.
    assert interpreter.chat("again", display=False)[-1]["content"] == "Short."
    assert partial["content"] + "<|end|><|start|>user<|message|>again" in backend.prompts[-1]


def test_output_that_is_not_harmony_ends_the_turn_with_a_note(
    make_interpreter: MakeInterpreter,
) -> None:
    interpreter, _ = make_interpreter(
        [
            "<|channel|>analysis<|message|>Hmm.<|end|>stray text<|return|>",
            "<|channel|>final<|message|>Hi<|end|>stray text<|return|>",
        ],
        auto_run=True,
    )
    chunks = list(interpreter.chat("hi", stream=True, display=False))
    assert "Stopped: the model's output ended without a final answer" in said(chunks)
    assert "text outside a message" in said(chunks)  # what the parser had to skip
    # A final answer followed by junk is still a final answer.
    chunks = list(interpreter.chat("hi", stream=True, display=False))
    assert said(chunks) == ""
    assert interpreter.messages[-1] == {"role": "assistant", "type": "message", "content": "Hi"}


def test_the_step_limit_stops_the_loop(make_interpreter: MakeInterpreter) -> None:
    interpreter, backend = make_interpreter(
        [python_call("1"), python_call("2"), python_call("3"), FINAL.format("never")],
        auto_run=True,
        max_steps=2,
    )
    chunks = list(interpreter.chat("loop", stream=True, display=False))
    assert len(backend.generations) == 2
    assert "Stopped at the step limit: 2 tool calls" in said(chunks)
    assert "--max-steps" in said(chunks)
    # lmc's own words are a computer message, not the code's output.
    assert interpreter.messages[-1]["type"] == "message"
    assert interpreter.messages[-1]["role"] == "computer"


# -- the context -------------------------------------------------------------------------------


def test_oldest_turns_are_dropped_to_fit_the_context_and_it_says_so_once(
    make_interpreter: MakeInterpreter,
) -> None:
    interpreter, backend = make_interpreter(
        [FINAL.format("a" * 50), FINAL.format("b" * 50), FINAL.format("c" * 50)],
        context_size=8192,  # the tools' declarations take ~3k of the tiny vocabulary
        auto_run=True,
        compaction=False,  # the fallback when no summary can be had (tests/agent/test_compaction)
        apply_patch=False,  # apply_patch.md takes much of the tiny model's small context
    )
    prefix = backend.count_tokens(interpreter._prefix())
    budget = 8192 - 1024 - prefix  # what the history may take
    long = "question " * (budget // 2 // 9)
    notes = []
    for n in range(3):
        chunks = list(interpreter.chat(f"{n} {long}", stream=True, display=False))
        notes.append("longer than the model's context" in said(chunks))
    assert notes.count(True) == 1
    assert "0 question" not in backend.prompts[-1]
    assert "2 question" in backend.prompts[-1]
    assert text_of(interpreter.messages[0]).startswith("0 question")  # history keeps all
    used, size = interpreter.token_usage()
    assert used < size == 8192


def test_a_message_too_long_for_the_context_is_a_note_not_a_crash(
    make_interpreter: MakeInterpreter,
) -> None:
    interpreter, backend = make_interpreter([FINAL.format("ok")], context_size=4096)
    chunks = list(interpreter.chat("x " * 3000, stream=True, display=False))
    assert "no longer fits in the model's context" in said(chunks)
    assert "--context N" in said(chunks)  # the way out is named
    assert backend.generations == []


# -- undo, reset, resume -----------------------------------------------------------------------


def test_undo_reset_and_resume(make_interpreter: MakeInterpreter, tmp_path: Path) -> None:
    interpreter, _ = make_interpreter(
        [FINAL.format("one"), FINAL.format("two"), FINAL.format("three")], auto_run=True
    )
    interpreter.chat("first", display=False)
    interpreter.chat("second", display=False)
    cid = interpreter.conversation_id
    assert cid is not None
    dropped = interpreter.undo()
    assert [m["content"] for m in dropped] == ["second", "two"]
    assert [m["content"] for m in interpreter.messages] == ["first", "one"]
    assert interpreter.store.load(cid) == interpreter.messages
    interpreter.chat("third", display=False)
    stored = interpreter.store.load_stored(cid)
    resumed, backend = make_interpreter([FINAL.format("four")], conversation_id=cid[:5])
    assert resumed.conversation_id == cid
    assert resumed.messages == [s.message for s in stored]
    resumed.chat("fourth", display=False)
    # The resumed prompt holds the earlier turns exactly as they were written.
    assert (
        "<|start|>user<|message|>third<|end|><|start|>assistant<|channel|>final<|message|>"
        in (backend.prompts[0])
    )
    interpreter.reset()
    assert interpreter.messages == [] and interpreter.conversation_id is None
    assert [c.message_count for c in interpreter.store.list_conversations()] == [6]


# -- what the model reads of a long output ---------------------------------------------------


def test_the_model_reads_at_most_the_output_limit_of_a_long_run(
    make_interpreter: MakeInterpreter,
) -> None:
    """30,000 characters printed: the person sees them all, the model its head and tail."""
    limit = 1_000
    interpreter, backend = make_interpreter(
        [python_call("print('0123456789' * 3000)"), FINAL.format("Long.")],
        auto_run=True,
        output_limit=limit,
    )
    chunks = list(interpreter.chat("print a lot", stream=True, display=False))
    assert len(outputs(chunks)) == 30_001  # everything, live
    opening = "<|start|>python to=assistant<|channel|>analysis<|message|>"
    result = backend.prompts[1].split(opening, 1)[1].split("<|end|>", 1)[0]
    head, note, tail = result.split("\n", 2)
    assert note.startswith("[... 29,001 characters left out; the output was 30,001 characters")
    assert len(head) + len(tail) <= limit
    assert head == "0123456789" * 50
    assert tail.rstrip("\n").endswith("0123456789")
