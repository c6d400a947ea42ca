"""The shared binlog corpus: real MySQL and MariaDB binlogs kept next to the project.

Tests that read it are marked ``corpus``. The corpus is looked for at ``../shared/corpus`` beside
the repository, or wherever ``BINLOG_CORPUS`` points. A missing corpus fails those tests with that
advice, unless ``BINLOG_SKIP_CORPUS=1`` asks for them to be skipped: never a silent skip.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

CORPUS_ENV_VAR = "BINLOG_CORPUS"
SKIP_ENV_VAR = "BINLOG_SKIP_CORPUS"
CORPUS_MARKER = "corpus"

CORPUS = Path(os.environ.get(CORPUS_ENV_VAR) or Path(__file__).resolve().parents[2].parent / "shared" / "corpus")
"""Where the corpus is read from."""


def skip_requested() -> bool:
    """True when the environment asks to skip every corpus test."""
    return os.environ.get(SKIP_ENV_VAR, "").strip().lower() in {"1", "true", "yes"}


def corpus_files() -> list[str]:
    """Every binlog of the corpus, relative to it, sorted (empty when the corpus is absent)."""
    if not CORPUS.is_dir():
        return []
    return sorted(p.relative_to(CORPUS).as_posix() for p in CORPUS.rglob("*") if p.is_file() and p.suffix != ".md")


def corpus_path(relative: str) -> Path:
    """The path of one corpus file; fails (or skips, when asked) the calling test if it is missing."""
    path = CORPUS / relative
    if not path.is_file():
        _missing(f"corpus file missing: {path}")
    return path


def _missing(what: str) -> None:
    if skip_requested():
        pytest.skip(f"{SKIP_ENV_VAR}=1: corpus tests are skipped")
    pytest.fail(
        f"{what}; put the shared corpus at {CORPUS}, point {CORPUS_ENV_VAR} at it, "
        f"or set {SKIP_ENV_VAR}=1 to skip the tests marked `{CORPUS_MARKER}`.",
        pytrace=False,
    )


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A corpus test fails with advice when the corpus is absent, or skips when asked to."""
    if item.get_closest_marker(CORPUS_MARKER) is not None and not CORPUS.is_dir():
        _missing(f"the shared binlog corpus is not at {CORPUS}")
