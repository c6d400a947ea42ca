"""QUERY events: status variables with the values real servers wrote, unknown codes, statement charsets.

Values are checked explicitly and against what ``mariadb-binlog -vv`` prints for the same events
(``SET @@session.sql_mode=...``, ``/*!\\C utf8mb4 */``, ``SET TIMESTAMP=sec.usec``, ``xid=``).
The tool prints a session setting only when it differs from the event before, and reads no
MySQL code above 12 (it stops there, as MySQL stops at MariaDB's codes), so the comparison
covers what it prints.
"""

from __future__ import annotations

import re
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

import pytest

from binlog_core.decoder import DecodedEvent, decode_file
from binlog_core.events.query import OVER_MAX_DBS_IN_EVENT_MTS, QueryEvent, StatusVar, StatusVars
from tests.binlog_core.real_events import decode_bytes, file_bytes
from tests.fixtures.truth import FIXTURES
from tests.harness.corpus import corpus_path
from tests.harness.mariadb_binlog import require_mariadb_binlog, run_dump

MYSQL_5628 = "gh-ost/mysql-bin.000066"
MYSQL_5730 = "mysql-cdc-rs/5.7/02_query/log.bin"
MYSQL_8022 = "rust_mysql_common/json.binlog.000001"
MYSQL_8028 = "mysql-server/std_data/upgrade/data_80028_empty_log_fast_shutdown/data/binlog.000001"
MYSQL_8029 = "maxwell/binlog.000004"
MARIADB_1185 = "mariadb-poc/domain_id_0/mariadb-repl-bin.000002"
MARIADB_1011 = FIXTURES / "sample" / "mysql-bin.000002"
"""MariaDB 10.11.x (checked-in fixture): Q_HRNOW and Q_XID on DDL."""

UTF8MB3_GENERAL = 33
UTF8MB4_0900 = 255  # MySQL 8.0's default
UTF8MB4_GENERAL = 45
UTF8MB4_UCA1400 = 2304  # MariaDB 11.x's default
LATIN1_SWEDISH = 8
CP850_GENERAL = 4


def _path(source: str | Path) -> Path:
    return source if isinstance(source, Path) else corpus_path(source)


def _query_at(source: str | Path, offset: int) -> tuple[DecodedEvent, QueryEvent]:
    for item in decode_file(_path(source)):
        if item.event.offset == offset:
            assert isinstance(item.body, QueryEvent), item
            return item, item.body
    raise AssertionError(f"no event at {offset} in {source}")


