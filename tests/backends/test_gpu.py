"""A GPU that the installed llama.cpp cannot use is said in one line, with the fix.

A fake ``nvidia-smi`` on PATH prints what the real one prints for ``-L`` ("GPU 0: NAME
(UUID: GPU-…)", NVIDIA's nvidia-smi documentation). The llama.cpp installed here is a CPU
build, which is what the warning is about; with a GPU build the check is that nothing is said.
"""

from __future__ import annotations

import os
from pathlib import Path

import llama_cpp
import pytest
from typer.testing import CliRunner

from lmc.backends.gpu import CUDA_REINSTALL, METAL_REINSTALL, cpu_only_warning, find_gpu
from lmc.cli.app import app

SMI_LIST = "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-5d8d5b7e-3c1a-2f4e-9b6d-0a1b2c3d4e5f)\n"


@pytest.fixture
def fake_smi(tmp_path: Path) -> Path:
    """A directory holding an executable nvidia-smi that lists one H100."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    smi.write_text(f"#!/bin/sh\nprintf '%s' '{SMI_LIST}'\n")
    smi.chmod(0o755)
    return bin_dir


def test_find_gpu_reads_nvidia_smi_the_driver_or_metal(fake_smi: Path, tmp_path: Path) -> None:
    smi = str(fake_smi / "nvidia-smi")
    nowhere = tmp_path / "no-driver"
    assert find_gpu(lambda _: smi, nowhere) == ("NVIDIA H100 80GB HBM3", CUDA_REINSTALL)
    driver = tmp_path / "driver"
    driver.mkdir()
    assert find_gpu(lambda _: None, driver) == ("an NVIDIA GPU", CUDA_REINSTALL)
    assert find_gpu(lambda _: None, nowhere, "darwin", "arm64") == ("Apple Metal", METAL_REINSTALL)
    assert find_gpu(lambda _: None, nowhere, "linux", "x86_64") is None


def test_the_warning_needs_a_gpu_and_a_cpu_only_build() -> None:
    gpu = ("NVIDIA H100 80GB HBM3", CUDA_REINSTALL)
    warning = cpu_only_warning(gpu, offloads=False)
    assert warning is not None and "\n" not in warning
    assert warning.startswith("NVIDIA H100 80GB HBM3 is here, but llama.cpp was built for the CPU")
    assert warning.endswith(CUDA_REINSTALL)
    assert cpu_only_warning(gpu, offloads=True) is None  # a GPU build: nothing to say
    assert cpu_only_warning(None, offloads=False) is None  # no GPU: nothing to say


def test_doctor_warns_and_still_passes(
    fake_smi: Path, tmp_path: Path, tiny_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cpu_only = not llama_cpp.llama_supports_gpu_offload()
    (tmp_path / "config.toml").write_text("")
    env = {
        "LMC_CONFIG": str(tmp_path / "config.toml"),
        "LMC_DATA_DIR": str(tmp_path / "data"),
        "NO_COLOR": "1",
    }
    monkeypatch.setenv("PATH", f"{fake_smi}{os.pathsep}{os.environ['PATH']}")
    with_gpu = CliRunner().invoke(app, ["doctor", "-m", str(tiny_model)], env=env)
    assert with_gpu.exit_code == 0, with_gpu.stdout
    lines = [line for line in with_gpu.stdout.splitlines() if "warning" in line]
    if not cpu_only:  # a GPU build offloads: nothing to warn about
        assert lines == []
        return
    assert len(lines) == 1 and "NVIDIA H100 80GB HBM3 is here" in lines[0]
    assert CUDA_REINSTALL in lines[0]
    monkeypatch.setenv("PATH", os.environ["PATH"].replace(f"{fake_smi}{os.pathsep}", ""))
    if Path("/proc/driver/nvidia").exists():
        return  # a real NVIDIA driver: the warning is due here too
    without = CliRunner().invoke(app, ["doctor", "-m", str(tiny_model)], env=env)
    assert without.exit_code == 0 and "warning" not in without.stdout


def test_the_first_chat_warns_once(
    fake_smi: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lmc.cli.session import warn_cpu_only_once

    monkeypatch.setenv("PATH", f"{fake_smi}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("LMC_DATA_DIR", str(tmp_path / "data"))
    said: list[str] = []
    warn_cpu_only_once(said.append)
    warn_cpu_only_once(said.append)
    assert len(said) == 1 and said[0].startswith("warning: NVIDIA H100 80GB HBM3 is here")
