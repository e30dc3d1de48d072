"""``lmc mcp serve`` driven by the MCP SDK's own stdio client, as Codex or Claude would."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.types import CallToolResult, ImageContent, TextContent

ROOT = Path(__file__).resolve().parents[2]


def _text(result: CallToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, TextContent))


async def _session_calls(tmp_path: Path, calls: list[tuple[str, dict[str, Any]]]) -> Any:
    """The server's initialize result and tools, and each call's result."""
    (tmp_path / "config.toml").touch()  # LMC_CONFIG naming a missing file is an error
    if (tmp_path / "config.in").exists():
        (tmp_path / "config.toml").write_text((tmp_path / "config.in").read_text())
    env = {
        "PYTHONPATH": str(ROOT),
        "LMC_CONFIG": str(tmp_path / "config.toml"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "lmc", "mcp", "serve"], env=env, cwd=str(tmp_path)
    )
    with (tmp_path / "serve.log").open("w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            initialized = await session.initialize()
            tools = await session.list_tools()
            results = [await session.call_tool(name, arguments) for name, arguments in calls]
    return initialized, tools, results


def _run(tmp_path: Path, calls: list[tuple[str, dict[str, Any]]]) -> Any:
    async def main() -> Any:
        with anyio.fail_after(300):
            return await _session_calls(tmp_path, calls)

    return anyio.run(main)


def test_python_keeps_its_state_between_calls_and_shell_runs(tmp_path: Path) -> None:
    initialized, tools, results = _run(
        tmp_path,
        [
            ("run_code", {"language": "python", "code": "x = 6 * 7"}),
            ("run_code", {"language": "python", "code": "print(x)"}),
            ("run_code", {"language": "shell", "code": "echo hello from $(basename $PWD)"}),
            ("languages", {}),
        ],
    )
    assert [tool.name for tool in tools.tools] == ["run_code", "jobs", "languages"]
    run_code = tools.tools[0]
    assert run_code.input_schema["required"] == ["language", "code"]
    first, second, shell, languages = results
    assert not first.is_error and _text(first) == "(no output)"
    assert _text(second) == "42\n"
    assert _text(shell) == f"hello from {tmp_path.name}\n"
    assert _text(languages).splitlines()[0] == "python"
    assert "shell" in _text(languages).splitlines()
    # On main: applescript was listed on Linux, the server version was empty, and prompts and
    # resources were advertised though lmc serves neither.
    assert "applescript" not in _text(languages).splitlines()
    from lmc import __version__

    info, capabilities = initialized.server_info, initialized.capabilities
    assert (info.name, info.version) == ("lmc", __version__)
    assert capabilities.tools is not None
    assert (capabilities.prompts, capabilities.resources, capabilities.completions) == (
        None,
        None,
        None,
    )


def test_errors_come_back_to_the_client(tmp_path: Path) -> None:
    _, _, (unknown, apple, missing, raised) = _run(
        tmp_path,
        [
            ("run_code", {"language": "cobol", "code": "DISPLAY 'HI'."}),
            ("run_code", {"language": "applescript", "code": "beep"}),
            ("run_code", {"language": "python"}),
            ("run_code", {"language": "python", "code": "1 / 0"}),
        ],
    )
    assert unknown.is_error
    assert _text(unknown).startswith("lmc cannot run 'cobol' code here; it runs python, shell")
    assert apple.is_error and "applescript" not in _text(apple).partition("runs")[2]
    assert missing.is_error
    assert _text(missing) == 'run_code needs {"language": "...", "code": "..."}, both strings.'
    # On main an exception in the code came back with isError: false.
    assert raised.is_error
    assert "ZeroDivisionError" in _text(raised)


def test_images_come_back_as_image_content(tmp_path: Path) -> None:
    code = (
        "from IPython.display import Image, display\n"
        "import base64\n"
        "display(Image(data=base64.b64decode('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAAD"
        "UlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==')))\n"
    )
    _, _, (result,) = _run(tmp_path, [("run_code", {"language": "python", "code": code})])
    images = [block for block in result.content if isinstance(block, ImageContent)]
    assert len(images) == 1 and images[0].mime_type == "image/png"


def test_output_is_capped_like_the_terminals_with_a_note(tmp_path: Path) -> None:
    # On main one call returned all 2,000,001 characters.
    from lmc.mcp.serve import OUTPUT_LIMIT

    code = "print('x' * 2_000_000)"
    _, _, (result,) = _run(tmp_path, [("run_code", {"language": "python", "code": code})])
    text = _text(result)
    assert len(text) < OUTPUT_LIMIT + 400
    assert text.endswith("[output shortened: 2,000,001 characters in all]\n")
    assert not result.is_error


def test_a_kernel_that_cannot_start_is_an_error(tmp_path: Path) -> None:
    # On main every failure but an unknown language came back with isError: false.
    (tmp_path / "config.in").write_text(f'workdir = "{tmp_path / "gone"}"\n')
    _, _, (result,) = _run(tmp_path, [("run_code", {"language": "python", "code": "1"})])
    assert result.is_error
    assert "could not run the python kernel" in _text(result)


def test_a_long_run_is_handed_back_as_a_job_the_client_polls_and_stops(tmp_path: Path) -> None:
    """block_timeout from the config (1 s): a real sleep goes on as job 1."""
    from support.processes import unique_seconds, wait_until_gone

    sleep = ("sleep", unique_seconds(1000))
    (tmp_path / "config.in").write_text("block_timeout = 1\n")
    _, _, (ran, polled, stopped, unknown, bad) = _run(
        tmp_path,
        [
            ("run_code", {"language": "shell", "code": "echo started; " + " ".join(sleep)}),
            ("jobs", {"action": "poll", "job": 1}),
            ("jobs", {"action": "stop", "job": 1}),
            ("jobs", {"action": "poll", "job": 2}),
            ("jobs", {"action": "explode"}),
        ],
    )
    assert not ran.is_error
    assert "goes on in the background as job 1" in _text(ran)
    assert _text(polled).startswith("job 1 is still running")
    assert _text(stopped).startswith("job 1 stopped")
    assert _text(unknown) == "There is no job 2 (jobs: 1).\n"
    assert bad.is_error and '"action" must be' in _text(bad)
    assert wait_until_gone(*sleep)


def test_the_client_writes_a_line_to_a_job_and_ends_its_input(tmp_path: Path) -> None:
    """`read` in a job gets the client's line; `eof` ends a `cat`; a python job takes none."""
    (tmp_path / "config.in").write_text("block_timeout = 1\n")
    waits = "while [ ! -e go ]; do sleep 0.05; done; "
    _, _, (ran, written, touched, polled, ended, python, refused) = _run(
        tmp_path,
        [
            ("run_code", {"language": "shell", "code": waits + "read a; echo got:$a; cat"}),
            ("jobs", {"action": "write", "job": 1, "text": "yes"}),
            ("run_code", {"language": "shell", "code": "touch go"}),
            ("jobs", {"action": "poll", "job": 1, "wait": 0}),
            ("jobs", {"action": "eof", "job": 1, "wait": 60}),
            ("run_code", {"language": "python", "code": "import time; time.sleep(60)"}),
            ("jobs", {"action": "write", "job": 2, "text": "no"}),
        ],
    )
    assert "goes on in the background as job 1" in _text(ran)
    assert _text(written).startswith("job 1: 4 bytes sent"), _text(written)
    assert not touched.is_error and not polled.is_error
    assert "got:yes" in _text(polled) + _text(ended)
    assert _text(ended).startswith("job 1: its input is closed (end of input); it is finished")
    assert "job 2" in _text(python)
    assert _text(refused).startswith("job 2 takes no input: the python kernel runs the code")
