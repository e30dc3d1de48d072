"""A dev server started in the foreground by mistake, side by side: ``lmc run`` against OpenAI's
Codex CLI (``codex exec``), each driven by a fake model server of its own on 127.0.0.1.

The task is the one issue 28 names: "start a dev server, curl it, stop it", under ``-y`` /
full-auto with the sandbox on. Each fake server plays the steps gpt-oss takes, in the dialect
its tool speaks (the approach of the shared ``bench/bench_vs_codex.py``, reimplemented here):

0. ``python3 -m http.server PORT --bind 127.0.0.1 --directory site-TAG`` with no ``&`` (the
   model forgot it). lmc hands the block back as a job after ``--block-timeout`` (2 s here;
   default 30 s). Codex's ``exec_command`` yields a still-running command as a session after
   its ``yield_time_ms`` (a model argument, no setting: 10 s when the model leaves it out); the
   ``codex`` variant passes the same 2 s, ``codex-default`` leaves it out.
1. ``curl`` it: the answer must list ``hello-TAG.txt`` (the file exists only in that folder).
2. Stop it. lmc: its ``jobs`` function, ``{"action": "stop", "job": N}`` with N read from the
   hand-back note. Codex: ``write_stdin`` ``{"session_id": N, "chars": "\\u0003"}`` (Ctrl-C to
   the session; Codex signals the command even without a terminal: it exits with code 130).
   A ``pkill -f 'http[.]server PORT'`` from a later ``exec_command`` cannot stop it there:
   Codex's sandbox runs each command in a PID namespace of its own, so pkill sees only itself.
3. A final answer ``DEVBENCH-DONE TAG``.

lmc gets ``/v1/completions`` SSE with raw Harmony text (an analysis message, then a
``commentary to=functions.shell`` or ``to=functions.jobs`` call with ``<|constrain|>json``), as
``--api-style completions`` reads it (lmc/backends/openai_server.py); the tool outputs are the
``functions.*`` messages of the next prompt. Codex 0.169 gets a Responses SSE stream
(response.created / output_item.added / output_item.done / completed) with ``function_call``
items of the ``exec_command`` tool its request declares ({"cmd", "yield_time_ms"}); its tool
outputs are the ``function_call_output`` items of the next request's ``input``.

A run *finished* when the tool exited 0, the server saw steps 0..3 in order (0..2 with
``--no-stop``: the model skips step 2 and the tool must end the server itself), the start was
handed back (lmc: "as job N"; Codex: "session ID N"), the curl output listed the file, the stop
worked (lmc: "job N stopped"; Codex: "Process exited with code") and stdout carries the final
answer.

*Processes left over* after the tool exits (counted at exit, and what is still there after up
to ``--settle`` seconds; each run then ends what is left, by pid): every process seen in the tool's
tree while it ran (sampled every 0.1 s, pid and start time) that is still alive, processes
reparented to this script (it is a child subreaper), processes in the tool's session, and any
process whose command line holds the run's tag; plus listening sockets on the run's port in
any network namespace (lmc's sandboxed kernels have their own loopback, invisible from the
host's ``ss``). A run in which the dev server's process or its listener was not seen while it
ran does not count as finished: the counts would be blind to it.

Without asking: lmc ``run -y``; ``codex exec`` never asks (0.169 has no ``--full-auto``: exec
is that). Sandbox on: lmc ``--sandbox workspace`` (network off: the kernels share a loopback of
their own, so the server and curl meet there); Codex ``-s workspace-write`` with
``sandbox_workspace_write.network_access=true``, because with the network off (its default)
Codex's seccomp filter refuses the server's socket() and the task cannot be done at all: the
``codex-no-network`` variant shows that (it never finishes).

  python3 scripts/bench_devserver_vs_codex.py      # lmc and three Codex variants, 3 rounds
  python3 scripts/bench_devserver_vs_codex.py --tools lmc --rounds 1 --out r.json   # lmc only
  options: --lmc "CMD" (default .venv/bin/lmc, else `python -m lmc`)  --codex PATH  --rounds N
           --block-timeout S  --settle S  --timeout S  --no-stop (the model never stops the
           server: the tool must, when it exits)  --keep  --out FILE.json

Codex is installed by ``bench/bench_vs_codex_setup.sh`` of the shared folder (npm
``@openai/codex@0.169.0`` into /tmp/lmc-bench-codex); this script does not install it. Linux
only, stdlib only. Progress goes to stderr, the table to stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import re
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final

ROOT: Final = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CODEX_NATIVE: Final = (
    "/tmp/lmc-bench-codex/node_modules/@openai/codex-linux-x64/vendor/"
    "x86_64-unknown-linux-musl/bin/codex"
)
#: The variants a run can be: lmc; Codex with the model's yield_time_ms set to lmc's
#: block_timeout; Codex with it left out (10 s); Codex with its sandbox's network off.
VARIANTS: Final = ("lmc", "codex", "codex-default", "codex-no-network")
#: Codex's workspace-write sandbox with the network off (its default) refuses every socket()
#: but AF_UNIX (seccomp), so the dev server cannot start at all; this gives the sandbox the
#: network and keeps the rest of it (writes only in the workspace).
CODEX_NETWORK: Final = ["-c", "sandbox_workspace_write.network_access=true"]
CODEX_DEFAULT_YIELD_MS: Final = 10_000  # exec_command's description in Codex 0.169's request
PR_SET_CHILD_SUBREAPER: Final = 36
clock = time.perf_counter


def log(*parts: object) -> None:
    print(*parts, file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------- the scenario
@dataclass
class Scenario:
    """One run's script and what its fake server saw."""

    variant: str
    tag: str
    port: int
    yield_ms: int | None
    stop: bool = True  # False: the model never stops the server (the tool must, at exit)
    steps: list[int] = field(default_factory=list)
    step_times: list[tuple[int, float, float]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    handle: int | None = None  # lmc's job number, Codex's session id
    listening: int = 0  # listeners on the port found once curl got its answer
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def last(self) -> int:
        """The step of the final answer."""
        return 3 if self.stop else 2

    @property
    def site(self) -> str:
        return f"site-{self.tag}"

    @property
    def page(self) -> str:
        return f"hello-{self.tag}.txt"

    @property
    def final(self) -> str:
        return f"DEVBENCH-DONE {self.tag}"

    def start_command(self) -> str:
        return f"python3 -m http.server {self.port} --bind 127.0.0.1 --directory {self.site}"

    def curl_command(self) -> str:
        return (
            "curl -s --max-time 20 --retry 10 --retry-connrefused --retry-delay 1 "
            f"http://127.0.0.1:{self.port}/"
        )

    def check(self, outputs: list[str]) -> None:
        """Note what is wrong with the outputs so far (each is checked once, when it is last)."""
        k = len(outputs)
        last = outputs[-1] if outputs else ""
        if k == 1:
            found = re.search(r"as job (\d+)|session ID (\d+)", last)
            if found is None:
                self.problems.append(f"the start was not handed back: {last[-300:]!r}")
            else:
                self.handle = int(found.group(1) or found.group(2))
        elif k == 2:
            if self.page not in last:
                self.problems.append(f"curl did not list {self.page}: {last[-300:]!r}")
            self.listening = len(listeners(self.port))  # the scan must see it while it runs
        elif k == 3:
            stopped = f"job {self.handle} stopped" in last or "Process exited with code" in last
            if not stopped:
                self.problems.append(f"the stop did not stop it: {last[-300:]!r}")


def lmc_view(prompt: str) -> tuple[str, list[str], set[str]]:
    """(the user's text, tool outputs in order, declared functions) of a raw Harmony prompt."""
    texts, outputs = [], []
    for message in prompt.split("<|start|>")[1:]:
        header, _, rest = message.partition("<|message|>")
        content = re.split(r"<\|(?:end|call|return)\|>", rest, maxsplit=1)[0]
        author = header.split("<|channel|>")[0].split()[0] if header.split() else ""
        if author == "user":
            texts.append(content)
        elif author.startswith("functions."):
            outputs.append(content)
    return "\n".join(texts), outputs, set(re.findall(r"type (\w+) = ", prompt))


def codex_view(body: dict[str, Any]) -> tuple[str, list[str], set[str]]:
    """(the user's text, tool outputs in order, declared tools) of a Responses request."""
    texts: list[str] = []
    outputs: list[str] = []
    for item in body.get("input") or []:
        if item.get("type") == "message" and item.get("role") == "user":
            content = item.get("content")
            parts = content if isinstance(content, list) else [{"text": str(content)}]
            texts += [str(p.get("text", "")) for p in parts if isinstance(p, dict)]
        elif item.get("type") == "function_call_output":
            output = item.get("output")
            if isinstance(output, list):
                output = "\n".join(str(p.get("text", "")) for p in output if isinstance(p, dict))
            outputs.append(str(output))
    names = {str(t.get("name")) for t in body.get("tools") or [] if isinstance(t, dict)}
    return "\n".join(texts), outputs, names


LMC_THOUGHT: Final = "<|channel|>analysis<|message|>%s<|end|><|start|>assistant"
LMC_CALL: Final = "<|channel|>commentary to=functions.%s <|constrain|>json<|message|>%s"
THOUGHTS: Final = (
    "Start a dev server serving the site folder.",
    "The server is up; fetch the index with curl.",
    "It answered. Stop the server now.",
    "Done.",
)


def lmc_step(run: Scenario, k: int) -> str:
    """The raw Harmony text gpt-oss writes at step k (without the stop token the server hides)."""
    thought = LMC_THOUGHT % THOUGHTS[k if k < run.last else -1]
    if k == 0:
        return thought + LMC_CALL % ("shell", json.dumps({"code": run.start_command()}))
    if k == 1:
        return thought + LMC_CALL % ("shell", json.dumps({"code": run.curl_command()}))
    if k < run.last:
        stop = {"action": "stop", "job": run.handle if run.handle is not None else 1}
        return thought + LMC_CALL % ("jobs", json.dumps(stop))
    return thought + f"<|channel|>final<|message|>{run.final}: served, fetched and stopped."


def codex_step(run: Scenario, k: int, rid: str) -> dict[str, Any]:
    """The Responses output item the model sends at step k."""
    if k >= run.last:
        text = f"{run.final}: served, fetched and stopped."
        return {"type": "message", "role": "assistant", "id": "msg_" + rid,
                "content": [{"type": "output_text", "text": text, "annotations": []}]}  # fmt: skip
    name = "exec_command"
    args: dict[str, Any] = {"cmd": run.start_command() if k == 0 else run.curl_command()}
    if k == 0 and run.yield_ms is not None:
        args["yield_time_ms"] = run.yield_ms
    if k == 2:  # Ctrl-C to the session; it answers as soon as the command exits
        name = "write_stdin"
        args = {"session_id": run.handle or 0, "chars": "\u0003", "yield_time_ms": 2000}
    return {"type": "function_call", "name": name, "arguments": json.dumps(args),
            "call_id": "call_" + rid, "id": "fc_" + rid}  # fmt: skip


def lmc_sse(rid: str, text: str, tokens_in: int) -> str:
    """/v1/completions SSE: the text, then finish_reason "stop" with the usage on that chunk."""
    base = {"id": rid, "object": "text_completion", "created": 0, "model": "fake-gpt-oss"}
    usage = {"prompt_tokens": tokens_in, "completion_tokens": 30, "total_tokens": tokens_in + 30}
    first = {"index": 0, "text": text, "logprobs": None, "finish_reason": None}
    last = {"index": 0, "text": "", "logprobs": None, "finish_reason": "stop"}
    chunks = [dict(base, choices=[first]), dict(base, choices=[last], usage=usage)]
    return "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"


def codex_sse(rid: str, item: dict[str, Any], tokens_in: int) -> str:
    """A Responses stream with one output item."""
    usage = {"input_tokens": tokens_in, "input_tokens_details": {"cached_tokens": 0},
             "output_tokens": 30, "output_tokens_details": {"reasoning_tokens": 0},
             "total_tokens": tokens_in + 30}  # fmt: skip
    done = dict(item, status="completed")
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {"id": rid}},
        {"type": "response.output_item.added", "output_index": 0,
         "item": dict(item, status="in_progress")},
        {"type": "response.output_item.done", "output_index": 0, "item": done},
        {"type": "response.completed", "response": {"id": rid, "usage": usage}},
    ]  # fmt: skip
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)


