"""A prompt's content blocks as the text the model reads."""

from __future__ import annotations

import pytest

from lmc.acp.prompt import prompt_text
from lmc.acp.wire import RpcError


def test_text_links_and_embedded_resources_become_the_message() -> None:
    text = prompt_text(
        {
            "prompt": [
                {"type": "text", "text": "Explain"},
                {"type": "resource_link", "uri": "file:///src/a%20b.py", "name": "a b.py"},
                {"type": "resource", "resource": {"uri": "file:///src/c.py", "text": "x = 1\n"}},
            ]
        }
    )
    assert text == "Explain\n\n[a b.py](/src/a b.py)\n\n/src/c.py:\n```\nx = 1\n```"


@pytest.mark.parametrize(
    "prompt",
    [[], [{"type": "text", "text": "  "}], [{"type": "image", "data": "", "mimeType": "x"}], "no"],
)
def test_what_lmc_cannot_take_is_invalid_params(prompt: object) -> None:
    with pytest.raises(RpcError) as refused:
        prompt_text({"prompt": prompt})
    assert refused.value.code == -32602
