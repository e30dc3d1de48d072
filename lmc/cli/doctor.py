"""``lmc doctor``: what works on this machine, checked quickly (no kernels, no downloads)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lmc.backends import is_server_shortcut
from lmc.cli.options import SharedOptions
from lmc.cli.session import report, settings_for
from lmc.config import config_path, data_dir
from lmc.errors import LmcError
from lmc.paths import host_which

__all__ = ["check_languages", "doctor"]

OK, MISSING = "ok", "missing"
#: A row whose detail starts with one of these is neither working nor broken, and shows a
#: neutral mark: the thing is not used on this machine (AppleScript off macOS, GPU offload
#: without a GPU), or a fact to know (MCP servers run outside the sandbox, by design).
NOT_USED, NOTE = "not used here: ", "note: "


def mark(good: bool, detail: str) -> str:
    """✓ works, ✗ broken, – not used here or a note (never a failure)."""
    if detail.startswith((NOT_USED, NOTE)):
        return "–"
    return "✓" if good else "✗"


def html_detail() -> str:
    """Where the html tool's documents go, and whether a browser would open them here."""
    from lmc.cli.session import browser_available

    where = f"saved under {data_dir() / 'outputs'}"
    if browser_available():
        return f"{where}, opened in your browser when you are at the terminal"
    return f"{where} (no browser here: set BROWSER or DISPLAY to open them)"


