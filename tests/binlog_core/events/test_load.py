"""LOAD DATA INFILE events: the loaded file travels in the binlog block by block.

Real events: MySQL 4.1.24's CREATE_FILE / APPEND_BLOCK / EXEC_LOAD (binlog v3), and
BEGIN_LOAD_QUERY / APPEND_BLOCK / EXECUTE_LOAD_QUERY of MySQL 5.1.17, MySQL 5.7 and MariaDB
10.11, compared with explicit values and with what ``mariadb-binlog -vv`` prints
(``#Begin_load_query: file_id: 4  block_len: 17``, ``#Exec_load: file_id=2``, the statement with
the file name replaced between ``fn_pos_start`` and ``fn_pos_end``). No real file holds LOAD (6),
NEW_LOAD (12) or DELETE_FILE (11): they are built from MariaDB's reader of those 3.23-4.x
events (``Load_log_event::copy_log_event``, ``sql_ex_info::init``, ``Delete_file_log_event`` in
``sql/log_event.cc``), with the 4.1 file's description.
https://github.com/MariaDB/server/blob/11.4/sql/log_event.cc
https://github.com/mysql/mysql-server/blob/trunk/libs/mysql/binlog/event/load_data_events.h
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from binlog_core.constants import EventType
from binlog_core.errors import MalformedError, TruncatedError
from binlog_core.event import Event
from binlog_core.events import decode_body
from binlog_core.events.load import (
    DupHandling,
    ExecuteLoadQueryEvent,
    FileBlockEvent,
    FileIdEvent,
    LoadDataFormat,
    LoadEvent,
    LoadOptFlags,
)
from tests.binlog_core.events import body_at, built_event, description_of, event_at, printed_matches
from tests.binlog_core.real_events import MISC
from tests.harness.corpus import corpus_path

MYSQL_4_1 = "mariadb-test-data/suite/binlog/std_data/binlog_old_version_4_1.000001"
MYSQL_5_1 = "mariadb-test-data/suite/binlog/std_data/ver_5_1_17.001"
MYSQL_5_7 = "mysql-cdc-rs/5.7/17_18_load/log.bin"

_LOCAL_INFILE = re.compile(r"^(.*) LOCAL INFILE '[^']*'( REPLACE)? INTO(.*)$")


def printed_statement_parts(path: Path, offset: int) -> tuple[str, str]:
    """The LOAD DATA statement the tool prints for the EXECUTE_LOAD_QUERY at ``offset``, split
    around the file name it puts in place of the logged one: the text before it, the text after
    ``INTO`` (``Execute_load_query_log_event::print``: the statement up to ``fn_pos_start``,
    `` LOCAL INFILE '<its temporary file>'``, `` INTO``, the statement from ``fn_pos_end``)."""
    matches = printed_matches(path, _LOCAL_INFILE.pattern)
    before, _, after = matches[offset]
    return before, after


# -- MySQL 4.1: CREATE_FILE, APPEND_BLOCK, EXEC_LOAD -----------------------------------------


@pytest.mark.corpus
def test_create_file_carries_the_load_data_statement_and_the_first_block() -> None:
    # mariadb-binlog: "# LOAD DATA INFILE 'big_file.dat' INTO TABLE `t3` FIELDS TERMINATED BY
    # '\t' ENCLOSED BY '' ESCAPED BY '\\' LINES TERMINATED BY '\n' STARTING BY '' (`a`)" and
    # "# file_id: 2  block_len: 131072"
    path = corpus_path(MYSQL_4_1)
    load = body_at(path, 580)
    assert load == LoadEvent(
        thread_id=1,
        exec_time=0,
        skip_lines=0,
        schema="test",
        table="t3",
        fields=("a",),
        file_name="big_file.dat",
        format=LoadDataFormat(b"\t", b"", b"\n", b"", b"\\", opt_flags=0),
        file_id=2,
        block_len=131072,
        block=load.block,  # type: ignore[attr-defined]
    )
    assert isinstance(load, LoadEvent) and load.block is not None
    assert load.block.startswith(b"Aarhus\nAaron\nAbaba\naback\n")
    assert printed_matches(path, r"^# file_id: (\d+)  block_len: (\d+)$")[580] == ("2", "131072")


@pytest.mark.corpus
def test_append_block_continues_the_file_where_the_create_file_block_ends() -> None:
    # mariadb-binlog: "#Append_block: file_id: 2  block_len: 17664"; the first block ends in the
    # middle of "abbreviate", the appended one goes on with its end
    path = corpus_path(MYSQL_4_1)
    first, more = body_at(path, 580), body_at(path, 131726)
    assert isinstance(first, LoadEvent) and isinstance(more, FileBlockEvent)
    assert (more.file_id, more.block_len, len(more.block)) == (2, 17664, 17664)
    assert first.block is not None and first.block.endswith(b"\nabbrev") and more.block.startswith(b"iate\n")
    assert more.block.endswith(b"\naberrant\naberration\n")
    assert printed_matches(path, r"^#Append_block: file_id: (\d+)  block_len: (\d+)$") == {131726: ("2", "17664")}


@pytest.mark.corpus
def test_exec_load_runs_the_file_of_its_file_id() -> None:
    # mariadb-binlog: "#Exec_load: file_id=2"
    path = corpus_path(MYSQL_4_1)
    assert body_at(path, 149413) == FileIdEvent(2)
    assert printed_matches(path, r"^#Exec_load: file_id=(\d+)$") == {149413: ("2",)}


# -- MySQL 5.0+ and MariaDB: BEGIN_LOAD_QUERY, APPEND_BLOCK, EXECUTE_LOAD_QUERY --------------


@pytest.mark.corpus
@pytest.mark.parametrize(
    ("source", "expected"),
    [
        # mariadb-binlog: "#Begin_load_query: file_id: 1  block_len: 8"
        (MYSQL_5_7, {304: (1, 8, b'1,"abc"\n')}),
        # "#Begin_load_query: file_id: 2  block_len: 131072", "#Append_block: file_id: 2  block_len: 17664"
        (MYSQL_5_1, {1463: (2, 131072, b"Aarhus\nAaron\n"), 132558: (2, 17664, b"iate\nabbreviated\n")}),
    ],
)
def test_begin_load_query_and_append_block_carry_the_blocks_of_one_file_id(
    source: str, expected: dict[int, tuple[int, int, bytes]]
) -> None:
    path = corpus_path(source)
    blocks = {offset: body_at(path, offset) for offset in expected}
    got = {
        offset: (block.file_id, block.block_len, block.block[: len(expected[offset][2])])
        for offset, block in blocks.items()
        if isinstance(block, FileBlockEvent) and len(block.block) == block.block_len
    }
    assert got == expected
    printed = printed_matches(path, r"^#(?:Begin_load_query|Append_block): file_id: (\d+)  block_len: (\d+)$")
    assert printed == {offset: (str(file_id), str(size)) for offset, (file_id, size, _) in expected.items()}


def test_mariadb_begin_load_query_carries_the_whole_small_file() -> None:
    # mariadb-binlog: "#Begin_load_query: file_id: 4  block_len: 17"
    block = body_at(MISC, 1449)
    assert block == FileBlockEvent(4, 17, b'3,"abc"\n4,"d\xc3\xa9f"\n')


@pytest.mark.parametrize(
    ("source", "offset", "file_id", "fn_pos", "statement"),
    [
        (
            "misc",
            1493,
            4,
            (9, 42),
            "LOAD DATA INFILE '/tmp/mdbx/load.txt' INTO TABLE `t` FIELDS TERMINATED BY ',' ENCLOSED BY '\"'"
            " ESCAPED BY '\\\\' LINES TERMINATED BY '\\n' (`id`, `s`)",
        ),
        pytest.param(
            MYSQL_5_7,
            339,
            1,
            (9, 37),
            "LOAD DATA INFILE '/tmp/data.txt' INTO TABLE `boxercrab` FIELDS TERMINATED BY ',' OPTIONALLY "
            " ENCLOSED BY '\"' ESCAPED BY '\\\\' LINES TERMINATED BY '\\n' (`i`, `c`)",
            marks=pytest.mark.corpus,
        ),
        pytest.param(
            MYSQL_5_1, 150245, 2, (9, 36), "LOAD DATA INFILE 'big_file.dat' INTO TABLE t3", marks=pytest.mark.corpus
        ),
    ],
)
def test_execute_load_query_says_where_the_file_name_sits_in_its_statement(
    source: str, offset: int, file_id: int, fn_pos: tuple[int, int], statement: str
) -> None:
    path = MISC if source == "misc" else corpus_path(source)
    query = body_at(path, offset)
    assert isinstance(query, ExecuteLoadQueryEvent)
    assert (query.file_id, (query.fn_pos_start, query.fn_pos_end), query.dup_handling) == (
        file_id,
        fn_pos,
        DupHandling.ERROR,
    )
    assert query.statement == statement
    # the file name and the "INTO" after it lie between the two positions
    start, end = fn_pos
    assert re.fullmatch(r" INFILE '[^']*' INTO", statement[start:end])
    # the tool replaces exactly that span with the file it rebuilt from the blocks
    assert printed_statement_parts(path, offset) == (statement[:start], statement[end:])
    assert printed_matches(path, r"^# file_id: (\d+) $")[offset] == (str(file_id),)


def _execute_load_query(dup: int, fn_pos: tuple[int, int] | None = None) -> Event:
    """The real MariaDB EXECUTE_LOAD_QUERY with another dup_handling byte and file name span."""
    real = event_at(MISC, 1493)
    body = bytearray(real.body)
    extra = 13  # thread_id | exec_time | db_len | error_code | status_vars_len: file_id follows
    if fn_pos is not None:
        body[extra + 4 : extra + 12] = fn_pos[0].to_bytes(4, "little") + fn_pos[1].to_bytes(4, "little")
    body[extra + 12] = dup
    return built_event(real.fde, EventType.EXECUTE_LOAD_QUERY, bytes(body))


@pytest.mark.parametrize(("dup", "expected"), [(1, DupHandling.IGNORE), (2, DupHandling.REPLACE)])
def test_execute_load_query_reads_ignore_and_replace(dup: int, expected: DupHandling) -> None:
    # Execute_load_query_event: ... | file_id u32 | fn_pos_start u32 | fn_pos_end u32 |
    # dup_handling u8 (enum_load_dup_handling: 0 ERROR, 1 IGNORE, 2 REPLACE)
    query = decode_body(_execute_load_query(dup))
    assert isinstance(query, ExecuteLoadQueryEvent) and query.dup_handling == expected


def test_execute_load_query_with_an_unknown_dup_handling_is_malformed() -> None:
    with pytest.raises(MalformedError, match="dup_handling 3"):
        decode_body(_execute_load_query(3))


@pytest.mark.parametrize("fn_pos", [(9, 500), (40, 9)])
def test_execute_load_query_whose_file_name_span_is_outside_its_statement_is_malformed(fn_pos: tuple[int, int]) -> None:
    with pytest.raises(MalformedError, match="file name at"):
        decode_body(_execute_load_query(0, fn_pos))


# -- built: LOAD, NEW_LOAD, DELETE_FILE (MySQL 3.23 - 4.x) -----------------------------------


def _load_body(new_format: bool) -> bytes:
    """LOAD DATA INFILE 'data.txt' REPLACE INTO TABLE db1.t1 FIELDS TERMINATED BY ';' ENCLOSED BY
    '' (a, bc), skipping 1 line, as LOAD (old format) or NEW_LOAD (new format) logs it.

    post-header  thread_id u32 | exec_time u32 | skip_lines u32 | table_len u8 | db_len u8 | num_fields u32
    sql_ex old   field_term | enclosed | line_term | line_start | escaped (1 byte each) | opt_flags | empty_flags
    sql_ex new   { len u8 | bytes } * 5 | opt_flags
    then         field_lens u8[] | fields, each NUL-terminated | table NUL | db NUL | file name
    """
    post_header = ((7).to_bytes(4, "little") + (2).to_bytes(4, "little") + (1).to_bytes(4, "little") + b"\x02\x03") + (
        2
    ).to_bytes(4, "little")
    opt_flags = bytes([LoadOptFlags.REPLACE])
    if new_format:
        sql_ex = b"\x01;" + b"\x00" + b"\x01\n" + b"\x00" + b"\x01\\" + opt_flags
    else:
        # enclosed (0x02) and line_start (0x08) empty: their bytes are placeholders
        sql_ex = b";" + b"?" + b"\n" + b"?" + b"\\" + opt_flags + bytes([0x02 | 0x08])
    names = b"\x01\x02" + b"a\x00" + b"bc\x00" + b"t1\x00" + b"db1\x00"
    return post_header + sql_ex + names + b"data.txt"


@pytest.mark.corpus
@pytest.mark.parametrize("type_code", [EventType.LOAD, EventType.NEW_LOAD])
def test_load_and_new_load_carry_the_statement_parts(type_code: int) -> None:
    fde = description_of(corpus_path(MYSQL_4_1))
    load = decode_body(built_event(fde, type_code, _load_body(new_format=type_code == EventType.NEW_LOAD)))
    assert load == LoadEvent(
        thread_id=7,
        exec_time=2,
        skip_lines=1,
        schema="db1",
        table="t1",
        fields=("a", "bc"),
        file_name="data.txt",
        format=LoadDataFormat(b";", b"", b"\n", b"", b"\\", int(LoadOptFlags.REPLACE)),
        file_id=None,
        block_len=None,
        block=None,
    )


@pytest.mark.corpus
def test_load_file_name_terminated_by_a_nul_as_4_x_servers_write_it() -> None:
    fde = description_of(corpus_path(MYSQL_4_1))
    load = decode_body(built_event(fde, EventType.LOAD, _load_body(new_format=False) + b"\x00"))
    assert isinstance(load, LoadEvent) and load.file_name == "data.txt"


@pytest.mark.corpus
def test_load_with_more_fields_than_its_bytes_hold_is_refused_before_reading_them() -> None:
    body = bytearray(_load_body(new_format=False))
    body[14:18] = (1 << 30).to_bytes(4, "little")
    with pytest.raises(TruncatedError, match="field count"):
        decode_body(built_event(description_of(corpus_path(MYSQL_4_1)), EventType.LOAD, bytes(body)))


@pytest.mark.corpus
def test_load_field_name_without_its_nul_is_malformed() -> None:
    body = _load_body(new_format=False).replace(b"a\x00bc\x00", b"a\x01bc\x00")
    with pytest.raises(MalformedError, match="field name"):
        decode_body(built_event(description_of(corpus_path(MYSQL_4_1)), EventType.LOAD, body))


@pytest.mark.corpus
def test_delete_file_drops_the_file_of_its_file_id() -> None:
    # Delete_file_event: file_id u32 (its whole post-header, 4 bytes in the v3 description)
    fde = description_of(corpus_path(MYSQL_4_1))
    assert fde.post_header_len(EventType.DELETE_FILE) == 4
    assert decode_body(built_event(fde, EventType.DELETE_FILE, (9).to_bytes(4, "little"))) == FileIdEvent(9)
    with pytest.raises(MalformedError):
        decode_body(built_event(fde, EventType.DELETE_FILE, (9).to_bytes(4, "little") + b"\x00"))
