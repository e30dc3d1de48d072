"""apply_patch cannot do from the host what the sandbox refuses the code.

A patch is applied by lmc's own process, outside the sandbox. lmc started in the home folder
(a fake one: ``HOME`` points at it) makes the home the working directory; the sandbox hides
``~/.ssh`` and lmc's config from the code and keeps ``~/.bashrc`` read-only. The model's
patches try to move the key into a visible file, plant ``.bashrc`` and switch the sandbox off
in lmc's config, through ``lmc run -y``. Checked from outside: the key stays where it was and
nothing was written; the patch answer says why. With the guard off (``hide=None``, what the
tool did before) the same patches go through.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from support.cli_replays import code, final
from typer.testing import CliRunner

from lmc.cli.app import app
from lmc.workspace.patch import apply_patch

Replay = Callable[..., Path]

STEAL = (
    "*** Begin Patch\n*** Update File: .ssh/id_rsa\n*** Move to: stolen.txt\n@@\n KEY\n"
    "*** End Patch"
)
RC = "*** Begin Patch\n*** Add File: .bashrc\n+touch ~/PWNED\n*** End Patch"
CONFIG = "*** Begin Patch\n*** Add File: .config/lmc/config.toml\n+sandbox = 'off'\n*** End Patch"


def _patch(text: str) -> str:
    return f"<|channel|>commentary to=functions.apply_patch<|message|>{text}<|call|>"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    (folder / ".ssh").mkdir(parents=True)
    (folder / ".ssh" / "id_rsa").write_text("KEY\n")
    return folder


def test_patches_into_what_the_sandbox_hides_are_refused(
    lmc_env: dict[str, str], tiny_model: Path, replay: Replay, home: Path
) -> None:
    env = {**lmc_env, "HOME": str(home)}
    env.pop("XDG_CONFIG_HOME")  # lmc's config folder is ~/.config/lmc (LMC_CONFIG stays)
    completions = replay(
        code("print(open('.ssh/id_rsa').read())"),
        _patch(STEAL),
        _patch(RC),
        _patch(CONFIG),
        final("ok"),
    )
    result = CliRunner().invoke(
        app,
        ["run", "-m", str(tiny_model), "-y", "--json", "--workdir", str(home),
         "--replay", str(completions), "go"],
        env=env, catch_exceptions=False,
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    outputs = [
        json.loads(line).get("content", "")
        for line in result.stdout.splitlines()
        if '"format": "output"' in line
    ]
    assert "Error" in outputs[0] and "KEY" not in outputs[0]  # hidden from the code itself
    answers = [o for o in outputs if o.startswith("Error applying patch")]
    assert len(answers) == 3, outputs
    assert "the sandbox hides it" in answers[0] and "dot entries read-only" in answers[1]
    assert (home / ".ssh" / "id_rsa").read_text() == "KEY\n"
    assert not (home / "stolen.txt").exists() and not (home / ".bashrc").exists()
    assert not (home / ".config" / "lmc" / "config.toml").exists()


def test_without_the_guard_the_same_patches_go_through(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(home))
    for text in (STEAL, RC, CONFIG):
        apply_patch(home, text, hide=None)
    assert (home / "stolen.txt").read_text() == "KEY\n" and not (home / ".ssh" / "id_rsa").exists()
    assert (home / ".bashrc").exists() and (home / ".config" / "lmc" / "config.toml").exists()
