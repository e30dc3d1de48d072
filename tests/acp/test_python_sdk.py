"""``lmc acp`` with the official Python SDK (``agent-client-protocol`` 0.12) as the editor.

The model is the tiny random GGUF forced through a replay file, so each turn says exactly
what the test needs; the kernels, the sandbox, the checkpoints and the database are real.
Every message lmc writes is checked against the ACP schema as it arrives.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, RequestError, text_block
from support.acp_client import RecordingClient, acp_agent, tool_calls, wait_for
from support.cli_replays import code, final

from lmc.agent.storage import ConversationStore

THINK_AND_WRITE = (
    "<|channel|>analysis<|message|>Let me compute.<|end|>"
    "<|start|>assistant<|channel|>commentary to=python <|constrain|>code<|message|>"
    'open("hello.txt", "w").write("hi\\n")\nprint(6 * 7)<|call|>'
)


def _args(tiny_model: Path, replay: Path, *extra: str) -> tuple[str, ...]:
    return ("-m", str(tiny_model), "--replay", str(replay), *extra)


def _db(lmc_env: dict[str, str]) -> Path:
    return Path(lmc_env["LMC_DATA_DIR"]) / "conversations.db"


def test_a_prompt_streams_thoughts_code_output_the_files_diff_and_the_answer(
    lmc_env: dict[str, str], tiny_model: Path, tmp_path: Path, replay: Callable[..., Path]
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    script = replay(THINK_AND_WRITE, final("It is 42."))
    client = RecordingClient(["allow_once"])

    async def main() -> tuple[Any, Any, str, int]:
        async with acp_agent(client, lmc_env, tmp_path, *_args(tiny_model, script)) as (
            conn,
            _,
            checker,
        ):
            hello = await conn.initialize(protocol_version=PROTOCOL_VERSION)
            session = await conn.new_session(cwd=str(project), mcp_servers=[])
            done = await conn.prompt(session_id=session.session_id, prompt=[text_block("compute")])
            return hello, done, session.session_id, checker.checked

    hello, done, session_id, checked = asyncio.run(main())
    assert hello.protocol_version == 1
    assert hello.agent_capabilities.load_session is True
    assert hello.agent_info.name == "lmc"
    assert done.stop_reason == "end_turn"
    assert client.text("agent_thought_chunk") == "Let me compute."
    assert client.text("agent_message_chunk") == "It is 42."
    # The session id is the stored conversation's, titled by the prompt.
    with ConversationStore(_db(lmc_env)) as store:
        assert store.get(session_id).title == "compute"

    (call_id, call), *others = tool_calls(client.updates).items()
    assert not others
    start, *progress, last = call
    assert start["sessionUpdate"] == "tool_call"
    assert start["kind"] == "execute" and start["status"] == "pending"
    assert start["title"].startswith("python")
    assert "print(6 * 7)" in start["content"][0]["content"]["text"]
    assert start["rawInput"] == {
        "language": "python",
        "code": 'open("hello.txt", "w").write("hi\\n")\nprint(6 * 7)',
    }
    assert progress[0]["status"] == "in_progress"
    assert last["status"] == "completed"
    texts = [c["content"]["text"] for c in last["content"] if c["type"] == "content"]
    assert any("42" in text for text in texts[1:])
    diff = next(c for c in last["content"] if c["type"] == "diff")
    assert diff == {
        "type": "diff",
        "path": str(project / "hello.txt"),
        "newText": "hi\n",
    }  # oldText null (a new file): left out by the SDK's model dump
    assert (project / "hello.txt").read_text() == "hi\n"
    # The question named the call and offered the four answers.
    assert client.asked[0]["toolCallId"] == call_id
    assert [o["kind"] for o in client.options[0]] == [
        "allow_once",
        "allow_always",
        "reject_once",
        "reject_always",
    ]
    # Order: thought, then the call, then the answer.
    kinds = client.kinds()
    assert kinds.index("agent_thought_chunk") < kinds.index("tool_call")
    assert kinds.index("tool_call") < kinds.index("agent_message_chunk")
    assert checked > 10


def test_rejected_blocks_do_not_run_and_allow_always_spares_later_questions(
    lmc_env: dict[str, str], tiny_model: Path, tmp_path: Path, replay: Callable[..., Path]
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    script = replay(
        code('open("rejected.txt", "w").write("no")'),
        code('open("first.txt", "w").write("1")'),
        code('open("second.txt", "w").write("2")'),
        final("Done."),
    )
    client = RecordingClient(["reject_once", "allow_always"])

    async def main() -> str:
        async with acp_agent(client, lmc_env, tmp_path, *_args(tiny_model, script)) as (
            conn,
            _,
            _checker,
        ):
            await conn.initialize(protocol_version=PROTOCOL_VERSION)
            session = await conn.new_session(cwd=str(project), mcp_servers=[])
            done = await conn.prompt(session_id=session.session_id, prompt=[text_block("go")])
            assert done.stop_reason == "end_turn"
            return session.session_id

    session_id = asyncio.run(main())
    assert not (project / "rejected.txt").exists()
    assert (project / "first.txt").read_text() == "1"
    assert (project / "second.txt").read_text() == "2"
    assert len(client.asked) == 2  # the third block was not asked about: allow_always
    statuses = [updates[-1]["status"] for updates in tool_calls(client.updates).values()]
    assert statuses == ["failed", "completed", "completed"]
    # The model was told the block was declined.
    with ConversationStore(_db(lmc_env)) as store:
        said = [m.get("content") for m in store.load(session_id) if m["type"] == "console"]
    assert any("declined" in str(text) for text in said)


def test_cancel_interrupts_the_running_block_and_the_next_prompt_runs(
    lmc_env: dict[str, str], tiny_model: Path, tmp_path: Path, replay: Callable[..., Path]
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    script = replay(
        code("import time\nx = 5\nprint('sleeping', flush=True)\ntime.sleep(600)"),
        code("print('after', x)"),
        final("Done."),
    )
    client = RecordingClient()

    def sleeping() -> bool:  # its output (the content after the code) says so
        return any(
            u["sessionUpdate"] == "tool_call_update"
            and any("sleeping" in str(c) for c in u.get("content", [])[1:])
            for u in client.updates
        )

    async def main() -> tuple[str, str]:
        async with acp_agent(client, lmc_env, tmp_path, "-y", *_args(tiny_model, script)) as (
            conn,
            _,
            _checker,
        ):
            await conn.initialize(protocol_version=PROTOCOL_VERSION)
            session = await conn.new_session(cwd=str(project), mcp_servers=[])
            sid = session.session_id
            turn = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block("sleep")]))
            await wait_for(sleeping, "the block's first output")
            await conn.cancel(session_id=sid)
            first = await turn
            again = await conn.prompt(session_id=sid, prompt=[text_block("again")])
            return first.stop_reason, again.stop_reason

    first, again = asyncio.run(main())
    assert (first, again) == ("cancelled", "end_turn")
    (_, slept), (_, after) = tool_calls(client.updates).items()
    assert slept[-1]["status"] == "failed"
    assert after[-1]["status"] == "completed"
    assert "after 5" in str(after[-1]["content"])  # the same kernel, its state kept


def test_session_load_replays_the_history_and_the_session_goes_on(
    lmc_env: dict[str, str], tiny_model: Path, tmp_path: Path, replay: Callable[..., Path]
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    first = RecordingClient()

    async def earlier() -> str:
        script = replay(code("print(6 * 7)"), final("It is 42."))
        async with acp_agent(first, lmc_env, tmp_path, "-y", *_args(tiny_model, script)) as (
            conn,
            _,
            _checker,
        ):
            await conn.initialize(protocol_version=PROTOCOL_VERSION)
            session = await conn.new_session(cwd=str(project), mcp_servers=[])
            await conn.prompt(session_id=session.session_id, prompt=[text_block("compute it")])
            return session.session_id

    session_id = asyncio.run(earlier())
    client = RecordingClient()

    async def later() -> str:
        script = replay(final("Still 42."))
        async with acp_agent(client, lmc_env, tmp_path, "-y", *_args(tiny_model, script)) as (
            conn,
            _,
            _checker,
        ):
            await conn.initialize(protocol_version=PROTOCOL_VERSION)
            with pytest.raises(RequestError) as unknown:
                await conn.load_session(cwd=str(project), session_id="no-such-session")
            assert unknown.value.code == -32002
            await conn.load_session(cwd=str(project), session_id=session_id)
            replayed = len(client.updates)
            assert replayed > 0  # all of it before the response
            done = await conn.prompt(session_id=session_id, prompt=[text_block("and now?")])
            return str(done.stop_reason)

    assert asyncio.run(later()) == "end_turn"
    assert client.text("user_message_chunk") == "compute it"
    assert client.text("agent_message_chunk").startswith("It is 42.")
    assert client.text("agent_message_chunk").endswith("Still 42.")
    call = next(iter(tool_calls(client.updates).values()))
    assert call[0]["rawInput"]["code"] == "print(6 * 7)"
    assert call[-1]["status"] == "completed" and "42" in str(call[-1]["content"])


def test_the_step_limit_ends_the_prompt_with_max_turn_requests(
    lmc_env: dict[str, str], tiny_model: Path, tmp_path: Path, replay: Callable[..., Path]
) -> None:
    script = replay(code("print(1)"), final("unused"))
    client = RecordingClient()

    async def main() -> str:
        args = ("-y", "--max-steps", "1", *_args(tiny_model, script))
        async with acp_agent(client, lmc_env, tmp_path, *args) as (conn, _, _checker):
            await conn.initialize(protocol_version=PROTOCOL_VERSION)
            session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
            done = await conn.prompt(session_id=session.session_id, prompt=[text_block("go")])
            return str(done.stop_reason)

    assert asyncio.run(main()) == "max_turn_requests"


class CancellingClient(RecordingClient):
    """An editor whose person cancels the prompt while lmc's question is open."""

    conn: Any = None

    async def request_permission(
        self, session_id: str, tool_call: Any, options: Any, **kwargs: Any
    ) -> Any:
        self.asked.append(tool_call.model_dump(by_alias=True, exclude_none=True))
        await self.conn.cancel(session_id=session_id)
        from acp.schema import DeniedOutcome, RequestPermissionResponse

        return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))


