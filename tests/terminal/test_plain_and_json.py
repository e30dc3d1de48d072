"""Plain text (pipes, NO_COLOR) and --json renderers, fed the seed's stream."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

from support.seed_chunks import FINAL, SEED

from lmc.terminal.artifacts import ArtifactStore
from lmc.terminal.json_lines import JsonRenderer
from lmc.terminal.plain import PlainRenderer


def test_plain_seed_is_readable_text_without_escape_codes() -> None:
    out = io.StringIO()
    renderer = PlainRenderer(out)
    for chunk in SEED:
        renderer.feed(chunk)
    renderer.close()
    assert out.getvalue() == f"```python\n34 / 24\n```\n1.4166666666666667\n{FINAL}\n\n"
    assert renderer.final_answer


def test_plain_streams_text_as_it_arrives() -> None:
    out = io.StringIO()
    renderer = PlainRenderer(out)
    renderer.feed({"role": "assistant", "type": "message", "start": True})
    renderer.feed({"role": "assistant", "type": "message", "content": "Hel"})
    assert out.getvalue() == "Hel"
    renderer.feed({"role": "assistant", "type": "message", "content": "lo"})
    assert out.getvalue() == "Hello"


def test_plain_folds_long_output_streaming_the_head() -> None:
    out = io.StringIO()
    renderer = PlainRenderer(out)
    renderer.feed({"role": "assistant", "type": "code", "format": "shell", "content": "seq 100"})
    renderer.feed({"role": "computer", "type": "console", "start": True})
    for i in range(100):
        renderer.feed(
            {"role": "computer", "type": "console", "format": "output", "content": f"{i}\n"}
        )
        if i == 20:
            assert out.getvalue().endswith("\n9\n")  # the head is out already, the rest waits
    renderer.feed({"role": "computer", "type": "console", "end": True})
    renderer.close()
    lines = out.getvalue().splitlines()
    assert lines[:3] == ["```shell", "seq 100", "```"]
    assert lines[3:13] == [str(i) for i in range(10)]
    assert lines[13] == "… 70 more lines hidden …"
    assert lines[14:34] == [str(i) for i in range(80, 100)]


def test_plain_reasoning_and_images(tmp_path: Path) -> None:
    out = io.StringIO()
    renderer = PlainRenderer(out, show_reasoning=True, artifacts=ArtifactStore(tmp_path))
    renderer.feed({"role": "assistant", "type": "reasoning", "content": "hmm"})
    renderer.feed(
        {
            "role": "computer",
            "type": "image",
            "format": "base64.png",
            "content": base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(16)).decode(),
        }
    )
    renderer.close()
    text = out.getvalue()
    assert "[reasoning]\nhmm" in text
    (saved,) = tmp_path.glob("*.png")
    assert f"saved to {saved}]" in text
    assert "\x1b" not in text


def test_json_lines_round_trip_exactly() -> None:
    out = io.StringIO()
    renderer = JsonRenderer(out)
    for chunk in SEED:
        renderer.feed(chunk)
    renderer.close()
    lines = out.getvalue().splitlines()
    assert [json.loads(line) for line in lines] == SEED
