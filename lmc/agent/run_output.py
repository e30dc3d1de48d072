"""What a call's run leaves behind: its chunks for the person, its messages for the history and
the text the model reads. Shared by code blocks (:mod:`lmc.agent.loop`) and tool calls
(:mod:`lmc.agent.tool_calls`), so neither imports the other's internals.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from lmc.agent.history import tool_result_text
from lmc.harmony.events import Header
from lmc.messages import Chunk, ConsoleChunk, Message, MessageChunk, without_flags

if TYPE_CHECKING:
    from lmc.computer.output import BoundedOutput

__all__ = [
    "MAX_KEPT_IMAGES",
    "MAX_KEPT_IMAGE_CHARS",
    "PendingCall",
    "RunOutput",
    "console_chunks",
    "note_chunks",
    "note_message",
    "output_message",
]


#: Images one run keeps in the conversation (in memory and in its database): at most this
#: many, each at most this many characters of base64 (3 MiB of image). The person's view has
#: already shown (and saved) them all; the rest are left out of the conversation with a note.
MAX_KEPT_IMAGES: Final = 8
MAX_KEPT_IMAGE_CHARS: Final = 4 * 1024 * 1024


def console_chunks(text: str) -> list[ConsoleChunk]:
    return [
        {"role": "computer", "type": "console", "start": True},
        {"role": "computer", "type": "console", "format": "output", "content": text},
        {"role": "computer", "type": "console", "end": True},
    ]


def note_chunks(text: str) -> list[MessageChunk]:
    return [
        {"role": "computer", "type": "message", "start": True},
        {"role": "computer", "type": "message", "content": text},
        {"role": "computer", "type": "message", "end": True},
    ]


def note_message(text: str) -> MessageChunk:
    return {"role": "computer", "type": "message", "content": text}


def output_message(text: str) -> ConsoleChunk:
    return {"role": "computer", "type": "console", "format": "output", "content": text}


@dataclass(slots=True)
class PendingCall:
    """A message that ended in ``<|call|>``."""

    header: Header
    text: str  # the content as the model wrote it (raw code or JSON arguments)
    entry: int | None  # index of its code entry; None when it showed nothing (unknown tool)
    pending: str = ""  # Harmony text of the call not yet recorded (when it showed nothing)


class RunOutput:
    """A run's computer chunks as history messages and as the text the model reads.

    Memory stays bounded however much is printed: output text goes through
    :class:`~lmc.computer.output.BoundedOutput` for the history and for the model.
    """

    def __init__(
        self,
        model_limit: int,
        history_limit: int,
        *,
        max_images: int = MAX_KEPT_IMAGES,
        max_image_chars: int = MAX_KEPT_IMAGE_CHARS,
    ) -> None:
        from lmc.computer.output import BoundedOutput

        self._history_limit = history_limit
        self._max_images = self._images_left = max_images
        self._max_image_chars = max_image_chars
        self.for_model = BoundedOutput(model_limit)
        self.messages: list[Message] = []
        self._output: BoundedOutput | None = None

    def add(self, chunk: Chunk) -> None:
        if "content" not in chunk or chunk.get("format") == "active_line":
            return
        if chunk["type"] == "console" and chunk.get("format") == "output":
            if self._output is None:
                self._output = self._new_output()
            self._output.add(chunk["content"] or "")
            self.for_model.add(chunk["content"] or "")
            return
        self._close_output()
        message = without_flags(chunk)
        if message["type"] == "image":
            message = self._kept_image(message)
        self.messages.append(message)
        self.for_model.add(tool_result_text([message]))

    def _kept_image(self, image: Message) -> Message:
        """The image, or a note in its place once it is too large or one too many."""
        content = image.get("content")
        size = len(content) if isinstance(content, str) and image.get("format") != "path" else 0
        if size > self._max_image_chars:
            return note_message(
                f"[an image of {size * 3 // 4 / 2**20:.1f} MiB was shown to the user but not "
                f"kept in the conversation: over {self._max_image_chars * 3 // 4 // 2**20} MiB]"
            )
        if self._images_left <= 0:
            return note_message(
                "[an image was shown to the user but not kept in the conversation: "
                f"a run keeps at most {self._max_images}]"
            )
        self._images_left -= 1
        return image

    def note(self, text: str) -> None:
        """Output the loop adds itself (an interruption)."""
        if self._output is None:
            self._output = self._new_output()
        self._output.add(text)
        self.for_model.add(text)

    def _new_output(self) -> BoundedOutput:
        from lmc.computer.output import BoundedOutput

        return BoundedOutput(self._history_limit)

    def _close_output(self) -> None:
        if self._output is not None:
            self.messages.append(output_message(self._output.text()))
            self._output = None

    def finish(self) -> list[Message]:
        self._close_output()
        return self.messages or [output_message("")]