def test_cancel_while_the_question_is_open_runs_nothing_and_ends_cancelled(
    lmc_env: dict[str, str], tiny_model: Path, tmp_path: Path, replay: Callable[..., Path]
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    script = replay(code('open("never.txt", "w").write("x")'), final("unused"))
    client = CancellingClient()

    async def main() -> str:
        async with acp_agent(client, lmc_env, tmp_path, *_args(tiny_model, script)) as (
            conn,
            _,
            _checker,
        ):
            client.conn = conn
            await conn.initialize(protocol_version=PROTOCOL_VERSION)
            session = await conn.new_session(cwd=str(project), mcp_servers=[])
            done = await conn.prompt(session_id=session.session_id, prompt=[text_block("go")])
            return str(done.stop_reason)

    assert asyncio.run(main()) == "cancelled"
    assert not (project / "never.txt").exists()
    [call] = tool_calls(client.updates).values()
    assert call[-1]["status"] == "failed"


def test_a_cancel_as_soon_as_the_block_is_announced_still_stops_it(
    lmc_env: dict[str, str], tiny_model: Path, tmp_path: Path, replay: Callable[..., Path]
) -> None:
    """Wherever the cancel lands (before the block runs, or just as its kernel starts it), the
    prompt ends cancelled and the session goes on."""
    project = tmp_path / "project"
    project.mkdir()
    script = replay(code("import time\ntime.sleep(600)"), code("print('next')"), final("Done."))
    client = RecordingClient()

    async def main() -> tuple[str, str]:
        async with acp_agent(client, lmc_env, tmp_path, "-y", *_args(tiny_model, script)) as (
            conn,
            _,
            _checker,
        ):
            await conn.initialize(protocol_version=PROTOCOL_VERSION)
            session = await conn.new_session(cwd=str(project), mcp_servers=[])
            sid = session.session_id
            turn = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block("go")]))
            await wait_for(lambda: "tool_call" in client.kinds(), "the block's announcement")
            await conn.cancel(session_id=sid)
            first = await turn
            again = await conn.prompt(session_id=sid, prompt=[text_block("again")])
            return str(first.stop_reason), str(again.stop_reason)

    assert asyncio.run(main()) == ("cancelled", "end_turn")
    statuses = [call[-1]["status"] for call in tool_calls(client.updates).values()]
    assert statuses == ["failed", "completed"]


def test_reject_always_declines_later_blocks_of_that_language_without_asking(
    lmc_env: dict[str, str], tiny_model: Path, tmp_path: Path, replay: Callable[..., Path]
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    script = replay(
        code('open("one.txt", "w").write("1")'),
        code('open("two.txt", "w").write("2")'),
        final("Declined twice."),
    )
    client = RecordingClient(["reject_always"])

    async def main() -> str:
        async with acp_agent(client, lmc_env, tmp_path, *_args(tiny_model, script)) as (
            conn,
            _,
            _checker,
        ):
            await conn.initialize(protocol_version=PROTOCOL_VERSION)
            session = await conn.new_session(cwd=str(project), mcp_servers=[])
            done = await conn.prompt(session_id=session.session_id, prompt=[text_block("go")])
            return str(done.stop_reason)

    assert asyncio.run(main()) == "end_turn"
    assert len(client.asked) == 1
    assert list(project.iterdir()) == []
    statuses = [call[-1]["status"] for call in tool_calls(client.updates).values()]
    assert statuses == ["failed", "failed"]
