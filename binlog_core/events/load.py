"""The LOAD DATA INFILE events: the file's content travels in the binlog, block by block.

MySQL 3.23-4.x logged ``LOAD DATA`` as LOAD (6) / NEW_LOAD (12), or CREATE_FILE (8) with the
first block, APPEND_BLOCK (9) for more blocks and EXEC_LOAD (10) / DELETE_FILE (11) to run or
drop it.  MySQL 5.0+ and MariaDB log BEGIN_LOAD_QUERY (17) with the first block, APPEND_BLOCK,
then EXECUTE_LOAD_QUERY (18): the LOAD DATA statement itself, as a QUERY, plus where the file
name sits in it.  Blocks of one load share a ``file_id``.

Layouts: MySQL ``libs/mysql/binlog/event/load_data_events.{h,cpp}``, MariaDB ``sql/log_event.cc``
(``Load_log_event::copy_log_event``, ``sql_ex_info::init``).
https://github.com/mysql/mysql-server/blob/trunk/libs/mysql/binlog/event/load_data_events.h
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from enum import IntEnum, IntFlag
from struct import Struct
from typing import Final

from binlog_core.constants import EventType
from binlog_core.cursor import Cursor, bounded_count
from binlog_core.errors import MalformedError
from binlog_core.event import Event
from binlog_core.events.common import Decoder, body_cursor, expect_end, name_text
from binlog_core.events.query import QueryEvent, decode_query_parts

LOAD_HEADER_LEN: Final = 18
"""Post-header of LOAD / NEW_LOAD, also the first part of CREATE_FILE's (``# orig: LOAD_HEADER_LEN``)."""

FILE_ID_HEADER_LEN: Final = 4
"""Post-header of CREATE_FILE (after LOAD's), APPEND_BLOCK, EXEC_LOAD, DELETE_FILE, BEGIN_LOAD_QUERY."""

LOAD_POST_HEADER = Struct("<IIIBBI")
"""thread_id u32 | exec_time u32 | skip_lines u32 | table_name_len u8 | db_len u8 | num_fields u32."""

OLD_SQL_EX = Struct("<ccccccB")
"""field_term | enclosed | line_term | line_start | escaped (one byte each) | opt_flags u8 | empty_flags u8."""


class LoadOptFlags(IntFlag):
    """``# orig: sql_ex_info::opt_flags``."""

    DUMPFILE = 0x1
    OPT_ENCLOSED = 0x2
    REPLACE = 0x4
    IGNORE = 0x8


class LoadEmptyFlags(IntFlag):
    """Which one-byte terminators of the old format are empty (``# orig: *_EMPTY``)."""

    FIELD_TERM = 0x01
    ENCLOSED = 0x02
    LINE_TERM = 0x04
    LINE_START = 0x08
    ESCAPED = 0x10


@dataclass(frozen=True, slots=True)
class LoadDataFormat:
    """The FIELDS/LINES clauses of the LOAD DATA statement (``# orig: sql_ex_info``)."""

    field_term: bytes
    enclosed: bytes
    line_term: bytes
    line_start: bytes
    escaped: bytes
    opt_flags: int


def _old_sql_ex(c: Cursor) -> LoadDataFormat:
    """LOAD (6): seven bytes; an ``empty_flags`` bit says a one-byte terminator is really empty."""
    field_term, enclosed, line_term, line_start, escaped, raw_opt, empty = c.unpack(OLD_SQL_EX, "sql_ex")
    opt_flags = raw_opt[0]

    def keep(value: bytes, flag: LoadEmptyFlags) -> bytes:
        return b"" if empty & flag else value

    return LoadDataFormat(
        keep(field_term, LoadEmptyFlags.FIELD_TERM),
        keep(enclosed, LoadEmptyFlags.ENCLOSED),
        keep(line_term, LoadEmptyFlags.LINE_TERM),
        keep(line_start, LoadEmptyFlags.LINE_START),
        keep(escaped, LoadEmptyFlags.ESCAPED),
        opt_flags,
    )


def _new_sql_ex(c: Cursor) -> LoadDataFormat:
    """NEW_LOAD (12), CREATE_FILE (8): five ``len u8 | bytes`` strings, then ``opt_flags u8``."""
    field_term, enclosed, line_term, line_start, escaped = (
        c.take(c.u8(f"{what} length"), what) for what in _TERMINATORS
    )
    return LoadDataFormat(field_term, enclosed, line_term, line_start, escaped, c.u8("opt_flags"))


_TERMINATORS: Final = ("field_term", "enclosed", "line_term", "line_start", "escaped")


@dataclass(frozen=True, slots=True)
class LoadEvent:
    """LOAD, NEW_LOAD and CREATE_FILE: a LOAD DATA INFILE of MySQL 3.23-4.x.

    CREATE_FILE also carries ``file_id`` and the first ``block`` of the file (not serialized;
    ``block_len`` is).  For LOAD and NEW_LOAD the file name runs to the end of the event.
    """

    thread_id: int
    exec_time: int
    skip_lines: int
    schema: str
    table: str
    fields: tuple[str, ...]
    file_name: str
    format: LoadDataFormat
    file_id: int | None
    block_len: int | None
    block: bytes | None = field(repr=False)


