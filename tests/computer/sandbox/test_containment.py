"""Real attempts from each language, checked from outside the sandbox: writes, secrets,
the network, and processes that try to outlive their kernel. Each attempt also runs with
the sandbox off and succeeds there, so every test can fail."""

from __future__ import annotations

import shutil

import pytest
from support.sandbox_testing import (
    FAKE_KEY,
    LANGUAGES,
    NOTES,
    Place,
    connect_code,
    daemon_code,
    kill_all,
    loopback_server,
    output_of,
    read_code,
    sleepers,
    unique_tag,
    wait_until,
    write_code,
)

from lmc.computer import Computer
from lmc.computer.sandbox import PREFIX

_REQUIRES = {"shell": "bash", "javascript": "node", "r": "R"}


@pytest.fixture(params=LANGUAGES)
def language(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    needed = _REQUIRES.get(name)
    if needed is not None and shutil.which(needed) is None:
        pytest.skip(f"{needed} is not installed")
    return name


def test_a_write_outside_the_workdir_fails_and_leaves_no_file(
    language: str, place: Place, contained: Computer, uncontained: Computer
) -> None:
    target = place.outside / f"escape-{language}.txt"
    out = output_of(contained, language, write_code(language, target))
    assert not target.exists()
    assert out.rstrip().splitlines()[-1].startswith(PREFIX), out
    assert "write" in out.rstrip().splitlines()[-1]
    out = output_of(uncontained, language, write_code(language, target))
    assert target.read_text().strip() == "x", out
    assert PREFIX not in out


def test_a_write_inside_the_workdir_exists(
    language: str, place: Place, contained: Computer
) -> None:
    target = place.work / f"inside-{language}.txt"
    out = output_of(contained, language, write_code(language, target))
    assert target.read_text().strip() == "x", out
    assert PREFIX not in out


def test_a_key_in_home_ssh_cannot_be_read_but_home_can(
    language: str, place: Place, contained: Computer, uncontained: Computer
) -> None:
    key = place.home / ".ssh" / "id_rsa"
    out = output_of(contained, language, read_code(language, key))
    assert FAKE_KEY not in out
    assert out.rstrip().splitlines()[-1].startswith(PREFIX) and ".ssh" in out, out
    assert NOTES in output_of(contained, language, read_code(language, place.home / "notes.txt"))
    assert FAKE_KEY in output_of(uncontained, language, read_code(language, key))


def test_a_loopback_server_is_unreachable_without_the_network(
    language: str, contained: Computer, networked: Computer, uncontained: Computer
) -> None:
    with loopback_server() as port:
        out = output_of(contained, language, connect_code(language, port))
        assert "hello" not in out
        assert out.rstrip().splitlines()[-1].startswith(PREFIX) and "network" in out, out
        out = output_of(networked, language, connect_code(language, port))
        assert "hello" in out and PREFIX not in out, out
        assert "hello" in output_of(uncontained, language, connect_code(language, port))


def test_a_new_session_daemon_dies_with_its_kernel_on_restart(
    language: str, contained: Computer, uncontained: Computer
) -> None:
    tag = unique_tag()
    try:
        output_of(contained, language, daemon_code(language, tag))
        wait_until(lambda: sleepers(tag), what="the sandboxed sleep to start")
        contained.restart(language)
        wait_until(lambda: not sleepers(tag), what="the sandboxed sleep to end")

        output_of(uncontained, language, daemon_code(language, tag))
        wait_until(lambda: sleepers(tag), what="the unsandboxed sleep to start")
        old = uncontained._sessions[language]
        uncontained.restart(language)
        wait_until(lambda: not old.alive, what="the old unsandboxed kernel to end")
        assert sleepers(tag), "without a sandbox a setsid child escapes its process group"
    finally:
        kill_all(tag)


def test_read_only_mode_writes_nowhere_but_a_private_tmp(place: Place) -> None:
    target = place.work / "read-only.txt"
    with Computer(sandbox="read-only", workdir=place.work) as computer:
        out = output_of(computer, "python", write_code("python", target))
        assert not target.exists() and PREFIX in out, out
        code = "open('/tmp/lmc-private-tmp.txt', 'w').write('x'); print('wrote')"
        assert output_of(computer, "python", code) == "wrote\n"
    assert not (place.root.parent / "lmc-private-tmp.txt").exists()


def test_without_a_sandbox_a_restart_still_ends_the_kernels_process_group(
    uncontained: Computer,
) -> None:
    tag = unique_tag()
    code = f"import subprocess\nsubprocess.Popen(['sleep', '{tag}'])"  # same process group
    try:
        output_of(uncontained, "python", code)
        wait_until(lambda: sleepers(tag), what="the sleep to start")
        uncontained.restart("python")
        wait_until(lambda: not sleepers(tag), what="the kernel's process group to end")
    finally:
        kill_all(tag)
