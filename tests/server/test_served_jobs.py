"""``lmc serve`` carries a block handed back as a job: the typed ``job`` chunk reaches the
client beside the note the model reads, and the conversation keeps it (real server, real
kernel, the tiny model replaying)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from support.server_testing import Served, code, final, outputs

Serve = Callable[..., Served]


def test_a_block_handed_back_reaches_the_client_typed(serve: Serve) -> None:
    served = serve(
        code("import time\nwhile True: time.sleep(0.05)"),
        final("It runs on as job 1."),
        auto_run=True,
        block_timeout=1,
    )
    client = served.client()
    client.say("run it for ever")
    chunks = client.turn()
    assert "goes on in the background as job 1" in outputs(chunks)
    [typed] = [chunk for chunk in chunks if chunk.get("type") == "job"]
    assert typed == {
        "role": "computer",
        "type": "job",
        "format": "handed_back",
        "content": {
            "job": 1,
            "language": "python",
            "command": "import time",
            "after": 1.0,
            "input": False,
        },
    }
    client.close()
    with sqlite3.connect(served.db_path) as db:
        stored = [row[0] for row in db.execute("SELECT content FROM messages")]
    assert any('"type": "job"' in text for text in stored), stored
