"""apply_patch in the agent loop: the tiny model replays gpt-oss's calls (as the reference,
gpt-oss's gpt_oss/chat.py -a, declares the tool), lmc confirms, applies, answers, checkpoints."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.agent_testing import MakeInterpreter
from support.workspace_testing import empty, files_of

from lmc.agent.patch_tool import apply_patch_instructions
from lmc.agent.tool_calls import TOOL_DECLINED
from lmc.computer import Computer
from lmc.messages import Block, Chunk

FINAL = "<|channel|>final<|message|>{}<|return|>"
PATCH = (
    "*** Begin Patch\n"
    "*** Update File: notes.txt\n"
    "@@\n"
    " alpha\n"
    "-beta\n"
    "+BETA\n"
    "*** Add File: docs/new.md\n"
    "+# New\n"
    "*** End Patch\n"
)
REFERENCE_TOOL = (
    "}) => any;\n\n// Patch a file\ntype apply_patch = (_: string) => any;\n\n"
    "} // namespace functions"
)


def raw_call(text: str) -> str:
    """A call as gpt-oss writes one to a string-typed function: the patch is the message."""
    return f"<|channel|>commentary to=functions.apply_patch<|message|>{text}<|call|>"


def json_call(arguments: dict[str, str]) -> str:
    text = json.dumps(arguments)
    return (
        f"<|channel|>commentary to=functions.apply_patch <|constrain|>json<|message|>{text}<|call|>"
    )


RESULT = "<|start|>functions.apply_patch to=assistant<|channel|>commentary<|message|>"


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("project")


@pytest.fixture(scope="module")
def computer(project: Path) -> Iterator[Computer]:
    """The working directory of the patches (no code runs here, no kernel starts)."""
    with Computer(cwd=project, sandbox="off") as shared:
        yield shared


@pytest.fixture
def fresh(project: Path) -> Path:
    empty(project)
    (project / "notes.txt").write_bytes(b"alpha\nbeta\ngamma\n")
    return project


def kinds(chunks: list[Chunk]) -> list[tuple[str, str, object]]:
    out: list[tuple[str, str, object]] = []
    for chunk in chunks:
        step = (chunk["role"], chunk["type"], chunk.get("format"))
        if not out or out[-1] != step:
            out.append(step)
    return out


def outputs(chunks: list[Chunk]) -> str:
    return "".join(str(c.get("content", "")) for c in chunks if c.get("format") == "output")


def test_the_tool_is_declared_as_the_reference_declares_it(
    make_interpreter: MakeInterpreter, fresh: Path
) -> None:
    interpreter, backend = make_interpreter([FINAL.format("hi")])
    list(interpreter.chat("hello", stream=True, display=False))
    prompt = backend.prompts[0]
    developer = prompt[prompt.index("<|start|>developer") :]
    developer = developer[: developer.index("<|end|>")]
    instructions = apply_patch_instructions()
    assert instructions.startswith("When requested to perform coding-related tasks")
    assert "\u00a7 `apply_patch` Specification" in instructions  # its odd characters kept
    # The reference appends apply_patch.md after the developer's text and a newline.
    assert " on the final channel.\n" + instructions + "\n\n# Tools\n\n" in developer
    assert developer.endswith(REFERENCE_TOOL)
    # MCP's note is for MCP tools only.
    assert "SERVER__TOOL" not in developer


@pytest.mark.parametrize("options", [{"apply_patch": False}, {"sandbox": "read-only"}])
def test_not_declared_when_off_or_read_only(
    make_interpreter: MakeInterpreter, fresh: Path, options: dict[str, object]
) -> None:
    interpreter, backend = make_interpreter([FINAL.format("hi")], **options)
    list(interpreter.chat("hello", stream=True, display=False))
    assert "apply_patch" not in backend.prompts[0]


def test_a_confirmed_patch_applies_answers_done_and_undoes(
    make_interpreter: MakeInterpreter, fresh: Path
) -> None:
    before = files_of(fresh)
    interpreter, backend = make_interpreter([raw_call(PATCH), FINAL.format("Edited.")])
    asked: list[Block] = []

    def confirm(block: Block) -> bool:
        asked.append(block)
        return True

    chunks = list(interpreter.chat("edit", stream=True, display=False, confirm=confirm))
    assert asked == [{"type": "tool_call", "format": "apply_patch", "content": PATCH.strip()}]
    assert kinds(chunks)[:5] == [
        ("assistant", "tool_call", "apply_patch"),
        ("computer", "confirmation", "execution"),
        ("computer", "console", None),
        ("computer", "console", "output"),
        ("computer", "console", None),
    ]
    assert outputs(chunks) == "Done!"
    assert (fresh / "notes.txt").read_bytes() == b"alpha\nBETA\ngamma\n"
    assert (fresh / "docs/new.md").read_bytes() == b"# New\n"
    files = [c["content"] for c in chunks if c["type"] == "files" and "content" in c]
    assert files == [
        [
            {"path": "docs/new.md", "change": "added", "added": 1, "removed": 0},
            {"path": "notes.txt", "change": "modified", "added": 1, "removed": 1},
        ]
    ]
    assert RESULT + "Done!<|end|>" in backend.prompts[1]
    assert "to=functions.apply_patch<|message|>" + PATCH.strip() in backend.prompts[1]
    assert "+BETA" in (interpreter.diff() or "")
    interpreter.undo()
    assert files_of(fresh) == before


def test_a_json_body_is_accepted_as_the_reference_accepts_it(
    make_interpreter: MakeInterpreter, fresh: Path
) -> None:
    interpreter, backend = make_interpreter(
        [json_call({"patch": PATCH}), FINAL.format("Edited.")], auto_run=True
    )
    list(interpreter.chat("edit", stream=True, display=False))
    assert (fresh / "notes.txt").read_bytes() == b"alpha\nBETA\ngamma\n"
    assert RESULT + "Done!<|end|>" in backend.prompts[1]


def test_a_failing_patch_changes_nothing_and_says_where(
    make_interpreter: MakeInterpreter, fresh: Path
) -> None:
    before = files_of(fresh)
    bad = PATCH.replace("-beta", "-delta")
    interpreter, backend = make_interpreter([raw_call(bad), FINAL.format("Sorry.")], auto_run=True)
    chunks = list(interpreter.chat("edit", stream=True, display=False))
    told = "Error applying patch: notes.txt: hunk 1: failed to find the lines:\nalpha\ndelta"
    assert outputs(chunks) == told
    assert RESULT + told + "<|end|>" in backend.prompts[1]
    assert files_of(fresh) == before
    assert not any(c["type"] == "files" and c.get("content") for c in chunks)


def test_a_patch_out_of_the_working_directory_is_refused(
    make_interpreter: MakeInterpreter, fresh: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.txt").write_bytes(b"x\n")
    (fresh / "link").symlink_to(outside)
    patch = "*** Begin Patch\n*** Update File: link/x.txt\n-x\n+owned\n*** End Patch"
    interpreter, _ = make_interpreter([raw_call(patch), FINAL.format("no")], auto_run=True)
    chunks = list(interpreter.chat("edit", stream=True, display=False))
    assert outputs(chunks).startswith("Error applying patch: link/x.txt: ")
    assert (outside / "x.txt").read_bytes() == b"x\n"


def test_a_declined_patch_is_not_applied(make_interpreter: MakeInterpreter, fresh: Path) -> None:
    before = files_of(fresh)
    interpreter, backend = make_interpreter([raw_call(PATCH), FINAL.format("Ok.")])
    list(interpreter.chat("edit", stream=True, display=False, confirm=lambda block: False))
    assert files_of(fresh) == before
    assert TOOL_DECLINED in backend.prompts[1]


def test_a_call_without_the_namespace_is_the_same_tool(
    make_interpreter: MakeInterpreter, fresh: Path
) -> None:
    call = f"<|channel|>commentary to=apply_patch<|message|>{PATCH}<|call|>"
    interpreter, _ = make_interpreter([call, FINAL.format("Edited.")], auto_run=True)
    chunks = list(interpreter.chat("edit", stream=True, display=False))
    assert ("assistant", "tool_call", "apply_patch") in kinds(chunks)
    assert outputs(chunks) == "Done!"
    assert (fresh / "notes.txt").read_bytes() == b"alpha\nBETA\ngamma\n"