class ModelServer:
    """A fake model server for one tool, on 127.0.0.1: stateless per request (the step is the
    number of tool outputs in the request), scripted by the run whose tag the request holds."""

    def __init__(self, dialect: str) -> None:
        self.dialect = dialect
        self.runs: dict[str, Scenario] = {}
        self.strays: list[str] = []
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.httpd.daemon_threads = True
        self.port = int(self.httpd.server_address[1])
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet."""

            def _send(self, code: int, body: str, ctype: str) -> None:
                data = body.encode()
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                self.wfile.flush()

            def do_GET(self) -> None:
                outer.strays.append("GET " + self.path)
                if self.path.rstrip("/").endswith("/models"):
                    models = {"object": "list", "data": [{"id": "gpt-oss-120b", "object": "model"}]}
                    self._send(200, json.dumps(models), "application/json")
                else:
                    self._send(404, '{"error": {"message": "not here"}}', "application/json")

            def do_POST(self) -> None:
                started = clock()
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body, done = outer.answer(self.path, raw)
                except (ValueError, KeyError, TypeError) as exc:
                    outer.strays.append(f"POST {self.path}: {exc!r}")
                    error = json.dumps({"error": {"message": f"devbench: {exc}"}})
                    self._send(400, error, "application/json")
                    return
                self._send(200, body, "text/event-stream")
                done(started, clock())

        return Handler

    def register(self, run: Scenario) -> None:
        self.runs[run.tag] = run

    def answer(self, path: str, raw: bytes) -> tuple[str, Callable[[float, float], None]]:
        body = json.loads(raw)
        if self.dialect == "codex" and path.endswith("/responses"):
            text, outputs, tools = codex_view(body)
            need = "exec_command"
        elif self.dialect == "lmc" and path.endswith("/completions"):
            text, outputs, tools = lmc_view(str(body.get("prompt") or ""))
            need = "jobs"
        else:
            raise ValueError(f"not this server's endpoint: {path}")
        found = re.search(r"DEVBENCH-RUN ([0-9a-f]{12})", text)
        run = self.runs.get(found.group(1)) if found else None
        if run is None:
            raise ValueError("no known DEVBENCH-RUN tag in the request")
        k = len(outputs)
        with run.lock:
            run.check(outputs)
            if need not in tools:
                run.problems.append(f"step {k}: the request declares no {need} tool")
            run.steps.append(k)
        rid = f"devbench_{run.tag}_{k}"
        tokens_in = len(raw) // 4
        if self.dialect == "codex":
            sse = codex_sse(rid, codex_step(run, min(k, run.last), rid), tokens_in)
        else:
            sse = lmc_sse(rid, lmc_step(run, min(k, run.last)), tokens_in)

        def done(t_in: float, t_out: float) -> None:
            with run.lock:
                run.step_times.append((k, t_in, t_out))

        return sse, done

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


# ------------------------------------------------------------------------------- processes
@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    state: str
    session: int
    start: str
    comm: str


def proc_table() -> dict[int, Proc]:
    """Every live process, from /proc/PID/stat."""
    table: dict[int, Proc] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        with contextlib.suppress(OSError, IndexError, ValueError):
            with open(f"/proc/{name}/stat") as f:
                head, tail = f.read().rsplit(")", 1)
            rest = tail.split()
            comm = head.split("(", 1)[1]
            table[int(name)] = Proc(int(name), int(rest[1]), rest[0], int(rest[3]), rest[19], comm)
    return table


def tree(root: int, table: dict[int, Proc]) -> list[int]:
    children: dict[int, list[int]] = {}
    for proc in table.values():
        children.setdefault(proc.ppid, []).append(proc.pid)
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        if pid in table:
            out.append(pid)
            todo += children.get(pid, [])
    return out


def cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def listeners(port: int) -> list[str]:
    """Listening TCP sockets on ``port`` in every network namespace a process is in."""
    seen: set[str] = set()
    found: list[str] = []
    hex_port = f":{port:04X}"
    for pid in proc_table():
        try:
            namespace = os.readlink(f"/proc/{pid}/ns/net")
        except OSError:
            continue
        if namespace in seen:
            continue
        seen.add(namespace)
        for table in ("tcp", "tcp6"):
            with contextlib.suppress(OSError), open(f"/proc/{pid}/net/{table}") as f:
                for line in f.readlines()[1:]:
                    fields = line.split()
                    if fields[1].endswith(hex_port) and fields[3] == "0A":
                        found.append(f"{namespace} ({table}, seen from pid {pid})")
    return found


class Watch:
    """Every process of a tool's tree, sampled on a thread while it runs."""

    def __init__(self, root: int, tag: str, interval: float = 0.1) -> None:
        self.root = root
        self.tag = tag
        self.seen: dict[tuple[int, str], str] = {}
        #: Processes of the tree whose command line holds the tag: the dev server, seen
        #: inside the tool's sandbox (what proves the watch would see it left behind).
        self.tagged: set[int] = set()
        self._stop = threading.Event()
        self._interval = interval
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.is_set():
            table = proc_table()
            for pid in tree(self.root, table):
                key = (pid, table[pid].start)
                if key not in self.seen:
                    self.seen[key] = table[pid].comm
                    if self.tag in cmdline(pid):
                        self.tagged.add(pid)
            self._stop.wait(self._interval)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def leftovers(watch: Watch, tag: str) -> dict[int, str]:
    """Live processes (not zombies) the tool left: pid -> what it is."""
    me, table = os.getpid(), proc_table()
    left: dict[int, str] = {}
    for proc in table.values():
        if proc.state == "Z" or proc.pid == me:
            continue
        if (
            (proc.pid, proc.start) in watch.seen
            or proc.ppid == me
            or proc.session == watch.root
            or tag in cmdline(proc.pid)
        ):
            left[proc.pid] = f"{proc.pid} {proc.comm}: {cmdline(proc.pid)[:120]}"
    return left


