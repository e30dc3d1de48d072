"""Where ``lmc run`` keeps its files and who may read them, checked on a real run.

The run's code shows an image and an HTML document, so every kind of file lmc writes comes
into being: the conversation database, saved outputs and the prefix state cache.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

from support.cli_replays import code, final
from support.replay import write_replay

from lmc.agent.storage import ConversationStore

ROOT = Path(__file__).resolve().parents[2]
SHOW_OUTPUTS = code(
    "from IPython.display import display\n"
    "display({'image/png': 'iVBORw0KGgo='}, raw=True)\n"
    "display({'text/html': '<b>hi</b>'}, raw=True)\n"
    "print('shown')"
)
HTML_TOOL = (
    "<|channel|>commentary to=functions.html <|constrain|>json"
    '<|message|>{"code": "<h1>report</h1>"}<|call|>'
)


def _run(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lmc", "run", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **env, "PYTHONPATH": str(ROOT)},
        cwd=cwd,
        timeout=180,
        check=False,
        preexec_fn=lambda: os.umask(0o022),  # the usual umask, which would make files 0644
    )


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_data_state_and_cache_are_private_and_the_database_follows_lmc_data_dir(
    lmc_env: dict[str, str], tiny_model: Path, tmp_path: Path
) -> None:
    data = tmp_path / "elsewhere" / "lmc-data"
    cache = tmp_path / "cache" / "lmc"
    old_db = data / "conversations.db"
    data.mkdir(parents=True, mode=0o755)
    old_db.touch(mode=0o644)  # what an older lmc left: tightened on use
    env = {**lmc_env, "LMC_DATA_DIR": str(data), "LMC_CACHE_DIR": str(cache)}
    replay = write_replay(tmp_path / "r.txt", [SHOW_OUTPUTS, HTML_TOOL, final("Shown.")])
    args = ("-y", "-m", str(tiny_model), "--replay", str(replay), "show things")
    result = _run(env, tmp_path, *args)
    assert result.returncode == 0, result.stderr
    assert "Shown." in result.stdout

    # LMC_DATA_DIR holds the database (and nothing went to the XDG data dir).
    with ConversationStore(old_db) as store:
        assert len(store.list_conversations()) == 1
    assert not (Path(lmc_env["XDG_DATA_HOME"]) / "lmc" / "conversations.db").exists()

    outputs = sorted((data / "outputs").iterdir())
    assert [p.suffix for p in outputs] == [".png", ".html", ".html"]
    page = outputs[2].read_text()  # with the network off, a page may load nothing from it
    assert page.startswith('<meta http-equiv="Content-Security-Policy" content="default-src')
    assert page.endswith("><h1>report</h1>")
    states = list((cache / "prefix-states").iterdir())
    assert states, "no prefix state was written"
    for directory in (data, data / "outputs", cache, cache / "prefix-states"):
        assert _mode(directory) == 0o700, directory
    files = [old_db, *outputs, *states]
    files += [p for p in data.iterdir() if p.name.startswith("conversations.db-")]
    for path in files:
        assert _mode(path) == 0o600, path


def test_an_unusable_data_dir_loses_no_answer(
    lmc_env: dict[str, str], tiny_model: Path, tmp_path: Path
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    env = {
        **lmc_env,
        "LMC_DATA_DIR": str(blocker / "lmc"),
        "LMC_DB_PATH": str(tmp_path / "db" / "conversations.db"),
    }
    replay = write_replay(tmp_path / "r.txt", [SHOW_OUTPUTS, HTML_TOOL, final("The answer.")])
    result = _run(env, tmp_path, "-y", "-m", str(tiny_model), "--replay", str(replay), "go")
    assert result.returncode == 0, result.stderr
    assert "shown" in result.stdout and "The answer." in result.stdout
    problems = [line for line in result.stdout.splitlines() if "was not saved" in line]
    assert problems == [
        f"[the image was not saved: {blocker / 'lmc' / 'outputs'}: Not a directory]",
        f"[the HTML was not saved: {blocker / 'lmc' / 'outputs'}: Not a directory]",
        f"[the HTML was not saved: {blocker / 'lmc' / 'outputs'}: Not a directory]",
    ]
    assert result.stderr == ""


def test_html_is_not_opened_without_a_person_at_the_terminal(
    lmc_env: dict[str, str], tiny_model: Path, tmp_path: Path
) -> None:
    opened = tmp_path / "opened.txt"
    browser = tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\necho "$1" >> {opened}\n')
    browser.chmod(0o755)
    replay = write_replay(tmp_path / "r.txt", [HTML_TOOL, final("Shown.")])
    env = {**lmc_env, "BROWSER": str(browser), "DISPLAY": ":0"}
    for extra in ((), ("--json",)):
        args = ("-y", "-m", str(tiny_model), "--replay", str(replay), *extra, "show")
        result = _run(env, tmp_path, *args)
        assert result.returncode == 0, result.stderr
    assert not opened.exists()
    chunks = [json.loads(line) for line in result.stdout.splitlines()]
    [html] = [
        c for c in chunks if (c["role"], c["type"], c.get("format")) == ("computer", "code", "html")
    ]
    assert html["content"].endswith("><h1>report</h1>")  # after the no-network CSP
    assert html["content"].startswith('<meta http-equiv="Content-Security-Policy"')
