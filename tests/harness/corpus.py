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

# What the decoder must report for the deliberately bad files of PROVENANCE.md (and the few
# files whose servers wrote events no reader can decode): file -> (code, byte offset).
FATAL: dict[str, tuple[str, int]] = {
    # not a binlog: a canal tsdb snapshot file carrying a binlog-like name
    "canal/tsdb/mysql-bin.000001": ("NOT_A_BINLOG", 0),
    # encrypted from START_ENCRYPTION on (MariaDB) / from byte 0 (MySQL 8 encrypted binlog header)
    "mariadb-test-data/std_data/binlog_before_20574.bin": ("ENCRYPTED", 296),
    "mysql-server/std_data/rpl_nogtid_encryption_master-bin.000002": ("ENCRYPTED", 0),
    # deliberately truncated test inputs: an event's declared size runs past the end of the file
    "mariadb-test-data/std_data/bug11747416_32228_binlog.000001": ("TRUNCATED", 316),
    "mysql-server/std_data/binlog_truncated_event.000001": ("TRUNCATED", 4),
    "mysql-server/std_data/binlog_truncated_prev_gtid_event.000001": ("TRUNCATED", 120),
    # starts with a rows event, not a FORMAT_DESCRIPTION
    "mysql-server/std_data/binlog_no_fd_event.000001": ("NO_FORMAT_DESCRIPTION", 4),
}

"""Files that stop at a fatal error after decoding everything before it."""

EVENT_PROBLEMS: dict[str, list[tuple[str, int]]] = {
    # binlog-recovery and MDEV test inputs with one event's bytes altered: its CRC32 fails
    "mariadb-test-data/std_data/mdev-39404-binlog.000001": [("CHECKSUM_MISMATCH", 256)],
    "mysql-server/std_data/binlog_recovery/duplicate_xid.000001": [("CHECKSUM_MISMATCH", 672)],
    "mysql-server/std_data/binlog_recovery/duplicate_xid_ddl.000001": [("CHECKSUM_MISMATCH", 507)],
    "mysql-server/std_data/binlog_recovery/duplicate_xid_xa_prepare.000001": [("CHECKSUM_MISMATCH", 884)],
    "mysql-server/std_data/binlog_recovery/malformed_xid_xa_commit.000001": [("CHECKSUM_MISMATCH", 889)],
    "mysql-server/std_data/binlog_recovery/malformed_xid_xa_rollback.000001": [("CHECKSUM_MISMATCH", 889)],
    # three WRITE_ROWS v2 with an invalid extra-row-info tag (PROVENANCE: "Found invalid event")
    "mariadb-test-data/suite/binlog/std_data/invalid_row_v2_tag.001": [
        ("MALFORMED", 256),
        ("MALFORMED", 287),
        ("MALFORMED", 320),
    ],
    # Aurora's non-standard event type 100 (padding): kept raw, reported as a warning
    "mysql-binlog-connector-java/mysql-bin.aurora-padding": [("UNKNOWN_EVENT_TYPE", 281)],
    # INCIDENT number 66: only 1 (LOST_EVENTS) exists; the server rejects it too
    "mysql-server/std_data/bug40482-bin.000001": [("MALFORMED", 106)],
    # deliberately corrupt relay log: a QUERY whose status-variable length runs past the event
    "mysql-server/std_data/corrupt-relay-bin.000624": [("MALFORMED", 91204)],
    # MariaDB 10.0 TIMESTAMP(3) logged as type 7 without metadata but with 6-byte values: the
    # width cannot be known from the file, so these rows events are refused, never guessed
    "tiflow/mysql-bin.000001": [
        ("UNSUPPORTED", 1819),
        ("UNSUPPORTED", 2418),
        ("UNSUPPORTED", 3267),
        ("UNSUPPORTED", 3569),
    ],
}

"""Files decoded to the end with problems reported on single events, in file order."""

TOTAL_ROW_CHANGES = 56034
"""Row changes in the whole corpus."""


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
