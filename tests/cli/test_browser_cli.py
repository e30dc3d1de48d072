"""``--browser`` from the command line and the config file, with a replayed model that
searches a SearXNG-shaped server on loopback, opens a result, finds a word and answers."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from support.cli_replays import final
from support.search_site import SearchSite, search_site
from typer.testing import CliRunner, Result

from lmc.cli.app import app

Replay = Callable[..., Path]


def _run(env: dict[str, str], *args: str) -> Result:
    return CliRunner().invoke(app, list(args), env=env, catch_exceptions=False)


def call(function: str, arguments: dict[str, object]) -> str:
    return (
        f"<|channel|>analysis to=browser.{function} code<|message|>{json.dumps(arguments)}<|call|>"
    )


@pytest.fixture
def site() -> Iterator[SearchSite]:
    with search_site() as running:
        yield running


@pytest.fixture
def private_ok(lmc_env: dict[str, str]) -> dict[str, str]:
    """The site is on loopback, which the browser refuses unless the config allows it."""
    Path(lmc_env["LMC_CONFIG"]).write_text("[browser]\nallow_private = true\n")
    return lmc_env


def test_run_searches_opens_finds_and_answers(
    private_ok: dict[str, str], tiny_model: Path, replay: Replay, site: SearchSite
) -> None:
    path = replay(
        call("search", {"query": "jupyter kernels"}),
        call("open", {"id": 1}),
        call("find", {"pattern": "iopub"}),
        final("Output comes on IOPub 【1†L6】."),
    )
    result = _run(
        private_ok,
        "run",
        "-m",
        str(tiny_model),
        "--replay",
        str(path),
        "-y",
        "--json",
        "--browser",
        "searxng",
        "--browser-url",
        site.url,
        "where does output go?",
    )
    assert result.exit_code == 0, result.stderr
    chunks = [json.loads(line) for line in result.stdout.splitlines()]
    calls = [c["format"] for c in chunks if c["type"] == "tool_call" and c.get("start")]
    assert calls == ["browser.search", "browser.open", "browser.find"]
    output = "".join(c.get("content", "") for c in chunks if c.get("format") == "output")
    assert "【1†Messaging protocol†127.0.0.1:" in output
    assert f"[1] Messaging protocol ({site.url}/docs/protocol.html)" in output
    assert "L0: # 【0†match at L4】" in output
    assert site.queries == ["jupyter kernels"]
    assert site.paths == ["/search", "/docs/protocol.html"]


def test_the_config_file_names_the_backend(
    lmc_env: dict[str, str], tiny_model: Path, replay: Replay, site: SearchSite
) -> None:
    Path(lmc_env["LMC_CONFIG"]).write_text(
        f'[browser]\nbackend = "searxng"\nurl = "{site.url}"\nallow_private = true\n'
    )
    path = replay(call("search", {"query": "kernels"}), final("Found."))
    result = _run(lmc_env, "run", "-m", str(tiny_model), "--replay", str(path), "-y", "go")
    assert result.exit_code == 0, result.stderr
    assert site.queries == ["kernels"]
    assert result.stdout.endswith("Found.\n\n")


def test_an_unusable_browser_is_one_line_before_the_model_is_asked(
    lmc_env: dict[str, str], tiny_model: Path, replay: Replay
) -> None:
    path = replay(final("never"))
    result = _run(
        lmc_env, "run", "-m", str(tiny_model), "--replay", str(path), "--browser", "searxng", "q"
    )
    assert result.exit_code != 0
    assert result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        "lmc: error: --browser searxng needs --browser-url: the address of a SearXNG instance "
        "(for example http://127.0.0.1:8888)"
    ]
    bad = _run(lmc_env, "run", "-m", str(tiny_model), "--browser", "bing", "q")
    assert bad.exit_code == 2
    assert "'bing' is not one of 'searxng', 'exa', 'local'" in bad.stderr


def test_doctor_checks_the_search_backend(
    lmc_env: dict[str, str], tiny_model: Path, site: SearchSite
) -> None:
    args = ("doctor", "-m", str(tiny_model), "--browser", "searxng", "--browser-url", site.url)
    result = _run(lmc_env, *args)
    assert f"✓ browser      searxng at {site.url} answers (3 results)" in result.stdout
    site.json_enabled = False
    refused = _run(lmc_env, *args)
    assert refused.exit_code == 1
    assert "✗ browser      searxng at" in refused.stdout
    assert "add `json` to `search.formats`" in refused.stdout
