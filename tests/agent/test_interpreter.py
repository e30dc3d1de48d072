"""The Interpreter's API around the loop: arguments, messages in and out, tokens, lifetimes."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from support.agent_testing import MakeInterpreter

from lmc.agent import Interpreter
from lmc.agent.display import PlainRenderer
from lmc.errors import ConfigError, LmcError

FINAL = "<|channel|>final<|message|>{}<|return|>"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_steps": 0}, "max_steps must be at least 1"),
        ({"max_tokens": 0}, "max_tokens must be at least 1"),
        ({"reasoning": "extreme"}, "reasoning .*must be one of low, medium, high"),
    ],
)
def test_bad_arguments_are_one_line_config_errors(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Interpreter(**kwargs)


def test_nothing_heavy_happens_until_needed(tmp_path: Path) -> None:
    interpreter = Interpreter(model=str(tmp_path / "missing.gguf"), db_path=tmp_path / "c.db")
    assert interpreter.messages == [] and interpreter.conversation_id is None
    assert not (tmp_path / "c.db").exists()
    interpreter.close()


def test_a_missing_model_is_an_lmc_error_when_loaded(tmp_path: Path) -> None:
    with (
        Interpreter(model=str(tmp_path / "missing.gguf"), db_path=tmp_path / "c.db") as it,
        pytest.raises(LmcError),
    ):
        it.load()


def test_token_usage_counts_the_next_prompt(make_interpreter: MakeInterpreter) -> None:
    interpreter, backend = make_interpreter([FINAL.format("Hello there.")], auto_run=True)
    empty, size = interpreter.token_usage()
    assert size == 8192
    assert empty == backend.count_tokens(interpreter._prefix() + "<|start|>assistant")
    interpreter.chat("hi", display=False)
    used, _ = interpreter.token_usage()
    expected = (
        backend.prompts[0]
        + "<|channel|>final<|message|>Hello there.<|end|>"  # the answer, stored with <|end|>
        + "<|start|>assistant"
    )
    assert used == backend.count_tokens(expected) > empty


def test_messages_can_be_set_like_open_interpreters(
    make_interpreter: MakeInterpreter,
) -> None:
    interpreter, backend = make_interpreter([FINAL.format("It was 42.")], auto_run=True)
    interpreter.messages = [
        {"role": "user", "type": "message", "content": "compute"},
        {"role": "assistant", "type": "code", "format": "python", "content": "6 * 7"},
        {"role": "computer", "type": "console", "format": "output", "content": "42"},
        {"role": "assistant", "type": "message", "content": "42."},
    ]
    cid = interpreter.conversation_id
    assert cid is not None and len(interpreter.store.load(cid)) == 4
    interpreter.chat("what was it?", display=False)
    prompt = backend.prompts[0]
    assert (
        "<|start|>assistant to=python<|channel|>analysis code<|message|>6 * 7<|call|>"
        "<|start|>python to=assistant<|channel|>analysis<|message|>42<|end|>"
        "<|start|>assistant<|channel|>final<|message|>42.<|end|>"
        "<|start|>user<|message|>what was it?<|end|><|start|>assistant"
    ) in prompt


def test_one_turn_at_a_time_and_an_abandoned_stream_is_cleaned_up(
    make_interpreter: MakeInterpreter,
) -> None:
    interpreter, _ = make_interpreter(
        [FINAL.format("word " * 500), FINAL.format("Next.")], auto_run=True
    )
    stream = iter(interpreter.chat("talk", stream=True, display=False))
    for chunk in stream:
        if chunk["type"] == "message" and "content" in chunk:
            break
    # The consumer walked away without closing; the next chat closes it first.
    assert interpreter.chat("next", display=False)[-1]["content"] == "Next."
    partial = interpreter.messages[1]
    assert partial["type"] == "message" and 0 < len(partial["content"]) < 2500


def test_the_plain_renderer_declines_without_a_terminal(
    make_interpreter: MakeInterpreter, tmp_path: Path
) -> None:
    out = io.StringIO()
    target = tmp_path / "never.txt"
    interpreter, _ = make_interpreter(
        [
            f"<|channel|>analysis to=python code<|message|>open({str(target)!r}, 'w')<|call|>",
            FINAL.format("Ok."),
        ],
        renderer=PlainRenderer(out, ask=io.StringIO("y\n")),
    )
    interpreter.chat("make a file")
    assert not target.exists()
    assert "no terminal to ask" in out.getvalue()
