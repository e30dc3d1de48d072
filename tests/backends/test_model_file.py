"""A model file that is text, empty, cut short or corrupt ends in one line naming the file
(never OverflowError / MemoryError, "a bug in lmc"), through the backend and the CLI."""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lmc.backends import BackendConfig, open_backend
from lmc.backends.model_file import model_file_problem
from lmc.cli.app import app
from lmc.errors import BackendError


def _patched(offset: int, value: int) -> Callable[[bytes], bytes]:
    def patch(data: bytes) -> bytes:
        out = bytearray(data)
        out[offset : offset + 8] = struct.pack("<Q", value)
        return bytes(out)

    return patch


#: name -> (how the tiny model's bytes are spoiled, what the line says)
SPOILED: dict[str, tuple[Callable[[bytes], bytes], str]] = {
    "text": (lambda _: b"<html>Not Found</html>\n", "is not a GGUF model file"),
    "empty": (lambda _: b"", "is empty"),
    "header cut short": (lambda d: d[:12], "is cut short"),
    "metadata cut short": (lambda d: d[:40], "is a corrupt or truncated GGUF file"),
    "key length 2**64-1": (_patched(24, 2**64 - 1), "a length in its metadata is far beyond"),
    "key length 2**40": (_patched(24, 2**40), "a length in its metadata is far beyond"),
    "tensor data cut short": (lambda d: d[: len(d) // 3], "may be truncated or corrupt"),
}


@pytest.mark.parametrize("case", SPOILED)
def test_a_spoiled_model_file_is_one_line_naming_it(
    case: str, tiny_model: Path, tmp_path: Path
) -> None:
    spoil, says = SPOILED[case]
    path = tmp_path / "model.gguf"
    path.write_bytes(spoil(tiny_model.read_bytes()))
    with pytest.raises(BackendError) as caught:
        open_backend(BackendConfig(model=str(path))).close()
    message = str(caught.value)
    assert str(path) in message and says in message, message
    assert "\n" not in message and caught.value.hint is not None


def test_the_cli_says_it_in_one_line(tiny_model: Path, tmp_path: Path) -> None:
    path = tmp_path / "corrupt.gguf"
    path.write_bytes(_patched(24, 2**64 - 1)(tiny_model.read_bytes()))
    env = {"XDG_DATA_HOME": str(tmp_path / "data"), "LMC_CONFIG": str(tmp_path / "none.toml")}
    (tmp_path / "none.toml").write_text("")
    result = CliRunner().invoke(app, ["run", "-y", "-m", str(path), "hi"], env=env)
    assert result.exit_code != 0
    lines = result.stderr.strip().splitlines()
    assert lines[0].startswith(f"lmc: error: the model file {path} is a corrupt GGUF file"), lines
    assert len(lines) == 2 and lines[1].startswith("lmc: hint: download it again")
    assert "bug in lmc" not in result.stderr


def test_a_good_model_file_has_no_problem(tiny_model: Path) -> None:
    assert model_file_problem(tiny_model) is None