def decode_load(event: Event) -> LoadEvent:
    """Layout (``# orig: Load_event``)::

    post-header: thread_id u32 | exec_time u32 | skip_lines u32 | table_name_len u8 | db_len u8 |
                 num_fields u32 | [file_id u32                      -- CREATE_FILE]
    body:        sql_ex (LOAD: 7 bytes; NEW_LOAD, CREATE_FILE: 5 length-prefixed strings + opt_flags) |
                 field_lens u8[num_fields] | { field name | 0x00 } * num_fields |
                 table name | 0x00 | db name | 0x00 | file name |
                 [0x00 | first block of the file                    -- CREATE_FILE]
    """
    c = Cursor(event.body)
    create_file = event.type_code == EventType.CREATE_FILE
    thread_id, exec_time, skip_lines, table_len, db_len, num_fields = c.unpack(LOAD_POST_HEADER, "load post-header")
    file_id = c.u32("file id") if create_file else None
    sql_ex = _old_sql_ex(c) if event.type_code == EventType.LOAD else _new_sql_ex(c)
    num_fields = bounded_count(num_fields, c.remaining, "field count")
    field_lens = c.take(num_fields, "field lengths")
    fields = tuple(name_text(_terminated(c, n, "field name")) for n in field_lens)
    table = name_text(_terminated(c, table_len, "table name"))
    schema = name_text(_terminated(c, db_len, "db name"))
    block: bytes | None = None
    if create_file:
        file_name = c.cstring("file name")
        block = c.rest()
    else:
        file_name = c.rest()
        if file_name.endswith(b"\x00"):  # 4.x servers terminate it; 3.23 servers do not
            file_name = file_name[:-1]
    return LoadEvent(
        thread_id, exec_time, skip_lines, schema, table, fields, name_text(file_name), sql_ex,
        file_id, None if block is None else len(block), block,
    )  # fmt: skip


def _terminated(c: Cursor, n: int, what: str) -> bytes:
    """``n`` bytes and the 0x00 after them."""
    value = c.take(n, what)
    if c.u8(f"{what} terminator") != 0:
        raise MalformedError(f"{what} is not NUL-terminated")
    return value


@dataclass(frozen=True, slots=True)
class FileBlockEvent:
    """APPEND_BLOCK and BEGIN_LOAD_QUERY: a block of the loaded file (``block`` is not serialized)."""

    file_id: int
    block_len: int
    block: bytes = field(repr=False)


def decode_file_block(event: Event) -> FileBlockEvent:
    """Layout (``# orig: Append_block_event``): ``file_id u32 | block`` (to the end)."""
    c, post_header = body_cursor(event, FILE_ID_HEADER_LEN)
    file_id = c.u32("file id")
    c.skip(post_header - FILE_ID_HEADER_LEN, "block post-header")
    block = c.rest()
    return FileBlockEvent(file_id, len(block), block)


@dataclass(frozen=True, slots=True)
class FileIdEvent:
    """EXEC_LOAD (run the loaded file) and DELETE_FILE (drop it)."""

    file_id: int


def decode_file_id(event: Event) -> FileIdEvent:
    """Layout (``# orig: Execute_load_event``, ``Delete_file_event``): ``file_id u32``."""
    c, post_header = body_cursor(event, FILE_ID_HEADER_LEN)
    file_id = c.u32("file id")
    c.skip(post_header - FILE_ID_HEADER_LEN, "file id post-header")
    expect_end(c, "the file id")
    return FileIdEvent(file_id)


class DupHandling(IntEnum):
    """``# orig: enum_load_dup_handling``."""

    ERROR = 0
    IGNORE = 1
    REPLACE = 2


EXECUTE_LOAD_QUERY = Struct("<IIIB")
"""file_id u32 | fn_pos_start u32 | fn_pos_end u32 | dup_handling u8."""


@dataclass(frozen=True, slots=True)
class ExecuteLoadQueryEvent(QueryEvent):
    """EXECUTE_LOAD_QUERY: the LOAD DATA statement (a QUERY) for the blocks of ``file_id``.

    ``fn_pos_start``/``fn_pos_end`` delimit the file name in the statement's bytes; a replica
    replaces it with the path of the file it rebuilt from the blocks.
    """

    file_id: int
    fn_pos_start: int
    fn_pos_end: int
    dup_handling: DupHandling


def decode_execute_load_query(event: Event) -> ExecuteLoadQueryEvent:
    """Layout (``# orig: Execute_load_query_event``): QUERY's, with 13 more post-header bytes::

    thread_id u32 | exec_time u32 | db_len u8 | error_code u16 | status_vars_len u16 |
    file_id u32 | fn_pos_start u32 | fn_pos_end u32 | dup_handling u8 | <QUERY body>
    """
    query, extra, statement_raw = decode_query_parts(event)
    file_id, fn_start, fn_end, dup = extra.unpack(EXECUTE_LOAD_QUERY, "execute load query post-header")
    statement_len = len(statement_raw)
    if not fn_start <= fn_end <= statement_len:
        raise MalformedError(f"file name at [{fn_start}, {fn_end}) outside the {statement_len}-byte statement")
    try:
        dup_handling = DupHandling(dup)
    except ValueError:
        raise MalformedError(f"dup_handling {dup} (0 ERROR, 1 IGNORE, 2 REPLACE)") from None
    values = {f.name: getattr(query, f.name) for f in fields(QueryEvent)}
    return ExecuteLoadQueryEvent(
        **values, file_id=file_id, fn_pos_start=fn_start, fn_pos_end=fn_end, dup_handling=dup_handling
    )


LOAD_DECODERS: Final[dict[int, Decoder]] = {
    EventType.LOAD: decode_load,
    EventType.CREATE_FILE: decode_load,
    EventType.APPEND_BLOCK: decode_file_block,
    EventType.EXEC_LOAD: decode_file_id,
    EventType.DELETE_FILE: decode_file_id,
    EventType.NEW_LOAD: decode_load,
    EventType.BEGIN_LOAD_QUERY: decode_file_block,
    EventType.EXECUTE_LOAD_QUERY: decode_execute_load_query,
}
"""Type code -> decoder for the LOAD DATA events."""
