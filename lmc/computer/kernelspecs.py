"""Finding lmc's own kernel specs, never the user's global Jupyter ones.

lmc's kernels live in a ``kernels/`` directory of kernel-spec folders (``kernels/<name>/
kernel.json``). An installed wheel carries it as ``lmc/_kernels`` (pyproject force-include);
a source checkout has it at the repository root. Specs are read from that directory only
(never the user's Jupyter paths), and their argv is made to run with the interpreter lmc
itself runs on, so a kernel always sees the same packages as lmc; or, for the python kernel,
with the person's own interpreter (``--python``), checked to have ipykernel.
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from lmc.errors import ComputerError

__all__ = ["KernelSpec", "check_python", "kernel_spec", "kernels_dir"]

_PYTHON_NAMES = frozenset({"python", "python3", f"python3.{sys.version_info[1]}"})


@dataclass(frozen=True)
class KernelSpec:
    """What lmc needs to launch one kernel (argv still holds ``{connection_file}``)."""

    name: str
    argv: tuple[str, ...]
    language: str
    resource_dir: Path
    interrupt_mode: str = "signal"
    env: dict[str, str] = field(default_factory=dict)
    #: Ask the kernel to shut down before killing it: the wrapper kernels (bash, node) run
    #: the code in a session of its own, whose children only their do_shutdown ends
    #: (``"lmc_shutdown_request": true`` in the spec's metadata).
    shutdown_request: bool = False
    #: A wrapper kernel whose script the connect guard's step runs in its own process
    #: instead of starting a second Python (``"lmc_guard_in_place": true``).
    guard_in_place: bool = False

    def command(self, connection_file: str) -> list[str]:
        """The argv that starts this kernel on ``connection_file``."""
        return [arg.replace("{connection_file}", connection_file) for arg in self.argv]


def kernels_dir() -> Path:
    """The directory holding lmc's kernel specs (wheel layout first, then the checkout)."""
    package = Path(__file__).resolve().parent.parent
    for candidate in (package / "_kernels", package.parent / "kernels"):
        if candidate.is_dir():
            return candidate
    raise ComputerError(
        f"lmc's kernel specs are missing (looked in {package / '_kernels'} and "
        f"{package.parent / 'kernels'})",
        hint="reinstall lmc",
    )


@functools.cache
def check_python(python: str) -> None:
    """``python`` runs and has ipykernel (asked once per interpreter); ComputerError if not."""
    from lmc.paths import host_which, neutral_dir

    # made absolute, never resolved: a venv's python is a link that must stay one
    exe = str(Path(python).absolute()) if "/" in python else host_which(python) or python
    try:  # from lmc's own empty folder: ``-c`` puts the current folder first on sys.path
        done = subprocess.run(
            [exe, "-c", "import ipykernel"],
            capture_output=True,
            timeout=60,
            check=False,
            cwd=neutral_dir(),
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise ComputerError(f"--python {python}: cannot run it ({exc})") from exc
    if done.returncode != 0:
        raise ComputerError(
            f"the python at {python} has no ipykernel, which the python kernel needs: "
            f"add it there with {python} -m pip install ipykernel"
        )


def kernel_spec(name: str, python: str | None = None) -> KernelSpec:
    """Load spec ``name`` from lmc's kernels directory, argv bound to this interpreter (or, for
    a Python kernel, to ``python`` when given: the person's own environment).

    ``kernel.json`` is read directly (Jupyter's format: argv, language, interrupt_mode, env):
    jupyter_client's spec manager would cost lmc's start a tenth of a second of imports."""
    directory = kernels_dir()
    path = directory / name / "kernel.json"
    try:
        spec = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ComputerError(f"no lmc kernel spec named {name!r} in {directory}") from None
    except (OSError, ValueError) as exc:
        raise ComputerError(f"the kernel spec {path} cannot be read: {exc}") from exc
    raw_argv = spec.get("argv") if isinstance(spec, dict) else None
    if (
        not isinstance(raw_argv, list)
        or not raw_argv
        or not all(isinstance(a, str) for a in raw_argv)
    ):
        raise ComputerError(f"the kernel spec {path} has no argv")
    resource_dir = path.parent
    argv = [
        arg.replace("{resource_dir}", str(resource_dir)).replace("{prefix}", sys.prefix)
        for arg in raw_argv
    ]
    if argv[0] in _PYTHON_NAMES:
        argv[0] = sys.executable
        if python is not None and name == "python":
            check_python(python)
            argv[0] = python
    env = spec.get("env") or {}
    metadata = spec.get("metadata") or {}
    return KernelSpec(
        name=name,
        argv=tuple(argv),
        language=str(spec.get("language", "")),
        resource_dir=resource_dir,
        interrupt_mode=str(spec.get("interrupt_mode") or "signal"),
        env={str(k): str(v) for k, v in env.items()} if isinstance(env, dict) else {},
        shutdown_request=bool(metadata.get("lmc_shutdown_request")),
        guard_in_place=bool(metadata.get("lmc_guard_in_place")),
    )
