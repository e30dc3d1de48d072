"""What is shown is what runs, for every call form a model writes.

A call may name ``python``, ``functions.python``, ``shell`` or ``functions.shell``; put the
recipient before or after ``<|channel|>`` (or in the role slot of a later message); carry the
content type ``code``, ``json``, ``<|constrain|>json`` or none; and hold raw code or
``{"code": ...}``. For each, the code chunks, the confirmation chunk, the stored message, the
export and the code handed to the computer must be the same text. The forms come from a grid
and from the real gpt-oss completions in tests/fixtures/gptoss_real (their headers, with the
tool and arguments swapped for a code tool's).

The model is the real tiny model through llama.cpp, forced by replay; the computer records
what it is asked to run instead of running it (the code is arbitrary text). One end-to-end
case runs in a real shell kernel.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lmc.agent import Interpreter
from lmc.backends.base import BackendConfig
from lmc.backends.llama import LlamaCppBackend
from lmc.backends.replay import ReplayScript
from lmc.computer import Computer
from lmc.messages import Chunk, messages_from_json, text_of
from lmc.terminal.export import to_lmc_json

FIXTURES = Path(__file__).parent.parent / "fixtures" / "gptoss_real"
REAL_CASES: list[dict[str, Any]] = json.loads((FIXTURES / "cases.json").read_text(encoding="utf-8"))
FINAL = "<|channel|>final<|message|>Done.<|return|>"
RECIPIENTS = {
    "python": "python",
    "functions.python": "python",
    "shell": "shell",
    "functions.shell": "shell",
}
CONTENT_TYPES = ["", " code", " json", " <|constrain|>json", "<|constrain|>json"]


def _real_templates() -> list[str]:
    """Real completions that end in a call, as templates: ``{recipient}`` and ``{body}``."""
    templates = []
    for case in REAL_CASES:
        raw: str = case["raw"]
        if not raw.endswith("<|call|>") or "to=functions." not in raw:
            continue
        start = raw.rindex("<|message|>") + len("<|message|>")
        head = raw[:start]
        recipient = re.findall(r"to=(\S+?)(?=<\||\s|$)", head)[-1]
        at = head.rindex("to=" + recipient)
        head = head[:at] + "to={recipient}" + head[at + len("to=" + recipient) :]
        templates.append(head.replace("{", "{{").replace("}", "}}").replace(
            "{{recipient}}", "{recipient}") + "{body}<|call|>")  # fmt: skip
    return templates


REAL_TEMPLATES = _real_templates()


def test_the_real_call_forms_are_all_here() -> None:
    """The fixture's 21 completions that end in a call, with their recipient placements."""
    assert len(REAL_TEMPLATES) == 21
    assert any(t.startswith(" to={recipient}<|channel|>") for t in REAL_TEMPLATES)
    assert any("<|start|>assistant to={recipient}" in t for t in REAL_TEMPLATES)
    assert any("<|channel|>analysis to={recipient}" in t for t in REAL_TEMPLATES)
    assert any("to={recipient}<|message|>" in t for t in REAL_TEMPLATES)  # no content type


