"""Open Interpreter's own clients' message forms, accepted as they send them.

- ``{"role": "user", "start": true}``, typed parts, ``{"role": "user", "end": true}``: the
  form docs.openinterpreter.com/server/usage documents and OpenInterpreter/open-interpreter's
  ``tests/test_interpreter.py`` sends (with a ``file`` part, and an ``image`` part).
- Audio as ``format: "bytes.wav"`` with raw 16-bit 16 kHz mono PCM in binary frames, as the
  01's client streams it (OpenInterpreter/01, ``software/source/clients/base_device.py``).
"""

from __future__ import annotations

from collections.abc import Callable

from support.server_testing import Served, errors, final

from lmc.server.inbound import Begin, Inbound, Problem, UserAudio, UserText, pcm_to_wav

Serve = Callable[..., Served]


def said(chunks: list[dict[str, object]]) -> str:
    return "".join(
        str(c.get("content", ""))
        for c in chunks
        if (c["role"], c["type"]) == ("assistant", "message")
    )


def test_the_documented_multi_part_form_is_one_message(serve: Serve) -> None:
    served = serve(final("It is about 1.42."), final("No, it does not."))
    client = served.client()
    client.send({"role": "user", "start": True})
    client.send({"role": "user", "type": "message", "content": "What's 34/24?"})
    client.send({"role": "user", "end": True})
    assert said(client.turn()) == "It is about 1.42."
    # As OI's test sends it: a question and a file part (which lmc leaves out, saying so).
    client.send({"role": "user", "start": True})
    client.send({"role": "user", "type": "message", "content": "Does this file exist?"})
    client.send({"role": "user", "type": "file", "format": "path", "content": "/something.txt"})
    client.send({"role": "user", "end": True})
    chunks = client.turn()
    assert errors(chunks) == ["lmc takes text and audio from clients: the file was left out"]
    assert said(chunks) == "No, it does not."
    users = [m["content"] for m in served.interpreters[0].messages if m["role"] == "user"]
    assert users == ["What's 34/24?", "Does this file exist?"]
    client.close()


def test_the_reader_takes_both_forms_and_raw_pcm_as_bytes_wav() -> None:
    reader = Inbound()
    assert reader.text('{"role": "user", "start": true}') == []
    assert reader.text('{"role": "user", "type": "message", "content": "a"}') == []
    assert reader.text('{"role": "user", "type": "message", "content": "b"}') == []
    assert reader.text('{"role": "user", "end": true}') == [Begin(), UserText("ab")]
    # A group holding only a command is the command.
    reader.text('{"role": "user", "start": true}')
    [go] = reader.text('{"role": "user", "type": "command", "content": "go"}')
    assert reader.text('{"role": "user", "end": true}') == []
    assert go.name == "go"  # type: ignore[union-attr]
    pcm = b"\x01\x00\xff\xff" * 100
    start = '{"role": "user", "type": "audio", "format": "bytes.wav", "start": true}'
    end = '{"role": "user", "type": "audio", "format": "bytes.wav", "end": true}'
    assert reader.text(start) == [Begin()]
    assert reader.binary(pcm) == []
    assert reader.text(end) == [UserAudio(pcm_to_wav(pcm))]
    wav = pcm_to_wav(pcm)
    assert wav[:4] == b"RIFF" and int.from_bytes(wav[24:28], "little") == 16_000
    reader.text(start)
    reader.binary(wav)
    assert reader.text(end) == [UserAudio(wav)]  # a whole wav file is taken as it is
    reader.text(start)
    reader.binary(b"\x01\x02\x03")  # an odd byte count is not 16-bit PCM
    [problem] = reader.text(end)
    assert isinstance(problem, Problem) and "not a wav" in problem.text
