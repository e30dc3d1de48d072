"""The local browser (``--browser local DOCS``) reads no link the code planted in its folder.

The attack: the documents folder is in the working directory, so a block in the default
sandbox can plant ``docs/leak.md -> ~/.ssh/id_rsa`` (a fake one, outside the working
directory; the sandbox hides it, but lmc's own process does not run in the sandbox). The
model then searches and opens it. Checked from outside: lmc's ``--json`` output (what the
model was given) never holds the key. The read the backend did before (``Path.open``, which
follows the link) is shown taking the key.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

from support.cli_replays import code, final
from typer.testing import CliRunner

from lmc.browser.local_files import LocalFilesBackend
from lmc.cli.app import app

Replay = Callable[..., Path]

KEY = "-----BEGIN OPENSSH PRIVATE KEY----- SECRET-KEY-BYTES"


def _browser(function: str, arguments: dict[str, object]) -> str:
    """A call as gpt-oss writes it (tests/fixtures/gptoss_real: ``to=browser.search code``)."""
    body = json.dumps(arguments)
    return f"<|channel|>analysis to=browser.{function} code<|message|>{body}<|call|>"


def test_a_planted_link_in_the_documents_is_not_read(
    lmc_env: dict[str, str], tiny_model: Path, replay: Replay, tmp_path: Path
) -> None:
    key = tmp_path / "home" / ".ssh" / "id_rsa"
    key.parent.mkdir(parents=True)
    key.write_text(KEY + "\n")
    work = tmp_path / "work"
    docs = work / "docs"
    docs.mkdir(parents=True)
    (docs / "guide.md").write_text("# Guide\nThe PRIVATE notes of the project.\n")
    plant = code(f"import os\nos.symlink({str(key)!r}, 'docs/leak.md')")
    completions = replay(
        plant,
        _browser("search", {"query": "PRIVATE"}),
        _browser("open", {"id": f"file://{docs / 'leak.md'}"}),
        final("ok"),
    )
    result = CliRunner().invoke(
        app,
        ["run", "-m", str(tiny_model), "-y", "--json", "--workdir", str(work),
         "--browser", "local", "--browser-url", str(docs), "--replay", str(completions), "go"],
        env=lmc_env, catch_exceptions=False,
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert os.readlink(docs / "leak.md") == str(key)  # the code planted it, from the sandbox
    assert "guide.md" in result.stdout  # the search ran over the real documents
    assert "SECRET-KEY-BYTES" not in result.stdout
    assert "no document" in result.stdout  # the open was refused

    backend = LocalFilesBackend(docs)
    assert [p.name for p in backend._documents()] == ["guide.md"]
    # The read the backend did before, Path.open on what rglob listed, followed the link:
    with (docs / "leak.md").open("rb") as file:
        assert b"SECRET-KEY-BYTES" in file.read()
    assert (docs / "leak.md").is_file()  # and the old listing (is_file) kept it
