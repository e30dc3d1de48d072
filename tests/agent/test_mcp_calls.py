"""MCP tools in the agent loop: the tiny model replays calls to a real MCP server (the SDK's)."""

from __future__ import annotations

import json
import os
import signal
from typing import Any

import pytest
from support.agent_testing import MakeInterpreter
from support.mcp_servers import cancel_when_in_flight, toy_http, toy_stdio

from lmc.agent.storage import ConversationStore
from lmc.agent.tool_calls import TOOL_DECLINED
from lmc.messages import Block, Chunk, Message, ToolCallChunk, text_of
from lmc.terminal.export import notebook_text, to_markdown

FINAL = "<|channel|>final<|message|>{}<|return|>"


def tool_call(function: str, arguments: dict[str, Any] | str) -> str:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return (
        f"<|channel|>commentary to=functions.{function} <|constrain|>json<|message|>{text}<|call|>"
    )


def result_header(function: str) -> str:
    return f"<|start|>functions.{function} to=assistant<|channel|>commentary<|message|>"


def outputs(chunks: list[Chunk]) -> str:
    return "".join(text_of(c) for c in chunks if c.get("format") == "output" and "content" in c)


def notes(chunks: list[Chunk]) -> list[str]:
    return [
        text_of(c)
        for c in chunks
        if (c["role"], c["type"]) == ("computer", "message") and "content" in c
    ]


def kinds(chunks: list[Chunk]) -> list[tuple[Any, ...]]:
    """The stream's steps, runs of content chunks folded into one."""
    out: list[tuple[Any, ...]] = []
    for chunk in chunks:
        flag = "start" if chunk.get("start") else "end" if chunk.get("end") else "content"
        step = (chunk["role"], chunk["type"], chunk.get("format"), flag)
        if not (flag == "content" and out and out[-1] == step):
            out.append(step)
    return out


ARGS = '{"a": 2, "b": 3}'


def test_the_model_sees_the_tools_and_a_confirmed_call_streams_like_code(
    make_interpreter: MakeInterpreter,
) -> None:
    interpreter, backend = make_interpreter(
        [tool_call("toy__add", {"a": 2, "b": 3}), FINAL.format("2 + 3 is 5.")],
        mcp_servers={"toy": toy_stdio()},
    )
    asked: list[Block] = []

    def confirm(block: Block) -> bool:
        asked.append(block)
        return True

    chunks = list(interpreter.chat("add 2 and 3", stream=True, display=False, confirm=confirm))
    prompt = backend.prompts[0]
    assert "// Add two whole numbers.\n// Returns their sum.\ntype toy__add = (_: {" in prompt
    assert "type toy__red_dot = () => any;" in prompt
    assert "The functions named SERVER__TOOL are tools of the user's MCP servers" in prompt
    assert kinds(chunks) == [
        ("assistant", "tool_call", "toy.add", "start"),
        ("assistant", "tool_call", "toy.add", "content"),
        ("assistant", "tool_call", "toy.add", "end"),
        ("computer", "confirmation", "execution", "content"),
        ("computer", "console", None, "start"),
        ("computer", "console", "output", "content"),
        ("computer", "console", None, "end"),
        ("assistant", "message", None, "start"),
        ("assistant", "message", None, "content"),
        ("assistant", "message", None, "end"),
    ]
    confirmation = next(c for c in chunks if c["type"] == "confirmation")
    assert confirmation["content"] == {
        "type": "tool_call",
        "format": "toy.add",
        "content": '{"a": 2, "b": 3}',
    }
    assert asked == [confirmation["content"]]
    assert outputs(chunks) == "2 + 3 = 5\n"
    assert result_header("toy__add") + "2 + 3 = 5\n<|end|>" in backend.prompts[1]
    assert interpreter.messages[1:] == [
        {
            "role": "assistant",
            "type": "tool_call",
            "format": "toy.add",
            "content": '{"a": 2, "b": 3}',
        },
        {"role": "computer", "type": "console", "format": "output", "content": "2 + 3 = 5\n"},
        {"role": "assistant", "type": "message", "content": "2 + 3 is 5."},
    ]
    stored = ConversationStore(interpreter.store.path).load(interpreter.conversation_id or "")
    assert stored == interpreter.messages
    markdown = to_markdown(interpreter.messages)
    assert '**Tool call** `toy.add`\n\n```json\n{"a": 2, "b": 3}\n```\n' in markdown
    assert "```text\n2 + 3 = 5\n```" in markdown
    notebook = json.loads(notebook_text(interpreter.messages))
    cells = notebook["cells"]
    assert [cell["cell_type"] for cell in cells] == ["markdown", "markdown", "markdown"]
    assert "".join(cells[1]["source"]) == (
        '**Tool call** `toy.add`\n\n```json\n{"a": 2, "b": 3}\n```\n\n```text\n2 + 3 = 5\n```\n'
    )