def end_processes(pids: list[int]) -> None:
    """SIGTERM, then SIGKILL after 3 s, each by pid; children of ours are reaped."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        alive = [pid for pid in pids if _alive(pid)]
        for pid in alive:
            with contextlib.suppress(OSError):
                os.kill(pid, sig)
        deadline = clock() + 3.0
        while alive and clock() < deadline:
            time.sleep(0.05)
            alive = [pid for pid in alive if _alive(pid)]
        if not alive:
            return


def _alive(pid: int) -> bool:
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def reap_zombies() -> None:
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass


# ------------------------------------------------------------------------------- the two tools
CODEX_CONFIG: Final = """\
model = "gpt-oss-120b"
model_provider = "devbench"
check_for_update_on_startup = false

[analytics]
enabled = false

[features]
plugins = false
remote_plugin = false
apps = false

[model_providers.devbench]
name = "devbench"
base_url = "%s"
env_key = "DEVBENCH_API_KEY"
wire_api = "responses"
"""


@dataclass
class Tools:
    """How each tool is started: argv, environment, folders (kept across runs, as a user's)."""

    lmc: list[str]
    codex: str
    tmp: str
    block_timeout: float
    extra: dict[str, list[str]]

    def __post_init__(self) -> None:
        for sub in ("work", "home", "tmpdir", "codex-home", "lmc-state", "out"):
            os.makedirs(os.path.join(self.tmp, sub), exist_ok=True)
        with open(os.path.join(self.tmp, "lmc-state", "config.toml"), "w") as f:
            f.write("")
        keep = ("PATH", "LANG", "LC_ALL", "TZ", "USER", "LOGNAME", "PYTHONPATH")
        self.env = {k: os.environ[k] for k in keep if k in os.environ}
        self.env.update(
            HOME=os.path.join(self.tmp, "home"), TERM="dumb", NO_COLOR="1", SHELL="/bin/bash",
            TMPDIR=os.path.join(self.tmp, "tmpdir"),
        )  # fmt: skip

    @property
    def work(self) -> str:
        return os.path.join(self.tmp, "work")

    def argv(self, variant: str, base_url: str, prompt: str) -> tuple[list[str], dict[str, str]]:
        if variant == "lmc":
            state = os.path.join(self.tmp, "lmc-state")
            env = dict(self.env, LMC_CONFIG=os.path.join(state, "config.toml"),
                       LMC_DATA_DIR=os.path.join(state, "data"),
                       LMC_CACHE_DIR=os.path.join(state, "cache"))  # fmt: skip
            return [*self.lmc, "run", "-y", "--json", "--api-base", base_url,
                    "--api-style", "completions", "--sandbox", "workspace",
                    "--block-timeout", f"{self.block_timeout:g}", "--workdir", self.work,
                    *self.extra["lmc"], prompt], env  # fmt: skip
        home = os.path.join(self.tmp, "codex-home")
        with open(os.path.join(home, "config.toml"), "w") as f:
            f.write(CODEX_CONFIG % base_url)
        env = dict(self.env, CODEX_HOME=home, DEVBENCH_API_KEY="sk-devbench",
                   CODEX_MANAGED_BY_NPM="1",
                   CODEX_MANAGED_PACKAGE_ROOT=codex_package(self.codex))  # fmt: skip
        network = [] if variant == "codex-no-network" else CODEX_NETWORK
        return [self.codex, "exec", "--json", "--skip-git-repo-check", "--color", "never",
                "-s", "workspace-write", *network, *self.extra["codex"], prompt], env  # fmt: skip


def codex_package(native: str) -> str:
    """The npm package folder the shim names to the native binary it starts."""
    prefix = native.split("/node_modules/", 1)[0]
    return os.path.join(prefix, "node_modules", "@openai", "codex")


def final_text(variant: str, stdout: str) -> str:
    """The final answer in a tool's --json output."""
    out = []
    for line in stdout.splitlines():
        with contextlib.suppress(ValueError, AttributeError, KeyError):
            event = json.loads(line)
            if variant != "lmc" and event.get("type") == "item.completed":
                if event["item"].get("type") == "agent_message":
                    out.append(str(event["item"].get("text", "")))
            elif event.get("role") == "assistant" and event.get("type") == "message":
                out.append(str(event.get("content") or ""))
    return "".join(out)


@dataclass
class Bench:
    tools: Tools
    servers: dict[str, ModelServer]
    timeout: float
    settle: float
    stop: bool = True
    seq: int = 0

    def run(self, variant: str) -> dict[str, Any]:
        server = self.servers["lmc" if variant == "lmc" else "codex"]
        tag = uuid.uuid4().hex[:12]
        yield_ms = None if variant == "codex-default" else int(self.tools.block_timeout * 1000)
        run = Scenario(variant, tag, free_port(), yield_ms, stop=self.stop)
        os.makedirs(os.path.join(self.tools.work, run.site), exist_ok=True)
        with open(os.path.join(self.tools.work, run.site, run.page), "w") as f:
            f.write("served by the dev server\n")
        server.register(run)
        prompt = f"DEVBENCH-RUN {tag}: start a dev server, curl it" + (
            ", stop it." if self.stop else ", and leave it."
        )
        argv, env = self.tools.argv(variant, server.base_url, prompt)
        self.seq += 1
        stem = os.path.join(self.tools.tmp, "out", f"{self.seq:03d}-{variant}")
        with open(stem + ".out", "w") as out, open(stem + ".err", "w") as err:
            started = clock()
            proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env,
                cwd=self.tools.work, start_new_session=True,
            )  # fmt: skip
            watch = Watch(proc.pid, tag)
            timed_out = False
            try:
                rc = proc.wait(self.timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
                end_processes(tree(proc.pid, proc_table()))
                rc = proc.wait()
            wall = clock() - started
            watch.stop()
        result = self._after(run, watch, stem)
        result.update(variant=variant, tag=tag, port=run.port, rc=rc, wall=wall,
                      timed_out=timed_out, processes_seen=len(watch.seen),
                      server_seen=bool(watch.tagged), listening=run.listening,
                      stopped_by_model=run.stop)  # fmt: skip
        result.update(self._verdict(run, rc, timed_out, stem, started))
        if not watch.tagged or not run.listening:
            result["problems"].append(
                f"the dev server was not seen running (in the tree: {bool(watch.tagged)}, "
                f"listening: {run.listening}): the leftover counts would be blind to it"
            )
            result["finished"] = False
        return result

    def _after(self, run: Scenario, watch: Watch, stem: str) -> dict[str, Any]:
        """What the tool left behind: at exit, and what is still there after up to ``settle``
        seconds (a process on its way out gets that long); then it is ended, by pid."""
        at_exit = leftovers(watch, run.tag)
        ports_at_exit = listeners(run.port)
        later, ports_later = at_exit, ports_at_exit
        deadline = clock() + self.settle
        while (later or ports_later) and clock() < deadline:
            time.sleep(0.1)
            later, ports_later = leftovers(watch, run.tag), listeners(run.port)
        end_processes(list(later))
        reap_zombies()
        with open(stem + ".left", "w") as f:
            json.dump({"at_exit": at_exit, "later": later, "ports": ports_later}, f, indent=1)
        return {
            "left_at_exit": sorted(at_exit.values()),
            "left_later": sorted(later.values()),
            "listeners_at_exit": ports_at_exit,
            "listeners_later": ports_later,
        }

    def _verdict(
        self, run: Scenario, rc: int, timed_out: bool, stem: str, started: float
    ) -> dict[str, Any]:
        with open(stem + ".out", errors="replace") as f:
            final = final_text(run.variant, f.read())
        problems = list(run.problems)
        if timed_out:
            problems.append(f"still running after {self.timeout:g} s (ended)")
        elif rc != 0:
            with open(stem + ".err", errors="replace") as f:
                problems.append(f"exit {rc}: {f.read()[-300:].strip()}")
        if run.steps != list(range(run.last + 1)):
            problems.append(f"steps {run.steps}, expected 0..{run.last}")
        if run.final not in final:
            problems.append("no final answer on stdout")
        times = {k: (t_in, t_out) for k, t_in, t_out in run.step_times}
        handed = times[1][0] - times[0][1] if 0 in times and 1 in times else None
        stop = times[3][0] - times[2][1] if 2 in times and 3 in times else None
        return {"finished": not problems, "problems": problems[:5], "hand_back": handed,
                "stop_call": stop, "steps": run.steps,
                "first_request": times[0][0] - started if 0 in times else None}  # fmt: skip


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# ------------------------------------------------------------------------------- the table
def median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def summary(results: list[dict[str, Any]], variants: list[str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for variant in variants:
        rs = [r for r in results if r["variant"] == variant]
        ok = [r for r in rs if r["finished"]]
        out[variant] = {
            "runs": len(rs),
            "finished": len(ok),
            "wall": median([r["wall"] for r in ok]),
            "hand_back": median([r["hand_back"] for r in ok if r["hand_back"] is not None]),
            "stop_call": median([r["stop_call"] for r in ok if r["stop_call"] is not None]),
            "left_at_exit": max((len(r["left_at_exit"]) for r in rs), default=0),
            "left_later": max((len(r["left_later"]) for r in rs), default=0),
            "listeners": max((len(r["listeners_later"]) for r in rs), default=0),
            "processes_seen": median([float(r["processes_seen"]) for r in rs]),
            "server_seen": sum(1 for r in rs if r["server_seen"] and r["listening"]),
            "examples": sorted({x for r in rs for x in r["left_later"]})[:4],
            "problems": list(dict.fromkeys(p[:160] for r in rs for p in r["problems"]))[:2],
        }
    return out


def _cell(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    return f"{value:.2f} s" if unit == "s" else f"{value:g}"


def table(s: dict[str, dict[str, Any]], variants: list[str], info: dict[str, Any]) -> str:
    names = {
        "lmc": "lmc",
        "codex": f"Codex (yield {info['block_timeout']:g} s)",
        "codex-default": f"Codex (yield {CODEX_DEFAULT_YIELD_MS / 1000:g} s)",
        "codex-no-network": "Codex (no network)",
    }
    head = f"{'':34}" + "".join(f"{names[v]:>20}" for v in variants)
    lines = [
        f"start a dev server in the foreground, curl it, "
        f"{'stop it' if info['stop'] else 'leave it (no stop call)'}; -y / full-auto, sandbox on; "
        f"lmc {info['lmc_version']}, Codex {info['codex_version']}; medians of finished runs; "
        f"load average {info['load_start']} -> {info['load_end']} on {info['cpus']} CPUs",
        head,
        "-" * len(head),
    ]
    rows: list[tuple[str, Callable[[dict[str, Any]], str]]] = [
        ("finished", lambda d: f"{d['finished']}/{d['runs']}"),
        ("wall time", lambda d: _cell(d["wall"], "s")),
        ("  start -> handed back (server)", lambda d: _cell(d["hand_back"], "s")),
        ("  stop call -> its result", lambda d: _cell(d["stop_call"], "s")),
        ("processes left at exit (max)", lambda d: str(d["left_at_exit"])),
        (f"  still there {info['settle']:g} s later", lambda d: str(d["left_later"])),
        ("listeners on the port (max)", lambda d: str(d["listeners"])),
        ("processes in the tree (median)", lambda d: _cell(d["processes_seen"], "n")),
        ("dev server seen running (runs)", lambda d: f"{d['server_seen']}/{d['runs']}"),
    ]
    for label, get in rows:
        lines.append(f"{label:34}" + "".join(f"{get(s[v]):>20}" for v in variants))
    lmc = s.get("lmc", {}).get("wall")
    for variant in variants:
        other = s[variant]["wall"]
        if variant != "lmc" and lmc and other:
            lines.append(f"ratio lmc / {names[variant]}: wall {lmc / other:.2f}x")
    for variant in variants:
        for what in ("problems", "examples"):
            if s[variant][what]:
                lines.append(f"{names[variant]} {what}: {s[variant][what]}")
    return "\n".join(lines)


# ------------------------------------------------------------------------------- main
def default_lmc() -> str:
    venv = os.path.join(ROOT, ".venv", "bin", "lmc")
    if os.access(venv, os.X_OK):
        return venv
    return f"{shlex.quote(sys.executable)} -m lmc"


def version(argv: list[str]) -> str:
    try:
        out = subprocess.run(
            [*argv, "--version"], capture_output=True, text=True, timeout=120, check=False
        ).stdout.split()
    except OSError:
        return "?"
    return out[-1] if out else "?"


def parse(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--lmc", default=default_lmc(), help="command that starts lmc")
    ap.add_argument("--codex", default=CODEX_NATIVE, help="Codex's native binary")
    ap.add_argument("--tools", default=",".join(VARIANTS), help="lmc,codex,codex-default")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--block-timeout", type=float, default=2.0)
    ap.add_argument(
        "--settle", type=float, default=2.0, help="seconds a leftover gets to end by itself"
    )
    ap.add_argument("--timeout", type=float, default=180.0, help="seconds a run may take")
    ap.add_argument("--no-warm-up", action="store_true")
    ap.add_argument("--lmc-args", default="", help="more flags for lmc run")
    ap.add_argument("--codex-args", default="", help="more flags for codex exec")
    ap.add_argument("--tmp-root", default="/var/tmp", help="not /tmp: Codex refuses it")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir (outputs, logs)")
    ap.add_argument("--out", help="also write every figure as JSON here")
    ap.add_argument(
        "--no-stop", action="store_true", help="the model never stops it: the tool must, at exit"
    )
    return ap.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse(argv)
    variants = [v for v in args.tools.split(",") if v]
    if unknown := set(variants) - set(VARIANTS):
        sys.exit(f"unknown --tools {sorted(unknown)}; known: {', '.join(VARIANTS)}")
    if any(v != "lmc" for v in variants) and not os.access(args.codex, os.X_OK):
        sys.exit(f"no Codex at {args.codex} (bench/bench_vs_codex_setup.sh installs it)")
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        log("warning: not a child subreaper; processes the tools orphan are found by tag only")
    lmc = shlex.split(args.lmc)
    info: dict[str, Any] = {
        "lmc_version": version(lmc),
        "codex_version": version([args.codex]) if "codex" in args.tools else "-",
        "cpus": os.cpu_count(), "load_start": _load(), "block_timeout": args.block_timeout,
        "settle": args.settle, "stop": not args.no_stop,
    }  # fmt: skip
    tmp = tempfile.mkdtemp(prefix="lmc-devbench-", dir=args.tmp_root)
    servers = {"lmc": ModelServer("lmc"), "codex": ModelServer("codex")}
    extra = {"lmc": shlex.split(args.lmc_args), "codex": shlex.split(args.codex_args)}
    bench = Bench(Tools(lmc, args.codex, tmp, args.block_timeout, extra), servers,
                  args.timeout, args.settle, stop=not args.no_stop)  # fmt: skip
    results: list[dict[str, Any]] = []
    try:
        if not args.no_warm_up:  # first-run work: lmc's database, Codex's skills
            for variant in dict.fromkeys("lmc" if v == "lmc" else "codex" for v in variants):
                r = bench.run(variant)
                log(f"warm-up {variant}: {r['wall']:.2f} s, finished: {r['finished']} "
                    f"{r['problems']}")  # fmt: skip
        for round_ in range(args.rounds):
            order = variants if round_ % 2 == 0 else variants[::-1]
            for variant in order:
                r = bench.run(variant)
                results.append(r)
                log(f"round {round_ + 1} {variant}: {r['wall']:.2f} s, finished {r['finished']}, "
                    f"left {len(r['left_later'])} {r['problems']}")  # fmt: skip
        info["load_end"] = _load()
        s = summary(results, variants)
        print(table(s, variants, info))
        if args.out:
            with open(args.out, "w") as f:
                json.dump({"info": info, "summary": s, "runs": results,
                           "strays": servers["lmc"].strays + servers["codex"].strays},
                          f, indent=1)  # fmt: skip
        return 0 if all(r["finished"] and not r["left_later"] for r in results) else 1
    finally:
        for server in servers.values():
            server.close()
        if args.keep:
            log(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
