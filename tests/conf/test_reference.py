"""The README's configuration reference is the one rendered from the models."""

from __future__ import annotations

from pathlib import Path

from conf.reference import render_reference

README = Path(__file__).resolve().parents[2] / "README.md"
START = "<!-- config-reference:start (python -m conf reference) -->"
END = "<!-- config-reference:end -->"


def test_readme_configuration_reference_matches_the_models() -> None:
    text = README.read_text(encoding="utf-8")
    assert START in text and END in text, "README lacks the configuration reference markers"
    block = text.split(START, 1)[1].split(END, 1)[0].strip("\n") + "\n"
    assert block == render_reference(), "regenerate the README block with: python -m conf reference"


def test_reference_lists_every_key_with_its_default() -> None:
    reference = render_reference()
    assert "| `spark.master` | string or null | `local[*]` |" in reference
    assert "| `input.path` | path or URI | *required* |" in reference
    assert "| `storage.bronze_database` | string | `binlog_bronze` |" in reference
    assert "| `decoder.verify_checksums` | boolean | `true` |" in reference