def test_declined_and_edited_calls(make_interpreter: MakeInterpreter) -> None:
    interpreter, backend = make_interpreter(
        [
            tool_call("toy__remember", {"note": "declined"}),
            tool_call("toy__remember", {"note": "original"}),
            FINAL.format("Noted."),
        ],
        mcp_servers={"toy": toy_stdio()},
    )
    answers: list[bool | str] = [False, '{"note": "edited"}']
    chunks = list(
        interpreter.chat(
            "remember", stream=True, display=False, confirm=lambda block: answers.pop(0)
        )
    )
    # The declined call never reached the server: the edited one is its first note.
    assert outputs(chunks) == TOOL_DECLINED + "\n" + "remembered 1 note(s): edited\n"
    assert result_header("toy__remember") + TOOL_DECLINED + "<|end|>" in backend.prompts[1]
    assert (
        result_header("toy__remember") + "The user edited the arguments before the call. It was "
        'called with:\n{"note": "edited"}\n\nremembered 1 note(s): edited\n<|end|>'
    ) in backend.prompts[2]
    assert '<|message|>{"note": "original"}<|call|>' in backend.prompts[2]  # as the model wrote
    calls = [m for m in interpreter.messages if m["type"] == "tool_call"]
    assert [c["content"] for c in calls] == ['{"note": "declined"}', '{"note": "edited"}']
    stored = ConversationStore(interpreter.store.path).load(interpreter.conversation_id or "")
    assert stored == interpreter.messages


def test_auto_approve_and_auto_run_skip_the_question(make_interpreter: MakeInterpreter) -> None:
    interpreter, _ = make_interpreter(
        [
            tool_call("toy__add", {"a": 1, "b": 1}),
            tool_call("toy__remember", {"note": "asked"}),
            FINAL.format("Done."),
        ],
        mcp_servers={"toy": toy_stdio(auto_approve=["add"])},
    )
    asked: list[str] = []

    def confirm(block: Block) -> bool:
        asked.append(block["format"])
        return True

    chunks = list(interpreter.chat("go", stream=True, display=False, confirm=confirm))
    assert asked == ["toy.remember"]  # add is auto-approved
    assert [c["content"]["format"] for c in chunks if c["type"] == "confirmation"] == [
        "toy.add",
        "toy.remember",
    ]
    assert outputs(chunks) == "1 + 1 = 2\nremembered 1 note(s): asked\n"

    # -y (auto_run) runs tool calls as it runs code.
    other, _ = make_interpreter(
        [tool_call("toy__remember", {"note": "y"}), FINAL.format("Done.")],
        mcp_servers={"toy": toy_stdio()},
        auto_run=True,
    )
    never_asked = list(other.chat("go", stream=True, display=False, confirm=lambda b: False))
    assert outputs(never_asked) == "remembered 1 note(s): y\n"


def test_a_schema_violation_is_told_to_the_model_exactly_and_nothing_is_asked(
    make_interpreter: MakeInterpreter,
) -> None:
    interpreter, backend = make_interpreter(
        [tool_call("toy__add", {"a": "two"}), FINAL.format("Sorry.")],
        mcp_servers={"toy": toy_stdio()},
    )
    chunks = list(interpreter.chat("add", stream=True, display=False, confirm=lambda b: True))
    message = (
        "The arguments to functions.toy__add do not match its schema: b: missing (required, "
        'expected number); a: expected number, got "two". Call it again with arguments that '
        "match the schema."
    )
    assert notes(chunks) == [message]
    assert not any(c["type"] == "confirmation" for c in chunks)
    assert result_header("toy__add") + message + "<|end|>" in backend.prompts[1]


def test_an_unknown_tool_is_told_with_every_tool_there_is(
    make_interpreter: MakeInterpreter,
) -> None:
    interpreter, backend = make_interpreter(
        [
            tool_call("toy__divide", {"a": 1}),
            "<|channel|>analysis to=browser.search code<|message|>{}<|call|>",
            FINAL.format("Sorry."),
        ],
        mcp_servers={"toy": toy_stdio(tools=["add"])},
    )
    chunks = list(interpreter.chat("divide", stream=True, display=False, confirm=lambda b: True))
    first, second = notes(chunks)
    assert first.startswith("There is no tool named 'functions.toy__divide'. The tools are: python")
    assert first.endswith(", functions.toy__add, functions.jobs, functions.apply_patch.")
    assert second.startswith("There is no tool named 'browser.search'. The tools are: python")
    assert second.endswith(", functions.toy__add, functions.jobs, functions.apply_patch.")
    assert result_header("toy__divide") + first + "<|end|>" in backend.prompts[1]
    assert (
        "<|start|>browser.search to=assistant<|channel|>analysis<|message|>" + second + "<|end|>"
    ) in backend.prompts[2]


