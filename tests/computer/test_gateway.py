"""``Computer(gateway=...)`` against a real Jupyter Kernel Gateway 3.0 and a real Enterprise
Gateway 3.3 on loopback (each test runs on both).

The gateways run stock ipykernel; lmc brings its active-line tracker in through a first
execute. Each test checks from outside too (the gateway's own ``GET /api/kernels``): kernels
are deleted at close, a dead one is replaced, the gateway's token is required. Enterprise
Gateway 3.3 cannot share lmc's venv (it needs jupyter_client < 7 and jupyter_server < 2), so
it runs from a venv of its own (:func:`support.kernel_gateway.enterprise_gateway_python`).
"""

from __future__ import annotations

import base64
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.computer_testing import active_lines, collect, output_of
from support.kernel_gateway import (
    KernelGateway,
    enterprise_gateway_python,
    free_port,
    start_enterprise_gateway,
    start_kernel_gateway,
)

from lmc.computer import Computer
from lmc.computer.gateway import GatewayConfig, check_gateway
from lmc.errors import ComputerError
from lmc.messages import Chunk, text_of

PNG = (  # one red pixel
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGA"
    "WjR9awAAAABJRU5ErkJggg=="
)


def _start(kind: str, tmp: Path) -> KernelGateway:
    if kind == "enterprise":
        return start_enterprise_gateway(tmp, enterprise_gateway_python())
    return start_kernel_gateway(tmp)


@pytest.fixture(scope="module", params=["kernel", "enterprise"])
def gateway(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KernelGateway]:
    started = _start(request.param, tmp_path_factory.mktemp("gateway"))
    try:
        yield started
    finally:
        started.stop()


def _config(gateway: KernelGateway, **changes: object) -> GatewayConfig:
    values: dict[str, object] = {"token": gateway.token, **changes}
    return GatewayConfig(gateway.url, **values)  # type: ignore[arg-type]


@pytest.fixture
def remote(gateway: KernelGateway) -> Iterator[Computer]:
    with Computer(gateway=_config(gateway), sandbox="off") as computer:
        yield computer
    assert gateway.wait_for_kernels(0) == []


