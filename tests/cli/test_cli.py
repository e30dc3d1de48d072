"""``lmc`` through typer's CliRunner: stdout and stderr apart, the real llama.cpp path.

The tiny model is forced by a replay file to write what each test needs; the code it writes
runs in a real kernel.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import nbformat
import pytest
from support.cli_replays import code, final
from typer.testing import CliRunner, Result

from lmc.cli.app import app

ROOT = Path(__file__).resolve().parents[2]
SEED_CODE = code("34 / 24")
SEED_FINAL = final("The result of the division 34/24 is approximately 1.42.")

Replay = Callable[..., Path]


def _run(env: dict[str, str], *args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(app, list(args), env=env, input=input, catch_exceptions=False)


def test_help_and_version_import_nothing_heavy() -> None:
    probe = (
        "import sys\n"
        "sys.argv = ['lmc', '--help']\n"
        "from lmc.cli.app import app\n"
        "try:\n    app()\nexcept SystemExit:\n    pass\n"
        "heavy = {'rich', 'prompt_toolkit', 'llama_cpp', 'jupyter_client', 'zmq'}\n"
        "print(sorted(heavy & {m.split('.')[0] for m in sys.modules}))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert "run" in result.stdout and "Usage:" in result.stdout
    assert result.stdout.strip().splitlines()[-1] == "[]"


def test_version(lmc_env: dict[str, str]) -> None:
    result = _run(lmc_env, "--version")
    assert result.exit_code == 0
    assert result.stdout == "lmc 0.1.0\n" and result.stderr == ""


def test_run_answers_and_exits_zero(
    lmc_env: dict[str, str], tiny_model: Path, replay: Replay
) -> None:
    path = replay(SEED_CODE, SEED_FINAL)
    result = _run(lmc_env, "run", "-m", str(tiny_model), "--replay", str(path), "-y", "34/24?")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == (
        "```python\n34 / 24\n```\n1.4166666666666667\n"
        "The result of the division 34/24 is approximately 1.42.\n\n"
    )
    assert result.stderr == ""


def test_run_reads_the_prompt_from_stdin(
    lmc_env: dict[str, str], tiny_model: Path, replay: Replay
) -> None:
    path = replay(final("Hello there."))
    result = _run(lmc_env, "run", "-m", str(tiny_model), "--replay", str(path), input="hi\n")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "Hello there.\n\n"
    history = _run(lmc_env, "history")
    assert history.stdout.rstrip().endswith("hi")


def test_json_without_a_terminal_stops_at_the_first_block_and_says_so(
    lmc_env: dict[str, str], tiny_model: Path, replay: Replay, tmp_path: Path
) -> None:
    target = tmp_path / "made.txt"
    path = replay(code(f"open({str(target)!r}, 'w').write('x')"), final("Not made."))
    result = _run(lmc_env, "run", "-m", str(tiny_model), "--replay", str(path), "--json", "make it")
    assert result.exit_code == 1
    chunks = [json.loads(line) for line in result.stdout.splitlines()]  # nothing but JSON
    assert chunks[0]["role"] in ("assistant", "computer")
    assert chunks[-1]["type"] == "confirmation"  # the stream stops where it would ask
    assert not target.exists()
    assert result.stderr.count("\n") == 1
    assert "a block needs your confirmation and there is no terminal to ask" in result.stderr


def test_yes_runs_the_code(
    lmc_env: dict[str, str], tiny_model: Path, replay: Replay, tmp_path: Path
) -> None:
    target = tmp_path / "made.txt"
    path = replay(code(f"open({str(target)!r}, 'w').write('x')"), final("Made."))
    workdir = ("--workdir", str(tmp_path))  # where the sandbox lets the code write
    result = _run(
        lmc_env, "run", "-m", str(tiny_model), "--replay", str(path), "-y", *workdir, "make it"
    )
    assert result.exit_code == 0, result.stderr
    assert target.read_text() == "x"


def test_backend_error_mid_turn_is_one_line_after_what_was_shown(
    lmc_env: dict[str, str], tiny_model: Path, replay: Replay
) -> None:
    path = replay(code("1 + 1"))  # the recording ends before the model answers
    result = _run(lmc_env, "run", "-m", str(tiny_model), "--replay", str(path), "-y", "add")
    assert result.exit_code == 1
    assert result.stdout == "```python\n1 + 1\n```\n2\n"
    first, hint = result.stderr.splitlines()
    assert first.startswith("lmc: error: the replay ") and "no completion left" in first
    assert hint.startswith("lmc: hint: ")


def test_token_limit_is_exit_3_with_the_reason(
    lmc_env: dict[str, str], tiny_model: Path, replay: Replay
) -> None:
    path = replay(final("word " * 50))
    result = _run(
        lmc_env, "run", "-m", str(tiny_model), "--replay", str(path), "--max-tokens", "10", "x"
    )
    assert result.exit_code == 3
    assert result.stderr == (
        "lmc: no final answer: Stopped: the model reached the token limit (max_tokens=10) "
        "before it finished.\n"
    )


def test_step_limit_from_config_file(
    lmc_env: dict[str, str], tiny_model: Path, replay: Replay
) -> None:
    config = Path(lmc_env["LMC_CONFIG"])
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("max_steps = 1\n")
    path = replay(code("1 + 1"))
    result = _run(lmc_env, "run", "-m", str(tiny_model), "--replay", str(path), "-y", "add")
    assert result.exit_code == 3
    first = "lmc: no final answer: Stopped at the step limit: 1 tool call in one message"
    assert result.stderr.startswith(first)
    assert "--max-steps N" in result.stderr
    assert len(result.stderr.splitlines()) == 1


def test_empty_prompt_is_a_usage_error(lmc_env: dict[str, str]) -> None:
    result = _run(lmc_env, "run", input="")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == "lmc: error: the prompt is empty\n"


def test_missing_model_is_one_line_and_a_hint(lmc_env: dict[str, str], tmp_path: Path) -> None:
    result = _run(lmc_env, "run", "-m", str(tmp_path / "nope.gguf"), "hi")
    assert result.exit_code == 1
    assert result.stdout == ""
    first, second = result.stderr.splitlines()[:2]
    assert first == f"lmc: error: the model file {tmp_path / 'nope.gguf'} does not exist"
    assert second.startswith("lmc: hint: ")
    assert "Traceback" not in result.stderr


def test_bad_config_is_one_line(lmc_env: dict[str, str]) -> None:
    config = Path(lmc_env["LMC_CONFIG"])
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("reasoning = 'extreme'\n")
    result = _run(lmc_env, "run", "hi")
    assert result.exit_code == 1
    assert result.stderr.startswith("lmc: error: reasoning (config file ")
    assert "Traceback" not in result.stderr


def test_verbose_shows_the_traceback(lmc_env: dict[str, str], tmp_path: Path) -> None:
    result = _run(lmc_env, "run", "--verbose", "-m", str(tmp_path / "nope.gguf"), "hi")
    assert result.exit_code == 1
    assert "Traceback" in result.stderr


def test_bad_flag_value_is_a_usage_error(lmc_env: dict[str, str]) -> None:
    result = _run(lmc_env, "run", "--reasoning", "extreme", "hi")
    assert result.exit_code == 2
    assert "extreme" in result.stderr and result.stdout == ""


def test_history_list_show_export_and_resume(
    lmc_env: dict[str, str], tiny_model: Path, replay: Replay, tmp_path: Path
) -> None:
    first = replay(SEED_CODE, SEED_FINAL)
    assert _run(lmc_env, "run", "-m", str(tiny_model), "--replay", str(first), "-y", "34/24?")
    listing = _run(lmc_env, "history")
    assert listing.exit_code == 0
    (line,) = listing.stdout.splitlines()
    conversation = line.split()[0]
    assert line.endswith("34/24?")

    shown = _run(lmc_env, "history", "show", conversation[:6])
    assert shown.exit_code == 0, shown.stderr
    assert "> 34/24?" in shown.stdout and "1.4166666666666667" in shown.stdout

    notebook_path = tmp_path / "out.ipynb"
    exported = _run(lmc_env, "history", "export", conversation, "-o", str(notebook_path))
    assert exported.exit_code == 0, exported.stderr
    notebook = nbformat.read(notebook_path, as_version=4)
    nbformat.validate(notebook)
    assert [c.cell_type for c in notebook.cells] == ["markdown", "code", "markdown"]
    assert notebook.cells[1].outputs[0].text.strip() == "1.4166666666666667"

    markdown = _run(lmc_env, "history", "export", conversation, "-o", "-", "-f", "md")
    assert "```python\n34 / 24\n```" in markdown.stdout
    as_json = _run(lmc_env, "history", "export", conversation, "-o", "-", "-f", "json")
    messages = json.loads(as_json.stdout)
    assert messages[0] == {"role": "user", "type": "message", "content": "34/24?"}

    second = replay(final("Still 1.42."))
    resumed = _run(
        lmc_env, "run", "again?", "-m", str(tiny_model), "--replay", str(second), "--resume"
    )
    assert resumed.exit_code == 0, resumed.stderr
    (line,) = _run(lmc_env, "history").stdout.splitlines()
    assert line.split()[0] == conversation
    count = int(line.split()[3])
    assert count > len(messages)

    deleted = _run(lmc_env, "history", "delete", conversation)
    assert deleted.exit_code == 0
    assert _run(lmc_env, "history").stdout == ""


def test_models_lists_local_gguf_files(lmc_env: dict[str, str], tiny_model: Path) -> None:
    models = Path(lmc_env["LMC_DATA_DIR"]) / "models"
    models.mkdir(parents=True)
    (models / "mine.gguf").write_bytes(tiny_model.read_bytes())
    result = _run(lmc_env, "models")
    assert result.exit_code == 0
    assert str(models / "mine.gguf") in result.stdout


def test_doctor_reports_languages_and_backend(lmc_env: dict[str, str], tiny_model: Path) -> None:
    result = _run(lmc_env, "doctor", "-m", str(tiny_model))
    assert result.exit_code == 0, result.stdout
    assert "✓ python" in result.stdout
    assert "llama-cpp-python" in result.stdout
    assert "GPU offload" in result.stdout
    assert f"✓ model        {tiny_model}" in result.stdout
    # The context a chat would get, and why: the tiny model's trained context fits.
    assert "✓ context      16,384 tokens: lmc tiny gpt-oss's trained context" in result.stdout
    forced = _run({**lmc_env, "LMC_CONTEXT_SIZE": "2048"}, "doctor", "-m", str(tiny_model))
    assert "✓ context      2,048 tokens: as set" in forced.stdout


def test_verbose_says_the_context_and_why_at_start(
    lmc_env: dict[str, str], tiny_model: Path, replay: Replay
) -> None:
    path = replay(final("Hi."))
    result = _run(lmc_env, "run", "--verbose", "-m", str(tiny_model), "--replay", str(path), "hi")
    assert result.exit_code == 0, result.stderr
    assert "lmc: context: 16,384 tokens: lmc tiny gpt-oss's trained context" in result.stderr


@pytest.mark.parametrize("args", [["--help"], ["run", "--help"], ["history", "--help"]])
def test_help_pages(lmc_env: dict[str, str], args: list[str]) -> None:
    result = _run(lmc_env, *args)
    assert result.exit_code == 0 and "Usage:" in result.stdout and result.stderr == ""


def test_chat_json_mode_reads_messages_from_stdin(
    lmc_env: dict[str, str], tiny_model: Path, replay: Replay
) -> None:
    path = replay(final("One."), final("Two."))
    result = _run(
        lmc_env, "--json", "-m", str(tiny_model), "--replay", str(path), input="first\n\nsecond\n"
    )
    assert result.exit_code == 0, result.stderr
    chunks = [json.loads(line) for line in result.stdout.splitlines()]
    text = "".join(c.get("content", "") for c in chunks if c["type"] == "message")
    assert text == "One.Two."
    assert result.stderr == ""


def test_unknown_profile_flag(lmc_env: dict[str, str]) -> None:
    config = Path(lmc_env["LMC_CONFIG"])
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("[fast]\nreasoning = 'low'\n")
    result = _run(lmc_env, "run", "--profile", "slow", "hi")
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        f"lmc: error: no profile named 'slow' in {config}",
        "lmc: hint: profiles: fast",
    ]
