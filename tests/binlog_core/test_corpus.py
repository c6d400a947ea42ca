"""Every binlog of the shared corpus (real MySQL 4.0-9.6 and MariaDB 5.5-11.8 servers) decodes
completely, or fails with the typed error its PROVENANCE.md note predicts, after decoding
everything before the damage."""

from __future__ import annotations

from pathlib import Path

import pytest

from binlog_core.decoder import decode_file
from binlog_core.errors import BinlogError
from tests.harness.corpus import CORPUS, EVENT_PROBLEMS, FATAL, TOTAL_ROW_CHANGES, corpus_files

FILES = corpus_files()

DEFAULT_CHARSET_WARNINGS: dict[str, list[tuple[str, int]]] = {
    # MySQL 5.5/5.6 files name no charset, so BLOB and TEXT columns look alike (type 252): PNG
    # images in BLOB columns do not decode as UTF-8, the default charset, and are kept as bytes
    # with a warning (gh-ost's test table's 4th column, sakila's staff.picture)
    "gh-ost/mysql-bin.000066": [("UNDECODABLE_TEXT", 1927), ("UNDECODABLE_TEXT", 2884)],
    "gh-ost/mysql-bin.000070": [
        ("UNDECODABLE_TEXT", 1980),
        ("UNDECODABLE_TEXT", 2528),
        ("UNDECODABLE_TEXT", 3087),
        ("UNDECODABLE_TEXT", 3346),
        ("UNDECODABLE_TEXT", 3346),
    ],
    "mysql-binlog-connector-java/mysql-bin.sakila": [("UNDECODABLE_TEXT", 1408881)],
}
"""Warnings the decoder reports with its default options beside :data:`EVENT_PROBLEMS`, in file order."""

pytestmark = [
    pytest.mark.corpus,
]


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
    assert problems == EVENT_PROBLEMS.get(relative, []) + DEFAULT_CHARSET_WARNINGS.get(relative, [])
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
