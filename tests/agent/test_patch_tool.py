"""How an apply_patch call's body is read: raw, a JSON string, or a JSON object's string."""

from __future__ import annotations

import json

import pytest

from lmc.agent.patch_tool import patch_from_call

PATCH = "*** Begin Patch\n*** Delete File: a.txt\n*** End Patch\n"


@pytest.mark.parametrize(
    "body",
    [
        PATCH,
        json.dumps(PATCH),
        json.dumps({"input": PATCH}),
        json.dumps({"patch": PATCH}),
        json.dumps({"diff": PATCH}),
        json.dumps({"input": PATCH, "note": "x"}),
    ],
)
def test_every_form_the_reference_or_codex_accepts_gives_the_patch(body: str) -> None:
    assert patch_from_call(body) == PATCH


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ('{"input": ', "Error parsing JSON: Expecting value"),
        ('{"a": "x", "b": "y"}', "Error parsing JSON: send the patch itself, or a JSON object"),
        ("[1]", None),
    ],
)
def test_a_body_that_holds_no_patch_is_told_so(body: str, says: str | None) -> None:
    if says is None:  # not JSON-shaped: taken as the patch (the applier then refuses it)
        assert patch_from_call(body) == body
        return
    with pytest.raises(ValueError, match="^" + says.split(":")[0]) as caught:
        patch_from_call(body)
    assert str(caught.value).startswith(says)


def test_the_reference_developer_message_renders_byte_for_byte() -> None:
    """gpt-oss's chat.py -a with no developer text: apply_patch.md as the instructions and one
    string-typed function (openai-harmony writes a non-object parameter's type as it is)."""
    from lmc.agent.patch_tool import PATCH_PARAMETERS, apply_patch_instructions
    from lmc.harmony.conversation import DeveloperContent, ToolDescription, ToolNamespaceConfig
    from lmc.harmony.render import render_message
    from lmc.harmony.types import Message as HarmonyMessage

    md = apply_patch_instructions()
    tool = ToolDescription("apply_patch", "Patch a file", dict(PATCH_PARAMETERS))
    content = DeveloperContent(
        instructions=md, tools={"functions": ToolNamespaceConfig("functions", None, [tool])}
    )
    assert render_message(HarmonyMessage("developer", [content])) == (
        f"<|start|>developer<|message|># Instructions\n\n{md}\n\n# Tools\n\n## functions\n\n"
        "namespace functions {\n\n// Patch a file\ntype apply_patch = (_: string) => any;\n\n"
        "} // namespace functions<|end|>"
    )


@pytest.mark.parametrize(
    ("options", "offered"),
    [
        ({}, True),
        ({"apply_patch": False}, False),
        ({"sandbox": "read-only"}, False),
        ({"sandbox": "workspace"}, True),
        ({"kernel_gateway": "http://gpu-box:8888"}, False),  # its files are over there
    ],
)
def test_when_the_tool_is_offered(options: dict[str, object], offered: bool) -> None:
    from pathlib import Path

    from lmc.agent.pieces import patch_tool
    from lmc.settings import Settings

    assert (patch_tool(Settings(**options), Path.cwd) is not None) is offered  # type: ignore[arg-type]
