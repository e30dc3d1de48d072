"""A server's answer that the prompt does not fit its context, read from its own words.

Each server says it differently (the wording is theirs; lmc matches it and the numbers in it):

- llama.cpp's server: HTTP 400, ``{"error": {"code": 400, "message": "request (N tokens)
  exceeds the available context size (M tokens), try increasing it", "type":
  "exceed_context_size_error", "n_prompt_tokens": N, "n_ctx": M}}`` (tools/server:
  server-context.cpp sends ERROR_TYPE_EXCEED_CONTEXT_SIZE, server-task.cpp adds the counts);
- vLLM: HTTP 400, "This model's maximum context length is M tokens. However, your request has
  N input tokens. Please reduce the length of the input messages." (its serving engine's
  ``_validate_input``), or the ``max_tokens`` variant "... maximum context length is M tokens
  and your request has N input tokens";
- LM Studio: HTTP 400, ``{"error": "The number of tokens to keep from the initial prompt is
  greater than the context length (n_keep: N>= n_ctx: M). ..."}``, and before that "Trying to
  keep the first N tokens when context the overflows. However, the model is loaded with
  context length of only M tokens, which is not enough. ...";
- Ollama (a request it will not cut): "prompt too long; exceeded max context length by N
  tokens".
"""

from __future__ import annotations

import re
from typing import Any, Final

__all__ = ["Overflow", "overflow_in"]

#: (prompt tokens, context tokens); 0 where the server did not say.
Overflow = tuple[int, int]

_PATTERNS: Final = (
    # vLLM (both variants): context first, then the prompt.
    re.compile(
        r"maximum context length is (?P<ctx>\d+) tokens\.?(?: However,)? ?(?:and )?your "
        r"request has (?P<prompt>\d+) input tokens",
        re.IGNORECASE,
    ),
    re.compile(r"maximum context length is (?P<ctx>\d+) tokens", re.IGNORECASE),
    # LM Studio (newer and older wording).
    re.compile(r"n_keep: (?P<prompt>\d+) ?>= ?n_ctx: (?P<ctx>\d+)"),
    re.compile(
        r"keep the first (?P<prompt>\d+) tokens when context the overflows.*?context length of "
        r"only (?P<ctx>\d+) tokens",
        re.IGNORECASE | re.DOTALL,
    ),
    # llama.cpp's message, when only the message came through.
    re.compile(
        r"request \((?P<prompt>\d+) tokens\) exceeds (?:the available )?context size "
        r"\((?P<ctx>\d+) tokens\)",
        re.IGNORECASE,
    ),
    re.compile(r"exceeds the available context size", re.IGNORECASE),
    # Ollama.
    re.compile(r"prompt too long; exceeded (?:max )?context length", re.IGNORECASE),
)


def _number(match: re.Match[str], name: str) -> int:
    value = match.groupdict().get(name)
    return int(value) if value else 0


def overflow_in(text: str, body: Any = None) -> Overflow | None:
    """The overflow a server's error answer reports, or None when it is another error."""
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and error.get("type") == "exceed_context_size_error":
        prompt, ctx = error.get("n_prompt_tokens"), error.get("n_ctx")
        return (
            prompt if isinstance(prompt, int) else 0,
            ctx if isinstance(ctx, int) else 0,
        )
    for pattern in _PATTERNS:
        match = pattern.search(text)
        if match:
            return _number(match, "prompt"), _number(match, "ctx")
    return None
