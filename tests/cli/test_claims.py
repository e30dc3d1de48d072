"""What the CLI's help, hints and ``lmc doctor`` say is true, and its options reach the model."""

from __future__ import annotations

import json
import re
import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from typer.testing import CliRunner, Result

from lmc.backends import llama
from lmc.cli.app import app


def _run(env: dict[str, str], *args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(app, list(args), env=env, input=input, catch_exceptions=False)


def test_verbose_shows_llama_cpp_s_own_reason_for_a_bad_model_file(
    lmc_env: dict[str, str], tmp_path: Path, tiny_model: Path
) -> None:
    """A GGUF whose header is whole but whose tensor data is cut short passes lmc's own check
    of the file (lmc/backends/model_file.py) and is refused by llama.cpp: one line without
    --verbose, llama.cpp's own reason with it."""
    bad = tmp_path / "cut.gguf"
    data = tiny_model.read_bytes()
    bad.write_bytes(data[: len(data) * 2 // 3])
    quiet = _run(lmc_env, "run", "-m", str(bad), "hi")
    assert quiet.exit_code == 1
    assert "may be truncated or corrupt" in quiet.stderr and str(bad) in quiet.stderr
    assert "not within the file bounds" not in quiet.stderr
    loud = _run(lmc_env, "run", "--verbose", "-m", str(bad), "hi")
    assert loud.exit_code == 1
    assert "not within the file bounds" in loud.stderr


def test_a_malformed_api_base_is_one_line(lmc_env: dict[str, str]) -> None:
    result = _run(lmc_env, "run", "--api-base", "http://[::1", "hi")
    assert result.exit_code == 1
    first, hint = result.stderr.splitlines()
    assert first.startswith("lmc: error: api_base 'http://[::1' is not a valid URL")
    assert hint == "lmc: hint: give the server's base URL, e.g. http://127.0.0.1:8080/v1"


@pytest.mark.skipif(shutil.which("R") is None, reason="R is not installed")
def test_doctor_shows_r_as_missing_without_irkernel(lmc_env: dict[str, str]) -> None:
    """R's library paths are emptied, so the R executable is there but IRkernel is not."""
    with_irkernel = _run(lmc_env, "doctor")
    assert re.search(r"✓ r +/", with_irkernel.stdout), with_irkernel.stdout
    hidden = {**lmc_env, "R_LIBS_SITE": "/nonexistent", "R_LIBS_USER": "/nonexistent"}
    without = _run(hidden, "doctor")
    assert "✗ r            install R and IRkernel" in without.stdout


def test_help_and_hints_name_options_that_exist(lmc_env: dict[str, str]) -> None:
    run_help = " ".join(_run(lmc_env, "run", "--help").stdout.split())  # unwrapped
    assert "--replay FILE" in run_help and "JSON file" not in run_help
    assert "one per line" in run_help
    for option in re.findall(r"--[a-z][a-z-]+", llama._OVERFLOW_HINT):
        assert option in run_help, f"the context overflow hint names {option}"
    assert "--top-p P" in run_help


class _Recorder(BaseHTTPRequestHandler):
    """An OpenAI-compatible /v1/completions that records each request and answers "Hi."."""

    bodies: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", 0))
        _Recorder.bodies.append(json.loads(self.rfile.read(length)))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for text, finish in (("<|channel|>final<|message|>Hi.", None), ("", "stop")):
            event = {"choices": [{"index": 0, "text": text, "finish_reason": finish}]}
            self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    _Recorder.bodies = []
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(10)


def test_top_p_from_the_config_file_and_the_flag_reaches_the_model(
    lmc_env: dict[str, str], server: str
) -> None:
    config = Path(lmc_env["LMC_CONFIG"])
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("top_p = 0.25\n")
    by_file = _run(lmc_env, "run", "--api-base", server, "--api-style", "completions", "hi")
    assert by_file.exit_code == 0, by_file.stderr
    assert by_file.stdout == "Hi.\n\n"
    raw = ("--api-base", server, "--api-style", "completions")
    by_flag = _run(lmc_env, "run", *raw, "--top-p", "0.5", "hi")
    assert by_flag.exit_code == 0, by_flag.stderr
    assert [body["top_p"] for body in _Recorder.bodies] == [0.25, 0.5]
    too_big = _run(lmc_env, "run", "--top-p", "1.5", "hi")
    assert too_big.exit_code == 2