# (source, offset, header timestamp, statement start, status variables)
REAL = [
    (
        MYSQL_5628,
        120,
        1459344667,
        "DROP TABLE IF EXISTS `samplet`",
        StatusVars(
            codes=(0, 1, 6, 4, 12),
            flags2=0,
            sql_mode=1073741824,  # NO_ENGINE_SUBSTITUTION
            catalog="std",
            charset_client=UTF8MB3_GENERAL,
            collation_connection=UTF8MB3_GENERAL,
            collation_server=LATIN1_SWEDISH,
            updated_db_count=1,
            updated_db_names=("test",),
        ),
    ),
    (
        MYSQL_5730,
        219,
        1594395328,
        "DROP TABLE IF EXISTS `boxercrab`",
        StatusVars(
            codes=(0, 1, 6, 4, 12),
            flags2=0,
            sql_mode=1436549152,
            catalog="std",
            charset_client=UTF8MB3_GENERAL,
            collation_connection=UTF8MB3_GENERAL,
            collation_server=UTF8MB4_GENERAL,
            updated_db_count=1,
            updated_db_names=("default",),
        ),
    ),
    (
        MYSQL_8022,
        235,
        1615797724,
        "ALTER USER 'root'@'localhost'",
        StatusVars(
            codes=(0, 1, 6, 4, 5, 11, 12, 13, 17, 18),
            flags2=0,
            sql_mode=1168113696,
            catalog="std",
            charset_client=UTF8MB4_0900,
            collation_connection=UTF8MB4_0900,
            collation_server=UTF8MB4_0900,
            time_zone="SYSTEM",
            invoker_user="root",
            invoker_host="localhost",
            updated_db_count=1,
            updated_db_names=("mysql",),
            microseconds=669125,
            ddl_xid=3,
            default_collation_for_utf8mb4=UTF8MB4_0900,
        ),
    ),
    (
        MYSQL_8022,
        570,
        1615797758,
        "CREATE TABLE t(id INT PRIMARY KEY AUTO_INCREMENT",
        StatusVars(
            codes=(0, 1, 6, 4, 12, 17, 18, 19),
            flags2=0,
            sql_mode=1168113696,
            catalog="std",
            charset_client=UTF8MB4_0900,
            collation_connection=UTF8MB4_0900,
            collation_server=UTF8MB4_0900,
            updated_db_count=1,
            updated_db_names=("mysql",),
            ddl_xid=45,
            default_collation_for_utf8mb4=UTF8MB4_0900,
            sql_require_primary_key=0,
        ),
    ),
    (
        MYSQL_8028,
        234,
        1655726728,
        "create database test",
        StatusVars(
            codes=(0, 1, 6, 4, 12, 17, 18, 20),
            flags2=0,
            sql_mode=1168113696,
            catalog="std",
            charset_client=CP850_GENERAL,
            collation_connection=CP850_GENERAL,
            collation_server=UTF8MB4_0900,
            updated_db_count=1,
            updated_db_names=("test",),
            ddl_xid=11,
            default_collation_for_utf8mb4=UTF8MB4_0900,
            default_table_encryption=0,
        ),
    ),
    (
        MYSQL_8029,
        276,
        1659322528,
        "/* ApplicationName=DBeaver 22.1.3 - Main */ CREATE SCHEMA `maxwell`",
        StatusVars(
            codes=(0, 1, 6, 4, 12, 17, 18, 20),
            flags2=0,
            sql_mode=1168113664,
            catalog="std",
            charset_client=UTF8MB4_0900,
            collation_connection=UTF8MB4_0900,
            collation_server=224,  # utf8mb4_unicode_ci
            updated_db_count=1,
            updated_db_names=("maxwell",),
            ddl_xid=727,
            default_collation_for_utf8mb4=UTF8MB4_0900,
            default_table_encryption=0,
        ),
    ),
    (
        MARIADB_1185,
        377,
        1767128008,
        "ALTER USER 'repl'@'%'",
        StatusVars(
            codes=(0, 1, 6, 4),
            flags2=1 << 24,  # OPTION_EXPLICIT_DEF_TIMESTAMP
            sql_mode=1411383296,
            catalog="std",
            charset_client=UTF8MB4_UCA1400,
            collation_connection=UTF8MB4_UCA1400,
            collation_server=UTF8MB4_UCA1400,
        ),
    ),
    (
        MARIADB_1185,
        564,
        1767128018,
        "GRANT REPLICATION REPLICA ON *.* TO 'repl'@'%'",
        StatusVars(
            codes=(0, 1, 6, 4, 11),
            flags2=1 << 24,
            sql_mode=1411383296,
            catalog="std",
            charset_client=UTF8MB4_UCA1400,
            collation_connection=UTF8MB4_UCA1400,
            collation_server=UTF8MB4_UCA1400,
            invoker_user="root",
            invoker_host="%",
        ),
    ),
    (
        MARIADB_1185,
        723,
        1767128112,
        "UPDATE sbtest2 SET k=k+1 WHERE id=502645",
        StatusVars(
            codes=(0, 1, 6, 4),
            flags2=1 << 24,
            sql_mode=1411383296,
            catalog="std",
            charset_client=LATIN1_SWEDISH,
            collation_connection=LATIN1_SWEDISH,
            collation_server=UTF8MB4_UCA1400,
        ),
    ),
    (
        MARIADB_1011,
        427,
        1700000099,
        "ALTER TABLE shop.customers ADD COLUMN loyalty_tier",
        StatusVars(
            codes=(0, 1, 6, 4, 128, 129),
            flags2=1 << 24,
            sql_mode=0,
            catalog="std",
            charset_client=UTF8MB4_GENERAL,
            collation_connection=UTF8MB4_GENERAL,
            collation_server=UTF8MB4_GENERAL,
            microseconds=653189,  # Q_HRNOW
            xid=364,  # Q_XID
        ),
    ),
]
REAL_IDS = [f"{Path(str(source)).name}@{offset}" for source, offset, *_ in REAL]


