"""How the Interpreter's pieces are made from its settings: the backend's configuration, the
computer's sandbox options, the MCP servers' tools and the browser, each made only when the
settings ask for it (their packages are imported then, not at start)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from lmc.agent.computer_options import sandbox_limits, sandbox_options
from lmc.backends.base import BackendConfig
from lmc.settings import Settings

if TYPE_CHECKING:
    from lmc.agent.patch_tool import PatchTool
    from lmc.agent.tool_calls import ExternalTools
    from lmc.browser.tools import BrowserTools
    from lmc.mcp.tools import McpTools

__all__ = [
    "backend_config",
    "browser_tools",
    "mcp_tools",
    "patch_tool",
    "sandbox_limits",
    "sandbox_options",
    "tool_set",
]


def backend_config(s: Settings, api_key: str | None) -> BackendConfig:
    return BackendConfig(
        model=s.model,
        api_base=s.api_base,
        replay=s.replay,
        context_size=s.context_size,
        gpu_layers=s.gpu_layers,
        seed=s.seed,
        verbose=s.verbose,  # the backend's own logs (llama.cpp's) on stderr
        api_style=s.api_style,
        api_key=api_key,  # never stored: not a setting
        api_key_env=s.api_key_env,
    )


def mcp_tools(s: Settings) -> McpTools | None:
    """The tools of the MCP servers the settings name (None: no server)."""
    if not s.mcp_servers:
        return None
    from lmc.extras import require

    require("mcp")
    from lmc.mcp.config import McpServerConfig, parse_server
    from lmc.mcp.tools import McpTools

    configs = {
        name: value
        if isinstance(value, McpServerConfig)
        else parse_server(name, value, "mcp_servers")
        for name, value in s.mcp_servers.items()
    }
    root = Path(s.workdir) if s.workdir is not None else Path.cwd()
    return McpTools(configs, roots=[root], verbose=s.verbose)


def browser_tools(
    browser: str,
    url: str | None,
    allow_private: bool,
    count_tokens: Callable[[str], int],
    token_lengths: Callable[[str], list[int] | None] | None = None,
) -> BrowserTools:
    """The browser tool over the backend named (or given); ConfigError when unusable. Views
    are measured by ``token_lengths`` where the model is tokenized here, else counted."""
    from lmc.browser import make_backend
    from lmc.browser.paging import TokenLengths
    from lmc.browser.session import Browser
    from lmc.browser.tools import BrowserTools

    backend = make_backend(browser, url, allow_private=allow_private)
    lengths = TokenLengths(token_lengths) if token_lengths is not None else None
    return BrowserTools(Browser(backend, count_tokens=count_tokens, token_lengths=lengths))


def patch_tool(s: Settings, root: Callable[[], Path]) -> PatchTool | None:
    """gpt-oss's apply_patch over the working directory, unless it is off, the working
    directory is not writable (``--sandbox read-only``), or the code runs on a kernel gateway
    (its files are on that machine, not here)."""
    if not s.apply_patch or s.sandbox == "read-only" or s.kernel_gateway:
        return None
    from lmc.agent.patch_tool import PatchTool

    # Applied outside the sandbox: refused wherever the sandbox keeps the code out.
    return PatchTool(root, None if s.sandbox == "off" else s.sandbox_hide)


def tool_set(*found: ExternalTools | None) -> ExternalTools | None:
    """MCP servers' tools, apply_patch and the browser, as the loop sees them (None: none)."""
    providers = [p for p in found if p is not None]
    if not providers:
        return None
    if len(providers) == 1:
        return providers[0]
    from lmc.agent.toolset import ToolSet

    return ToolSet(providers)