def test_a_server_that_crashes_mid_call_is_reported_and_restarted_on_next_use(
    make_interpreter: MakeInterpreter,
) -> None:
    interpreter, backend = make_interpreter(
        [
            tool_call("toy__crash", {}),
            tool_call("toy__remember", {"note": "again"}),
            FINAL.format("It works again."),
        ],
        mcp_servers={"toy": toy_stdio()},
        auto_run=True,
    )
    chunks = list(interpreter.chat("crash it", stream=True, display=False))
    crashed = (
        "MCP server 'toy' stopped during the call (Connection closed; its last message: toy "
        "server: crashing on purpose): it restarts on next use\n"
    )
    assert outputs(chunks) == crashed + "remembered 1 note(s): again\n"
    assert result_header("toy__crash") + crashed + "<|end|>" in backend.prompts[1]
    assert interpreter.messages[-1]["content"] == "It works again."


def test_a_tool_slower_than_its_timeout_is_cancelled(make_interpreter: MakeInterpreter) -> None:
    interpreter, _ = make_interpreter(
        [tool_call("toy__slow", {"seconds": 600}), FINAL.format("Too slow.")],
        mcp_servers={"toy": toy_stdio(timeout=1)},
        auto_run=True,
    )
    chunks = list(interpreter.chat("wait", stream=True, display=False))
    assert outputs(chunks) == (
        "MCP server 'toy' did not answer slow within 1 s: the call was cancelled (the server "
        "goes on)\n"
    )
    assert interpreter.messages[-1]["content"] == "Too slow."


def test_a_server_that_fails_to_start_is_reported_once_and_the_others_work(
    make_interpreter: MakeInterpreter,
) -> None:
    interpreter, backend = make_interpreter(
        [tool_call("toy__add", {"a": 1, "b": 2}), FINAL.format("3."), FINAL.format("Again.")],
        mcp_servers={"toy": toy_stdio(), "broken": toy_stdio("broken")},
        auto_run=True,
    )
    chunks = list(interpreter.chat("add", stream=True, display=False))
    assert notes(chunks) == [
        "MCP server 'broken' failed to start: Connection closed (its last message: toy server: "
        "cannot open its database)"
    ]
    assert kinds(chunks)[:3] == [
        ("computer", "message", None, "start"),
        ("computer", "message", None, "content"),
        ("computer", "message", None, "end"),
    ]
    assert "broken__" not in backend.prompts[0]
    assert "cannot open its database" not in backend.prompts[0]  # for the person only
    assert outputs(chunks) == "1 + 2 = 3\n"
    again = list(interpreter.chat("again", stream=True, display=False))
    assert notes(again) == []  # said once


def test_an_image_result_is_an_image_chunk(make_interpreter: MakeInterpreter) -> None:
    interpreter, backend = make_interpreter(
        [tool_call("toy__red_dot", {}), FINAL.format("A red dot.")],
        mcp_servers={"toy": toy_stdio()},
        auto_run=True,
    )
    chunks = list(interpreter.chat("draw", stream=True, display=False))
    [image] = [c for c in chunks if c["type"] == "image"]
    assert image["role"] == "computer" and image["format"] == "base64.png"
    assert image["content"].startswith("iVBORw0KGgo")
    assert (
        result_header("toy__red_dot") + "\n[an image was shown to the user]\n"
        in (backend.prompts[1])
    )
    assert any(m["type"] == "image" for m in interpreter.messages)
    notebook = json.loads(notebook_text(interpreter.messages))
    assert "![image](data:image/png;base64,iVBORw0KGgo" in "".join(notebook["cells"][1]["source"])


def test_cancel_stops_a_running_call(make_interpreter: MakeInterpreter) -> None:
    interpreter, _ = make_interpreter(
        [tool_call("toy__slow", {"seconds": 600}), FINAL.format("never")],
        mcp_servers={"toy": toy_stdio()},
        auto_run=True,
    )
    assert interpreter.tools is not None
    watcher = cancel_when_in_flight(interpreter.tools.manager, interpreter.cancel)
    chunks = list(interpreter.chat("wait", stream=True, display=False))
    watcher.join()
    assert outputs(chunks) == "the call to toy.slow was cancelled\n"
    assert interpreter.messages[-1]["content"] == "the call to toy.slow was cancelled\n"


