"""Python through lmc's ipykernel: the behaviours Open Interpreter has, with its bugs fixed."""

from __future__ import annotations

import base64
import contextlib
import sqlite3
import sys
import time
from pathlib import Path

import pytest
from support.computer_testing import active_lines, collect, output_of

from lmc.computer import Computer
from lmc.computer.kernel import KernelSession
from lmc.computer.kernelspecs import KernelSpec
from lmc.messages import text_of


def test_print_hello(computer: Computer) -> None:
    chunks = collect(computer, "python", "print('hello')")
    assert output_of(chunks) == "hello\n"
    assert active_lines(chunks) == [1]


def test_each_line_is_active_in_order_with_its_output(computer: Computer) -> None:
    chunks = collect(computer, "python", "print(1)\nprint(2)")
    assert output_of(chunks) == "1\n2\n"
    assert active_lines(chunks) == [1, 2]
    events = [
        ("line", c.get("content"))
        if c.get("format") == "active_line"
        else ("out", c.get("content"))
        for c in chunks[1:-2]
    ]
    assert events == [("line", "1"), ("out", "1\n"), ("line", "2"), ("out", "2\n")]


def test_last_expression_value(computer: Computer) -> None:
    assert output_of(collect(computer, "python", "2+3")) == "5\n"


def test_zero_division_traceback(computer: Computer) -> None:
    out = output_of(collect(computer, "python", "x = 1\n1/0"))
    assert out.rstrip().endswith("ZeroDivisionError: division by zero")
    assert "line 2" in out
    assert "\x1b" not in out


def test_traceback_has_the_users_line_numbers(computer: Computer) -> None:
    code = "def f():\n    '''doc'''\n    return 1/0\n\nf()\n"
    out = output_of(collect(computer, "python", code))
    assert "line 5" in out and "line 3" in out
    assert "return 1/0" in out


def test_syntax_error(computer: Computer) -> None:
    out = output_of(collect(computer, "python", "def (:\n  pass"))
    assert "SyntaxError" in out
    assert "\x1b" not in out


def test_state_persists(computer: Computer) -> None:
    collect(computer, "python", "persisted = 41")
    assert output_of(collect(computer, "python", "print(persisted + 1)")) == "42\n"


def test_stderr_appears(computer: Computer) -> None:
    out = output_of(collect(computer, "python", "import sys\nprint('oops', file=sys.stderr)"))
    assert out == "oops\n"


def test_output_streams_as_it_happens(computer: Computer) -> None:
    """``a`` reaches the reader while the code still sleeps: the reader interrupts then, so
    ``b`` is never printed (output held back to the end would come with ``b``)."""
    texts = []
    for chunk in computer.run("python", "import time\nprint('a')\ntime.sleep(30)\nprint('b')"):
        if chunk.get("format") == "output":
            texts.append(text_of(chunk))
            if text_of(chunk) == "a\n":
                computer.interrupt()
    assert texts[0] == "a\n"
    assert "b\n" not in texts and "KeyboardInterrupt" in "".join(texts)


def test_docstrings_and_strings_survive(computer: Computer) -> None:
    code = 'def f():\n    """The docstring."""\n\nprint(f.__doc__)\nprint("print(1)\\n")'
    assert output_of(collect(computer, "python", code)) == "The docstring.\nprint(1)\n\n"


def test_long_running_loop_reports_its_lines(computer: Computer) -> None:
    code = "import time\nfor i in range(3):\n    time.sleep(0.15)\n    x = i\nprint('done')"
    lines = active_lines(collect(computer, "python", code))
    assert lines[0] == 1
    assert 3 in lines and lines[-1] == 5


def test_active_line_after_trace_budget_comes_from_sampling(computer: Computer) -> None:
    # A tight loop spends the exact-tracing budget at once; the sampler must still see line 4.
    code = "n = 0\nfor i in range(300000):\n    n += i\nimport time; time.sleep(0.3)\n"
    lines = active_lines(collect(computer, "python", code))
    assert lines[0] == 1
    assert lines[-1] == 4


