"""``--python PATH``: the python kernel runs in the person's own environment, and one line
says how to add ipykernel where it is missing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from support.cli_replays import code, final

ROOT = Path(__file__).resolve().parents[2]


def _lmc(env: dict[str, str], *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lmc", *args],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), **env},
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        timeout=180,
        check=False,
    )


def test_the_python_kernel_runs_with_the_given_interpreter(
    lmc_env: dict[str, str], tiny_model: Path, replay: object, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    (work / "site").mkdir(parents=True)
    (work / "site" / "my_own_package.py").write_text("WHERE = 'the person’s environment'\n")
    # "Their" python: lmc's own, plus a package only their environment has.
    own = work / "bin-python"
    own.write_text(f'#!/bin/sh\nPYTHONPATH={work / "site"} exec {sys.executable} "$@"\n')
    own.chmod(0o755)
    path = replay(code("import my_own_package\nprint(my_own_package.WHERE)"), final("Done."))  # type: ignore[operator]
    args = ["run", "-y", "-m", str(tiny_model), "--replay", str(path), "--workdir", str(work)]
    result = _lmc(lmc_env, *args, "--python", str(own), "use my package", cwd=work)
    assert result.returncode == 0, result.stderr
    assert "the person’s environment" in result.stdout
    without = _lmc(lmc_env, *args, "use my package", cwd=work)  # lmc's own python: no package
    assert "ModuleNotFoundError" in without.stdout


def test_an_interpreter_without_ipykernel_is_one_line_with_the_fix(
    lmc_env: dict[str, str], tiny_model: Path, replay: object, tmp_path: Path
) -> None:
    bare = "/usr/bin/python3"  # Debian's own python: no ipykernel
    probe = subprocess.run([bare, "-c", "import ipykernel"], capture_output=True, check=False)
    assert probe.returncode != 0, "this test needs an interpreter without ipykernel"
    path = replay(code("print(1)"), final("Could not run it."))  # type: ignore[operator]
    args = ["run", "-y", "-m", str(tiny_model), "--replay", str(path), "--python", bare, "go"]
    result = _lmc(lmc_env, *args, cwd=tmp_path)
    expected = (
        f"the python at {bare} has no ipykernel, which the python kernel needs: "
        f"add it there with {bare} -m pip install ipykernel"
    )
    assert expected in result.stdout
    assert result.stdout.count("ipykernel") == 2  # once, in one line
    assert "Traceback" not in result.stdout + result.stderr


def test_doctor_checks_the_given_python(lmc_env: dict[str, str], tmp_path: Path) -> None:
    bare = "/usr/bin/python3"
    result = _lmc(lmc_env, "doctor", "--python", bare, cwd=tmp_path)
    python = next(line for line in result.stdout.splitlines() if line.split()[1:2] == ["python"])
    assert python.lstrip().startswith("✗") and f"{bare} -m pip install ipykernel" in python
    assert result.returncode == 1
    good = _lmc(lmc_env, "doctor", "--python", sys.executable, cwd=tmp_path)
    python = next(line for line in good.stdout.splitlines() if line.split()[1:2] == ["python"])
    assert python.lstrip().startswith("✓") and "your environment" in python
