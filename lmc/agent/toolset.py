"""Several providers of tools behind the one ``ExternalTools`` interface the loop knows.

MCP servers' tools and the browser are separate providers; the loop asks for a tool by the
name the model wrote and this routes the call to whichever provider has it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lmc.agent.tool_calls import ExternalTools
    from lmc.harmony.conversation import ToolDescription
    from lmc.messages import Chunk

__all__ = ["ToolSet"]


@dataclass(frozen=True, slots=True)
class _Routed:
    """A provider's tool, with the provider it came from."""

    provider: ExternalTools
    tool: Any

    @property
    def function(self) -> str:
        return str(self.tool.function)

    @property
    def format(self) -> str:
        return str(self.tool.format)

    @property
    def auto_approve(self) -> bool:
        return bool(self.tool.auto_approve)


class ToolSet:
    """The tools of every provider, the first provider that has a name winning."""

    def __init__(self, providers: Sequence[ExternalTools]) -> None:
        self.providers = tuple(providers)

    def start(self) -> None:
        for provider in self.providers:
            provider.start()

    def descriptions(self) -> list[ToolDescription]:
        return [d for provider in self.providers for d in provider.descriptions()]

    def notices(self) -> list[str]:
        return [line for provider in self.providers for line in provider.notices()]

    def find(self, function: str) -> _Routed | None:
        for provider in self.providers:
            tool = provider.find(function)
            if tool is not None:
                return _Routed(provider, tool)
        return None

    def arguments(self, tool: _Routed, text: str) -> dict[str, Any]:
        return tool.provider.arguments(tool.tool, text)

    def call(self, tool: _Routed, arguments: dict[str, Any]) -> list[Chunk]:
        return tool.provider.call(tool.tool, arguments)

    def stream(self, tool: _Routed, arguments: dict[str, Any]) -> Iterator[Chunk]:
        """The provider's stream (progress while it runs) where it has one, else its call."""
        stream = getattr(tool.provider, "stream", None)
        if stream is None:
            yield from tool.provider.call(tool.tool, arguments)
        else:
            yield from stream(tool.tool, arguments)

    def cancel(self) -> None:
        for provider in self.providers:
            provider.cancel()

    def close(self) -> None:
        for provider in self.providers:
            close = getattr(provider, "close", None)
            if close is not None:
                close()
