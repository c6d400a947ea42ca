"""Every binlog of the shared corpus (real MySQL 4.0-9.6 and MariaDB 5.5-11.8 servers) decodes
completely, or fails with the typed error its PROVENANCE.md note predicts, after decoding
everything before the damage."""

from __future__ import annotations

from pathlib import Path

import pytest

from binlog_core.decoder import decode_file
from binlog_core.errors import BinlogError
from tests.harness.corpus import CORPUS, corpus_files

FILES = corpus_files()

pytestmark = [
    pytest.mark.corpus,
]

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

TOTAL_ROW_CHANGES = 56034


def walk(relative: str) -> tuple[int, int, list[tuple[str, int]], BinlogError | None]:
    """(events decoded, row changes, per-event problems (code, offset), the fatal error or None)."""
    events = rows = 0
    problems: list[tuple[str, int]] = []
    try:
        for item in decode_file(CORPUS / relative):
            events += 1
            rows += len(item.rows)
            problems += [(p.code, p.offset if p.offset is not None else -1) for p in item.problems]
    except BinlogError as exc:
        return events, rows, problems, exc
    return events, rows, problems, None


@pytest.mark.parametrize("relative", FILES)
def test_each_corpus_file_decodes_completely_or_fails_as_its_provenance_predicts(relative: str) -> None:
    events, _rows, problems, fatal = walk(relative)
    assert problems == EVENT_PROBLEMS.get(relative, [])
    if relative in FATAL:
        assert fatal is not None, "expected a fatal error"
        assert (fatal.code, fatal.offset) == FATAL[relative]
        assert fatal.file == Path(relative).name
        # everything before the damage was decoded (the magic and a FORMAT_DESCRIPTION at least)
        assert events > 0 or fatal.offset in (0, 4)
    else:
        assert fatal is None, str(fatal)
        assert events > 0


def test_the_whole_corpus_holds_the_known_number_of_row_changes() -> None:
    assert len(FILES) == 149
    assert sum(walk(relative)[1] for relative in FILES) == TOTAL_ROW_CHANGES
