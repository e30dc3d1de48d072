"""The prompt's size is counted message by message, each message once: the sum is the
whole prompt's count, and a step tokenizes only the messages it added."""

from __future__ import annotations

from support.agent_testing import MakeInterpreter

from lmc.backends.base import Backend

CALL = "<|channel|>analysis to=python code<|message|>print('x' * 300)<|call|>"
FINAL = "<|channel|>final<|message|>Done.<|return|>"


class Counting:
    """Wraps a backend's count_tokens to see what it is asked to count."""

    def __init__(self, backend: Backend) -> None:
        self.texts: list[str] = []
        self._count = backend.count_tokens
        backend.count_tokens = self  # type: ignore[method-assign]

    def __call__(self, text: str) -> int:
        self.texts.append(text)
        return self._count(text)


def test_counted_by_message_equals_the_whole_and_each_message_is_counted_once(
    make_interpreter: MakeInterpreter,
) -> None:
    interpreter, backend = make_interpreter([CALL, CALL, CALL, FINAL], auto_run=True)
    counting = Counting(backend)
    list(interpreter.chat("go", stream=True, display=False))
    used, _size = interpreter.token_usage()
    whole = backend.inner.count_tokens(interpreter._loop.prompt())
    assert used == whole
    # Every text counted is one message (or the prefix), never a whole prompt, and none twice.
    assert len(counting.texts) == len(set(counting.texts))
    prefix = interpreter._prefix()
    assert counting.texts.count(prefix) == 1
    assert all(t == prefix or not t.startswith("<|start|>system") for t in counting.texts)
    assert all(t.count("<|start|>user") <= 1 for t in counting.texts)
