"""Languages, aliases, and the runs that need no kernel (they never raise)."""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.computer_testing import collect, output_of

from lmc.computer import Computer
from lmc.computer.applescript import applescript_command
from lmc.computer.html import without_network
from lmc.computer.languages import resolve_language


@pytest.fixture()
def bare() -> Iterator[Computer]:
    with Computer() as computer:
        yield computer


def test_languages_lists_every_language(bare: Computer) -> None:
    assert bare.languages == ("python", "shell", "javascript", "r", "html", "applescript")


def test_the_languages_are_declared_once() -> None:
    """The computer runs exactly the languages the LMC format names, and the model's function
    tools are those but python (built in)."""
    from lmc.agent.tools import FUNCTION_LANGUAGES
    from lmc.computer.languages import LANGUAGES
    from lmc.messages.schema import CODE_FORMATS

    assert sorted(language.name for language in LANGUAGES) == sorted(CODE_FORMATS)
    assert FUNCTION_LANGUAGES == ("shell", "javascript", "r", "applescript", "html")


@pytest.mark.parametrize(
    ("alias", "name"),
    [
        ("Python", "python"),
        ("py", "python"),
        ("bash", "shell"),
        ("sh", "shell"),
        ("js", "javascript"),
        ("node", "javascript"),
        ("R", "r"),
        ("osascript", "applescript"),
    ],
)
def test_aliases(alias: str, name: str) -> None:
    language = resolve_language(alias)
    assert language is not None
    assert language.name == name


def test_unknown_language_is_a_clear_output_line(bare: Computer) -> None:
    out = output_of(collect(bare, "cobol", "DISPLAY 'HI'."))
    assert out == (
        "lmc cannot run 'cobol' code; it runs python, shell, javascript, r, html, applescript.\n"
    )
    assert bare._sessions == {}


def test_empty_code_is_a_clear_output_line(bare: Computer) -> None:
    assert output_of(collect(bare, "python", "  \n")) == "There was no python code to run.\n"
    assert bare._sessions == {}


def test_start_ignores_unknown_languages(bare: Computer) -> None:
    bare.prestart(["cobol", "html"])
    assert bare._sessions == {}


def test_html_is_handed_over_as_a_chunk_and_leaves_no_file(
    bare: Computer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where a temporary file would go
    document = "<h1>Hi</h1><script>alert(1)</script>"
    chunks = collect(bare, "html", document)
    [html] = [c for c in chunks if (c["type"], c.get("format")) == ("code", "html")]
    # Sandboxed with no network (the default), the page says so to any browser that opens it.
    assert html["content"] == (without_network(document) if bare.sandbox.enabled else document)
    assert output_of(chunks) == ""
    assert list(tmp_path.iterdir()) == []
    with Computer(sandbox="off") as unsandboxed:
        [plain] = [c for c in collect(unsandboxed, "html", document) if c["type"] == "code"]
        assert plain["content"] == document


def test_applescript_without_osascript_is_a_clear_error(
    bare: Computer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    out = output_of(collect(bare, "applescript", 'display dialog "hi"'))
    assert (
        out == "AppleScript runs only on macOS, through osascript, which is not available here.\n"
    )


@pytest.mark.skipif(sys.platform == "darwin", reason="replaces osascript with a stand-in")
def test_applescript_code_reaches_osascript_verbatim(
    bare: Computer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A stand-in osascript that prints the script it was given: proves no shell touched it.
    fake = tmp_path / "osascript"
    fake.write_text(f"#!{sys.executable}\nimport sys\nprint(sys.argv[1:])\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", str(tmp_path) + os.pathsep + os.environ["PATH"])
    code = "say \"$(rm -rf ~)\" & `id` & 'quote' \\ end"
    assert applescript_command(code) == [str(fake), "-e", code]
    out = output_of(collect(bare, "applescript", code))
    assert out == repr(["-e", code]) + "\n"


def test_missing_interpreter_says_how_to_install(
    bare: Computer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    out = output_of(collect(bare, "r", "print(1)"))
    assert "needs `R`, which is not installed" in out
    assert "r-cran-irkernel" in out


def test_a_missing_kernel_spec_is_an_output_line_not_an_exception(
    bare: Computer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from lmc.computer import kernelspecs

    (tmp_path / "python").mkdir()
    monkeypatch.setattr(kernelspecs, "kernels_dir", lambda: tmp_path)
    bare.prestart(["python"])
    out = output_of(collect(bare, "python", "print(1)"))
    assert out.startswith("lmc cannot run python code: no lmc kernel spec named 'python'")
