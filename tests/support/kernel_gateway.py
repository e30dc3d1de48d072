"""A real Jupyter Kernel Gateway (PyPI ``jupyter_kernel_gateway``) on loopback, for tests.

``start_kernel_gateway(tmp)`` runs ``jupyter kernelgateway`` from lmc's own venv on a free
port with a token and ``list_kernels`` on (so a test can check ``GET /api/kernels`` from
outside), its Jupyter dirs under ``tmp`` and these kernelspecs: a stock ``python3`` (ipykernel
from the same venv), lmc's ``lmc_shell`` and ``lmc_javascript`` (from this checkout, on the
same python) and ``broken`` (a kernel that exits at once). ``start_enterprise_gateway``
does the same with Enterprise Gateway 3.3 from a venv of its own. The gateway and its
kernels share a new process group, which :meth:`KernelGateway.stop` kills;
:meth:`KernelGateway.kill` kills the gateway alone (a gateway that goes away mid-session)
and ``stop`` still ends its kernels.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from support.kernel_testing import KERNELS
from support.processes import descendants, wait_gone

__all__ = [
    "KernelGateway",
    "enterprise_gateway_python",
    "free_port",
    "start_enterprise_gateway",
    "start_kernel_gateway",
]

TOKEN = "test-gateway-token"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class KernelGateway:
    process: subprocess.Popen[bytes]
    url: str
    token: str
    log: Path
    kind: str = "kernel"  # or "enterprise"
    #: Kernels of a gateway killed alone (no longer its descendants), for :meth:`stop`.
    orphans: set[int] = field(default_factory=set)

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"token {self.token}"}

    def kernels(self) -> list[dict[str, Any]]:
        """The kernels running on the gateway, asked from outside lmc."""
        answer = httpx.get(f"{self.url}/api/kernels", headers=self.headers, timeout=10)
        answer.raise_for_status()
        kernels: list[dict[str, Any]] = answer.json()
        return kernels

    def wait_for_kernels(self, count: int, timeout: float = 30.0) -> list[dict[str, Any]]:
        """The running kernels, once there are ``count`` of them (or the timeout passed)."""
        deadline = time.monotonic() + timeout
        kernels = self.kernels()
        while len(kernels) != count and time.monotonic() < deadline:
            time.sleep(0.1)
            kernels = self.kernels()
        return kernels

    def kill(self) -> None:
        """SIGKILL the gateway process alone (its kernels live on until :meth:`stop`)."""
        self.orphans |= descendants(self.process.pid)
        self.process.kill()
        self.process.wait(10)

    def stop(self) -> None:
        """End the gateway and every kernel it started (kernels have sessions of their own:
        killing the gateway's process group does not reach them)."""
        pids = self.orphans | descendants(self.process.pid)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(10)
        left = wait_gone(pids, 10)
        assert not left, f"kernels of the gateway survived it: {sorted(left)}"


#: lmc's wrapper kernels, which the gateways serve too (run by the gateway's ``python``).
WRAPPER_KERNELS = ("lmc_shell", "lmc_javascript")


def _gateway_kernels(data_dir: Path, python: str = sys.executable) -> Path:
    """A kernels dir holding a ``python3`` spec (ipykernel on ``python``), lmc's wrapper
    kernels (on ``python``, from this checkout's kernels/) and a ``broken`` one whose kernel
    exits at once."""
    spec_dir = data_dir / "kernels" / "python3"
    spec_dir.mkdir(parents=True)
    spec = {
        "argv": [python, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3",
        "language": "python",
        "interrupt_mode": "signal",
    }
    (spec_dir / "kernel.json").write_text(json.dumps(spec))
    for name in WRAPPER_KERNELS:
        wrapper = json.loads((KERNELS / name / "kernel.json").read_text())
        script = KERNELS / name / Path(wrapper["argv"][1]).name
        wrapper["argv"] = [python, str(script), *wrapper["argv"][2:]]
        (data_dir / "kernels" / name).mkdir()
        (data_dir / "kernels" / name / "kernel.json").write_text(json.dumps(wrapper))
    broken = data_dir / "kernels" / "broken"  # a kernel that exits at once
    broken.mkdir()
    argv = [python, "-c", "import sys; sys.exit(3)", "{connection_file}"]
    (broken / "kernel.json").write_text(
        json.dumps({"argv": argv, "display_name": "Broken", "language": "python"})
    )
    return data_dir


def start_kernel_gateway(tmp: Path, *, token: str = TOKEN) -> KernelGateway:
    """Start ``jupyter kernelgateway`` and wait until it answers."""
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "kernel_gateway",
        "--KernelGatewayApp.ip=127.0.0.1",
        f"--KernelGatewayApp.port={port}",
        "--KernelGatewayApp.port_retries=0",
        f"--KernelGatewayApp.auth_token={token}",
        "--JupyterWebsocketPersonality.list_kernels=True",
        # Only our python3, not the system's kernelspecs.
        "--KernelSpecManager.ensure_native_kernel=False",
        "--KernelSpecManager.allowed_kernelspecs=python3",
        "--KernelSpecManager.allowed_kernelspecs=broken",
        *(f"--KernelSpecManager.allowed_kernelspecs={name}" for name in WRAPPER_KERNELS),
    ]
    return _start(tmp, command, port, token, sys.executable)


def start_enterprise_gateway(
    tmp: Path, python: str, *, token: str = TOKEN, unauthorized: str = "mallory"
) -> KernelGateway:
    """Start ``jupyter enterprisegateway`` from the venv of ``python`` (Enterprise Gateway 3.3
    needs jupyter_client < 7 and jupyter_server < 2: it cannot share lmc's venv), its kernels
    ipykernel from that venv; ``unauthorized`` is a KERNEL_USERNAME it refuses."""
    port = free_port()
    command = [
        python,
        "-m",
        "enterprise_gateway",
        "--EnterpriseGatewayApp.ip=127.0.0.1",
        f"--EnterpriseGatewayApp.port={port}",
        "--EnterpriseGatewayApp.port_retries=0",
        f"--EnterpriseGatewayApp.auth_token={token}",
        "--EnterpriseGatewayApp.list_kernels=True",
        f"--EnterpriseGatewayApp.unauthorized_users={unauthorized}",
        "--KernelSpecManager.ensure_native_kernel=False",
        "--KernelSpecManager.whitelist=python3",
        "--KernelSpecManager.whitelist=broken",
        *(f"--KernelSpecManager.whitelist={name}" for name in WRAPPER_KERNELS),
    ]
    gateway = _start(tmp, command, port, token, python)
    gateway.kind = "enterprise"
    return gateway


def _start(tmp: Path, command: list[str], port: int, token: str, python: str) -> KernelGateway:
    data_dir = _gateway_kernels(tmp / "jupyter-data", python)
    env = {
        **os.environ,
        "JUPYTER_DATA_DIR": str(data_dir),
        "JUPYTER_PATH": str(data_dir),
        "JUPYTER_CONFIG_DIR": str(tmp / "jupyter-config"),
        "JUPYTER_RUNTIME_DIR": str(tmp / "jupyter-runtime"),
        "JUPYTER_PLATFORM_DIRS": "1",
    }
    env.pop("PYTEST_CURRENT_TEST", None)
    log = tmp / "kernel-gateway.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=tmp,
            start_new_session=True,
        )
    gateway = KernelGateway(process, f"http://127.0.0.1:{port}", token, log)
    deadline = time.monotonic() + 60
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"the kernel gateway exited: {log.read_text()[-2000:]}")
        try:
            if httpx.get(f"{gateway.url}/api", timeout=2).status_code < 500:
                return gateway
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            gateway.stop()
            raise RuntimeError(f"the kernel gateway did not answer: {log.read_text()[-2000:]}")
        time.sleep(0.1)


#: The Enterprise Gateway tested, in a venv of its own (cached between test sessions).
ENTERPRISE_GATEWAY = "jupyter_enterprise_gateway==3.3.0"


def enterprise_gateway_python() -> str:
    """The interpreter of a venv holding Enterprise Gateway 3.3 and ipykernel.

    ``LMC_TEST_ENTERPRISE_GATEWAY_PYTHON`` names one; otherwise it is built once with pip
    (from the package registry) under ``~/.cache/lmc-tests`` and reused.
    """
    given = os.environ.get("LMC_TEST_ENTERPRISE_GATEWAY_PYTHON")
    if given:
        return given
    venv = Path.home() / ".cache" / "lmc-tests" / "enterprise-gateway-3.3.0"
    python = venv / "bin" / "python"
    done = venv / ".installed"
    if not done.exists():
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", ENTERPRISE_GATEWAY, "ipykernel"],
            check=True,
            timeout=900,
        )
        done.touch()
    return str(python)