class RecordingComputer:
    """Records what it is asked to run and prints a line; nothing is executed."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, str]] = []

    def run(self, language: str, code: str) -> Iterable[Chunk]:
        self.ran.append((language, code))
        yield {"role": "computer", "type": "console", "start": True}
        yield {"role": "computer", "type": "console", "format": "output", "content": "ok\n"}
        yield {"role": "computer", "type": "console", "end": True}

    def interrupt(self) -> None:
        pass


@pytest.fixture(scope="module")
def backend(tiny_model: Path) -> Iterator[LlamaCppBackend]:
    with LlamaCppBackend(tiny_model, BackendConfig(context_size=8192)) as shared:
        assert isinstance(shared, LlamaCppBackend)
        yield shared


_CODE_CHARS = st.sampled_from(list("abcxyz019 _=()[]{}:,.;'\"\\/\n\t$|<>é€😀#-"))
codes = st.text(_CODE_CHARS, min_size=1, max_size=40).filter(lambda c: "<|" not in c)


@st.composite
def call_forms(draw: st.DrawFn) -> tuple[str, str, str]:
    """(completion, language, the code it carries)."""
    recipient = draw(st.sampled_from(sorted(RECIPIENTS)))
    code = draw(codes)
    as_json = draw(st.booleans())
    if as_json:
        extra = draw(st.sampled_from([{}, {"timeout": 30}]))
        arguments = {**extra, "code": code} if draw(st.booleans()) else {"code": code, **extra}
        body = json.dumps(
            arguments,
            ensure_ascii=draw(st.booleans()),
            separators=draw(st.sampled_from([(", ", ": "), (",", ":")])),
        )
    else:
        if code.lstrip().startswith("{"):  # raw code that opens like JSON is another case
            code = "x" + code
        body = code
    if draw(st.booleans()):
        template = draw(st.sampled_from(REAL_TEMPLATES))
        completion = template.format(recipient=recipient, body=body)
    else:
        channel = draw(st.sampled_from(["analysis", "commentary"]))
        content_type = draw(st.sampled_from(CONTENT_TYPES))
        header = draw(
            st.sampled_from(
                [
                    "<|channel|>{ch} to={r}{ct}<|message|>",
                    " to={r}<|channel|>{ch}{ct}<|message|>",
                    "<|channel|>analysis<|message|>Run it.<|end|>"
                    "<|start|>assistant to={r}<|channel|>{ch}{ct}<|message|>",
                    "<|channel|>commentary<|message|>Running it.<|end|>"
                    "<|start|>assistant<|channel|>{ch} to={r}{ct}<|message|>",
                ]
            )
        )
        completion = header.format(ch=channel, r=recipient, ct=content_type) + body + "<|call|>"
    return completion, RECIPIENTS[recipient], code


def _run_form(
    backend: LlamaCppBackend, db: Path, completion: str
) -> tuple[list[Chunk], RecordingComputer, Interpreter]:
    backend.replay = ReplayScript([completion, FINAL])
    computer = RecordingComputer()
    interpreter = Interpreter(backend=backend, computer=computer, db_path=db, auto_run=True)
    chunks = list(interpreter.chat("run it", stream=True, display=False))
    return chunks, computer, interpreter


def _check_same_everywhere(
    chunks: list[Chunk], computer: RecordingComputer, interpreter: Interpreter, language: str
) -> str:
    """The one code text shown, confirmed, stored, exported and run; returns it."""
    shown_chunks = [c for c in chunks if c["role"] == "assistant" and c["type"] == "code"]
    assert {c.get("format") for c in shown_chunks} == {language}
    shown = "".join(c["content"] for c in shown_chunks if "content" in c)
    (confirmation,) = [c for c in chunks if c["type"] == "confirmation"]
    assert confirmation["content"] == {"type": "code", "format": language, "content": shown}
    assert computer.ran == [(language, shown)]
    conversation = interpreter.conversation_id
    assert conversation is not None
    stored = [m for m in interpreter.store.load(conversation) if m["type"] == "code"]
    assert [(m["format"], m["content"]) for m in stored] == [(language, shown)]
    exported = messages_from_json(to_lmc_json(interpreter.messages))
    assert [m["content"] for m in exported if m["type"] == "code"] == [shown]
    return shown


@settings(max_examples=80)
@given(form=call_forms())
def test_every_call_form_shows_stores_exports_and_runs_the_same_code(
    backend: LlamaCppBackend, tmp_path_factory: pytest.TempPathFactory, form: tuple[str, str, str]
) -> None:
    completion, language, code = form
    db = tmp_path_factory.mktemp("forms") / "conversations.db"
    chunks, computer, interpreter = _run_form(backend, db, completion)
    try:
        assert _check_same_everywhere(chunks, computer, interpreter, language) == code
    finally:
        interpreter.close()


@pytest.mark.parametrize("index", range(len(REAL_TEMPLATES)))
def test_each_real_header_form(backend: LlamaCppBackend, tmp_path: Path, index: int) -> None:
    """Each real header, with the recipients and argument forms taken in turn."""
    recipient = sorted(RECIPIENTS)[index % len(RECIPIENTS)]
    body = ('{"code": "echo \\"hi\\"\\n"}', 'echo "hi"\n')[index // len(RECIPIENTS) % 2]
    completion = REAL_TEMPLATES[index].format(recipient=recipient, body=body)
    chunks, computer, interpreter = _run_form(backend, tmp_path / "c.db", completion)
    try:
        shown = _check_same_everywhere(chunks, computer, interpreter, RECIPIENTS[recipient])
        assert shown == 'echo "hi"\n'
    finally:
        interpreter.close()


def test_shell_without_the_functions_prefix_shows_and_runs_the_code(
    backend: LlamaCppBackend, tmp_path: Path
) -> None:
    """The case a new user met: ``to=shell`` with JSON arguments, in a real shell kernel."""
    backend.replay = ReplayScript(
        ['<|channel|>commentary to=shell<|message|>{"code": "echo no-prefix"}<|call|>', FINAL]
    )
    with (
        Computer(cwd=tmp_path) as computer,
        Interpreter(
            backend=backend, computer=computer, db_path=tmp_path / "c.db", auto_run=True
        ) as interpreter,
    ):
        chunks = list(interpreter.chat("run it", stream=True, display=False))
        shown = "".join(c["content"] for c in chunks if c["type"] == "code" and "content" in c)
        assert shown == "echo no-prefix"
        output = "".join(
            text_of(c) for c in chunks if c["type"] == "console" and c.get("format") == "output"
        )
        assert output.strip() == "no-prefix"