def test_ctrl_c_during_a_call_cancels_it_and_keeps_the_history(
    make_interpreter: MakeInterpreter,
) -> None:
    interpreter, backend = make_interpreter(
        [tool_call("toy__slow", {"seconds": 600}), FINAL.format("Stopped, as you asked.")],
        mcp_servers={"toy": toy_stdio()},
        auto_run=True,
    )
    assert interpreter.tools is not None
    # Ctrl-C as a person presses it: SIGINT while the call is waited for.
    watcher = cancel_when_in_flight(
        interpreter.tools.manager, lambda: os.kill(os.getpid(), signal.SIGINT)
    )
    with pytest.raises(KeyboardInterrupt):
        list(interpreter.chat("wait", stream=True, display=False))
    watcher.join()
    assert interpreter.messages[-1]["content"] == "[interrupted]\n"
    answer = interpreter.chat("ok", display=False)
    assert answer[-1]["content"] == "Stopped, as you asked."
    assert result_header("toy__slow") + "[interrupted]\n<|end|>" in backend.prompts[-1]


def test_a_streamable_http_server(make_interpreter: MakeInterpreter) -> None:
    with toy_http() as url:
        interpreter, backend = make_interpreter(
            [tool_call("web__add", {"a": 20, "b": 22}), FINAL.format("42.")],
            mcp_servers={"web": {"url": url, "startup_timeout": 120}},
            auto_run=True,
        )
        chunks = list(interpreter.chat("add", stream=True, display=False))
        interpreter.close()
    assert outputs(chunks) == "20 + 22 = 42\n"
    assert "type web__add = (_: {" in backend.prompts[0]


# -- the history, without a model --------------------------------------------------------------


def test_tool_calls_from_lmc_json_are_written_as_harmony_calls_and_results() -> None:
    from lmc.agent.history import derive_harmony

    messages: list[Message] = [
        {"role": "user", "type": "message", "content": "bugs?"},
        {"role": "assistant", "type": "message", "content": "Searching."},
        {"role": "assistant", "type": "tool_call", "format": "issues.search", "content": "{}"},
        {"role": "computer", "type": "console", "format": "output", "content": "#12\n"},
        {"role": "assistant", "type": "message", "content": "One."},
    ]
    harmony = derive_harmony(messages)
    assert harmony[1] == "<|start|>assistant<|channel|>commentary<|message|>Searching.<|end|>"
    assert harmony[2] == (
        "<|start|>assistant to=functions.issues__search<|channel|>commentary <|constrain|>json"
        "<|message|>{}<|call|>"
    )
    assert harmony[3] == result_header("issues__search") + "#12\n<|end|>"
    assert harmony[4] == "<|start|>assistant<|channel|>final<|message|>One.<|end|>"


def test_a_tool_call_left_without_a_result_is_closed_on_resume() -> None:
    from lmc.agent.history import CUT_OFF, Entry, result_for_dangling_call

    call = tool_call("issues__search", "{}")
    entry = Entry(
        {"role": "assistant", "type": "tool_call", "format": "issues.search", "content": "{}"},
        "<|start|>assistant" + call,
    )
    note = result_for_dangling_call([entry])
    assert note is not None
    assert note.message["content"] == CUT_OFF + "\n"
    assert note.harmony == result_header("issues__search") + CUT_OFF + "<|end|>"


def test_chat_display_fences_a_tool_call_like_code() -> None:
    import io

    from lmc.agent.display import PlainRenderer

    out = io.StringIO()
    renderer = PlainRenderer(out)
    base: ToolCallChunk = {"role": "assistant", "type": "tool_call", "format": "toy.add"}
    chunks: list[Chunk] = [
        {**base, "start": True},
        {**base, "content": '{"a": 1, "b": 2}'},
        {**base, "end": True},
        {"role": "computer", "type": "console", "format": "output", "content": "1 + 2 = 3\n"},
    ]
    for chunk in chunks:
        renderer.feed(chunk)
    renderer.close()
    assert out.getvalue() == '```toy.add\n{"a": 1, "b": 2}\n```\n1 + 2 = 3\n'


def test_progress_streams_as_live_status_chunks_the_model_never_reads(
    make_interpreter: MakeInterpreter,
) -> None:
    # On main a long call showed nothing until it ended.
    interpreter, backend = make_interpreter(
        [tool_call("toy__steps", {}), FINAL.format("Done.")],
        mcp_servers={"toy": toy_stdio()},
        auto_run=True,
    )
    chunks = list(interpreter.chat("go", stream=True, display=False))
    progress = [c["content"] for c in chunks if c.get("format") == "progress"]
    assert progress == ["step 1 (1/3)", "step 2 (2/3)", "step 3 (3/3)"]
    assert outputs(chunks) == "three steps done\n"
    assert "step 1" not in backend.prompts[1]
