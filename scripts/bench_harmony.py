"""Benchmark: Harmony streaming parser and LMC mapping throughput on a 1 MB completion.

The completion (reasoning, a preamble, a JSON tool call with code, a final answer) is cut
into single-token pieces of about 4 characters, markers as special pieces, the way a backend
hands them over. Every figure is shown next to a baseline run on the same pieces, a bare loop
that only collects and joins them, so the ratios hold across machines.

    PYTHONPATH=. .venv/bin/python scripts/bench_harmony.py [--size-mb 1] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable

from lmc.harmony.events import Event
from lmc.harmony.parser import StreamParser, split_markers
from lmc.harmony.to_lmc import LmcMapper

Pieces = list[tuple[str, bool]]

_PROSE = (
    "The user wants the sum of the squares of the first hundred primes. "
    "We can compute it in Python quickly; café, naïve, 世界, emoji 😀 included. "
)
_CODE = (
    "import math\n"
    "def primes(n):\n"
    '    """Return the first n primes."""\n'
    "    found = []\n"
    "    k = 2\n"
    "    while len(found) < n:\n"
    "        if all(k % p for p in found if p * p <= k):\n"
    "            found.append(k)\n"
    "        k += 1\n"
    "    return found\n"
    'print(f"total: {sum(p * p for p in primes(100))}\\tok")\n'
)


def make_completion(size: int) -> str:
    """About ``size`` characters: 40% reasoning, 20% JSON code, 40% final answer."""

    def fill(unit: str, chars: int) -> str:
        return unit * max(1, chars // len(unit))

    arguments = json.dumps({"code": fill(_CODE, size // 5)})
    return (
        "<|channel|>analysis<|message|>" + fill(_PROSE, size * 2 // 5) + "<|end|>"
        "<|start|>assistant<|channel|>commentary<|message|>Running it now.<|end|>"
        "<|start|>assistant<|channel|>commentary to=functions.python <|constrain|>json"
        "<|message|>" + arguments + "<|call|>"
        "<|start|>assistant<|channel|>final<|message|>" + fill(_PROSE, size * 2 // 5) + "<|return|>"
    )


def to_pieces(text: str, width: int = 4) -> Pieces:
    pieces: Pieces = []
    for run, special in split_markers(text):
        if special:
            pieces.append((run, True))
        else:
            pieces += [(run[i : i + width], False) for i in range(0, len(run), width)]
    return pieces


def baseline(pieces: Pieces) -> int:
    parts = []
    for text, _special in pieces:
        parts.append(text)
    return len("".join(parts))


def parse(pieces: Pieces) -> int:
    parser = StreamParser()
    count = 0
    for text, special in pieces:
        count += len(parser.feed(text, special))
    return count + len(parser.finish())


def parse_literal(pieces: Pieces) -> int:
    """Markers written in the text and found by feed_text, as from a text-only server."""
    parser = StreamParser()
    count = 0
    for text, _special in pieces:
        count += len(parser.feed_text(text))
    return count + len(parser.finish())


def parse_and_map(pieces: Pieces) -> int:
    parser = StreamParser()
    mapper = LmcMapper()
    count = 0
    for text, special in pieces:
        for event in parser.feed(text, special):
            count += len(mapper.feed(event))
    for event in parser.finish():
        count += len(mapper.feed(event))
    return count


def time_best(run: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--size-mb", type=float, default=1.0)
    options.add_argument("--repeat", type=int, default=5)
    args = options.parse_args()

    text = make_completion(int(args.size_mb * 1_000_000))
    pieces = to_pieces(text)
    literal = [(piece, False) for piece in _literal_pieces(text)]
    parser = StreamParser()
    events: list[Event] = [e for t, s in pieces for e in parser.feed(t, s)] + parser.finish()

    def map_only() -> int:
        mapper = LmcMapper()
        return sum(len(mapper.feed(event)) for event in events)

    size = len(text.encode())
    print(f"completion: {size / 1e6:.2f} MB, {len(text):,} characters, {len(pieces):,} pieces")
    print(f"best of {args.repeat} runs each\n")
    base = time_best(lambda: baseline(pieces), args.repeat)
    rows: list[tuple[str, int, float]] = [
        ("baseline (collect + join pieces)", len(pieces), base),
        (
            "parser: feed(piece, special)",
            len(pieces),
            time_best(lambda: parse(pieces), args.repeat),
        ),
        (
            "parser: feed_text(piece), literal markers",
            len(literal),
            time_best(lambda: parse_literal(literal), args.repeat),
        ),
        ("LMC mapping alone (events in)", len(pieces), time_best(map_only, args.repeat)),
        (
            "parser + LMC mapping",
            len(pieces),
            time_best(lambda: parse_and_map(pieces), args.repeat),
        ),
    ]
    print(f"{'run':44} {'seconds':>9} {'pieces/s':>14} {'MB/s':>8} {'x baseline':>11}")
    for name, count, seconds in rows:
        print(
            f"{name:44} {seconds:9.4f} {count / seconds:14,.0f} {size / seconds / 1e6:8.1f}"
            f" {seconds / base:11.1f}"
        )


def _literal_pieces(text: str, width: int = 4) -> list[str]:
    """The text cut every ``width`` characters, markers and all (so markers get split)."""
    return [text[i : i + width] for i in range(0, len(text), width)]


if __name__ == "__main__":
    main()
