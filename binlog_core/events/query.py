"""QUERY and QUERY_COMPRESSED: a statement, its session context (status variables) and a kind label.

Body layout (``# orig: Query_event``, MySQL ``libs/mysql/binlog/event/statement_events.cpp``;
``Query_log_event``, MariaDB ``sql/log_event.cc``)::

    post-header:  thread_id u32 | exec_time u32 | db_len u8 | error_code u16 |
                  [status_vars_len u16   -- binlog v4; v1/v3 post-headers are 11 bytes] |
                  [more post-header      -- EXECUTE_LOAD_QUERY adds 13 bytes]
    body:         status_vars[status_vars_len] | db[db_len] | 0x00 | statement (to the end)

    status_vars:  { code u8 | value } ...   each value's layout depends on its code

QUERY_COMPRESSED (MariaDB 10.2+) stores the statement compressed (:mod:`binlog_core.compression`).
Like the server, reading the status variables stops at the first code it does not know; the
statement is still found, because ``status_vars_len`` says where it starts.  MySQL and MariaDB
agree on codes 0-11 and then diverge (MySQL 12, 13, 16-21, MariaDB 128-131): the file's flavor
decides.  MySQL's reader (``Query_event::Query_event`` in ``statement_events.cpp``) has no case
for 14 and 15 (``Q_COMMIT_TS``/``Q_COMMIT_TS2``, reserved by development trees and never read by
a released server): like any code it does not know, they end the walk.
https://github.com/mysql/mysql-server/blob/trunk/libs/mysql/binlog/event/statement_events.cpp
https://github.com/mysql/mysql-server/blob/trunk/libs/mysql/binlog/event/statement_events.h
https://github.com/MariaDB/server/blob/11.4/sql/log_event.h
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import IntEnum, StrEnum
from struct import Struct
from typing import Any, Final, NamedTuple

from binlog_core.charsets import decode_text
from binlog_core.compression import inflate_mariadb
from binlog_core.constants import EventType, Flavor
from binlog_core.cursor import Cursor
from binlog_core.errors import BinlogError, MalformedError
from binlog_core.event import Event
from binlog_core.events.common import Decoder, name_text
from binlog_core.events.gtid import MariaDBGtidExtraFlags

QUERY_HEADER_MINIMAL_LEN: Final = 11
"""Post-header of binlog v1/v3 QUERY events: no status variables."""

QUERY_POST_HEADER = Struct("<IIBH")
"""thread_id u32 | exec_time u32 | db_len u8 | error_code u16."""


class StatusVar(IntEnum):
    """Status variable codes (``# orig: Query_event_status_vars``; MariaDB ``Q_*`` defines)."""

    FLAGS2 = 0
    SQL_MODE = 1
    CATALOG = 2  # MySQL 5.0.0-5.0.3: NUL-terminated
    AUTO_INCREMENT = 3
    CHARSET = 4
    TIME_ZONE = 5
    CATALOG_NZ = 6
    LC_TIME_NAMES = 7
    CHARSET_DATABASE = 8
    TABLE_MAP_FOR_UPDATE = 9
    MASTER_DATA_WRITTEN = 10
    INVOKER = 11
    UPDATED_DB_NAMES = 12  # MySQL
    MICROSECONDS = 13  # MySQL
    # 14 Q_COMMIT_TS, 15 Q_COMMIT_TS2: no released MySQL reads them (unknown codes here too)
    EXPLICIT_DEFAULTS_FOR_TIMESTAMP = 16  # MySQL
    DDL_LOGGED_WITH_XID = 17  # MySQL
    DEFAULT_COLLATION_FOR_UTF8MB4 = 18  # MySQL
    SQL_REQUIRE_PRIMARY_KEY = 19  # MySQL
    DEFAULT_TABLE_ENCRYPTION = 20  # MySQL
    ENABLE_CASCADE_TRIGGERS = 21  # MySQL 9.x: u8, read by Query_event after DEFAULT_TABLE_ENCRYPTION
    HRNOW = 128  # MariaDB
    XID = 129  # MariaDB
    GTID_FLAGS3 = 130  # MariaDB 10.8+
    CHARACTER_SET_COLLATIONS = 131  # MariaDB 11.2+


MAX_DBS_IN_EVENT_MTS: Final = 16
OVER_MAX_DBS_IN_EVENT_MTS: Final = 254
"""``Q_UPDATED_DB_NAMES`` counts above 16 mean "too many to list" and store no names."""


@dataclass(frozen=True, slots=True)
class StatusVars:
    """The session context of a statement; a field is ``None`` when its variable is absent.

    Collations (``charset_client``, ``collation_connection``, ``collation_server``,
    ``charset_database``, ``default_collation_for_utf8mb4``) are collation ids.
    ``microseconds`` is the fraction of the event timestamp (MySQL ``Q_MICROSECONDS``,
    MariaDB ``Q_HRNOW``).  ``codes`` lists the codes read, in order.
    """

    codes: tuple[int, ...] = ()
    flags2: int | None = None
    sql_mode: int | None = None
    catalog: str | None = None
    auto_increment_increment: int | None = None
    auto_increment_offset: int | None = None
    charset_client: int | None = None
    collation_connection: int | None = None
    collation_server: int | None = None
    time_zone: str | None = None
    lc_time_names: int | None = None
    charset_database: int | None = None
    table_map_for_update: int | None = None
    master_data_written: int | None = None
    invoker_user: str | None = None
    invoker_host: str | None = None
    updated_db_count: int | None = None
    updated_db_names: tuple[str, ...] | None = None
    microseconds: int | None = None
    explicit_defaults_for_timestamp: bool | None = None
    ddl_xid: int | None = None
    default_collation_for_utf8mb4: int | None = None
    sql_require_primary_key: int | None = None
    default_table_encryption: int | None = None
    enable_cascade_triggers: int | None = None
    xid: int | None = None
    gtid_flags_extra: int | None = None
    sa_seq_no: int | None = None
    character_set_collations: tuple[tuple[int, int], ...] | None = None


# -- one reader per status variable ---------------------------------------------------------

Values = dict[str, Any]
StatusReader = Callable[[Cursor, Values], None]

_U16 = Struct("<H")
_U16x2 = Struct("<HH")
_U16x3 = Struct("<HHH")


def _short_string(c: Cursor, what: str) -> str:
    return name_text(c.take(c.u8(f"{what} length"), what))


def _flags2(c: Cursor, v: Values) -> None:
    v["flags2"] = c.u32("flags2")


def _sql_mode(c: Cursor, v: Values) -> None:
    v["sql_mode"] = c.u64("sql_mode")


def _catalog_nul(c: Cursor, v: Values) -> None:
    """``Q_CATALOG_CODE``: ``len u8 | catalog | 0x00`` (MySQL 5.0.0-5.0.3)."""
    v["catalog"] = _short_string(c, "catalog")
    if c.u8("catalog terminator") != 0:
        raise MalformedError("Q_CATALOG_CODE catalog is not NUL-terminated")


def _auto_increment(c: Cursor, v: Values) -> None:
    v["auto_increment_increment"], v["auto_increment_offset"] = c.unpack(_U16x2, "auto_increment")


def _charset(c: Cursor, v: Values) -> None:
    """``character_set_client u16 | collation_connection u16 | collation_server u16``."""
    v["charset_client"], v["collation_connection"], v["collation_server"] = c.unpack(_U16x3, "charset")


def _time_zone(c: Cursor, v: Values) -> None:
    v["time_zone"] = _short_string(c, "time zone")


def _catalog_nz(c: Cursor, v: Values) -> None:
    v["catalog"] = _short_string(c, "catalog")


def _lc_time_names(c: Cursor, v: Values) -> None:
    v["lc_time_names"] = c.u16("lc_time_names")


def _charset_database(c: Cursor, v: Values) -> None:
    v["charset_database"] = c.u16("charset_database")


def _table_map_for_update(c: Cursor, v: Values) -> None:
    v["table_map_for_update"] = c.u64("table_map_for_update")


def _master_data_written(c: Cursor, v: Values) -> None:
    v["master_data_written"] = c.u32("master_data_written")


def _invoker(c: Cursor, v: Values) -> None:
    """``user_len u8 | user | host_len u8 | host``."""
    v["invoker_user"] = _short_string(c, "invoker user")
    v["invoker_host"] = _short_string(c, "invoker host")


def _updated_db_names(c: Cursor, v: Values) -> None:
    """``count u8 | {name 0x00} * count`` (no names when count > 16: OVER_MAX_DBS_IN_EVENT_MTS)."""
    count = c.u8("updated db count")
    if count > MAX_DBS_IN_EVENT_MTS:
        v["updated_db_count"], v["updated_db_names"] = OVER_MAX_DBS_IN_EVENT_MTS, ()
        return
    if count == 0:
        raise MalformedError("Q_UPDATED_DB_NAMES with a count of 0")
    v["updated_db_count"] = count
    v["updated_db_names"] = tuple(name_text(c.cstring("updated db name")) for _ in range(count))


def _microseconds(c: Cursor, v: Values) -> None:
    v["microseconds"] = c.u24("microseconds")


def _explicit_defaults_ts(c: Cursor, v: Values) -> None:
    v["explicit_defaults_for_timestamp"] = c.u8("explicit_defaults_for_timestamp") != 0


def _ddl_xid(c: Cursor, v: Values) -> None:
    v["ddl_xid"] = c.u64("ddl_xid")


def _default_collation_utf8mb4(c: Cursor, v: Values) -> None:
    v["default_collation_for_utf8mb4"] = c.u16("default_collation_for_utf8mb4")


def _sql_require_primary_key(c: Cursor, v: Values) -> None:
    v["sql_require_primary_key"] = c.u8("sql_require_primary_key")


def _default_table_encryption(c: Cursor, v: Values) -> None:
    v["default_table_encryption"] = c.u8("default_table_encryption")


def _enable_cascade_triggers(c: Cursor, v: Values) -> None:
    v["enable_cascade_triggers"] = c.u8("enable_cascade_triggers")


def _xid(c: Cursor, v: Values) -> None:
    v["xid"] = c.u64("xid")


def _gtid_flags3(c: Cursor, v: Values) -> None:
    """``flags_extra u8 | [sa_seq_no u64 -- COMMIT_ALTER or ROLLBACK_ALTER]`` (as in the GTID event)."""
    flags = c.u8("gtid flags_extra")
    v["gtid_flags_extra"] = flags
    if flags & (MariaDBGtidExtraFlags.COMMIT_ALTER | MariaDBGtidExtraFlags.ROLLBACK_ALTER):
        v["sa_seq_no"] = c.u64("start alter sequence number")


def _character_set_collations(c: Cursor, v: Values) -> None:
    """``count u8 | {charset_id u16 | collation_id u16} * count`` (``# orig: Charset_collation_map_st``)."""
    count = c.u8("character_set_collations count")
    v["character_set_collations"] = tuple(c.unpack(_U16x2, "charset collation pair") for _ in range(count))


_COMMON: Final[dict[int, StatusReader]] = {
    StatusVar.FLAGS2: _flags2,
    StatusVar.SQL_MODE: _sql_mode,
    StatusVar.CATALOG: _catalog_nul,
    StatusVar.AUTO_INCREMENT: _auto_increment,
    StatusVar.CHARSET: _charset,
    StatusVar.TIME_ZONE: _time_zone,
    StatusVar.CATALOG_NZ: _catalog_nz,
    StatusVar.LC_TIME_NAMES: _lc_time_names,
    StatusVar.CHARSET_DATABASE: _charset_database,
    StatusVar.TABLE_MAP_FOR_UPDATE: _table_map_for_update,
    StatusVar.MASTER_DATA_WRITTEN: _master_data_written,
    StatusVar.INVOKER: _invoker,
}

STATUS_READERS: Final[dict[Flavor, dict[int, StatusReader]]] = {
    Flavor.MYSQL: {
        **_COMMON,
        StatusVar.UPDATED_DB_NAMES: _updated_db_names,
        StatusVar.MICROSECONDS: _microseconds,
        StatusVar.EXPLICIT_DEFAULTS_FOR_TIMESTAMP: _explicit_defaults_ts,
        StatusVar.DDL_LOGGED_WITH_XID: _ddl_xid,
        StatusVar.DEFAULT_COLLATION_FOR_UTF8MB4: _default_collation_utf8mb4,
        StatusVar.SQL_REQUIRE_PRIMARY_KEY: _sql_require_primary_key,
        StatusVar.DEFAULT_TABLE_ENCRYPTION: _default_table_encryption,
        StatusVar.ENABLE_CASCADE_TRIGGERS: _enable_cascade_triggers,
    },
    Flavor.MARIADB: {
        **_COMMON,
        StatusVar.HRNOW: _microseconds,
        StatusVar.XID: _xid,
        StatusVar.GTID_FLAGS3: _gtid_flags3,
        StatusVar.CHARACTER_SET_COLLATIONS: _character_set_collations,
    },
}
"""Flavor -> status variable code -> reader.  Codes missing here stop the walk, as in the server."""


def read_status_vars(c: Cursor, flavor: Flavor) -> tuple[StatusVars, int | None]:
    """Read status variables until ``c`` ends or a code unknown to ``flavor``; return it as the second item."""
    readers = STATUS_READERS[flavor]
    values: Values = {}
    codes: list[int] = []
    while not c.at_end():
        code = c.u8("status variable code")
        reader = readers.get(code)
        if reader is None:
            return StatusVars(codes=tuple(codes), **values), code
        codes.append(code)
        reader(c, values)
    return StatusVars(codes=tuple(codes), **values), None


# -- statement kinds ------------------------------------------------------------------------


class StatementKind(StrEnum):
    """A cheap label from the statement's first keyword(s); DDL is parsed properly later."""

    BEGIN = "BEGIN"
    COMMIT = "COMMIT"
    ROLLBACK = "ROLLBACK"
    XA = "XA"
    SAVEPOINT = "SAVEPOINT"
    DDL = "DDL"
    DML = "DML"
    OTHER = "OTHER"


_SKIP = re.compile(
    r"""(?:\s+                               # white space
        | /\*M?!\d*                          # an executable comment opens: its text is SQL
        | \*/                                # ... and closes
        | /\*(?!M?!).*?\*/                   # a comment
        | (?:--(?=\s|$)|\#)[^\n]*            # a line comment
    )*""",
    re.VERBOSE | re.DOTALL,
)
_WORD = re.compile(r"[A-Za-z_]+")

_FIRST_WORD: Final[dict[str, StatementKind]] = {
    "BEGIN": StatementKind.BEGIN,
    "COMMIT": StatementKind.COMMIT,
    "ROLLBACK": StatementKind.ROLLBACK,
    "XA": StatementKind.XA,
    "SAVEPOINT": StatementKind.SAVEPOINT,
    "RELEASE": StatementKind.SAVEPOINT,
    **dict.fromkeys(("CREATE", "ALTER", "DROP", "RENAME", "TRUNCATE"), StatementKind.DDL),
    **dict.fromkeys(("INSERT", "UPDATE", "DELETE", "REPLACE", "LOAD", "WITH"), StatementKind.DML),
}
"""First keyword -> kind (some are refined by the second word, see :func:`classify_statement`)."""


def _words(statement: str, limit: int) -> list[str]:
    words: list[str] = []
    pos = 0
    while len(words) < limit:
        skipped = _SKIP.match(statement, pos)
        pos = skipped.end() if skipped else pos
        m = _WORD.match(statement, pos)
        if m is None:
            break
        words.append(m.group().upper())
        pos = m.end()
    return words


def classify_statement(statement: str | bytes) -> StatementKind:
    """The kind of a statement from its leading keyword(s), after comments.

    >>> classify_statement("/* app */ insert into t values (1)"), classify_statement("START TRANSACTION")
    (<StatementKind.DML: 'DML'>, <StatementKind.BEGIN: 'BEGIN'>)
    >>> classify_statement("ROLLBACK TO SAVEPOINT s1"), classify_statement("BEGIN NOT ATOMIC SELECT 1; END")
    (<StatementKind.SAVEPOINT: 'SAVEPOINT'>, <StatementKind.OTHER: 'OTHER'>)
    """
    text = statement.decode("latin-1") if isinstance(statement, bytes) else statement
    words = _words(text[:512], 3)
    if not words:
        return StatementKind.OTHER
    first, second = words[0], words[1] if len(words) > 1 else ""
    if first == "START":
        return StatementKind.BEGIN if second == "TRANSACTION" else StatementKind.OTHER
    if first == "BEGIN" and second not in ("", "WORK"):
        return StatementKind.OTHER  # a compound statement (BEGIN NOT ATOMIC ...)
    if first == "ROLLBACK" and "TO" in words[1:]:
        return StatementKind.SAVEPOINT
    return _FIRST_WORD.get(first, StatementKind.OTHER)


# -- QUERY ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class QueryEvent:
    """QUERY or QUERY_COMPRESSED: one statement and its session context.

    ``statement`` is decoded with the ``character_set_client`` of the status variables
    (UTF-8 when the event has none); when it does not decode the bytes are kept and
    ``undecodable_text`` is set.  ``unknown_status_code`` is the first status variable code
    this decoder does not know (the ones after it were not read).
    """

    thread_id: int
    exec_time: int
    error_code: int
    schema: str
    statement: str | bytes
    kind: StatementKind
    status_vars: StatusVars
    unknown_status_code: int | None
    undecodable_text: bool
    compressed: bool
    status_vars_raw: bytes = field(repr=False)


class QueryParts(NamedTuple):
    """A decoded QUERY-shaped event, the rest of its post-header, and the statement's bytes."""

    query: QueryEvent
    post_header_rest: Cursor
    statement_raw: bytes


def decode_query_parts(event: Event) -> QueryParts:
    """Decode a QUERY-shaped event; EXECUTE_LOAD_QUERY reads its own fields from ``post_header_rest``."""
    c = Cursor(event.body)
    post_header_len = event.fde.post_header_len(event.type_code) or QUERY_HEADER_MINIMAL_LEN + 2
    post_header = c.sized(post_header_len, "post-header")
    thread_id, exec_time, db_len, error_code = post_header.unpack(QUERY_POST_HEADER, "query post-header")
    status_vars_len = 0
    if post_header_len > QUERY_HEADER_MINIMAL_LEN:
        status_vars_len = post_header.u16("status_vars_len")
    status_block = c.sized(status_vars_len, "status variables")
    raw_status = bytes(status_block.buf[status_block.pos : status_block.end])
    status_vars, unknown_code = read_status_vars(status_block, event.fde.flavor)
    schema = c.take(db_len, "schema")
    if c.u8("schema terminator") != 0:
        raise MalformedError("the schema name is not NUL-terminated")
    raw = c.rest()
    compressed = event.type_code == EventType.QUERY_COMPRESSED
    if compressed:
        raw = inflate_mariadb(raw)
    client = status_vars.charset_client
    statement = decode_text(raw, client, "utf-8")
    query = QueryEvent(
        thread_id=thread_id,
        exec_time=exec_time,
        error_code=error_code,
        schema=name_text(schema),
        statement=statement,
        kind=classify_statement(statement),
        status_vars=status_vars,
        unknown_status_code=unknown_code,
        undecodable_text=isinstance(statement, bytes),
        compressed=compressed,
        status_vars_raw=raw_status,
    )
    return QueryParts(query, post_header, raw)


def decode_query(event: Event) -> QueryEvent:
    """QUERY and QUERY_COMPRESSED (see the module docstring for the layout)."""
    return decode_query_parts(event).query


_KIND_PREFIX = 512
"""Statement bytes :func:`statement_kind` looks at (what :func:`classify_statement` reads)."""


def _statement_prefix(event: Event) -> bytes | None:
    """The first bytes of a QUERY-shaped event's statement, found without decoding the status
    variables (inflated for QUERY_COMPRESSED); None when the body is too short for the layout or
    a compressed statement does not inflate."""
    body = event.body
    post_header_len = event.fde.post_header_len(event.type_code) or QUERY_HEADER_MINIMAL_LEN + 2
    if len(body) < post_header_len or post_header_len < QUERY_HEADER_MINIMAL_LEN:
        return None
    status_vars_len = _U16.unpack_from(body, 11)[0] if post_header_len > QUERY_HEADER_MINIMAL_LEN else 0
    start = post_header_len + status_vars_len + body[8] + 1
    if start > len(body):
        return None
    if event.type_code == EventType.QUERY_COMPRESSED:
        try:
            return inflate_mariadb(body[start:])[:_KIND_PREFIX]
        except BinlogError:
            return None
    return body[start : start + _KIND_PREFIX]


def statement_kind(event: Event) -> StatementKind | None:
    """The kind of a QUERY-shaped event's statement, without decoding its status variables.

    Reads ``db_len`` and ``status_vars_len`` from the post-header, skips both blocks and
    classifies the statement's first bytes; ``None`` when the body is too short for the layout or
    a compressed statement does not inflate.  Transaction boundaries are read from this
    (:mod:`binlog_core.sequence`): the same answer whether or not the rest of the event decodes.
    """
    prefix = _statement_prefix(event)
    return None if prefix is None else classify_statement(prefix)


def opens_transaction(kind: StatementKind | None, event: Event) -> bool:
    """Whether a statement of ``kind`` opens a transaction: ``BEGIN``/``START TRANSACTION``, or
    ``XA START``/``XA BEGIN`` (read from the statement's first bytes, as :func:`statement_kind`)."""
    if kind is StatementKind.BEGIN:
        return True
    if kind is not StatementKind.XA:
        return False
    prefix = _statement_prefix(event) or b""
    return _words(prefix.decode("latin-1"), 2)[1:] in (["START"], ["BEGIN"])


QUERY_DECODERS: Final[dict[int, Decoder]] = {
    EventType.QUERY: decode_query,
    EventType.QUERY_COMPRESSED: decode_query,
}
"""Type code -> decoder for QUERY events."""