@pytest.mark.corpus
@pytest.mark.parametrize(("source", "offset", "timestamp", "statement", "expected"), REAL, ids=REAL_IDS)
def test_status_variables_of_real_query_events(
    source: str | Path, offset: int, timestamp: int, statement: str, expected: StatusVars
) -> None:
    item, query = _query_at(source, offset)
    assert item.event.header.timestamp == timestamp
    assert isinstance(query.statement, str) and query.statement.startswith(statement)
    assert query.status_vars == expected
    assert (query.unknown_status_code, query.undecodable_text, item.problems) == (None, False, [])


@pytest.mark.corpus
def test_more_than_16_updated_databases_store_no_names() -> None:
    # no corpus event accessed more than 16 databases: a real event's Q_UPDATED_DB_NAMES is
    # replaced by the count 254 (OVER_MAX_DBS_IN_EVENT_MTS), which no names follow
    real = _status_of(MYSQL_5730, 219)
    assert real[26:] == bytes([12, 1]) + b"default\x00"  # after flags2, sql_mode, catalog, charset
    query = _rebuilt(MYSQL_5730, 219, status=real[:26] + bytes([12, 254]))
    assert (query.status_vars.updated_db_count, query.status_vars.updated_db_names) == (OVER_MAX_DBS_IN_EVENT_MTS, ())


# --- agreement with mariadb-binlog -vv -----------------------------------------------------------

_BLOCK_RE = re.compile(r"^# at (\d+)\n(.*?)(?=^# at \d+\n|\Z)", re.MULTILINE | re.DOTALL)
CHARSET_NAMES = {
    UTF8MB3_GENERAL: "utf8mb3",
    UTF8MB4_GENERAL: "utf8mb4",
    UTF8MB4_UCA1400: "utf8mb4",
    LATIN1_SWEDISH: "latin1",
    CP850_GENERAL: "cp850",
    UTF8MB4_0900: "Unknown",  # "# Ignored (Unknown charset) SET ...": the tool has no collation 255
}
"""The charset names the tool prints for the clients' collations."""


@dataclass(frozen=True)
class Printed:
    """What the tool prints for one QUERY event (fields it did not print are ``None``)."""

    thread_id: int | None
    timestamp: str | None
    xid: int | None
    sql_mode: int | None
    flags: dict[str, int] | None
    auto_increment: tuple[int, int] | None
    charset: tuple[str, int, int] | None
    time_zone: str | None


def _printed(block: str) -> Printed:
    def one(pattern: str) -> str | None:
        m = re.search(pattern, block, re.MULTILINE)
        return m[1] if m else None

    flags = re.search(r"^SET (@@session\.foreign_key_checks=.*)/\*!\*/;$", block, re.MULTILINE)
    auto = re.search(r"auto_increment_increment=(\d+), @@session\.auto_increment_offset=(\d+)", block)
    charset = re.search(
        r"^(?:# Ignored \(Unknown charset\) )?SET @@session\.character_set_client=(\w+),"
        r"@@session\.collation_connection=(\d+),"
        r"@@session\.collation_server=(\d+)",
        block,
        re.MULTILINE,
    )
    thread_id, xid, sql_mode = one(r"pseudo_thread_id=(\d+)"), one(r"\txid=(\d+)"), one(r"sql_mode=(\d+)")
    return Printed(
        thread_id=None if thread_id is None else int(thread_id),
        timestamp=one(r"^SET TIMESTAMP=([\d.]+)/"),
        xid=None if xid is None else int(xid),
        sql_mode=None if sql_mode is None else int(sql_mode),
        flags=None
        if flags is None
        else {k.removeprefix("@@session."): int(v) for k, v in (p.split("=") for p in flags[1].split(", "))},
        auto_increment=None if auto is None else (int(auto[1]), int(auto[2])),
        charset=None if charset is None else (charset[1], int(charset[2]), int(charset[3])),
        time_zone=one(r"^SET @@session\.time_zone='([^']*)'"),
    )


def _flag_settings(flags2: int) -> dict[str, int]:
    """The settings the tool derives from flags2 (MariaDB sql/log_event_client.cc print_query_header)."""
    return {
        "foreign_key_checks": int(not flags2 & 1 << 26),  # OPTION_NO_FOREIGN_KEY_CHECKS
        "sql_auto_is_null": int(bool(flags2 & 1 << 14)),  # OPTION_AUTO_IS_NULL
        "unique_checks": int(not flags2 & 1 << 27),  # OPTION_RELAXED_UNIQUE_CHECKS
        "autocommit": int(not flags2 & 1 << 19),  # OPTION_NOT_AUTOCOMMIT
    }


