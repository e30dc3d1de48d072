"""A resumed conversation tells the model its kernels are fresh and what that lost."""

from __future__ import annotations

from support.agent_testing import MakeInterpreter

CODE = "<|channel|>analysis to=python code<|message|>x = 41<|call|>"
FINAL = "<|channel|>final<|message|>{}<|return|>"


def test_the_resumed_prompt_says_the_kernels_are_fresh(make_interpreter: MakeInterpreter) -> None:
    # Kernel state off: nothing comes back (tests/agent/test_kept_state.py: on).
    first, _ = make_interpreter([CODE, FINAL.format("Set.")], auto_run=True, kernel_state=False)
    first.chat("set x", display=False)
    ident = first.conversation_id
    assert ident is not None
    second, backend = make_interpreter(
        [FINAL.format("Fine.")], conversation_id=ident, kernel_state=False
    )
    second.chat("print x + 1", display=False)
    prompt = backend.prompts[0]
    note = (
        "<|start|>developer<|message|>This conversation was resumed in a new session: the "
        "python kernel is fresh, so python variables, imports and functions from earlier in "
        "this conversation are gone."
    )
    assert note in prompt
    assert prompt.index("x = 41") < prompt.index(note) < prompt.index("print x + 1")
    # The person sees the same note, in lmc's words, and it is stored like any message.
    notes = [m for m in second.messages if m["role"] == "computer" and m["type"] == "message"]
    assert len(notes) == 1 and "kernel is fresh" in str(notes[0]["content"])


def test_no_note_when_no_code_ran(make_interpreter: MakeInterpreter) -> None:
    first, _ = make_interpreter([FINAL.format("Hello.")])
    first.chat("hi", display=False)
    second, backend = make_interpreter(
        [FINAL.format("Again.")], conversation_id=first.conversation_id
    )
    second.chat("hi again", display=False)
    assert "resumed in a new session" not in backend.prompts[0]
