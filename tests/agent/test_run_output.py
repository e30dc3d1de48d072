"""Issue 35: images a run produces are capped in size and count in the conversation."""

from __future__ import annotations

import base64

from lmc.agent.run_output import MAX_KEPT_IMAGES, RunOutput
from lmc.messages import Chunk


def _image(size: int) -> Chunk:
    data = base64.b64encode(b"\x89PNG" + b"\0" * (size - 4)).decode()
    return {"role": "computer", "type": "image", "format": "base64.png", "content": data}


def test_a_huge_image_is_left_out_with_a_note() -> None:
    run = RunOutput(1000, 1000)
    run.add(_image(32 * 2**20))
    (message,) = run.finish()
    assert message["type"] == "message"
    assert "an image of 32.0 MiB was shown to the user but not kept" in message["content"]
    assert "not kept in the conversation" in run.for_model.text()
    # Without the cap the run would keep all 43 MB of base64 in the conversation.
    uncapped = RunOutput(1000, 1000, max_image_chars=2**40)
    uncapped.add(_image(32 * 2**20))
    kept = uncapped.finish()[0]
    assert kept["type"] == "image" and len(kept["content"]) > 40 * 10**6


def test_only_so_many_images_are_kept_per_run() -> None:
    run = RunOutput(1000, 1000)
    for _ in range(MAX_KEPT_IMAGES + 2):
        run.add(_image(1000))
    kinds = [message["type"] for message in run.finish()]
    assert kinds == ["image"] * MAX_KEPT_IMAGES + ["message"] * 2


def test_image_paths_are_small_and_kept() -> None:
    run = RunOutput(1000, 1000)
    run.add({"role": "computer", "type": "image", "format": "path", "content": "/tmp/a.png"})
    assert run.finish()[0]["type"] == "image"
