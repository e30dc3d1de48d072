"""The languages lmc runs, the names the model may call them by, and how each one runs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

__all__ = ["LANGUAGES", "Language", "resolve_language"]

Runner = Literal["kernel", "html", "applescript"]


@dataclass(frozen=True)
class Language:
    """One language: its LMC code format, how it runs, and what to install when it is missing."""

    name: str
    runner: Runner
    kernel: str | None = None
    requires: str | None = None  # an executable that must be on PATH
    install_hint: str | None = None
    #: A quick command that exits 0 when the kernel can start (``lmc doctor`` runs it), for
    #: what an executable on PATH does not prove (R without IRkernel).
    probe: tuple[str, ...] | None = None


LANGUAGES: Final = (
    Language("python", "kernel", kernel="python"),
    Language(
        "shell",
        "kernel",
        kernel="lmc_shell",
        requires="bash",
        install_hint="install bash with your system's package manager",
    ),
    Language(
        "javascript",
        "kernel",
        kernel="lmc_javascript",
        requires="node",
        install_hint="install Node.js (Debian/Ubuntu: `sudo apt-get install nodejs`; "
        "macOS: `brew install node`)",
    ),
    Language(
        "r",
        "kernel",
        kernel="r",
        requires="R",
        install_hint="install R and IRkernel (Debian/Ubuntu: `sudo apt-get install "
        "r-cran-irkernel`; elsewhere install R, then run "
        "`install.packages('IRkernel')` in R)",
        probe=(  # no .Rprofile, .Renviron or .RData of the folder it runs in
            "R",
            "--slave",
            "--no-init-file",
            "--no-environ",
            "--no-restore",
            "--no-save",
            "-e",
            "quit(status = !requireNamespace('IRkernel', quietly = TRUE))",
        ),
    ),
    Language("html", "html"),
    Language("applescript", "applescript"),
)

_ALIASES: Final = {
    "py": "python",
    "python3": "python",
    "ipython": "python",
    "bash": "shell",
    "sh": "shell",
    "zsh": "shell",
    "console": "shell",
    "terminal": "shell",
    "js": "javascript",
    "node": "javascript",
    "nodejs": "javascript",
    "htm": "html",
    "osascript": "applescript",
}

_BY_NAME: Final = {language.name: language for language in LANGUAGES}


def resolve_language(name: str) -> Language | None:
    """The language ``name`` (any case, common aliases allowed) stands for, or None."""
    key = name.strip().lower()
    return _BY_NAME.get(_ALIASES.get(key, key))