@pytest.mark.corpus
@pytest.mark.parametrize(("source", "offset", "timestamp", "statement", "expected"), REAL, ids=REAL_IDS)
def test_status_variables_agree_with_mariadb_binlog(
    source: str | Path, offset: int, timestamp: int, statement: str, expected: StatusVars
) -> None:
    tool = require_mariadb_binlog()
    dump = run_dump(_path(source), tool)
    blocks = {int(m[1]): m[2] for m in _BLOCK_RE.finditer(dump.text)}
    printed = _printed(blocks[offset])
    item, query = _query_at(source, offset)
    sv = query.status_vars
    assert printed.thread_id in (None, query.thread_id)
    micro = "" if sv.microseconds is None or StatusVar.HRNOW not in sv.codes else f".{sv.microseconds:06d}"
    assert printed.timestamp == f"{timestamp}{micro}"
    assert printed.xid == (sv.xid or 0)
    assert printed.sql_mode in (None, sv.sql_mode)
    if printed.flags is not None:
        assert sv.flags2 is not None
        derived = _flag_settings(sv.flags2)
        assert {k: printed.flags[k] for k in derived} == derived
    assert printed.auto_increment in (None, (sv.auto_increment_increment or 1, sv.auto_increment_offset or 1))
    if printed.charset is not None:
        assert printed.charset == (CHARSET_NAMES[sv.charset_client or 0], sv.collation_connection, sv.collation_server)
    assert printed.time_zone in (None, sv.time_zone)
    assert item.event.offset == offset


@pytest.mark.corpus
def test_the_first_query_of_each_file_prints_every_session_setting() -> None:
    # the tool prints every setting for the first QUERY of a file: nothing in the comparison above is vacuous
    tool = require_mariadb_binlog()
    firsts = (MYSQL_5628, 120), (MYSQL_5730, 219), (MYSQL_8022, 235), (MYSQL_8028, 234), (MARIADB_1185, 377)
    for source, offset in (*firsts, (MYSQL_8029, 276), (MARIADB_1011, 427)):
        blocks = {int(m[1]): m[2] for m in _BLOCK_RE.finditer(run_dump(_path(source), tool).text)}
        printed = _printed(blocks[offset])
        assert None not in (printed.thread_id, printed.sql_mode, printed.flags, printed.auto_increment, printed.charset)


# --- unknown codes, and codes no released server reads ----------------------------------------
#
# The events below are real QUERY events with their status-variable block altered and the
# lengths and CRC32 recomputed: the layout is MySQL's Query_event (post-header thread_id u32 |
# exec_time u32 | db_len u8 | error_code u16 | status_vars_len u16; then the status variables,
# db, NUL, statement): libs/mysql/binlog/event/statement_events.h.


def _event_bounds(data: bytes, offset: int) -> tuple[int, int]:
    return offset, offset + struct.unpack_from("<I", data, offset + 9)[0]


def _status_of(source: str, offset: int) -> bytes:
    data = file_bytes(corpus_path(source))
    start = offset + 19
    (status_len,) = struct.unpack_from("<H", data, start + 11)
    return data[start + 13 : start + 13 + status_len]


def _rebuilt(source: str, offset: int, *, status: bytes | None = None, statement: bytes | None = None) -> QueryEvent:
    """The QUERY event at ``offset`` with another status block and/or statement, after the file's
    FORMAT_DESCRIPTION, decoded; its one expected problem (if any) is checked by the caller."""
    return _rebuilt_item(source, offset, status=status, statement=statement)[1]


def _rebuilt_item(
    source: str, offset: int, *, status: bytes | None = None, statement: bytes | None = None
) -> tuple[DecodedEvent, QueryEvent]:
    data = file_bytes(corpus_path(source))
    fde_start, fde_end = _event_bounds(data, 4)
    start, end = _event_bounds(data, offset)
    header, body = bytearray(data[start : start + 19]), data[start + 19 : end - 4]
    thread_id, exec_time, db_len, error_code, status_len = struct.unpack_from("<IIBHH", body)
    old_status = body[13 : 13 + status_len]
    db_and_statement = body[13 + status_len :]
    new_status = old_status if status is None else status
    if statement is not None:
        db_and_statement = db_and_statement[: db_len + 1] + statement
    new_body = struct.pack("<IIBHH", thread_id, exec_time, db_len, error_code, len(new_status)) + new_status
    new_body += db_and_statement
    struct.pack_into("<I", header, 9, 19 + len(new_body) + 4)
    event = bytes(header) + new_body
    event += struct.pack("<I", zlib.crc32(event))
    items = list(decode_bytes(b"\xfebin" + data[fde_start:fde_end] + event, "rebuilt.000001"))
    item = items[1]
    assert isinstance(item.body, QueryEvent)
    return item, item.body


