"""The sandbox from the command line: flags, config, doctor, no tool, and processes the
model's code starts in every language, gone when ``lmc run`` exits or is killed (SIGKILL).
lmc runs as a real process here (tiny model + replay), the process table is read from outside.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from support.cli_replays import code, final
from support.processes import descendants, wait_gone
from support.sandbox_testing import (
    LANGUAGES,
    daemon_code,
    kill_all,
    sleepers,
    unique_tag,
    wait_until,
)

ROOT = Path(__file__).resolve().parents[2]

Replay = Callable[..., Path]


def _call(language: str, source: str) -> str:
    if language == "python":
        return code(source)
    arguments = json.dumps({"code": source})
    header = f"<|channel|>commentary to=functions.{language} <|constrain|>json"
    return f"{header}<|message|>{arguments}<|call|>"


@pytest.fixture
def env(lmc_env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    return {**os.environ, **lmc_env, "PYTHONPATH": str(ROOT)}


@pytest.fixture
def work(tmp_path: Path) -> Iterator[Path]:
    directory = tmp_path / "work"
    directory.mkdir()
    yield directory


def _lmc(*args: str) -> list[str]:
    return [sys.executable, "-m", "lmc", *args]


def _daemons(tag: str, replay: Replay, *, then: str) -> Path:
    calls = [_call(language, daemon_code(language, tag)) for language in LANGUAGES]
    return replay(*calls, then)


@pytest.mark.parametrize("mode", ["workspace", "off"])
def test_processes_the_code_started_end_when_lmc_run_exits(
    mode: str, env: dict[str, str], work: Path, tiny_model: Path, replay: Replay
) -> None:
    tag = unique_tag()
    path = _daemons(tag, replay, then=final("Started them."))
    try:
        done = subprocess.run(
            _lmc("run", "-y", "-m", str(tiny_model), "--replay", str(path), "--sandbox", mode,
                 "--workdir", str(work), "start sleepers"),
            env=env, capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        if mode == "off":  # outside a sandbox, new-session children escape: the test can fail
            assert len(sleepers(tag)) == len(LANGUAGES)
        else:
            wait_until(lambda: not sleepers(tag), what="the sleepers to end")
    finally:
        kill_all(tag)


@pytest.mark.parametrize("mode", ["workspace", "off"])
def test_processes_the_code_started_end_when_lmc_is_killed(
    mode: str, env: dict[str, str], work: Path, tiny_model: Path, replay: Replay
) -> None:
    tag = unique_tag()
    path = _daemons(tag, replay, then=code("import time\ntime.sleep(300)"))
    lmc = subprocess.Popen(
        _lmc("run", "-y", "-m", str(tiny_model), "--replay", str(path), "--sandbox", mode,
             "--workdir", str(work), "start sleepers"),
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_until(lambda: len(sleepers(tag)) == len(LANGUAGES), 120, "every language's sleep")
        kernels = descendants(lmc.pid) - set(sleepers(tag))
        lmc.send_signal(signal.SIGKILL)
        lmc.wait()
        if mode == "off":
            assert len(sleepers(tag)) == len(LANGUAGES)
        else:
            wait_until(lambda: not sleepers(tag), what="the sleepers to die with lmc")
        # Either way the kernels themselves (IRkernel included) end with lmc.
        assert wait_gone(kernels, timeout=30) == set(), "a kernel outlived lmc"
    finally:
        lmc.kill()
        lmc.wait()
        kill_all(tag)


@pytest.fixture
def no_bwrap_env(env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """A real PATH without bwrap: only the tools the python kernel needs (none)."""
    bare = tmp_path / "bare-bin"
    bare.mkdir()
    return {**env, "PATH": str(bare)}


def test_asking_for_a_sandbox_without_the_tool_is_exit_2(
    no_bwrap_env: dict[str, str], work: Path, tiny_model: Path, replay: Replay
) -> None:
    path = replay(final("never"))
    done = subprocess.run(
        _lmc("run", "-y", "-m", str(tiny_model), "--replay", str(path), "--sandbox", "workspace",
             "--workdir", str(work), "hi"),
        env=no_bwrap_env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "--sandbox workspace needs a sandbox tool" in done.stderr
    assert "apt-get install bubblewrap" in done.stderr


def test_without_the_tool_the_default_runs_unsandboxed_with_one_warning(
    no_bwrap_env: dict[str, str], work: Path, tiny_model: Path, replay: Replay
) -> None:
    path = replay(code("open('made-here.txt', 'w').write('x')"), final("Done."))
    done = subprocess.run(
        _lmc("run", "-y", "-m", str(tiny_model), "--replay", str(path), "--workdir", str(work),
             "write"),
        env=no_bwrap_env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 1 and "without a sandbox" in warnings[0], done.stderr
    assert "apt-get install bubblewrap" in warnings[0]
    assert (work / "made-here.txt").exists()


def test_a_blocked_write_tells_the_person_and_the_model(
    env: dict[str, str], work: Path, tmp_path: Path, tiny_model: Path, replay: Replay
) -> None:
    outside = Path("/var/tmp") / f"lmc-outside-{os.getpid()}.txt"
    path = replay(code(f"open({str(outside)!r}, 'w').write('x')"), final("Blocked."))
    done = subprocess.run(
        _lmc("run", "-y", "--json", "-m", str(tiny_model), "--replay", str(path),
             "--workdir", str(work), "write outside"),
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert not outside.exists()
    outputs = [json.loads(line) for line in done.stdout.splitlines()]
    text = "".join(c.get("content", "") for c in outputs if c.get("format") == "output")
    assert "[blocked by the sandbox]" in text and "--sandbox off" in text
    from lmc.agent.storage import ConversationStore

    with ConversationStore(Path(env["LMC_DATA_DIR"]) / "conversations.db") as store:
        stored = store.load(store.list_conversations()[0].id)
    told = [m for m in stored if m["role"] == "computer" and m["type"] == "console"]
    assert any("[blocked by the sandbox]" in str(m.get("content")) for m in told)


def test_doctor_shows_the_sandbox(env: dict[str, str], work: Path) -> None:
    done = subprocess.run(
        _lmc("doctor", "--workdir", str(work), "--network"),
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    section = done.stdout.split("sandbox\n", 1)[1]
    assert "✓ mode         workspace (default)" in section
    assert "bubblewrap at" in section and "network      on" in section
    assert f"workdir      {work}" in section and "~/.ssh" in section
    for protection in ("environment", "user", "seccomp", "sockets", "repositories", "limits"):
        assert f"✓ {protection:<12}" in section, section
    assert "– mcp" in section and "outside the sandbox" in section  # a note, not a failure


def test_doctor_tries_bubblewrap_afresh_whatever_was_remembered(
    env: dict[str, str], work: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lmc.computer.sandbox import probe_memory
    from lmc.computer.sandbox.bubblewrap import probe_command

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    broken = bin_dir / "bwrap"
    broken.write_text("#!/bin/sh\necho 'bwrap: no namespaces for you' >&2\nexit 1\n")
    broken.chmod(0o755)
    cache = tmp_path / "cache-of-this-test"
    monkeypatch.setenv("LMC_CACHE_DIR", str(cache))
    probe_memory.remember(str(broken), probe_command(str(broken)))  # "it works", planted
    assert probe_memory.remembered(str(broken), probe_command(str(broken)))
    path = f"{bin_dir}{os.pathsep}{env['PATH']}"
    done = subprocess.run(
        _lmc("doctor", "--workdir", str(work)),
        env={**env, "PATH": path, "LMC_CACHE_DIR": str(cache)},
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    section = done.stdout.split("sandbox\n", 1)[1]
    assert "no namespaces for you" in section, section
    assert "✓ mode         workspace" not in section


@pytest.mark.parametrize(
    ("config", "said"),
    [
        ('[sandbox]\nhide = ["relative/secret"]\n', "sandbox.hide: 'relative/secret' is relative"),
        ('[sandbox]\nmemory = "lots"\n', "must be a size such as 2GiB"),
    ],
)
def test_an_unusable_sandbox_setting_stops_lmc_in_one_line(
    config: str, said: str, env: dict[str, str], work: Path, tmp_path: Path,
    tiny_model: Path, replay: Replay,
) -> None:  # fmt: skip
    (tmp_path / "config.toml").write_text(config)
    path = replay(final("never"))
    done = subprocess.run(
        _lmc("run", "-y", "-m", str(tiny_model), "--replay", str(path), "--workdir", str(work),
             "hi"),
        env={**env, "LMC_CONFIG": str(tmp_path / "config.toml")},
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode != 0 and said in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) <= 2


def test_a_workdir_of_root_is_refused_in_one_line(
    env: dict[str, str], tiny_model: Path, replay: Replay
) -> None:
    path = replay(final("never"))
    done = subprocess.run(
        _lmc("run", "-y", "-m", str(tiny_model), "--replay", str(path), "--workdir", "/", "hi"),
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode != 0 and "cannot use / as the working directory" in done.stderr
    assert "Traceback" not in done.stderr


ATTACK = """
import os, pathlib
print('KEYS', [k for k in os.environ if 'KEY' in k or 'TOKEN' in k])
for target in ('.git/hooks/pre-commit', '.git/config', '.venv/lib/site.pth'):
    try:
        pathlib.Path(target).write_text('evil')
        print('WROTE', target)
    except OSError as exc:
        print('DENIED', target, exc.errno)
"""


def test_yes_in_a_git_repository_with_api_keys_is_safe(
    env: dict[str, str], work: Path, tiny_model: Path, replay: Replay
) -> None:
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    (work / ".venv" / "lib").mkdir(parents=True)
    (work / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    hook_config = (work / ".git" / "config").read_text()
    secrets = {"OPENAI_API_KEY": "sk-cli-secret", "GITHUB_TOKEN": "ghp-cli-secret"}
    path = replay(code(ATTACK), final("Done."))
    done = subprocess.run(
        _lmc("run", "-y", "--json", "-m", str(tiny_model), "--replay", str(path),
             "--workdir", str(work), "go"),
        env={**env, **secrets}, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    chunks = [json.loads(line) for line in done.stdout.splitlines()]
    said = "".join(c.get("content", "") for c in chunks if c.get("format") == "output")
    assert "sk-cli-secret" not in said and "KEYS []" in said, said
    assert "WROTE" not in said and said.count("DENIED") == 3, said
    assert not (work / ".git" / "hooks" / "pre-commit").exists()
    assert (work / ".git" / "config").read_text() == hook_config
    assert not (work / ".venv" / "lib" / "site.pth").exists()
