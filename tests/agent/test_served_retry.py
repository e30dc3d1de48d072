"""lmc/agent/served_retry.py through the Python API: what a dropped stream and a refusal
leave in the conversation (the stand-in servers of support.served_servers)."""

from __future__ import annotations

from pathlib import Path

from support.served_model import DONE, REQUEST
from support.served_servers import Stand, stand_in

from lmc import Interpreter


def _interpreter(root: str, tmp_path: Path, **options: object) -> Interpreter:
    return Interpreter(
        api_base=root,
        auto_run=True,
        db_path=tmp_path / "lmc.db",
        sandbox="off",
        max_steps=40,
        **options,  # type: ignore[arg-type]
    )


def test_a_dropped_answer_stays_in_the_conversation_but_not_in_the_prompt(
    tmp_path: Path,
) -> None:
    with (
        stand_in("llama.cpp", Stand(drop_at=2)) as (record, _stand),
        _interpreter(record.root, tmp_path) as interpreter,
    ):
        interpreter.chat(REQUEST, display=False)
        entries = interpreter._loop.transcript.entries
        notes = [i for i, e in enumerate(entries) if "closed the stream" in str(e.message)]
        assert len(notes) == 1
        note = notes[0]
        # What the dropped answer had shown (its reasoning) is kept, with nothing for the
        # model: the retry's prompt is the one the dropped answer was asked with.
        dropped = entries[note - 1]
        assert dropped.message["type"] == "reasoning" and dropped.harmony == ""
        assert entries[note].harmony == ""
        assert str(entries[-1].message.get("content")) == DONE
        # The store holds the same: the dropped reasoning without its Harmony text.
        conversation = interpreter.conversation_id
        assert conversation is not None
        stored = interpreter.store.load_stored(conversation)
        assert [s.harmony for s in stored] == [e.harmony for e in entries]


def test_a_refusal_sets_the_context_the_server_named(tmp_path: Path) -> None:
    with (
        stand_in("vllm") as (record, stand),
        _interpreter(record.root, tmp_path, context_size=131072) as interpreter,
    ):
        interpreter.chat(REQUEST, display=False)
        used, size = interpreter.token_usage()
        assert stand.refused == 1
        assert size == 4096 and used < size
        assert interpreter.backend.context_reason == "4,096 tokens (the server's overflow answer)"
