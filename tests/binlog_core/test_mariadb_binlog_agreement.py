"""Row values decoded by ``binlog_core`` agree with ``mariadb-binlog --base64-output=decode-rows -vv``
on every file of the shared corpus that the tool reads, and on every MariaDB fixture binlog.

The tool runs once per file. Where it reads the whole file, every row change it prints is
compared, in file order, with the row changes ``decode_file`` yields: the operation, the
`schema`.`table`, the columns each image holds, and each value as the tool prints it -- its text,
type name, TABLE_MAP metadata and NULL flag (ours printed by
:func:`tests.harness.mariadb_binlog.print_column`).

Three reviewed tables say where that comparison is not made, and each is asserted exactly, so
none can grow or go stale silently:

* :data:`UNREADABLE` -- the files the tool does not read (it exits non-zero or prints an error),
  with what it says and why;
* :data:`HARMLESS_DIAGNOSTICS` -- what the tool may print on stderr for a file it does read;
* :data:`TOOL_IS_WRONG` -- where the tool, not the decoder, disagrees with what the server wrote
  (for the fixtures, with what the workload wrote and read back).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from binlog_core.columns import ABSENT
from binlog_core.decoder import RowChange, decode_file
from binlog_core.rows import Row
from binlog_core.table_map import Column
from tests.binlog_core.real_events import FIXTURE_SOURCES
from tests.fixtures.truth import VARIANTS
from tests.harness.corpus import corpus_files, corpus_path
from tests.harness.mariadb_binlog import (
    PRINT_OPTIONS,
    Dump,
    LoggedRow,
    LoggedValue,
    parse_rows,
    print_column,
    require_mariadb_binlog,
    run_dump,
)

TOOL_TIMEOUT = 60.0
"""Seconds the tool may take on one file (the largest takes well under one)."""

_PAYLOAD = "MySQL 8 compressed transactions: the tool refuses the TRANSACTION_PAYLOAD event (40) holding them"
_SILENT_EXIT = (
    "the tool exits with status 1 and no message at the first rows event of a table with a column type it does "
    "not know: MySQL's {} ({})"
)


@dataclass(frozen=True)
class Unreadable:
    """A corpus file the tool does not read: part of what it says (see :func:`verdict`), and why."""

    says: str
    reason: str


UNREADABLE: dict[str, Unreadable] = {
    "canal/tsdb/mysql-bin.000001": Unreadable(
        "File is not a binary log file", "not a binlog: a copy re-encoded as UTF-8, its magic bytes replaced"
    ),
    "mariadb-test-data/std_data/binlog_before_20574.bin": Unreadable(
        "'Event decryption failure'", "MariaDB encrypted binlog: every event after START_ENCRYPTION needs the key"
    ),
    "mariadb-test-data/std_data/bug11747416_32228_binlog.000001": Unreadable(
        "'Event truncated', data_len: 65567", "deliberately truncated: the rows event at 316 runs past the file end"
    ),
    "mariadb-test-data/std_data/mdev-39404-binlog.000001": Unreadable(
        "Could not read entry at offset 256", "deliberately damaged GTID event: bogus length and CRC32"
    ),
    "mariadb-test-data/suite/binlog/std_data/invalid_row_v2_tag.001": Unreadable(
        "Could not read entry at offset 256", "deliberately invalid extra-row-info tag in a WRITE_ROWS v2 event"
    ),
    "mysql-binlog-connector-java/mysql-bin.compressed": Unreadable("Could not read entry at offset 236", _PAYLOAD),
    "mysql-binlog-connector-rust/mysql-bin.000057": Unreadable("Could not read entry at offset 457", _PAYLOAD),
    "mysql-server/std_data/binlog_no_fd_event.000001": Unreadable(
        "Could not read entry at offset 4", "deliberately damaged: no FORMAT_DESCRIPTION (its type byte altered to 48)"
    ),
    "mysql-server/std_data/binlog_truncated_event.000001": Unreadable(
        "Could not read entry at offset 4", "deliberately truncated: 10 bytes of a FORMAT_DESCRIPTION header"
    ),
    "mysql-server/std_data/binlog_truncated_prev_gtid_event.000001": Unreadable(
        "'Event truncated'", "deliberately truncated PREVIOUS_GTIDS event after the FORMAT_DESCRIPTION"
    ),
    "mysql-server/std_data/bug40482-bin.000001": Unreadable(
        "Could not read entry at offset 106", "INCIDENT event with the unknown incident number 66"
    ),
    "mysql-server/std_data/corrupt-relay-bin.000624": Unreadable(
        "Could not read entry at offset 91204",
        "deliberately corrupt relay log: a QUERY whose status-variable length runs past the event",
    ),
    "mysql-server/std_data/rpl_nogtid_encryption_master-bin.000002": Unreadable(
        "File is not a binary log file", "MySQL 8 encrypted binlog (magic FD 62 69 6E, keyring header)"
    ),
    "mysql-server/suite/binlog/std_data/ver_5_1-wl2325_r.001": Unreadable(
        "Could not read entry at offset 549",
        "MySQL 5.2.2 development tree (WL#2325) that numbers events its own way: the tool takes its UPDATE_ROWS "
        "(on-disk type 18) for EXECUTE_LOAD_QUERY and rejects it; the decoder maps the tree's numbering",
    ),
    "mysql-server/suite/binlog/std_data/ver_5_1-wl2325_s.001": Unreadable(
        "Could not read entry at offset 411",
        "MySQL 5.2.2 development tree (WL#2325) that numbers events its own way: the tool takes its XID "
        "(on-disk type 20) for a pre-GA WRITE_ROWS and rejects it; the decoder maps the tree's numbering",
    ),
    "rust_mysql_common/binlog_transaction_with_GTID_TAG.000001": Unreadable(
        "Could not read entry at offset 245", "MySQL 9 GTID_TAGGED_LOG_EVENT (42), unknown to MariaDB"
    ),
    "rust_mysql_common/json-opaque.binlog": Unreadable(
        "without a message; the dump ends at offset 736", _SILENT_EXIT.format("JSON", 245)
    ),
    "rust_mysql_common/json.binlog.000001": Unreadable(
        "without a message; the dump ends at offset 1059", _SILENT_EXIT.format("JSON", 245)
    ),
    "rust_mysql_common/transaction_compression.000001": Unreadable("Could not read entry at offset 274", _PAYLOAD),
    "rust_mysql_common/vector.binlog": Unreadable(
        "without a message; the dump ends at offset 1085", _SILENT_EXIT.format("VECTOR", 242)
    ),
    "tiflow/mysql-bin.000001": Unreadable(
        "without a message; the dump ends at offset 1819",
        "MariaDB 10.0 logged TIMESTAMP(3) as type 7 without metadata but with 6-byte values: the tool exits with "
        "status 1 and no message at the first such rows event (the decoder refuses those events as UNSUPPORTED)",
    ),
}
"""Corpus files the tool does not read -> what it says, and why."""

HARMLESS_DIAGNOSTICS: dict[str, str] = {
    "Character set '#255' is not a compiled character set": (
        "MySQL 8's default collation utf8mb4_0900_ai_ci (id 255) is unknown to MariaDB. The tool needs it only to "
        "print the `SET @@session.character_set_client` line before a statement (it prints `# Ignored (Unknown "
        "charset)` instead); row values are printed as their stored bytes and are unaffected"
    ),
}
"""The start of a stderr line the tool may print for a file it reads -> why that is not an error."""

_PRE_GA_ROWS = (
    "the tool names MySQL 5.1's pre-GA rows events (types 20-22) `Write_rows_old`, `Update_rows_old` and "
    "`Delete_rows_old` and prints `# Number of rows: 0` for each, never their rows. The server wrote them: "
    "the decoder reads {}"
)
_OLD_VERSIONS_ROWS = _PRE_GA_ROWS.format(
    "INSERT (0,'one'),(1,'two'); UPDATE to (1,'one'),(2,'two'); DELETE (2,'two') -- the statements "
    "binlog_old_versions.test lists as those that generated this file (INSERT INTO t1 VALUES (0, 'one'), "
    "(1, 'two'); UPDATE t1 SET a=a+1; DELETE FROM t1 WHERE a=2)"
)

TOOL_IS_WRONG: dict[tuple[str, str], str] = {
    ("mariadb-test-data/suite/binlog/std_data/bug32407.001", "WRITE_ROWS_V0"): _PRE_GA_ROWS.format(
        "two events inserting (1) each -- the rows of INSERT INTO t1 VALUES (1), (1), as mysqlbinlog_base64_flag.test "
        "describes this file"
    ),
    ("mariadb-test-data/suite/binlog/std_data/ver_5_1-telco.001", "WRITE_ROWS_V0"): _OLD_VERSIONS_ROWS,
    ("mariadb-test-data/suite/binlog/std_data/ver_5_1-telco.001", "UPDATE_ROWS_V0"): _OLD_VERSIONS_ROWS,
    ("mariadb-test-data/suite/binlog/std_data/ver_5_1-telco.001", "DELETE_ROWS_V0"): _OLD_VERSIONS_ROWS,
    ("mariadb-test-data/suite/binlog/std_data/ver_5_1_17.001", "WRITE_ROWS_V0"): _OLD_VERSIONS_ROWS,
    ("mariadb-test-data/suite/binlog/std_data/ver_5_1_17.001", "UPDATE_ROWS_V0"): _OLD_VERSIONS_ROWS,
    ("mariadb-test-data/suite/binlog/std_data/ver_5_1_17.001", "DELETE_ROWS_V0"): _OLD_VERSIONS_ROWS,
    **{
        (f"{variant}/mysql-bin.000001", "YEAR"): (
            "the tool prints the zero year as 1900: the workload wrote 0 to t_bityear.y and t_bityear.y_nn, read "
            "0 back (the variant's expected.jsonl), and the decoder gives 0"
        )
        for variant in VARIANTS
        if variant != "sample"
    },
}
"""Where the tool is wrong: (file, scope) -> why, and what the server wrote.

