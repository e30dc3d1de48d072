"""The browser as one of the agent's tools: ``browser.search``, ``browser.open``, ``browser.find``.

It goes through the same path as an MCP tool call (:mod:`lmc.agent.tool_calls`): the call
streams as a ``tool_call`` chunk whose format is the recipient (``browser.search``), is
confirmed like code unless ``-y`` or an approval allows it, and its result (the view the
reference browser would show, or the error it would give) comes back as console output and,
for the model, as a ``browser.search`` tool message on the channel of the call. The browser
is declared in the system message (see :func:`lmc.agent.tools.system_message`), so it adds
no function descriptions.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

from lmc.browser.session import Browser, BrowserUsageError
from lmc.errors import BrowserError
from lmc.messages import Chunk

__all__ = ["BROWSER_FUNCTIONS", "BrowserCall", "BrowserTools"]

BROWSER_FUNCTIONS: Final = ("browser.search", "browser.open", "browser.find")

# Each function's parameters: name -> the types it takes (bool is not a number here).
_PARAMETERS: Final[dict[str, dict[str, tuple[type, ...]]]] = {
    "search": {"query": (str,), "topn": (int,), "top_n": (int,), "source": (str,)},
    "open": {
        "id": (int, str),
        "cursor": (int,),
        "loc": (int,),
        "num_lines": (int,),
        "view_source": (bool,),
        "source": (str,),
    },
    "find": {"pattern": (str,), "cursor": (int,)},
}
_REQUIRED: Final = {"search": "query", "find": "pattern"}
_TYPE_NAMES: Final = {int: "a number", str: "a string", bool: "true or false"}


@dataclass(frozen=True, slots=True)
class BrowserCall:
    """One of the browser's functions, as the agent's tool-call path sees it."""

    function: str  # browser.search
    auto_approve: bool = False

    @property
    def format(self) -> str:
        return self.function


def _number(value: Any) -> Any:
    """JSON numbers arrive as floats sometimes (``3.0``): whole ones are taken as ints."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _check(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    parameters = _PARAMETERS[name]
    checked: dict[str, Any] = {}
    for key, value in arguments.items():
        kinds = parameters.get(key)
        if kinds is None:
            continue  # the reference ignores nothing, but a stray key is no reason to fail
        value = _number(value)
        if (isinstance(value, bool) and bool not in kinds) or not isinstance(value, kinds):
            wanted = " or ".join(_TYPE_NAMES[kind] for kind in kinds)
            raise ValueError(f"browser.{name}: `{key}` must be {wanted}")
        checked[key] = value
    required = _REQUIRED.get(name)
    if required is not None and required not in checked:
        raise ValueError(f"browser.{name} needs `{required}`")
    if "top_n" in checked:
        checked["topn"] = checked.pop("top_n")
    return checked


def _output(text: str) -> Chunk:
    return {"role": "computer", "type": "console", "format": "output", "content": text}


class BrowserTools:
    """The browser's three functions behind the agent's ``ExternalTools`` interface."""

    def __init__(self, browser: Browser, *, auto_approve: bool = False) -> None:
        self.browser = browser
        self._calls = {name: BrowserCall(name, auto_approve) for name in BROWSER_FUNCTIONS}

    def start(self) -> None:
        """Nothing to start: the backend connects on the first call."""

    def descriptions(self) -> list[Any]:
        return []  # declared in the system message, not among the functions

    def notices(self) -> list[str]:
        return []

    def find(self, function: str) -> BrowserCall | None:
        return self._calls.get(function)

    def arguments(self, tool: BrowserCall, text: str) -> dict[str, Any]:
        stripped = text.strip()
        if not stripped:
            data: Any = {}
        else:
            try:
                data = json.loads(stripped)
            except ValueError:
                raise ValueError(f"{tool.function}: the arguments are not valid JSON") from None
        if not isinstance(data, dict):
            raise ValueError(f"{tool.function}: the arguments must be a JSON object")
        return _check(tool.function.removeprefix("browser."), data)

    def call(self, tool: BrowserCall, arguments: dict[str, Any]) -> list[Chunk]:
        name = tool.function.removeprefix("browser.")
        try:
            if name == "search":
                text = self.browser.search(**arguments)
            elif name == "open":
                text = self.browser.open(**arguments)
            else:
                text = self.browser.find(**arguments)
        except (BrowserUsageError, BrowserError) as exc:
            text = str(exc)
        return [_output(text)]  # exactly the reference view: the model sees it unchanged

    def cancel(self) -> None:
        """Calls end by their own timeouts (a fetch waits at most its timeout)."""

    def close(self) -> None:
        self.browser.close()
