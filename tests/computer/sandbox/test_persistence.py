"""Nothing written in the sandbox runs later on the host: inside the writable workdir the
repository's hooks and config and the virtual environment are read-only (unless kept
writable on purpose); with the workdir at $HOME, rc files, config, autostart and
authorized_keys are too; a workdir of / is refused. Real writes, checked from outside,
that succeed with the sandbox off."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.sandbox_testing import PREFIX_LINE, Place, output_of, write_code

from lmc.computer import Computer
from lmc.errors import ConfigError


@pytest.fixture
def project(place: Place) -> Iterator[Path]:
    root = place.root / "project"
    for folder in (".git/hooks", ".venv/lib/python3.11/site-packages", ".venv/bin", "src"):
        (root / folder).mkdir(parents=True)
    (root / ".git" / "config").write_text("[core]\n")
    (root / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    yield root
    shutil.rmtree(root, ignore_errors=True)


TARGETS = {
    "hook": ".git/hooks/post-checkout",
    "git-config": ".git/config",
    "pth": ".venv/lib/python3.11/site-packages/evil.pth",
    "venv-bin": ".venv/bin/python-evil",
}


@pytest.mark.parametrize("language", ["python", "shell"])
@pytest.mark.parametrize("target", sorted(TARGETS))
def test_repository_and_venv_are_read_only_in_the_workdir(
    target: str, language: str, project: Path
) -> None:
    path = project / TARGETS[target]
    with Computer(sandbox="workspace", workdir=project) as contained:
        out = output_of(contained, language, write_code(language, path))
        assert PREFIX_LINE in out, out
        assert not path.exists() or path.read_text() == "[core]\n"
        output_of(contained, language, write_code(language, project / "src" / "ok"))
        assert (project / "src" / "ok").read_text().strip() == "x"
    with Computer(sandbox="off", workdir=project) as uncontained:
        output_of(uncontained, language, write_code(language, path))
        assert path.read_text().strip() == "x"


def test_kept_writable_paths_stay_writable(project: Path) -> None:
    path = project / TARGETS["pth"]
    with Computer(sandbox="workspace", workdir=project, sandbox_writable=(".venv",)) as computer:
        output_of(computer, "python", write_code("python", path))
    assert path.read_text() == "x"
    assert not (project / ".git" / "hooks" / "post-checkout").exists()


@pytest.fixture
def home_work(place: Place, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    home = place.root / "home-as-workdir"
    for folder in (".config/autostart", ".config/systemd/user", ".ssh", "projects"):
        (home / folder).mkdir(parents=True)
    (home / ".bashrc").write_text("# rc\n")
    monkeypatch.setenv("HOME", str(home))
    yield home
    shutil.rmtree(home, ignore_errors=True)


HOME_TARGETS = (
    ".bashrc",
    ".profile",
    ".config/autostart/evil.desktop",
    ".config/systemd/user/evil.service",
    ".ssh/authorized_keys",
    ".config/lmc/config.toml",
)


@pytest.mark.parametrize("language", ["python", "shell"])
def test_with_the_workdir_at_home_dot_entries_stay_read_only(
    language: str, home_work: Path
) -> None:
    with Computer(sandbox="workspace", workdir=home_work) as contained:
        for name in HOME_TARGETS:
            output_of(contained, language, write_code(language, home_work / name))
            path = home_work / name
            assert not path.exists() or path.read_text() == "# rc\n", name
        inside = home_work / "projects" / "made.txt"
        output_of(contained, language, write_code(language, inside))
        assert inside.read_text().strip() == "x"  # the person's folders stay writable
    with Computer(sandbox="off", workdir=home_work) as uncontained:
        (home_work / ".config" / "lmc").mkdir()
        for name in HOME_TARGETS:
            output_of(uncontained, language, write_code(language, home_work / name))
            assert (home_work / name).read_text().strip() == "x", name


def test_a_workdir_of_root_is_refused() -> None:
    with pytest.raises(ConfigError, match="cannot use / as the working directory"):
        Computer(sandbox="workspace", workdir="/")
    Computer(sandbox="off", workdir="/").close()