#: A cell that makes the sampler read the next cell's frames as each statement starts, the
#: moment the GIL can change hands there (the running-line sampler's race): a profile hook,
#: called as each of the next cell's statement frames begins, samples right then.
SAMPLE_AS_EACH_STATEMENT_STARTS = """\
import sys
from IPython import get_ipython
_tracker = next(
    callback.__self__
    for callback in get_ipython().events.callbacks["pre_run_cell"]
    if type(getattr(callback, "__self__", None)).__name__ == "ActiveLineTracker"
)
def _sample_as_it_starts(frame, event, arg):
    if event == "call" and frame.f_code.co_filename == _tracker._cell_file:
        _tracker._sample()
sys.setprofile(_sample_as_it_starts)
"""


def test_a_frame_sampled_as_it_starts_has_no_line_yet(computer: Computer) -> None:
    """Sampled before its first line, a frame is at line 0 (IPython runs each top-level
    statement in a frame of its own: the seed example's stream once began with active line 0
    this way) or, a function's, at its ``def`` line; neither is the line running."""
    collect(computer, "python", SAMPLE_AS_EACH_STATEMENT_STARTS)
    code = "def f():\n    return 1\nx = f()\nsys.setprofile(None)"
    assert active_lines(collect(computer, "python", code)) == [1, 3, 2, 4]


def test_matplotlib_plot_arrives_as_png(computer: Computer) -> None:
    code = "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()"
    chunks = collect(computer, "python", code)
    images = [c for c in chunks if c["type"] == "image"]
    assert len(images) == 1
    assert images[0]["format"] == "base64.png"
    assert base64.b64decode(images[0]["content"]).startswith(b"\x89PNG")


def test_html_display_is_a_code_chunk(computer: Computer) -> None:
    code = "from IPython.display import HTML, display\ndisplay(HTML('<b>bold</b>'))"
    chunks = collect(computer, "python", code)
    assert {"role": "computer", "type": "code", "format": "html", "content": "<b>bold</b>"} in (
        chunks
    )


def test_jpeg_display_is_an_image_chunk(computer: Computer) -> None:
    code = (
        "from IPython.display import Image, display\n"
        "display(Image(data=b'\\xff\\xd8\\xff\\xe0fakejpeg', format='jpeg'))"
    )
    images = [c for c in collect(computer, "python", code) if c["type"] == "image"]
    assert images[0]["format"] == "base64.jpeg"
    assert base64.b64decode(images[0]["content"]) == b"\xff\xd8\xff\xe0fakejpeg"


def test_input_gives_a_clear_error_instead_of_hanging(computer: Computer) -> None:
    out = output_of(collect(computer, "python", "name = input('Your name? ')"))
    assert "StdinNotImplementedError" in out
    assert "asked for keyboard input" in out


def test_non_utf8_bytes_come_through_readable(computer: Computer) -> None:
    code = "import os, time\nos.write(1, b'caf\\xe9 ok\\n')\ntime.sleep(0.3)"
    out = output_of(collect(computer, "python", code))
    assert "caf" in out and "ok" in out
    out.encode("utf-8")  # nothing a terminal or JSON encoder would choke on


def test_lone_surrogates_are_replaced(computer: Computer) -> None:
    code = "print(b'bad \\xff byte'.decode('utf-8', 'surrogateescape'))"
    out = output_of(collect(computer, "python", code))
    assert out == "bad \ufffd byte\n"


def test_carriage_return_progress_bar_streams_and_folds(computer: Computer) -> None:
    from lmc.computer import bound_output

    code = (
        "import time\nfor i in range(5):\n    print(f'\\r{i * 25}%', end='', flush=True)\nprint()"
    )
    out = output_of(collect(computer, "python", code))
    assert "\r" in out  # the live consumer can animate it
    assert bound_output(out) == "100%\n"  # the model reads the last state


def test_ansi_colours_are_removed(computer: Computer) -> None:
    out = output_of(collect(computer, "python", "print('\\x1b[31mred\\x1b[0m')"))
    assert out == "red\n"


def test_c1_controls_from_the_code_do_not_pass_the_cleaner(computer: Computer) -> None:
    """U+009B is CSI on a terminal that reads C1: the code's CSI and OSC 52 never reach one."""
    code = "print('a\\x9b2Jb\\x9d52;c;Y3VybA==\\x9cc\\x85d')"
    out = output_of(collect(computer, "python", code))
    assert out == "abcd\n"