@pytest.mark.corpus
@pytest.mark.parametrize("code", [14, 15, 140])
def test_an_unknown_status_code_warns_and_ends_the_walk(code: int) -> None:
    # after the real flags2, sql_mode, catalog, charset and updated db names: the unknown code,
    # 8 bytes (what a Q_COMMIT_TS reader would take), then Q_EXPLICIT_DEFAULTS_FOR_TIMESTAMP = 1
    real = _status_of(MYSQL_5730, 219)
    status = real + bytes([code]) + struct.pack("<Q", 77) + bytes([StatusVar.EXPLICIT_DEFAULTS_FOR_TIMESTAMP, 1])
    item, query = _rebuilt_item(MYSQL_5730, 219, status=status)
    assert query.status_vars.codes == (0, 1, 6, 4, 12)
    assert query.unknown_status_code == code
    assert query.status_vars.explicit_defaults_for_timestamp is None  # not read: the walk stopped
    assert query.status_vars_raw == status
    assert query.statement == "DROP TABLE IF EXISTS `boxercrab` /* generated by server */"
    [problem] = item.problems
    assert (problem.code, problem.severity, problem.offset, problem.event_type) == (
        "UNKNOWN_STATUS_VAR",
        "warning",
        item.event.offset,
        "QUERY",
    )
    assert problem.message == f"unknown status variable code {code}; later ones not read"


@pytest.mark.corpus
def test_mysql_9_enable_cascade_triggers_is_one_byte() -> None:
    real = _status_of(MYSQL_8028, 234)  # ... 20 DEFAULT_TABLE_ENCRYPTION 0 is last
    item, query = _rebuilt_item(MYSQL_8028, 234, status=real + bytes([StatusVar.ENABLE_CASCADE_TRIGGERS, 1]))
    assert query.status_vars.codes == (0, 1, 6, 4, 12, 17, 18, 20, 21)
    assert (query.status_vars.default_table_encryption, query.status_vars.enable_cascade_triggers) == (0, 1)
    assert (query.unknown_status_code, item.problems) == (None, [])
    assert query.statement == "create database test"


# --- the statement in the client's character set -----------------------------------------------


def _with_charset(status: bytes, collation: int) -> bytes:
    """The status block with its Q_CHARSET_CODE triple set to ``collation`` (flags2, sql_mode and
    the 3-letter catalog come first in these events: 5 + 9 + 5 bytes)."""
    at = 5 + 9 + 5
    assert status[0] == 0 and status[5] == 1 and status[14] == 6 and status[at] == StatusVar.CHARSET
    return status[: at + 1] + struct.pack("<HHH", collation, collation, collation) + status[at + 7 :]


@pytest.mark.corpus
@pytest.mark.parametrize(
    ("collation", "codec", "text"),
    [
        (LATIN1_SWEDISH, "latin-1", "INSERT INTO t VALUES ('café', 'Ærø')"),
        (28, "gbk", "INSERT INTO t VALUES ('中文字符')"),  # gbk_chinese_ci
        (95, "cp932", "INSERT INTO t VALUES ('日本語テキスト')"),  # cp932_japanese_ci
        (UTF8MB4_GENERAL, "utf-8", "INSERT INTO t VALUES ('🙂')"),
    ],
)
def test_statement_text_decodes_in_the_client_character_set(collation: int, codec: str, text: str) -> None:
    status = _with_charset(_status_of(MYSQL_5730, 219), collation)
    query = _rebuilt(MYSQL_5730, 219, status=status, statement=text.encode(codec))
    assert query.status_vars.charset_client == collation
    assert (query.statement, query.undecodable_text) == (text, False)


@pytest.mark.corpus
def test_statement_bytes_invalid_in_the_client_character_set_are_kept() -> None:
    status = _with_charset(_status_of(MYSQL_5730, 219), UTF8MB4_GENERAL)
    raw = "INSERT INTO t VALUES ('café')".encode("latin-1")
    query = _rebuilt(MYSQL_5730, 219, status=status, statement=raw)
    assert (query.statement, query.undecodable_text) == (raw, True)
