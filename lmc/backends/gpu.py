"""Whether this machine has a GPU that the installed llama.cpp cannot use.

``pip install llama-cpp-python`` builds llama.cpp for the CPU unless told otherwise, without
a word; gpt-oss-20b then runs several times slower than the hardware allows. ``lmc doctor``
and the first start say so in one line, with the command that rebuilds it for the GPU found.
"""

from __future__ import annotations

import importlib.util
import platform
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Final

from lmc.paths import host_which, neutral_dir

__all__ = ["CUDA_REINSTALL", "METAL_REINSTALL", "cpu_only_warning", "find_gpu"]

CUDA_REINSTALL: Final = (
    'CMAKE_ARGS="-DGGML_CUDA=on" pip install --force-reinstall --no-cache-dir llama-cpp-python'
)
METAL_REINSTALL: Final = (
    'CMAKE_ARGS="-DGGML_METAL=on" pip install --force-reinstall --no-cache-dir llama-cpp-python'
)


def _nvidia_name(which: Callable[[str], str | None], proc: Path) -> str | None:
    """The first NVIDIA GPU ``nvidia-smi -L`` lists, or "an NVIDIA GPU" from the driver."""
    exe = which("nvidia-smi")
    if exe is not None:
        try:
            done = subprocess.run(
                [exe, "-L"], capture_output=True, text=True, timeout=10, check=False,
                cwd=neutral_dir(),
            )  # fmt: skip
        except (OSError, subprocess.SubprocessError):
            done = None
        if done is not None and done.returncode == 0 and done.stdout.strip():
            first = done.stdout.strip().splitlines()[0]
            name = first.split(":", 1)[1] if ":" in first else first
            return name.split("(UUID")[0].strip() or "an NVIDIA GPU"
    if proc.is_dir():
        return "an NVIDIA GPU"
    return None


def find_gpu(
    which: Callable[[str], str | None] = host_which,
    proc: Path = Path("/proc/driver/nvidia"),
    system: str | None = None,
    machine: str | None = None,
) -> tuple[str, str] | None:
    """(what was found, the reinstall command for it), or None without a usable GPU."""
    nvidia = _nvidia_name(which, proc)
    if nvidia is not None:
        return nvidia, CUDA_REINSTALL
    system = system or sys.platform
    machine = machine or platform.machine()
    if system == "darwin" and machine == "arm64":
        return "Apple Metal", METAL_REINSTALL
    return None


def _llama_offloads() -> bool | None:
    """Whether the installed llama.cpp offloads to a GPU; None when it is not installed."""
    if importlib.util.find_spec("llama_cpp") is None:
        return None
    from lmc.backends._llama_cpp import supports_gpu_offload

    return supports_gpu_offload()


def cpu_only_warning(
    gpu: tuple[str, str] | bool | None = True, offloads: bool | str | None = "ask"
) -> str | None:
    """One line when a GPU is here but llama.cpp was built without GPU offload, else None.

    ``gpu`` and ``offloads`` are what :func:`find_gpu` and llama.cpp say (asked by default).
    """
    found = find_gpu() if gpu is True else gpu
    if not found or not isinstance(found, tuple):
        return None
    state = _llama_offloads() if offloads == "ask" else offloads
    if state is not False:
        return None
    name, command = found
    return (
        f"{name} is here, but llama.cpp was built for the CPU only (models run several times "
        f"slower): {command}"
    )