def test_aliases_reach_the_same_kernel(computer: Computer) -> None:
    collect(computer, "python", "alias_state = 'shared'")
    assert output_of(collect(computer, "py", "print(alias_state)")) == "shared\n"


def test_top_level_await(computer: Computer) -> None:
    code = "import asyncio\nawait asyncio.sleep(0.05)\nprint('awaited')"
    chunks = collect(computer, "python", code)
    assert output_of(chunks) == "awaited\n"
    assert active_lines(chunks) == [1, 2, 3]


def test_runs_from_two_threads_take_turns(computer: Computer) -> None:
    results: dict[str, str] = {}

    def run(name: str) -> None:
        results[name] = output_of(
            collect(computer, "python", f"import time\ntime.sleep(0.2)\nprint('{name}')")
        )

    import threading

    threads = [threading.Thread(target=run, args=(n,)) for n in ("first", "second")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == {"first": "first\n", "second": "second\n"}


def test_plots_are_images_even_when_the_environment_says_agg(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from lmc.computer import Computer

    monkeypatch.setenv("MPLBACKEND", "Agg")
    code = "import matplotlib.pyplot as plt\nplt.plot([3, 1, 2])"  # no plt.show(), no magic
    with Computer() as fresh:
        images = [c for c in collect(fresh, "python", code) if c["type"] == "image"]
    assert [c["format"] for c in images] == ["base64.png"]


MARKER = "lmc_history_marker = 'kept in memory only'"


def _history_files_holding(folder: Path, text: str) -> list[Path]:
    """The SQLite files under ``folder`` whose history table holds ``text``."""
    found = []
    for path in folder.rglob("*.sqlite"):
        with contextlib.closing(sqlite3.connect(path)) as db:
            rows = db.execute("SELECT source_raw FROM history").fetchall()
        if any(text in row[0] for row in rows):
            found.append(path)
    return found


def test_the_sessions_inputs_stay_in_memory_not_in_ipythons_history_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """lmc's kernel keeps In, _i and %history for the session and writes no history file
    (a thread writing it after every block cost the round trip milliseconds); stock ipykernel
    writes the same block into the file."""
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    with Computer(sandbox="off", workdir=tmp_path) as fresh:
        collect(fresh, "python", MARKER)
        history = output_of(collect(fresh, "python", "%history\nprint(In[-2], _i, sep='|')"))
    assert MARKER in history.splitlines()
    assert history.endswith(f"{MARKER}|{MARKER}\n")
    assert _history_files_holding(tmp_path / "ipython", MARKER) == []
    # Stock ipykernel, same IPYTHONDIR: its history thread writes the block into the file.
    stock = KernelSpec(
        name="stock-ipykernel",
        argv=(sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"),
        language="python",
        resource_dir=tmp_path,
    )
    (tmp_path / "runtime").mkdir(mode=0o700)
    session = KernelSession(stock, runtime_dir=tmp_path / "runtime")
    try:
        for _event in session.execute(MARKER):
            pass
        deadline = time.monotonic() + 60  # the history thread writes when it gets to it
        while not _history_files_holding(tmp_path / "ipython", MARKER):
            assert time.monotonic() < deadline, "stock ipykernel wrote no history"
            time.sleep(0.05)
    finally:
        session.shutdown()


@pytest.mark.parametrize(
    "code",
    [
        "import subprocess\ndone = subprocess.run(['echo', 'block {n}'])",
        "import os\ndone = os.write(1, b'block {n}\\n')",
    ],
    ids=["subprocess", "os.write"],
)
def test_output_written_to_fd_1_last_is_the_blocks_own(computer: Computer, code: str) -> None:
    """What a child process or os.write puts on fd 1 as a block's last act is in that block's
    output, every time (ipykernel's end-of-block flush raced the thread that reads the
    capturing pipe, and lost such output to a later flush about one block in four)."""
    outputs = [output_of(collect(computer, "python", code.format(n=n))) for n in range(30)]
    assert outputs == [f"block {n}\n" for n in range(30)]