def wait_until_pid_gone(pid: int, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while Path(f"/proc/{pid}").exists() and "Z" not in _state(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "Z"


def _run_until(computer: Computer, code: str, marker: str, then: object) -> list[Chunk]:
    """Run ``code``; once ``marker`` has been printed, call ``then()``; keep reading to the end."""
    chunks: list[Chunk] = []
    acted = False
    for chunk in computer.run("python", code):
        chunks.append(chunk)
        if not acted and marker in output_of(chunks):
            acted = True
            then()  # type: ignore[operator]
    assert acted, output_of(chunks)
    return chunks


def test_python_runs_remotely_with_active_lines_output_and_images(
    remote: Computer, gateway: KernelGateway
) -> None:
    code = (
        "import os\n"
        "x = 41\n"
        "print(x + 1)\n"
        "from IPython.display import Image, display\n"
        f"display(Image(data=__import__('base64').b64decode({PNG!r})))\n"
        "os.getpid()"
    )
    chunks = collect(remote, "python", code)
    with Computer(sandbox="off") as local:  # the same stream as lmc's own kernel gives
        here = collect(local, "python", code)
    # Lines 1-5 are traced exactly; showing the image spends the trace budget, so the quick
    # last line shows only when a sample happens to land on it (about one run in twenty).
    for lines in (active_lines(chunks), active_lines(here)):
        assert lines in ([1, 2, 3, 4, 5], [1, 2, 3, 4, 5, 6])
    assert _kinds(chunks) == _kinds(here)
    assert output_of(chunks).startswith("42\n")
    [image] = [c for c in chunks if c["type"] == "image"]
    assert image["format"] == "base64.png"
    assert base64.b64decode(image["content"]) == base64.b64decode(PNG)
    remote_pid = int(output_of(chunks).splitlines()[-1])
    [kernel] = gateway.kernels()  # the kernel runs on the gateway, not in this process tree
    assert kernel["name"] == "python3"
    assert remote_pid != 0
    # State lives on in the remote kernel; tracebacks are plain as in lmc's own kernel.
    chunks = collect(remote, "python", "def f():\n    1 / x\nx = 0\nf()")
    assert "ZeroDivisionError: division by zero" in output_of(chunks)
    assert "\x1b[" not in output_of(chunks)


def _kinds(chunks: list[Chunk]) -> list[str]:
    """The chunk types of a run, its active lines left out."""
    return [c["type"] for c in chunks if c.get("format") != "active_line"]


def test_interrupt_goes_through_the_gateway_and_keeps_the_kernel(remote: Computer) -> None:
    collect(remote, "python", "kept = 'still here'")
    code = "import time\nprint('spinning', flush=True)\nwhile True:\n    time.sleep(0.01)"
    chunks = _run_until(remote, code, "spinning", remote.interrupt)
    assert "KeyboardInterrupt" in output_of(chunks)
    assert output_of(collect(remote, "python", "print(kept)")) == "still here\n"


def test_changing_the_local_sandbox_leaves_remote_kernels_running(remote: Computer) -> None:
    collect(remote, "python", "kept = 2")
    assert remote.set_sandbox("off") == []  # local kernels would restart
    assert output_of(collect(remote, "python", "print(kept)")) == "2\n"


def test_code_that_ignores_the_interrupt_gets_a_fresh_kernel(
    remote: Computer, gateway: KernelGateway
) -> None:
    code = (
        "import signal, time\n"
        "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
        "print('deaf', flush=True)\n"
        "time.sleep(120)"
    )
    collect(remote, "python", "1")
    [before] = gateway.kernels()
    chunks = _run_until(remote, code, "deaf", remote.interrupt)
    assert "so the python kernel was restarted; earlier variables" in output_of(chunks)
    assert output_of(collect(remote, "python", "print('fresh')")) == "fresh\n"
    [after] = gateway.wait_for_kernels(1)  # the deaf one was deleted
    assert after["id"] != before["id"]


def test_a_run_past_its_timeout_is_interrupted(remote: Computer) -> None:
    chunks = collect(remote, "python", "import time\ntime.sleep(60)", timeout=1)
    text = output_of(chunks)
    assert "Timed out after 1 s" in text and "KeyboardInterrupt" in text


def test_a_kernel_that_dies_is_reported_in_one_line_and_replaced(
    remote: Computer, gateway: KernelGateway
) -> None:
    collect(remote, "python", "lost = 1")
    [before] = gateway.kernels()
    chunks = collect(remote, "python", "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)")
    [line] = [text_of(c) for c in chunks if c.get("format") == "output"]
    assert line.strip().startswith(f"The python kernel died: the kernel gateway at {gateway.url}")
    assert line.strip().count("\n") == 0
    text = output_of(collect(remote, "python", "print('lost' in globals())"))
    assert text == "False\n"
    [after] = gateway.wait_for_kernels(1)
    assert after["id"] != before["id"]  # the dead one was deleted, a fresh one runs


def test_a_kernel_killed_between_runs_is_noticed_and_replaced(
    remote: Computer, gateway: KernelGateway
) -> None:
    pid = int(output_of(collect(remote, "python", "import os\nforgotten = 1\nos.getpid()")))
    os.kill(pid, signal.SIGKILL)  # from outside, while lmc is not reading
    assert wait_until_pid_gone(pid)
    text = output_of(collect(remote, "python", "print('forgotten' in globals())"))
    # Whether lmc hears of the death before sending the run or during it, it says so in one
    # line, and the code runs (again) on a fresh kernel.
    assert f"the kernel gateway at {gateway.url} had to restart it" in text
    assert "earlier variables and imports are gone" in text
    assert output_of(collect(remote, "python", "print('forgotten' in globals())")) == "False\n"


def test_kernel_username_and_kernel_variables_reach_the_kernel(gateway: KernelGateway) -> None:
    config = _config(gateway, username="ada", env={"KERNEL_TEAM": "blue"})
    with Computer(gateway=config, sandbox="off") as computer:
        code = "import os\nprint(os.environ['KERNEL_USERNAME'], os.environ['KERNEL_TEAM'])"
        assert output_of(collect(computer, "python", code)) == "ada blue\n"
    assert gateway.wait_for_kernels(0) == []


def test_a_user_the_gateway_refuses_is_its_own_reason_in_one_line(
    gateway: KernelGateway,
) -> None:
    # Enterprise Gateway refuses KERNEL_USERNAMEs in its unauthorized_users (root, by default).
    config = _config(gateway, username="mallory")
    with Computer(gateway=config, sandbox="off") as computer:
        text = output_of(collect(computer, "python", "print('ran')"))
    if gateway.kind == "enterprise":
        assert text.startswith(
            f"the kernel gateway at {gateway.url} answered POST /api/kernels with HTTP 403: "
            "User 'mallory' is not authorized to start kernel"
        )
        assert text.count("\n") == 1
    else:  # Kernel Gateway has no such list
        assert text == "ran\n"
    assert gateway.wait_for_kernels(0) == []


def test_a_language_the_gateway_has_no_kernel_for_is_one_line(remote: Computer) -> None:
    text = output_of(collect(remote, "python", "1"))
    assert text == "1\n"
    text = output_of(collect(remote, "shell", "echo hi"))
    assert text.startswith("lmc cannot run shell code: no kernel on the kernel gateway at")
    assert text.count("\n") == 1


WRAPPERS = {"python": "python3", "shell": "lmc_shell", "javascript": "lmc_javascript"}


def test_lmc_wrapper_kernels_run_on_the_gateway_with_active_lines_and_interrupts(
    gateway: KernelGateway,
) -> None:
    # The gateway starts lmc's own shell and JavaScript kernels (the lean protocol base) from
    # their kernelspecs and relays their messages, lmc_active_line included.
    with Computer(gateway=_config(gateway, kernels=WRAPPERS), sandbox="off") as computer:
        chunks = collect(computer, "shell", "x=41\necho $((x + 1))\necho two >&2")
        assert output_of(chunks) == "42\ntwo\n"
        assert active_lines(chunks) == [1, 2, 3]
        chunks = collect(computer, "javascript", "let y = 6\nconsole.log(y * 7)\ny")
        assert output_of(chunks) == "42\n6\n"
        assert active_lines(chunks) == [1, 2, 3]
        chunks = []
        interrupted = False
        for chunk in computer.run("shell", "echo spinning; sleep 60"):
            chunks.append(chunk)
            if not interrupted and "spinning" in output_of(chunks):
                interrupted = True
                computer.interrupt()
        assert interrupted
        assert "interrupted" in output_of(chunks)
        assert output_of(collect(computer, "shell", "echo $x")) == "41\n"
        names = sorted(kernel["name"] for kernel in gateway.kernels())
        assert names == ["lmc_javascript", "lmc_shell"]
    assert gateway.wait_for_kernels(0) == []


def test_check_names_the_token_the_url_or_the_kernelspec(gateway: KernelGateway) -> None:
    assert check_gateway(_config(gateway)) == {
        "python3": "python",
        "broken": "python",
        "lmc_shell": "bash",
        "lmc_javascript": "javascript",
    }
    with pytest.raises(ComputerError, match=r"refused the token \(HTTP 40[13]\)"):
        check_gateway(_config(gateway, token="wrong"))
    with pytest.raises(ComputerError, match=r"wants a token .*LMC_KERNEL_GATEWAY_TOKEN"):
        check_gateway(_config(gateway, token=None))
    nowhere = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(ComputerError, match=f"cannot reach the kernel gateway at {nowhere}"):
        check_gateway(GatewayConfig(nowhere, token="x"))
    with pytest.raises(ComputerError, match="has no kernelspec 'nope' for python"):
        check_gateway(_config(gateway, kernels={"python": "nope"}))
    with pytest.raises(ComputerError, match="must start with http"):
        GatewayConfig("127.0.0.1:8888")


@pytest.mark.parametrize("kind", ["kernel", "enterprise"])
def test_a_gateway_that_goes_away_is_reported_and_the_session_goes_on(
    kind: str, tmp_path: Path
) -> None:
    own = _start(kind, tmp_path)
    try:
        with Computer(gateway=_config(own), sandbox="off") as computer:
            code = "import time\nprint('working', flush=True)\ntime.sleep(60)"
            chunks = _run_until(computer, code, "working", own.kill)
            assert f"lost the connection to the kernel gateway at {own.url}" in output_of(chunks)
            text = output_of(collect(computer, "python", "print(1)"))
            assert f"cannot reach the kernel gateway at {own.url}" in text
            assert text.count("\n") == 1
            # Code that needs no kernel still runs.
            html = collect(computer, "html", "<p>hi</p>")
            assert any(c.get("format") == "html" for c in html)
    finally:
        own.stop()


def test_a_kernelspec_whose_kernel_cannot_start_is_one_line(gateway: KernelGateway) -> None:
    config = _config(gateway, kernels={"python": "broken"})  # its kernel exits at once
    with Computer(gateway=config, sandbox="off") as computer:
        text = output_of(collect(computer, "python", "print(1)"))
    assert text == (
        f"the python kernel on the kernel gateway at {gateway.url} did not start (the gateway "
        "says the kernel is gone; is its kernelspec 'broken' broken there?)\n"
    )
    assert gateway.wait_for_kernels(0) == []
