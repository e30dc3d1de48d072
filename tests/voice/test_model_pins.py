"""The test speech model is pinned by content: files that differ from the pinned SHA-256 are
refused before they become the cached model."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from support.whisper_model import MODEL_SHA256, check_hashes


def test_the_assembled_model_matches_its_pins(whisper_model_dir: Path) -> None:
    check_hashes(whisper_model_dir)
    assert set(MODEL_SHA256) == {p.name for p in whisper_model_dir.iterdir()}


def test_a_changed_file_is_refused(whisper_model_dir: Path, tmp_path: Path) -> None:
    for name in MODEL_SHA256:
        target = tmp_path / name
        if name == "model.bin":
            target.symlink_to(whisper_model_dir / name)
        else:
            shutil.copyfile(whisper_model_dir / name, target)
    check_hashes(tmp_path)
    (tmp_path / "config.json").write_text((tmp_path / "config.json").read_text() + " ")
    with pytest.raises(RuntimeError, match=r"config\.json of the speech model packages"):
        check_hashes(tmp_path)
