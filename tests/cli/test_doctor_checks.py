"""``lmc doctor`` checks what it claims, and ``lmc serve``'s bad inputs are one line each."""

from __future__ import annotations

import socket
import struct
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from lmc.cli.app import app
from lmc.extras import install_hint

ROOT = Path(__file__).resolve().parents[2]


def _run(env: dict[str, str], *args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(app, list(args), env=env, catch_exceptions=False)


def _line(stdout: str, name: str) -> str:
    return next(line for line in stdout.splitlines() if line.split()[1:2] == [name])


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_doctor_checks_the_api_base_is_a_url_that_answers(lmc_env: dict[str, str]) -> None:
    no_scheme = _run(lmc_env, "doctor", "--api-base", "127.0.0.1:8000/v1")
    assert no_scheme.exit_code == 1
    assert "is not an http(s) URL" in _line(no_scheme.stdout, "server")
    silent = _run(lmc_env, "doctor", "--api-base", f"http://127.0.0.1:{_closed_port()}/v1")
    assert silent.exit_code == 1
    assert "cannot connect" in _line(silent.stdout, "server")


def test_doctor_opens_the_model_file(
    lmc_env: dict[str, str], tiny_model: Path, tmp_path: Path
) -> None:
    text = tmp_path / "model.gguf"
    text.write_text("not a model\n")
    result = _run(lmc_env, "doctor", "-m", str(text))
    assert result.exit_code == 1
    assert _line(result.stdout, "model").lstrip().startswith("✗")
    assert "not a GGUF model file" in result.stdout

    corrupt = tmp_path / "corrupt.gguf"
    data = bytearray(tiny_model.read_bytes())
    data[24:32] = struct.pack("<Q", 2**64 - 1)  # the first key's length: beyond any file
    corrupt.write_bytes(bytes(data))
    result = _run(lmc_env, "doctor", "-m", str(corrupt))
    assert result.exit_code == 1
    model = _line(result.stdout, "model")
    assert model.lstrip().startswith("✗") and "a corrupt GGUF file" in model
    assert "bug in lmc" not in result.stdout + result.stderr

    good = _run(lmc_env, "doctor", "-m", str(tiny_model))
    assert _line(good.stdout, "model").lstrip().startswith("✓")


def test_serve_with_a_port_out_of_range_is_one_line(lmc_env: dict[str, str]) -> None:
    result = _run(lmc_env, "serve", "--port", "99999")
    assert result.exit_code == 2
    assert result.stderr == "lmc: error: --port must be a number from 0 to 65535, not 99999\n"


def test_serve_without_the_server_extra_fails_before_any_url(lmc_env: dict[str, str]) -> None:
    probe = (
        "import sys\n"
        "sys.modules['websockets'] = None  # as if the server extra were not installed\n"
        "from lmc.cli.app import app\n"
        "sys.argv = ['lmc', 'serve', '--port', '0']\n"
        "app()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), **lmc_env},
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert done.stdout == ""  # no URL
    assert done.stderr == (
        "lmc: error: lmc serve needs the server extra (missing: websockets): "
        f"{install_hint('server')}\n"
    )


def test_what_is_not_used_here_is_neutral_not_broken(
    lmc_env: dict[str, str], tiny_model: Path
) -> None:
    """AppleScript off macOS, GPU offload without a GPU, MCP without servers: a neutral –,
    never ✗, and never a failure of the check."""
    from lmc.cli.doctor import _offload_line, mark

    result = _run(lmc_env, "doctor", "-m", str(tiny_model))
    assert result.exit_code == 0, result.stdout
    if sys.platform != "darwin":
        assert _line(result.stdout, "applescript").lstrip().startswith("– applescript  not used")
    mcp = result.stdout.split("sandbox\n", 1)[1]
    assert "– mcp          not used here: no MCP servers" in mcp
    # A healthy install (tiny model): nothing broken but, without network here, the speech
    # model still to download (optional: it does not fail the check).
    broken = [line.split()[1] for line in result.stdout.splitlines() if "✗" in line]
    assert set(broken) <= {"stt"}, result.stdout
    no_gpu = _offload_line(False, gpu=None)
    assert mark(no_gpu[1], no_gpu[2]) == "–" and "no GPU on this machine" in no_gpu[2]
    unused_gpu = _offload_line(False, gpu=("an NVIDIA GPU", "CMAKE_ARGS=... pip install"))
    assert mark(unused_gpu[1], unused_gpu[2]) == "✗"  # a GPU the build cannot use: broken
    assert mark(*_offload_line(True)[1:]) == "✓"


def test_a_model_still_to_download_is_good_only_when_the_hub_answers(
    lmc_env: dict[str, str], tiny_model: Path, tmp_path: Path
) -> None:
    from support.hf_hub import serve_hub

    from lmc.backends.resolve import DEFAULT_MODEL, parse_hf_spec

    repo, filename = parse_hf_spec(DEFAULT_MODEL)
    assert filename is not None
    with serve_hub({repo: {filename: tiny_model}}) as hub:
        answers = _run({**lmc_env, "HF_ENDPOINT": hub.url}, "doctor")
    assert hub.downloads() == []  # asked, not downloaded
    model = _line(answers.stdout, "model")
    assert model.lstrip().startswith("✓") and "fetched on first use, the Hub answers" in model
    dead = _run({**lmc_env, "HF_ENDPOINT": f"http://127.0.0.1:{_closed_port()}"}, "doctor")
    assert dead.exit_code == 1
    model = _line(dead.stdout, "model")
    assert model.lstrip().startswith("✗") and "the Hugging Face Hub cannot be reached" in model
    offline = _run({**lmc_env, "HF_HUB_OFFLINE": "1"}, "doctor")
    assert "not downloaded yet, and HF_HUB_OFFLINE is set" in _line(offline.stdout, "model")