def _probe(command: tuple[str, ...] | None) -> bool:
    """Whether the language's probe command (if it has one) says its kernel can start."""
    if command is None:
        return True
    from lmc.paths import neutral_dir

    exe = host_which(command[0])
    if exe is None:
        return False
    try:  # in lmc's own empty folder: nothing the code planted here is loaded
        done = subprocess.run(
            [exe, *command[1:]], capture_output=True, timeout=30, check=False, cwd=neutral_dir()
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def check_languages() -> list[tuple[str, bool, str]]:
    """(language, works, detail) for each language lmc runs: its executable on PATH and, where
    that proves too little, its probe (R needs IRkernel)."""
    from lmc.computer.languages import LANGUAGES

    results: list[tuple[str, bool, str]] = []
    for language in LANGUAGES:
        if language.name == "python":
            found = importlib.util.find_spec("ipykernel") is not None
            detail = f"ipykernel on {sys.executable}" if found else "pip install ipykernel"
        elif language.runner == "html":
            found, detail = True, html_detail()
        elif language.runner == "applescript":
            found, detail = _applescript()
        else:
            exe = host_which(language.requires) if language.requires else None
            found = exe is not None and _probe(language.probe)
            hint = language.install_hint or f"install {language.requires}"
            detail = exe if exe and found else hint
        results.append((language.name, found, str(detail)))
    return results


def _applescript() -> tuple[bool, str]:
    exe = host_which("osascript")
    if exe is not None:
        return True, exe
    if sys.platform != "darwin":
        return False, f"{NOT_USED}AppleScript runs on macOS (osascript)"
    return False, "osascript is missing"


def own_python(python: str) -> tuple[bool, str]:
    """Whether the interpreter ``--python`` names can run the python kernel (has ipykernel)."""
    from lmc.computer.kernelspecs import check_python

    try:
        check_python(python)
    except LmcError as exc:
        return False, str(exc)
    return True, f"ipykernel on {python} (--python: your environment)"


def gguf_problem(path: Path) -> str | None:
    """Why ``path`` is not a GGUF model that opens (None: it is): the magic, then the metadata
    lmc reads from it (a corrupt file fails here in one line, not deep in a backend)."""
    from lmc.backends._context import read_shape

    try:
        with path.open("rb") as stream:
            magic = stream.read(4)
    except OSError as exc:
        return f"cannot read it: {exc.strerror or exc}"
    if magic != b"GGUF":
        return "not a GGUF model file"
    try:
        shape = read_shape(path)
    except (ValueError, OverflowError, MemoryError, OSError) as exc:
        return f"a corrupt GGUF file: {type(exc).__name__}: {exc}".rstrip(": ")
    if shape.layers <= 0 or shape.trained_context <= 0:
        return "a corrupt GGUF file: its metadata gives no layers or context"
    return None


def _model_line(model: str | None) -> tuple[bool, str]:
    from lmc.backends.resolve import DEFAULT_MODEL, HF_PREFIX, parse_hf_spec

    spec = model or DEFAULT_MODEL
    if not spec.startswith(HF_PREFIX):
        path = Path(spec).expanduser()
        if not path.is_file():
            return False, f"{path} (file not found)"
        problem = gguf_problem(path)
        return problem is None, f"{path}" + (f" ({problem})" if problem else "")
    try:
        repo, filename = parse_hf_spec(spec)
    except LmcError as exc:
        return False, str(exc)
    if filename is None:
        return True, f"{spec} (downloaded on first use if not cached)"
    from huggingface_hub import try_to_load_from_cache

    cached = try_to_load_from_cache(repo, filename)
    if isinstance(cached, str):
        return True, f"{spec} (cached at {cached})"
    problem = hub_problem(repo, filename)
    if problem is not None:
        return False, f"{spec} (not downloaded yet, and {problem})"
    return True, f"{spec} (not downloaded yet: fetched on first use, the Hub answers)"


def hub_problem(repo: str, filename: str) -> str | None:
    """Why ``filename`` of ``repo`` could not be fetched now (None: the Hub has it): a file
    still to download is only as good as the Hub's answer (one HEAD request, no download)."""
    import os

    import httpx

    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
        return "HF_HUB_OFFLINE is set"
    from huggingface_hub import constants

    endpoint = (os.environ.get("HF_ENDPOINT") or constants.ENDPOINT).rstrip("/")
    url = f"{endpoint}/{repo}/resolve/main/{filename}"
    try:
        status = httpx.head(url, timeout=10.0, follow_redirects=False).status_code
    except httpx.HTTPError as exc:
        return f"the Hugging Face Hub cannot be reached ({endpoint}: {type(exc).__name__})"
    if status >= 400:
        return f"the Hub answers HTTP {status} for it"
    return None


def _context_line(model: str | None, context: int | None, gpu_layers: int | None) -> str:
    """The context size a chat would get, and why (read from the model file, not loaded)."""
    if context is not None:
        return f"{context:,} tokens: as set (--context or the config file)"
    from lmc.backends._context import choose_context
    from lmc.backends.resolve import HF_PREFIX, parse_hf_spec

    path: Path | None = None
    spec = model or ""
    if model and not model.startswith(HF_PREFIX):
        path = Path(model).expanduser()
    else:
        from huggingface_hub import try_to_load_from_cache

        from lmc.backends.resolve import DEFAULT_MODEL

        try:
            repo, filename = parse_hf_spec(spec or DEFAULT_MODEL)
        except LmcError:
            filename = None
        cached = try_to_load_from_cache(repo, filename) if filename else None
        path = Path(cached) if isinstance(cached, str) else None
    if path is None or not path.is_file():
        return "fitted to the model and free memory once the model is there"
    offloaded = gpu_layers != 0 and _gpu_offload()
    return choose_context(path, offloaded=offloaded).reason


def _gpu_offload() -> bool:
    if importlib.util.find_spec("llama_cpp") is None:
        return False
    from lmc.backends._llama_cpp import supports_gpu_offload

    return supports_gpu_offload()


def _backend_lines() -> list[tuple[str, bool, str]]:
    if importlib.util.find_spec("llama_cpp") is None:
        return [("llama.cpp", False, "llama-cpp-python is not installed")]
    from lmc.backends._llama_cpp import supports_gpu_offload, version

    return [
        ("llama.cpp", True, f"llama-cpp-python {version()}"),
        _offload_line(supports_gpu_offload()),
    ]


def _offload_line(offloads: bool, gpu: object = True) -> tuple[str, bool, str]:
    """GPU offload: in the build or not; without a GPU here it is not used either way."""
    from lmc.backends.gpu import find_gpu

    if offloads:
        return ("GPU offload", True, "supported by this build")
    if not (find_gpu() if gpu is True else gpu):
        return ("GPU offload", False, f"{NOT_USED}no GPU on this machine (CPU build)")
    return ("GPU offload", False, "not in this build: CPU only")


def server_lines(settings: Any) -> list[tuple[str, bool, str]]:
    """The server, the dialect lmc speaks with it and why, and the model it asks for."""
    from lmc.backends.base import BackendConfig
    from lmc.backends.detect import detect
    from lmc.cli.served_context import served_context_row

    config = BackendConfig(
        model=settings.model,
        api_base=settings.api_base,
        api_style=settings.api_style,
        api_key_env=settings.api_key_env,
        timeout=30.0,
    )
    try:
        found = detect(config)
    except LmcError as exc:
        return [("server", False, f"{settings.api_base or settings.model}: {exc}")]
    return [
        ("server", True, str(found.config.api_base)),
        ("dialect", True, f"{found.dialect}: {found.reason}"),
        ("model", True, found.config.model or "the server's default (it lists no models)"),
        served_context_row(found, settings.context_size),
    ]


def sandbox_lines(settings: Any) -> list[tuple[str, bool, str]]:
    """(name, good, detail) for the sandbox: mode, tool, network, what is hidden."""
    from lmc.cli.sandbox_settings import resolve_sandbox
    from lmc.computer.sandbox import INSTALL_HINT, find_tool
    from lmc.computer.sandbox.report import protections

    tool = find_tool(fresh=True)  # probed now: a success remembered for the boot is not asked
    lines: list[tuple[str, bool, str]] = []
    try:
        policy, warning = resolve_sandbox(settings)
    except LmcError as exc:
        return [("mode", False, f"{settings.sandbox}: {exc}"), ("tool", False, INSTALL_HINT)]
    asked = settings.sandbox or "default"
    lines.append(("mode", policy.enabled, f"{policy.mode} ({asked}): {policy.describe()}"))
    if tool.usable:
        lines.append(("tool", True, f"{tool.kind} at {tool.path}"))
    else:
        lines.append(("tool", False, f"{tool.problem}; {INSTALL_HINT}"))
    lines.append(("network", True, "on" if policy.network else "off inside the sandbox"))
    lines.append(("workdir", True, str(policy.workdir)))
    lines += [_mcp_is_a_note(line, bool(settings.mcp_servers)) for line in protections(policy)]
    if warning is not None:
        lines.append(("warning", False, warning))
    return lines


def _mcp_is_a_note(line: tuple[str, bool, str], servers: bool) -> tuple[str, bool, str]:
    """MCP servers run outside the sandbox by design: a fact about them, not a broken part
    (and with none configured, not used here)."""
    name, good, detail = line
    if name != "mcp" or good:
        return line
    if not servers:
        return name, good, f"{NOT_USED}no MCP servers (those you add run outside the sandbox)"
    return name, good, f"{NOTE}{detail}"


def gateway_lines(settings: Any) -> list[tuple[str, bool, str]]:
    """(name, good, detail) for the kernel gateway: does it answer and take the token, and
    which of lmc's languages it serves (through the kernelspecs they are mapped to)."""
    from lmc.computer.gateway import GatewayClient, gateway_config

    try:
        config = gateway_config(settings)
        assert config is not None
        client = GatewayClient(config)
    except LmcError as exc:
        return [("gateway", False, str(exc))]
    token = settings.sources.get("kernel_gateway_token", "default")
    token_detail = "none" if config.token is None else f"set (from {token})"
    try:
        served = client.kernelspecs()
    except LmcError as exc:
        return [("gateway", False, str(exc)), ("token", False, token_detail)]
    finally:
        client.close()
    lines = [("gateway", True, f"{config.url} answers"), ("token", True, token_detail)]
    for language, name in sorted(config.kernels.items()):
        found = name in served
        detail = f"kernelspec {name}" + ("" if found else " (not on the gateway)")
        lines.append((language, found, detail))
    kernels = ", ".join(f"{n} ({lang or '?'})" for n, lang in sorted(served.items()))
    lines.append(("kernelspecs", True, kernels or "none"))
    return lines


def _voice_lines(stt_model: str | None) -> list[tuple[str, bool, str]]:
    """Speech input is optional: these lines inform, they never fail the check."""
    if importlib.util.find_spec("faster_whisper") is None:
        from lmc.extras import install_hint

        return [("faster-whisper", False, f"not installed: {install_hint('voice')}")]
    from lmc.voice.resolve import DEFAULT_STT_MODEL, HF_PREFIX, SIZE_NAMES

    spec = stt_model or DEFAULT_STT_MODEL
    if spec in SIZE_NAMES:
        spec = f"{HF_PREFIX}Systran/faster-whisper-{spec}"
    if not spec.startswith(HF_PREFIX):
        path = Path(spec).expanduser()
        good = (path / "model.bin").is_file()
        return [("stt model", good, f"{path}" + ("" if good else " (no model.bin there)"))]
    from huggingface_hub import try_to_load_from_cache

    cached = try_to_load_from_cache(spec[len(HF_PREFIX) :], "model.bin")
    if isinstance(cached, str):
        return [("stt model", True, f"{spec} (cached at {Path(cached).parent})")]
    problem = hub_problem(spec[len(HF_PREFIX) :], "model.bin")
    if problem is not None:
        return [("stt model", False, f"{spec} (not downloaded yet, and {problem})")]
    return [("stt model", True, f"{spec} (fetched on first use, the Hub answers)")]


Row = tuple[str, bool, str]


def _model_rows(settings: Any) -> tuple[list[Row], int]:
    """The model's rows (server, or llama.cpp, the GGUF and its context) and the failures."""
    if settings.api_base or is_server_shortcut(settings.model):
        rows = list(server_lines(settings))
        return rows, sum(not good for _, good, _ in rows)
    rows = list(_backend_lines())
    failures = int(not rows[0][1])
    from lmc.backends.gpu import cpu_only_warning

    warning = cpu_only_warning()
    if warning is not None:  # a warning: it does not fail the check
        rows.append(("warning", False, warning))
    good, detail = _model_line(settings.model)
    rows.append(("model", good, detail))
    failures += not good
    if good:  # a context is only said of a model that opens
        context = _context_line(settings.model, settings.context_size, settings.gpu_layers)
        rows.append(("context", True, context))
    return rows, failures


def _mcp_rows(settings: Any) -> list[Row]:
    from lmc.cli.mcp_commands import server_statuses

    rows = []
    for status in server_statuses(settings):
        count = len(status.tools)
        tools = f"{count} tool{'s' if count != 1 else ''}"
        rows.append(
            (status.config.name, status.started, tools if status.started else str(status.error))
        )
    return rows


def _sections(settings: Any) -> Iterator[tuple[str, list[Row], int]]:
    """Each section of the report: its title, its rows, and how many of them fail it."""
    languages = check_languages()
    if settings.python:  # the python kernel runs on the person's own interpreter
        languages = [
            (n, *own_python(settings.python)) if n == "python" else (n, ok, d)
            for n, ok, d in languages
        ]
    yield "languages", languages, sum(n == "python" and not ok for n, ok, _ in languages)
    rows, failed = _model_rows(settings)
    yield "model", rows, failed
    if settings.mcp_servers:
        yield "mcp", _mcp_rows(settings), 0
    from lmc.browser.check import browser_lines

    browser = browser_lines(settings.browser, settings.browser_url, settings.browser_allow_private)
    yield "browser", browser, sum(not ok for _, ok, _ in browser)
    yield "voice", _voice_lines(settings.stt_model), 0
    path = config_path()
    files = [
        ("config", True, f"{path}" + ("" if path.exists() else " (none yet)")),
        ("data", True, str(data_dir())),
    ]
    yield "files", files, 0
    yield "sandbox", sandbox_lines(settings), 0
    if settings.kernel_gateway:
        gateway = gateway_lines(settings)
        failed = sum(n in ("gateway", "python") and not ok for n, ok, _ in gateway)
        title = "kernel gateway (remote kernels: contained by the gateway, not this sandbox)"
        yield title, gateway, failed
    yield "workspace", workspace_lines(settings), 0


def doctor(options: SharedOptions) -> int:
    try:
        settings = settings_for(options)
    except LmcError as exc:
        return report(exc, verbose=False)
    out = sys.stdout
    failures = 0
    for title, rows, failed in _sections(settings):
        out.write(f"{title}\n")
        for name, good, detail in rows:
            out.write(f"  {mark(good, detail)} {name:<12} {detail}\n")
        failures += failed
    return 1 if failures else 0


def workspace_lines(settings: Any) -> list[tuple[str, bool, str]]:
    """AGENTS.md files read, and whether checkpoints are on (and where they are kept)."""
    from lmc.workspace.agents_md import read_agents

    workdir = Path(settings.workdir or ".").expanduser().resolve()
    doc = read_agents(workdir, settings.agents_md_max_bytes)
    agents = (
        ", ".join(str(p) for p in doc.paths)
        or "none found (working directory up to the repository root)"
    )
    if doc.truncated:
        agents += f" (cut at {settings.agents_md_max_bytes:,} bytes)"
    lines = [("AGENTS.md", True, agents)]
    git = host_which("git")
    if not settings.checkpoints:
        lines.append(("checkpoints", True, "off (checkpoints = false)"))
    elif git is None:
        lines.append(
            (
                "checkpoints",
                False,
                "git is not installed: no checkpoints, undo removes only messages",
            )
        )
    else:
        cap = settings.checkpoint_max_file_size
        lines.append(
            (
                "checkpoints",
                True,
                f"on: in {data_dir() / 'checkpoints'} (files over {cap:,} bytes left out)",
            )
        )
    lines.append(kernel_state_line(settings))
    return lines


def kernel_state_line(settings: Any) -> tuple[str, bool, str]:
    """Whether kernel state is kept, where, and what is kept and what is not."""
    if not settings.kernel_state:
        return ("kernel state", True, "off (kernel_state = false): kernels start fresh")
    if settings.kernel_gateway:
        return ("kernel state", True, "not kept for kernels on a gateway")
    from lmc.agent.kept_state import state_folder

    folder = state_folder(settings.db_path, "ID")
    where = "nowhere (an in-memory database)" if folder is None else str(folder)
    return (
        "kernel state",
        True,
        f"on: in {where}, 0700, deleted with the conversation. Kept: python globals that "
        "cloudpickle can pickle (functions, classes, instances, lambdas; modules by name), "
        f"up to {settings.kernel_state_max_value:,} bytes each and "
        f"{settings.kernel_state_max_total:,} in all; the shell's directory and exports. "
        "Not kept: open sockets, files, generators, larger values, JavaScript and R state",
    )
