"""Helpers for the wrapper-kernel tests: drive a kernel in kernels/ through jupyter_client."""

from __future__ import annotations

import queue
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from jupyter_client.provisioning.local_provisioner import LocalProvisioner
from support.processes import descendants, wait_gone

KERNELS = Path(__file__).resolve().parents[2] / "kernels"


@dataclass
class Run:
    """Everything one execute request produced, IOPub messages in arrival order."""

    messages: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    reply: dict[str, Any] = field(default_factory=dict)

    @property
    def events(self) -> list[tuple[str, Any]]:
        """("line", n) / ("stdout", text) / ("stderr", text) / ("error", ename) /
        ("result", text) in order."""
        events: list[tuple[str, Any]] = []
        for msg_type, content in self.messages:
            if msg_type == "lmc_active_line":
                events.append(("line", content["line"]))
            elif msg_type == "stream":
                if events and events[-1][0] == content["name"]:
                    events[-1] = (content["name"], events[-1][1] + content["text"])
                else:
                    events.append((content["name"], content["text"]))
            elif msg_type == "error":
                events.append(("error", content["ename"]))
            elif msg_type == "execute_result":
                events.append(("result", content["data"]["text/plain"]))
        return events

    def text(self, name: str = "stdout") -> str:
        return "".join(c["text"] for t, c in self.messages if t == "stream" and c["name"] == name)

    @property
    def lines(self) -> list[int | None]:
        return [c["line"] for t, c in self.messages if t == "lmc_active_line"]

    @property
    def results(self) -> list[str]:
        return [c["data"]["text/plain"] for t, c in self.messages if t == "execute_result"]

    @property
    def errors(self) -> list[dict[str, Any]]:
        return [c for t, c in self.messages if t == "error"]


class KernelDriver:
    """A started kernel and its client, run one execute request at a time."""

    def __init__(self, manager: KernelManager, client: Any) -> None:
        self.manager = manager
        self.client = client

    def run(
        self,
        code: str,
        *,
        timeout: float = 15,
        interrupt_after: float | None = None,
        on_stream: Callable[[str], object] | None = None,
    ) -> Run:
        """Execute ``code``; optionally interrupt once it has run ``interrupt_after`` seconds.
        ``on_stream`` is called with each stream message's text as it arrives."""
        run = Run()
        msg_id = self.client.execute(code)
        start = time.monotonic()
        interrupted = False
        while True:
            now = time.monotonic()
            assert now - start < timeout, f"no idle status within {timeout}s: {run.events}"
            if interrupt_after is not None and not interrupted and now - start >= interrupt_after:
                self.manager.interrupt_kernel()
                interrupted = True
            try:
                msg = self.client.get_iopub_msg(timeout=0.05)
            except queue.Empty:
                continue
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            msg_type, content = msg["msg_type"], msg["content"]
            if msg_type == "status":
                if content["execution_state"] == "idle":
                    break
                continue
            if msg_type != "execute_input":
                run.messages.append((msg_type, content))
            if on_stream is not None and msg_type == "stream":
                on_stream(content["text"])
        reply = self.client.get_shell_msg(timeout=timeout)
        while reply["parent_header"].get("msg_id") != msg_id:  # e.g. a repeated kernel_info's
            reply = self.client.get_shell_msg(timeout=timeout)
        run.reply = reply["content"]
        return run


def kernel_pid(manager: KernelManager) -> int:
    """The process id of a kernel this test started on this machine."""
    provisioner = manager.provisioner
    assert isinstance(provisioner, LocalProvisioner) and provisioner.process is not None
    return int(provisioner.process.pid)


@contextmanager
def running_kernel(name: str) -> Iterator[KernelDriver]:
    """Start kernel ``name`` from kernels/ (not the user's Jupyter) and shut it down after.

    The shutdown is the kernel's own (a shutdown request, so it ends its children), and
    afterwards every process the kernel had started must be gone: a test never leaves one
    behind.
    """
    specs = KernelSpecManager(kernel_dirs=[str(KERNELS)], ensure_native_kernel=False)
    manager = KernelManager(kernel_name=name, kernel_spec_manager=specs)
    manager.start_kernel()
    client = manager.client()
    client.start_channels()
    started: set[int] = set()
    try:
        client.wait_for_ready(timeout=60)
        yield KernelDriver(manager, client)
    finally:
        started = descendants(kernel_pid(manager))
        client.stop_channels()
        manager.shutdown_kernel(now=False)
    assert wait_gone(started, timeout=10) == set(), "the kernel left processes behind"
