"""The V4A applier on real folders: cases written from the format's documentation (gpt-oss's
gpt_oss/tools/apply_patch.md, Codex's codex-rs/apply-patch parser.rs grammar), each checking
the resulting tree byte for byte; bad patches and refused paths leave the tree as it was."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lmc.workspace import untrusted
from lmc.workspace.patch import PatchError, apply_changes, apply_patch, parse_patch, plan_patch

Tree = dict[str, bytes]


def make(root: Path, files: Tree) -> None:
    for name, data in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def tree(root: Path) -> Tree:
    out: Tree = {}
    for folder, _dirs, names in os.walk(root):
        for name in names:
            path = Path(folder, name)
            if not path.is_symlink():
                out[str(path.relative_to(root))] = path.read_bytes()
    return out


def patch(*lines: str) -> str:
    return "\n".join(["*** Begin Patch", *lines, "*** End Patch"]) + "\n"


def applied(root: Path, files: Tree, text: str) -> Tree:
    make(root, files)
    apply_patch(root, text)
    return tree(root)


def refused(root: Path, files: Tree, text: str) -> str:
    make(root, files)
    before = tree(root)
    with pytest.raises(PatchError) as caught:
        apply_patch(root, text)
    assert tree(root) == before
    return str(caught.value)


def test_the_documented_example_adds_moves_and_deletes(tmp_path: Path) -> None:
    files = {
        "src/app.py": b'def greet():\nprint("Hi")\n',
        "obsolete.txt": b"old\n",
    }
    text = patch(
        "*** Add File: hello.txt",
        "+Hello world",
        "*** Update File: src/app.py",
        "*** Move to: src/main.py",
        "@@ def greet():",
        '-print("Hi")',
        '+print("Hello, world!")',
        "*** Delete File: obsolete.txt",
    )
    assert applied(tmp_path, files, text) == {
        "hello.txt": b"Hello world\n",
        "src/main.py": b'def greet():\nprint("Hello, world!")\n',
    }


def test_an_update_with_several_hunks_and_context(tmp_path: Path) -> None:
    files = {"m.py": b"a\nb\nc\nd\ne\nf\ng\n"}
    text = patch(
        "*** Update File: m.py",
        "@@",
        " a",
        "-b",
        "+B",
        " c",
        "@@",
        " e",
        "-f",
        "+F1",
        "+F2",
    )
    assert applied(tmp_path, files, text) == {"m.py": b"a\nB\nc\nd\ne\nF1\nF2\ng\n"}


def test_the_first_hunk_may_go_without_its_at_line(tmp_path: Path) -> None:
    text = patch("*** Update File: f.py", " import foo", "+bar")
    assert applied(tmp_path, {"f.py": b"import foo\n"}, text) == {"f.py": b"import foo\nbar\n"}


def test_anchors_pick_the_place_and_several_narrow_it(tmp_path: Path) -> None:
    source = (
        b"class A:\n    def f(self):\n        return 1\n"
        b"class B:\n    def f(self):\n        return 1\n"
    )
    text = patch(
        "*** Update File: k.py",
        "@@ class B:",
        "@@     def f(self):",
        "-        return 1",
        "+        return 2",
    )
    assert applied(tmp_path, {"k.py": source}, text) == {
        "k.py": source.replace(
            b"B:\n    def f(self):\n        return 1", b"B:\n    def f(self):\n        return 2"
        )
    }


def test_a_pure_addition_under_an_anchor_goes_right_after_it(tmp_path: Path) -> None:
    text = patch("*** Update File: k.py", "@@ def f():", "+    x = 1")
    files = {"k.py": b"def f():\n    pass\n"}
    assert applied(tmp_path, files, text) == {"k.py": b"def f():\n    x = 1\n    pass\n"}


def test_end_of_file_matches_the_last_lines(tmp_path: Path) -> None:
    files = {"e.txt": b"x\nend\nx\nend\n"}
    text = patch("*** Update File: e.txt", "@@", " x", "-end", "+END", "*** End of File")
    assert applied(tmp_path, files, text) == {"e.txt": b"x\nend\nx\nEND\n"}


def test_a_file_without_a_final_newline_gets_one(tmp_path: Path) -> None:
    text = patch("*** Update File: n.txt", "-one", "+uno")
    assert applied(tmp_path, {"n.txt": b"one"}, text) == {"n.txt": b"uno\n"}


def test_crlf_files_keep_their_line_ends(tmp_path: Path) -> None:
    text = patch("*** Update File: w.txt", " a", "-b", "+B")
    assert applied(tmp_path, {"w.txt": b"a\r\nb\r\n"}, text) == {"w.txt": b"a\r\nB\r\n"}


@pytest.mark.parametrize(
    ("source", "context"),
    [
        (b"x = 1   \ny = 2\n", "x = 1"),  # trailing whitespace
        (b"    x = 1\ny = 2\n", "x = 1"),  # indentation
        ("x = \u201cq\u201d \u2014 1\ny = 2\n".encode(), 'x = "q" - 1'),  # punctuation
    ],
)
def test_whitespace_and_punctuation_are_tolerated_as_codex_tolerates_them(
    tmp_path: Path, source: bytes, context: str
) -> None:
    text = patch("*** Update File: t.py", f" {context}", "-y = 2", "+y = 3")
    first = source.split(b"\n")[0]
    assert applied(tmp_path, {"t.py": source}, text) == {"t.py": first + b"\ny = 3\n"}


def test_exact_matches_win_over_tolerant_ones(tmp_path: Path) -> None:
    files = {"t.txt": b"  v\nv\n"}
    text = patch("*** Update File: t.txt", "-v", "+w")
    assert applied(tmp_path, files, text) == {"t.txt": b"  v\nw\n"}


def test_an_added_file_in_new_folders_and_an_empty_one(tmp_path: Path) -> None:
    text = patch("*** Add File: a/b/c.txt", "+1", "+", "+3", "*** Add File: empty")
    assert applied(tmp_path, {}, text) == {"a/b/c.txt": b"1\n\n3\n", "empty": b""}


def test_the_heredoc_wrapper_and_padded_markers_are_accepted(tmp_path: Path) -> None:
    text = "<<'EOF'\n*** Begin Patch \n*** Add File: h.txt\n+hi\n *** End Patch\nEOF\n"
    assert applied(tmp_path, {}, text) == {"h.txt": b"hi\n"}


def test_a_move_keeps_the_file_mode(tmp_path: Path) -> None:
    make(tmp_path, {"run.sh": b"echo a\n"})
    (tmp_path / "run.sh").chmod(0o755)
    apply_patch(
        tmp_path, patch("*** Update File: run.sh", "*** Move to: bin/run", "-echo a", "+echo b")
    )
    assert tree(tmp_path) == {"bin/run": b"echo b\n"}
    assert (tmp_path / "bin/run").stat().st_mode & 0o777 == 0o755


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("*** Add File: x\n+1\n*** End Patch", "first line of the patch must be '*** Begin Patch'"),
        ("*** Begin Patch\n*** Add File: x\n+1", "last line of the patch must be '*** End Patch'"),
        (patch("*** Frobnicate File: x"), "is not a valid file header"),
        (patch("*** Update File: a.txt"), "the update of 'a.txt' is empty"),
        (patch("*** Update File: a.txt", "@@", "?what"), "unexpected line in an update hunk"),
        (
            patch("*** Update File: a.txt", "-zzz", "+y"),
            "a.txt: hunk 1: failed to find the lines:\nzzz",
        ),
        (
            patch("*** Update File: a.txt", "@@ nope", "-one"),
            "a.txt: hunk 1: failed to find the @@ line 'nope'",
        ),
        (patch("*** Update File: gone.txt", "-x"), "gone.txt: cannot update it: no such file"),
        (patch("*** Delete File: gone.txt"), "gone.txt: cannot delete it: no such file"),
        (patch("*** Add File: s.txt", "+\ud800"), "s.txt: the new text is not valid Unicode"),
    ],
)
def test_bad_patches_change_nothing_and_say_why(tmp_path: Path, text: str, says: str) -> None:
    files = {"a.txt": b"one\ntwo\n"}
    # Each bad patch comes after a good section: the good one is not applied either.
    text = text.replace("*** Begin Patch\n", "*** Begin Patch\n*** Add File: new.txt\n+n\n", 1)
    assert says in refused(tmp_path, files, text)


def test_a_later_hunk_that_fails_undoes_nothing_because_nothing_was_written(tmp_path: Path) -> None:
    files = {"a.txt": b"one\ntwo\n", "b.txt": b"b\n"}
    text = patch(
        "*** Update File: a.txt",
        "-one",
        "+ONE",
        "*** Delete File: b.txt",
        "*** Update File: a.txt",
        "-three",
        "+3",
    )
    assert "a.txt: hunk 1: failed to find the lines:\nthree" in refused(tmp_path, files, text)


@pytest.mark.parametrize(
    "path", ["/etc/passwd", "../outside.txt", "a/../../x", ".git/hooks/pre-commit", "sub/.lmc/x"]
)
def test_paths_outside_or_read_only_are_refused(tmp_path: Path, path: str) -> None:
    root = tmp_path / "work"
    root.mkdir()
    says = refused(root, {}, patch(f"*** Add File: {path}", "+pwned"))
    assert path.rsplit("/", maxsplit=1)[-1] in says or path in says
    assert not (tmp_path / "outside.txt").exists()


def test_a_virtual_environment_is_read_only(tmp_path: Path) -> None:
    files = {"env2/pyvenv.cfg": b"home = /usr\n", "env2/lib/site.py": b"x\n"}
    says = refused(tmp_path, files, patch("*** Update File: env2/lib/site.py", "-x", "+y"))
    assert "virtual environments read-only" in says


def test_a_symlink_out_is_refused_and_followed_without_the_guard(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_bytes(b"key\n")
    root = tmp_path / "work"
    root.mkdir()
    (root / "link").symlink_to(outside)
    text = patch("*** Update File: link/secret.txt", "-key", "+stolen")
    assert "link" in refused(root, {}, text)
    assert (outside / "secret.txt").read_bytes() == b"key\n"
    # Without the guard (a reader that follows links, as a plain open() does) it goes out.
    changes = plan_patch(text, lambda p: (root / p).read_bytes())
    (root / changes[0].path).write_bytes(changes[0].new or b"")
    assert (outside / "secret.txt").read_bytes() == b"stolen\n"


def test_a_file_link_is_not_followed_by_an_add(tmp_path: Path) -> None:
    root = tmp_path / "work"
    root.mkdir()
    (tmp_path / "target").write_bytes(b"safe\n")
    (root / "l.txt").symlink_to(tmp_path / "target")
    assert "l.txt" in refused(root, {}, patch("*** Add File: l.txt", "+x"))
    assert (tmp_path / "target").read_bytes() == b"safe\n"


def test_a_write_that_fails_midway_puts_back_what_was_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make(tmp_path, {"a.txt": b"a\n", "z/b.txt": b"b\n"})
    changes = plan_patch(
        patch("*** Update File: a.txt", "-a", "+A", "*** Update File: z/b.txt", "-b", "+B"),
        lambda p: (tmp_path / p).read_bytes(),
    )
    # The second write cannot be made: its temporary name is taken (even root cannot).
    monkeypatch.setattr(untrusted, "_temporary_name", lambda: ".taken.tmp")
    (tmp_path / "z" / ".taken.tmp").mkdir()
    with pytest.raises(PatchError, match=r"z/b\.txt"):
        apply_changes(tmp_path, changes)
    assert tree(tmp_path) == {"a.txt": b"a\n", "z/b.txt": b"b\n"}


def test_parse_keeps_sections_in_order() -> None:
    ops = parse_patch(patch("*** Delete File: a", "*** Add File: b", "+x"))
    assert [(op.kind, op.path) for op in ops] == [("delete", "a"), ("add", "b")]


_lines = st.lists(st.sampled_from(["a", "b", " a", "c ", "", "x = 1"]), max_size=6)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(original=_lines, old=_lines, new=_lines, anchor=st.sampled_from(["", "a", "zz"]))
def test_a_patch_either_applies_or_leaves_the_tree_unchanged(
    tmp_path_factory: pytest.TempPathFactory,
    original: list[str],
    old: list[str],
    new: list[str],
    anchor: str,
) -> None:
    root = tmp_path_factory.mktemp("prop")
    make(root, {"f.txt": "\n".join(original).encode(), "keep.txt": b"k\n"})
    before = tree(root)
    body = [f"@@ {anchor}" if anchor else "@@", *(f"-{s}" for s in old), *(f"+{s}" for s in new)]
    text = patch("*** Add File: added.txt", "+new", "*** Update File: f.txt", *body)
    try:
        apply_patch(root, text)
    except PatchError:
        assert tree(root) == before
    else:
        after = tree(root)
        assert after["added.txt"] == b"new\n"
        assert after["keep.txt"] == b"k\n"
        assert after["f.txt"] == b"" or after["f.txt"].endswith(b"\n")