``scope`` is a rows event type (``WRITE_ROWS_V0``: the tool prints none of the rows of those
events) or a column type as the tool names it, without its size (``YEAR``, ``TIMESTAMP``: the tool
prints those values differently from what the server stored)."""

FILES = corpus_files()
READ_BY_THE_TOOL = [relative for relative in FILES if relative not in UNREADABLE]

FIXTURE_FILES = {f"{source}/{path.name}": path for source, paths in FIXTURE_SOURCES.items() for path in paths}
"""Every MariaDB fixture binlog (each variant's files, the small file of ``events/data``) by ``source/name``."""

_LAST_POSITION_RE = re.compile(r"^# at (\d+)$", re.MULTILINE)


@pytest.fixture(scope="module")
def mariadb_binlog() -> str:
    """The tool's path (a missing tool fails with install advice, or skips with BINLOG_SKIP_MARIADB=1)."""
    return require_mariadb_binlog()


def harmless_diagnostic(line: str) -> str | None:
    """The :data:`HARMLESS_DIAGNOSTICS` entry a stderr line is (after the tool's ``path: `` prefix), if any."""
    message = line.partition(": ")[2]
    return next((start for start in HARMLESS_DIAGNOSTICS if message.startswith(start)), None)


def verdict(dump: Dump) -> str | None:
    """``None`` when the tool read the whole file; else what it said, or where its output stopped."""
    errors = [line for line in dump.errors.splitlines() if line.strip() and harmless_diagnostic(line) is None]
    if errors:
        return " / ".join(errors)
    if dump.returncode != 0:
        positions = _LAST_POSITION_RE.findall(dump.text)
        ends = positions[-1] if positions else "?"
        return f"exit status {dump.returncode} without a message; the dump ends at offset {ends}"
    return None


# ------------------------------------------------------------------------------ comparison


def tool_is_wrong_in(relative: str) -> set[str]:
    """The :data:`TOOL_IS_WRONG` scopes of one file."""
    return {scope for file, scope in TOOL_IS_WRONG if file == relative}


@dataclass
class Comparison:
    """What disagrees in one file, and which :data:`TOOL_IS_WRONG` scopes excused a difference."""

    problems: list[str] = field(default_factory=list)
    excused: set[str] = field(default_factory=set)


def printed_image(columns: tuple[Column, ...], image: Row | None) -> dict[int, LoggedValue] | None:
    """A decoded image as the tool prints it: 1-based column number -> value line."""
    if image is None:
        return None
    return {
        column.index + 1: print_column(column, value)
        for column, value in zip(columns, image, strict=False)
        if value is not ABSENT
    }


def _line(value: LoggedValue) -> str:
    return f"{value.text[:100]} /* {value.type_name} meta={value.meta} is_null={int(value.is_null)} */"


def _compare_image(
    where: str,
    ours: dict[int, LoggedValue] | None,
    theirs: dict[int, LoggedValue] | None,
    wrong: set[str],
    result: Comparison,
) -> None:
    if ours is None or theirs is None:
        if (ours is None) != (theirs is None):
            result.problems.append(f"{where}: decoded {ours is not None}, mariadb-binlog {theirs is not None}")
        return
    if sorted(ours) != sorted(theirs):
        result.problems.append(f"{where}: decoded columns {sorted(ours)}, mariadb-binlog {sorted(theirs)}")
        return
    for number, value in theirs.items():
        if ours[number] == value:
            continue
        scope = value.type_name.split("(")[0]
        if scope in wrong:
            result.excused.add(scope)
            continue
        result.problems.append(f"{where} @{number}: decoded {_line(ours[number])}, mariadb-binlog {_line(value)}")


def compare(relative: str, logged: list[LoggedRow], decoded: list[RowChange]) -> Comparison:
    """Compare the decoded row changes of one file with those the tool printed, in file order."""
    result = Comparison()
    wrong = tool_is_wrong_in(relative)
    shown = []
    for change in decoded:
        if change.event_type in wrong:
            result.excused.add(change.event_type)
        else:
            shown.append(change)
    if len(shown) != len(logged):
        result.problems.append(f"binlog_core decodes {len(shown)} row changes, mariadb-binlog prints {len(logged)}")
    for number, (change, row) in enumerate(zip(shown, logged, strict=False)):
        where = f"row change {number} ({change.event_type} at {change.offset})"
        ident = (change.op, change.schema, change.table)
        if ident != (row.op, row.schema, row.table):
            result.problems.append(f"{where}: decoded {ident}, mariadb-binlog {(row.op, row.schema, row.table)}")
            continue
        columns = change.table_map.columns
        for side, image, printed in (("before", change.before, row.before), ("after", change.after, row.after)):
            _compare_image(f"{where} {side} image", printed_image(columns, image), printed, wrong, result)
    return result


def decoded_changes(path: Path) -> list[RowChange]:
    """Every row change of one file, decoded with the options values are printed with."""
    return [change for item in decode_file(path, options=PRINT_OPTIONS) for change in item.rows]


# ------------------------------------------------------------------------------ tests


def assert_rows_agree(relative: str, path: Path, mariadb_binlog: str) -> None:
    dump = run_dump(path, mariadb_binlog, TOOL_TIMEOUT)
    failure = verdict(dump)
    assert failure is None, f"mariadb-binlog does not read this file: {failure} (review it into UNREADABLE)"
    comparison = compare(relative, parse_rows(dump.text), decoded_changes(path))
    shown = "\n".join(comparison.problems[:30])
    assert not comparison.problems, f"{len(comparison.problems)} disagreements, the first:\n{shown}"
    assert comparison.excused == tool_is_wrong_in(relative), "stale TOOL_IS_WRONG"


@pytest.mark.corpus
@pytest.mark.parametrize("relative", READ_BY_THE_TOOL)
def test_row_values_agree_with_mariadb_binlog_on_every_corpus_file_it_reads(relative: str, mariadb_binlog: str) -> None:
    assert_rows_agree(relative, corpus_path(relative), mariadb_binlog)


@pytest.mark.parametrize("name", FIXTURE_FILES)
def test_row_values_agree_with_mariadb_binlog_on_every_fixture_binlog(name: str, mariadb_binlog: str) -> None:
    assert_rows_agree(name, FIXTURE_FILES[name], mariadb_binlog)


@pytest.mark.corpus
@pytest.mark.parametrize("relative", sorted(UNREADABLE))
def test_mariadb_binlog_does_not_read_the_reviewed_files_and_says_why(relative: str, mariadb_binlog: str) -> None:
    failure = verdict(run_dump(corpus_path(relative), mariadb_binlog, TOOL_TIMEOUT))
    assert failure is not None, "mariadb-binlog now reads this file: drop it from UNREADABLE so it is compared"
    assert UNREADABLE[relative].says in failure


@pytest.mark.corpus
def test_the_reviewed_tables_name_only_files_that_are_compared() -> None:
    assert set(UNREADABLE) <= set(FILES)
    assert {file for file, _scope in TOOL_IS_WRONG} <= {*READ_BY_THE_TOOL, *FIXTURE_FILES}


@pytest.mark.corpus
def test_every_harmless_diagnostic_is_still_printed_for_some_file_the_tool_reads(mariadb_binlog: str) -> None:
    unseen = set(HARMLESS_DIAGNOSTICS)
    for relative in READ_BY_THE_TOOL:
        dump = run_dump(corpus_path(relative), mariadb_binlog, TOOL_TIMEOUT)
        unseen -= {found for line in dump.errors.splitlines() if (found := harmless_diagnostic(line)) is not None}
        if not unseen:
            break
    assert not unseen, "stale HARMLESS_DIAGNOSTICS"
