"""A ``session/prompt``'s content blocks as the person's message to the model.

gpt-oss reads text, so text is what lmc takes: text blocks as written, a ``resource_link``
(a file the person mentioned) as its name and path, an embedded text ``resource`` (the
editor's selection, an attached file) as a fenced block under its URI. An image or audio
block, which lmc does not claim to take (``promptCapabilities``), is refused with one line.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote, urlparse

from lmc.acp.updates import fenced
from lmc.acp.wire import INVALID_PARAMS, RpcError

__all__ = ["PROMPT_CAPABILITIES", "prompt_text"]

#: What ``initialize`` says lmc takes beyond text and resource links.
PROMPT_CAPABILITIES = {"image": False, "audio": False, "embeddedContext": True}


def _where(uri: str) -> str:
    """A file URI as its path; any other URI as it is."""
    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme == "file" else uri


def _block_text(block: dict[str, Any]) -> str:
    kind = block.get("type")
    if kind == "text":
        text = block.get("text")
        if isinstance(text, str):
            return text
    elif kind == "resource_link":
        uri, name = block.get("uri"), block.get("name")
        if isinstance(uri, str):
            return f"[{name or uri}]({_where(uri)})"
    elif kind == "resource":
        resource = block.get("resource")
        if isinstance(resource, dict) and isinstance(resource.get("uri"), str):
            where = _where(resource["uri"])
            text = resource.get("text")
            if isinstance(text, str):
                return f"{where}:\n{fenced(text)}"
            return f"[{where}]({where})"
    elif kind in ("image", "audio"):
        raise RpcError(INVALID_PARAMS, f"lmc takes text prompts: {kind} content is not supported")
    raise RpcError(INVALID_PARAMS, f"invalid params: a malformed content block ({kind!r})")


def prompt_text(params: dict[str, Any]) -> str:
    """The message's text; :class:`RpcError` (invalid params) when there is none."""
    blocks = params.get("prompt")
    if not isinstance(blocks, list) or not all(isinstance(b, dict) for b in blocks):
        raise RpcError(INVALID_PARAMS, "invalid params: prompt must be a list of content blocks")
    text = "\n\n".join(part for part in (_block_text(b) for b in blocks) if part)
    if not text.strip():
        raise RpcError(INVALID_PARAMS, "invalid params: the prompt is empty")
    return text
