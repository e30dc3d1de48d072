"""R through IRkernel (CI installs Debian's r-cran-irkernel)."""

from __future__ import annotations

import base64
import shutil

import pytest
from support.computer_testing import collect, output_of

from lmc.computer import Computer

pytestmark = pytest.mark.skipif(
    shutil.which("R") is None, reason="R is not installed (CI installs r-cran-irkernel)"
)


def test_r_prints_keeps_state_and_shows_values(computer: Computer) -> None:
    assert output_of(collect(computer, "r", "x <- 41\nprint(x + 1)")) == "[1] 42\n"
    assert output_of(collect(computer, "R", "x * 2")) == "[1] 82\n"


def test_r_error(computer: Computer) -> None:
    out = output_of(collect(computer, "r", "stop('boom')"))
    assert "boom" in out


def test_r_plot_is_a_png(computer: Computer) -> None:
    images = [c for c in collect(computer, "r", "plot(1:10)") if c["type"] == "image"]
    assert images and base64.b64decode(images[0]["content"]).startswith(b"\x89PNG")


def test_r_reading_stdin_does_not_hang(computer: Computer) -> None:
    out = output_of(collect(computer, "r", "answer <- readline('Name? ')\nprint(nchar(answer))"))
    assert "asked for keyboard input" in out
    assert "[1] 0" in out
