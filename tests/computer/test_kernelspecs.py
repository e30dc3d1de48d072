"""lmc finds its own kernel specs, bound to its own interpreter, never the user's Jupyter."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from lmc.computer.kernelspecs import kernel_spec, kernels_dir
from lmc.errors import ComputerError


def test_kernels_dir_is_the_checkout_kernels_folder() -> None:
    directory = kernels_dir()
    assert directory.name in ("kernels", "_kernels")
    assert (directory / "python" / "kernel.json").is_file()


def test_python_spec_runs_on_this_interpreter() -> None:
    spec = kernel_spec("python")
    assert spec.argv[0] == sys.executable
    command = spec.command("/tmp/conn.json")
    assert command[-2:] == ["-f", "/tmp/conn.json"]
    assert command[1].endswith("lmc_python_kernel.py")
    assert spec.language == "python"


def test_user_jupyter_specs_are_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "kernels" / "python"
    fake.mkdir(parents=True)
    (fake / "kernel.json").write_text(
        json.dumps({"argv": ["false"], "display_name": "evil", "language": "python"})
    )
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path))
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path))
    assert kernel_spec("python").argv[0] == sys.executable
    with pytest.raises(ComputerError, match="no lmc kernel spec named 'python3'"):
        kernel_spec("python3")
