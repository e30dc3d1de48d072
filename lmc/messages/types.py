"""The static types of LMC chunks: one TypedDict per ``type``, joined in one union.

As h11 types its events, each kind of chunk has its own shape, told apart by the Literal of
its ``type``: ``if chunk["type"] == "code":`` narrows a :data:`Chunk` to a :class:`CodeChunk`
whose ``format`` is a :data:`CodeFormat`. They are TypedDicts, so at run time a chunk is the
same plain dict it always was and the JSON on the wire does not change by a byte.

A *message* (what chunks merge into, and what history stores) has the same shapes as a chunk
less the ``start``/``end`` flags. :data:`Message` is the same union rather than a second family
of TypedDicts: a second family would differ only in ``content`` being required, which makes
the two mutually unassignable, so every consumer that draws both (a renderer replaying history)
would need a conversion for no gain. :func:`~lmc.messages.schema.validate_message` still
rejects a message that carries a flag, at run time.
"""

from __future__ import annotations

from typing import Final, Literal, NotRequired, TypeAlias, TypedDict, get_args

__all__ = [
    "AUDIO_FORMATS",
    "CHANGE_KINDS",
    "CODE_FORMATS",
    "CONSOLE_FORMATS",
    "IMAGE_FORMATS",
    "ROLES",
    "AudioChunk",
    "AudioFormat",
    "Block",
    "ChangeKind",
    "ChangedFile",
    "Chunk",
    "CodeBlock",
    "CodeChunk",
    "CodeFormat",
    "ConfirmationChunk",
    "ConsoleChunk",
    "ConsoleFormat",
    "FilesChunk",
    "HandedBack",
    "ImageChunk",
    "ImageFormat",
    "JobChunk",
    "Message",
    "MessageChunk",
    "ReasoningChunk",
    "Role",
    "TextChunk",
    "ToolCallBlock",
    "ToolCallChunk",
]

Role: TypeAlias = Literal["user", "assistant", "computer"]

#: The languages lmc runs, declared once here: ``CODE_FORMATS`` is read from this Literal.
CodeFormat: TypeAlias = Literal["python", "shell", "javascript", "r", "applescript", "html"]
#: ``progress``: a live status line of a long MCP call (not output; the model never reads it).
ConsoleFormat: TypeAlias = Literal["active_line", "output", "progress"]
ImageFormat: TypeAlias = Literal["base64", "base64.png", "base64.jpeg", "path"]
AudioFormat: TypeAlias = Literal["wav"]
ChangeKind: TypeAlias = Literal["added", "deleted", "modified"]


class _Flags(TypedDict, total=False):
    """``start``/``end``: the first and last chunk of a streamed message (no content needed)."""

    start: Literal[True]
    end: Literal[True]


class MessageChunk(_Flags):
    """Text of the conversation: the person's, the final answer, or a note from lmc."""

    role: Role
    type: Literal["message"]
    content: NotRequired[str]


class ReasoningChunk(_Flags):
    """Chain of thought (the analysis channel), apart from ``message`` so it is never shown
    by a consumer that shows every message."""

    role: Role
    type: Literal["reasoning"]
    content: NotRequired[str]


class CodeChunk(_Flags):
    role: Role
    type: Literal["code"]
    format: CodeFormat
    content: NotRequired[str]


class ConsoleChunk(_Flags):
    """What running code shows. The start/end flags carry no format (as in the seed), and an
    ``active_line`` chunk's content is a line number string, or None when no line runs."""

    role: Role
    type: Literal["console"]
    format: NotRequired[ConsoleFormat]
    content: NotRequired[str | None]


class ImageChunk(_Flags):
    role: Role
    type: Literal["image"]
    format: ImageFormat
    content: NotRequired[str]


class AudioChunk(_Flags):
    role: Role
    type: Literal["audio"]
    format: AudioFormat
    content: NotRequired[str]  # base64 of the wav


class CodeBlock(TypedDict):
    """Code about to run, as a consumer is asked to confirm it."""

    type: Literal["code"]
    format: CodeFormat
    content: str


class ToolCallBlock(TypedDict):
    """An MCP or browser tool call about to run: its arguments as JSON; or a patch
    (``apply_patch``): the V4A patch text."""

    type: Literal["tool_call"]
    format: str  # SERVER.TOOL, or apply_patch
    content: str


#: What a confirmation asks about.
Block: TypeAlias = CodeBlock | ToolCallBlock


class ConfirmationChunk(_Flags):
    """The seed's ``execution`` confirmation: the block that runs once it is confirmed."""

    role: Role
    type: Literal["confirmation"]
    format: Literal["execution"]
    content: NotRequired[Block]


class ToolCallChunk(_Flags):
    """lmc's extension: a call to an MCP tool, its format ``SERVER.TOOL``, its content the
    arguments as JSON; or gpt-oss's ``apply_patch``, its content the patch."""

    role: Role
    type: Literal["tool_call"]
    format: str
    content: NotRequired[str]


class ChangedFile(TypedDict):
    """One file a code block changed; ``added``/``removed`` are lines (None: a binary file)."""

    path: str
    change: ChangeKind
    added: int | None
    removed: int | None


class FilesChunk(_Flags):
    """lmc's extension: the files a code block changed."""

    role: Role
    type: Literal["files"]
    format: Literal["changes"]
    content: NotRequired[list[ChangedFile]]


class HandedBack(TypedDict):
    """A block that became a background job: its number, language and first line, the seconds
    it ran first (``block_timeout``), and whether the model can write to its stdin."""

    job: int
    language: str
    command: str
    after: float
    input: bool


class JobChunk(_Flags):
    """lmc's extension: a block was handed back as a job after ``block_timeout`` (the model
    reads the note in the console output; this says it in a form a consumer can use)."""

    role: Role
    type: Literal["job"]
    format: Literal["handed_back"]
    content: NotRequired[HandedBack]


Chunk: TypeAlias = (
    MessageChunk
    | ReasoningChunk
    | CodeChunk
    | ConsoleChunk
    | ImageChunk
    | AudioChunk
    | ConfirmationChunk
    | ToolCallChunk
    | FilesChunk
    | JobChunk
)

#: The kinds whose content is text the model writes, streamed piece by piece.
TextChunk: TypeAlias = MessageChunk | ReasoningChunk | CodeChunk | ToolCallChunk

#: A merged message: one of the same shapes, without flags (see the module's docstring).
Message: TypeAlias = Chunk

#: The languages lmc runs: the computer's table (lmc.computer.languages) has an entry for
#: each, and the model's function tools (lmc.agent.tools) are these but python.
CODE_FORMATS: Final[tuple[CodeFormat, ...]] = get_args(CodeFormat)
CONSOLE_FORMATS: Final[tuple[ConsoleFormat, ...]] = get_args(ConsoleFormat)
IMAGE_FORMATS: Final[tuple[ImageFormat, ...]] = get_args(ImageFormat)
AUDIO_FORMATS: Final[tuple[AudioFormat, ...]] = get_args(AudioFormat)
ROLES: Final[tuple[Role, ...]] = get_args(Role)
CHANGE_KINDS: Final[tuple[ChangeKind, ...]] = get_args(ChangeKind)
