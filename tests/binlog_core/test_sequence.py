"""What only the order of a file tells (``binlog_core.sequence``), on files real servers wrote.

Every rule of :class:`binlog_core.sequence.FileSequence` is checked on real binlogs: the map in
force (ended by a STMT_END of any table id, replaced by the next map of its id, ended by a
FORMAT_DESCRIPTION or by the end of the file), the transaction of each event (opened by each kind
of GTID event, BEGIN, XA START or implicitly by a TABLE_MAP or rows event; ended by XID, COMMIT,
ROLLBACK, XA END and XA_PREPARE; closed without an end by a new opener or the end of the file),
commit times, and that an event whose checksum failed changes nothing.  Last, the decoder and
bronze framing, the two walkers, must give every event of every fixture and corpus file the same
place.

Where no server wrote the case needed (a map replaced before its statement ended, a
FORMAT_DESCRIPTION inside a transaction, XA START with no GTID before it, bodies that do not
decode), the input is a real file with one event altered (:mod:`tests.harness.edits`: the CRC32
is computed again, so only the alteration differs); each such test says which event it alters.
"""

from __future__ import annotations

import contextlib
import functools
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from binlog_core.constants import EventType
from binlog_core.decoder import DecodedEvent, decode_file, decode_stream
from binlog_core.errors import BinlogError
from binlog_core.event import Event
from binlog_core.framing import iter_events
from binlog_core.sequence import FileSequence, MapForce, Place, Transaction, read_table_id
from binlog_core.table_map import decode_table_map
from pipelines.bronze.framing import EventRow, frame_file
from tests.binlog_core.real_events import MISC
from tests.fixtures.truth import FIXTURES
from tests.harness.corpus import corpus_files, corpus_path
from tests.harness.edits import body_of, event_bytes, rewritten, spliced, with_broken_checksum

UNKNOWN_TYPE = 100
"""An event type code neither MySQL nor MariaDB uses: the walk treats such an event as any other member."""

Walked = list[tuple[Event, Place]]


def walk(data: bytes, name: str = "mysql-bin.000001", *, finish: bool = True) -> tuple[Walked, FileSequence]:
    """Every event of ``data`` with its place, in order (up to a fatal error, as framing stops there)."""
    sequence = FileSequence()
    out: Walked = []
    with contextlib.suppress(BinlogError):
        for event in iter_events(io.BytesIO(data), name):
            out.append((event, sequence.step(event)))
    if finish:
        sequence.finish()
    return out, sequence


def corpus(relative: str) -> bytes:
    return corpus_path(relative).read_bytes()


def trx(transaction: Transaction | None) -> tuple[Any, ...] | None:
    """``(start_offset, start_inner, end_offset, end_inner, commit_us, xid, gtid)``."""
    if transaction is None:
        return None
    t = transaction
    return (t.start_offset, t.start_inner_index, t.end_offset, t.end_inner_index, t.commit_us, t.xid, t.gtid)


def force(mapped: MapForce | None) -> tuple[Any, ...] | None:
    """``(offset, inner, table_id, until_offset, until_inner, ended_by, rows_events)``."""
    if mapped is None:
        return None
    m = mapped
    return (m.offset, m.inner_index, m.table_id, m.until_offset, m.until_inner_index, m.ended_by, m.rows_events)


def transactions(walked: Walked) -> list[tuple[int, str, tuple[Any, ...] | None]]:
    """``(offset, type, transaction)`` of every outer event."""
    return [(e.offset, e.type_name, trx(p.transaction)) for e, p in walked if e.inner_index is None]


def maps(walked: Walked) -> list[tuple[int, str, int | None, bool | None, tuple[Any, ...] | None]]:
    """``(offset, type, table_id, statement_end, map)`` of every TABLE_MAP and rows event."""
    return [
        (e.offset, e.type_name, p.table_id, p.statement_end, force(p.map)) for e, p in walked if p.table_id is not None
    ]


def at(walked: Walked, offset: int, inner_index: int | None = None) -> Place:
    return next(p for e, p in walked if (e.offset, e.inner_index) == (offset, inner_index))


# -- the map in force ------------------------------------------------------------------------------


@pytest.mark.corpus
def test_a_map_is_in_force_until_the_next_statement_end_of_any_table_id_and_counts_the_rows_events_read_with_it() -> (
    None
):
    # MySQL 5.1.37: two maps (ids 28 and 24), rows events of both, the statement ends with id 28's
    walked, _ = walk(corpus("mysql-server/suite/binlog/std_data/write-full-row.binlog"))
    by_28 = (170, None, 28, 428, None, "statement_end", 2)
    by_24 = (213, None, 24, 428, None, "statement_end", 1)
    assert maps(walked) == [
        (170, "TABLE_MAP", 28, None, by_28),
        (213, "TABLE_MAP", 24, None, by_24),
        (275, "WRITE_ROWS_V1", 24, False, by_24),
        (334, "WRITE_ROWS_V1", 28, False, by_28),
        (428, "DELETE_ROWS_V1", 28, True, by_28),  # the event that ends the force still reads with it
    ]
    assert at(walked, 275).map is at(walked, 213).map  # the very object, filled in as the walk goes on
    assert all(p.map is None for e, p in walked if e.offset not in (170, 213, 275, 334, 428))


@pytest.mark.corpus
def test_a_map_is_replaced_by_the_next_map_of_its_table_id() -> None:
    """orphan_begin_start.000001 (MySQL 8.0.30) with the STMT_END flag of the WRITE_ROWS at 359
    cleared: the map at 311 is still in force when the next map of table id 114 comes, at 399."""
    data = corpus("mysql-server/std_data/binlog_recovery/orphan_begin_start.000001")
    rows_body = bytearray(body_of(data, 359))
    assert rows_body[6] & 1  # flags u16 after the 6-byte table id: STMT_END_F
    rows_body[6] &= ~1
    walked, _ = walk(rewritten(data, 359, body=bytes(rows_body)))
    replaced = (311, None, 114, 399, None, "replaced", 1)
    second = (399, None, 114, 447, None, "statement_end", 1)
    assert maps(walked) == [
        (311, "TABLE_MAP", 114, None, replaced),
        (359, "WRITE_ROWS", 114, False, replaced),
        (399, "TABLE_MAP", 114, None, second),
        (447, "WRITE_ROWS", 114, True, second),
        (656, "TABLE_MAP", 114, None, (656, None, 114, 704, None, "statement_end", 1)),
        (704, "WRITE_ROWS", 114, True, (656, None, 114, 704, None, "statement_end", 1)),
    ]


@pytest.mark.corpus
def test_a_format_description_ends_every_map_in_force_and_clears_the_gtid() -> None:
    """rpl_unfiltered_hidden_gcol.000001 (MySQL 8.0.17, a relay log: the source's FORMAT_DESCRIPTION
    at 203) with a copy of that FORMAT_DESCRIPTION inserted between the TABLE_MAP at 924 and its
    WRITE_ROWS (at 979, moved to 1099)."""
    data = corpus("mysql-server/std_data/rpl_unfiltered_hidden_gcol.000001")
    description = event_bytes(data, 203)
    assert len(description) == 120
    walked, _ = walk(spliced(data, 979, description))
    assert maps(walked) == [
        (924, "TABLE_MAP", 126, None, (924, None, 126, 979, None, "format_description", 0)),
        (1099, "WRITE_ROWS", 126, True, None),  # no map in force any more
    ]
    in_it = (770, None, 1142, None, 1557756800456794, 158, None)
    assert transactions(walked)[-6:] == [
        (849, "QUERY", in_it),  # BEGIN
        (924, "TABLE_MAP", in_it),
        (979, "FORMAT_DESCRIPTION", in_it),
        (1099, "WRITE_ROWS", in_it),
        (1142, "XID", in_it),
        (1173, "STOP", None),
    ]


@pytest.mark.corpus
def test_a_format_description_clears_the_gtid_in_force() -> None:
    """mdev29078-mysql-bin.000001 (MariaDB 10.3) with a copy of its FORMAT_DESCRIPTION (at 4)
    inserted before its STOP event (at 897)."""
    data = corpus("mariadb-test-data/std_data/mdev29078-mysql-bin.000001")
    walked, _ = walk(spliced(data, 897, event_bytes(data, 4)))
    assert [(e.offset, e.type_name, p.gtid) for e, p in walked][-3:] == [
        (824, "QUERY", "0-1-3"),
        (897, "FORMAT_DESCRIPTION", None),
        (1149, "STOP", None),
    ]


@pytest.mark.corpus
def test_a_map_still_in_force_when_the_file_ends_is_closed_by_finish_without_an_end() -> None:
    # MariaDB 5.5.17 test input cut inside the WRITE_ROWS_V1 at 316 that would read with the map at 275
    walked, sequence = walk(corpus("mariadb-test-data/std_data/bug11747416_32228_binlog.000001"), finish=False)
    mapped = at(walked, 275).map
    assert mapped is not None
    assert (force(mapped), mapped.closed) == ((275, None, 33, None, None, None, 0), False)
    assert sequence.in_force == {33: mapped}
    sequence.finish()
    assert (force(mapped), mapped.closed, sequence.in_force) == ((275, None, 33, None, None, None, 0), True, {})


@pytest.mark.corpus
def test_rows_events_with_no_map_in_force_for_their_id_read_with_none_and_open_a_transaction() -> None:
    # MariaDB test input: three WRITE_ROWS of table id 0 and no TABLE_MAP at all
    walked, _ = walk(corpus("mariadb-test-data/suite/binlog/std_data/invalid_row_v2_tag.001"))
    opened = (256, None, None, None, None, None, None)
    assert [(e.offset, e.type_name, p.table_id, p.statement_end, p.map, trx(p.transaction)) for e, p in walked] == [
        (4, "FORMAT_DESCRIPTION", None, None, None, None),
        (256, "WRITE_ROWS", 0, False, None, opened),
        (287, "WRITE_ROWS", 0, False, None, opened),
        (320, "WRITE_ROWS", 0, False, None, opened),
    ]


@pytest.mark.corpus
def test_a_rows_event_whose_map_was_not_a_table_map_has_none_and_the_decoder_reports_an_unknown_table_id() -> None:
    """duplicate_xid.000001 (MySQL 8.0.30) with its TABLE_MAP at 311 turned into an unknown event type."""
    data = rewritten(corpus("mysql-server/std_data/binlog_recovery/duplicate_xid.000001"), 311, type_code=UNKNOWN_TYPE)
    walked, _ = walk(data)
    assert [(e.offset, e.type_name, p.table_id, p.statement_end, p.map) for e, p in walked][4:6] == [
        (311, "UNKNOWN_100", None, None, None),
        (359, "WRITE_ROWS", 113, True, None),
    ]
    rows = _decoded(data)[359, None]
    assert [(p.code, p.message) for p in rows.problems] == [
        ("UNKNOWN_TABLE_ID", "table id 113 has no TABLE_MAP in force in this file")
    ]
    assert rows.place is not None and rows.place.map is None


@pytest.mark.corpus
def test_a_table_map_whose_body_does_not_decode_is_still_in_force_and_its_rows_events_say_why_they_fail() -> None:
    """duplicate_xid.000001 (MySQL 8.0.30) with the column count of the TABLE_MAP at 311 set to 250
    (the body holds 1 column): the map does not decode, its table id (113) can still be read."""
    data = corpus("mysql-server/std_data/binlog_recovery/duplicate_xid.000001")
    body = bytearray(body_of(data, 311))
    assert body[:8] == bytes.fromhex("7100000000000100") and body[18] == 1  # id 113, flags, ..., 1 column
    body[18] = 250
    data = rewritten(data, 311, body=bytes(body))
    walked, _ = walk(data)
    in_force = (311, None, 113, 359, None, "statement_end", 1)
    assert maps(walked)[:2] == [(311, "TABLE_MAP", 113, None, in_force), (359, "WRITE_ROWS", 113, True, in_force)]

    decoded = _decoded(data)
    table_map, rows = decoded[311, None], decoded[359, None]
    assert (table_map.body, [p.code for p in table_map.problems]) == (None, ["MALFORMED"])
    assert [(p.code, p.message) for p in rows.problems] == [
        ("UNKNOWN_TABLE_ID", "table id 113: the TABLE_MAP in force (at 311) did not decode")
    ]
    assert rows.place is not None and table_map.place is not None
    assert rows.place.map is table_map.place.map
    assert force(rows.place.map) == in_force


def _decoded(data: bytes) -> dict[tuple[int, int | None], DecodedEvent]:
    return {(d.event.offset, d.event.inner_index): d for d in decode_stream(io.BytesIO(data), "mysql-bin.000001")}


@pytest.mark.corpus
def test_table_ids_are_four_bytes_when_the_post_header_is_six_bytes_long_else_six() -> None:
    # MySQL 5.2 development tree: TABLE_MAP and rows post-headers of 6 bytes (u32 table id, u16 flags)
    old = corpus("mysql-server/suite/binlog/std_data/ver_5_1-wl2325_r.001")
    walked, _ = walk(old)
    assert [(e.offset, e.type_name, e.fde.post_header_len(e.type_code)) for e, _ in walked if e.offset == 466] == [
        (466, "WRITE_ROWS_V0", 6)
    ]
    rows_body = body_of(old, 466, crc32=False)
    assert rows_body[:6] == bytes.fromhex("000000000100")  # id 0, STMT_END: read as 6 bytes it would be 2**32
    assert read_table_id(rows_body, EventType.WRITE_ROWS_V0, 6) == (0, True)
    assert read_table_id(rows_body[:5], EventType.WRITE_ROWS_V0, 6) == (None, None)
    assert [(e.offset, p.table_id, p.statement_end) for e, p in walked if p.table_id is not None] == [
        (428, 0, None),
        (466, 0, True),
        (511, 0, None),
        (549, 0, True),
        (612, 0, None),
        (650, 0, True),
    ]
    # MySQL 5.1.37: 8-byte post-headers (u48 table id)
    new = corpus("mysql-server/suite/binlog/std_data/write-full-row.binlog")
    assert read_table_id(body_of(new, 170, crc32=False), EventType.TABLE_MAP, 8) == (28, None)
    assert read_table_id(body_of(new, 428, crc32=False), EventType.DELETE_ROWS_V1, 8) == (28, True)
    assert read_table_id(body_of(new, 428, crc32=False)[:7], EventType.DELETE_ROWS_V1, 8) == (None, None)


def test_a_table_map_changes_shape_at_its_tables_first_map_and_when_its_body_differs_from_the_last_one() -> None:
    # sample/mysql-bin.000003: shop.products is altered in the middle of the file (new table id 41)
    data = (FIXTURES / "sample" / "mysql-bin.000003").read_bytes()
    walked, _ = walk(data)
    changed = [
        (e.offset, f"{m.schema}.{m.table}", p.shape_changed)
        for e, p in walked
        if e.type_code == EventType.TABLE_MAP and p.shape_changed
        for m in [decode_table_map(e.body, e.fde)]
    ]
    assert changed == [
        (554, "shop.orders", True),
        (901, "shop.order_items", True),
        (1434, "shop.products", True),
        (14671, "shop.products", True),
        (18455, "shop.carts", True),
    ]
    assert sum(1 for e, p in walked if e.type_code == EventType.TABLE_MAP and p.shape_changed is False) == 42
    untracked = FileSequence(track_shapes=False)
    assert {untracked.step(e).shape_changed for e, _ in walked} == {None}


# -- transactions ----------------------------------------------------------------------------------

XA_COMMIT_FILE = "mysql-server/std_data/binlog_recovery/duplicate_xid_xa_commit.000001"
GTID_1 = "8aeeb092-8dcf-11ec-905c-0010e0dc7238:1"


@pytest.mark.corpus
def test_a_gtid_opens_a_transaction_begin_and_xa_start_after_it_continue_it_and_xid_xa_end_and_xa_commit_end_it() -> (
    None
):
    # MySQL 8.0.30: an XID transaction, an XA transaction (XA END ends it: the XA_PREPARE after it
    # belongs to none), and two XA COMMIT transactions; commit times are the GTIDs' immediate ones
    walked, _ = walk(corpus(XA_COMMIT_FILE))
    uuid = "8aeeb092-8dcf-11ec-905c-0010e0dc7238"
    first = (157, None, 399, None, 1644868309434105, 62, f"{uuid}:1")
    xa = (430, None, 687, None, 1644868309436702, None, f"{uuid}:2")
    commit_3 = (812, None, 889, None, 1644868309438169, None, f"{uuid}:3")
    commit_5 = (980, None, 1057, None, 1644868309442130, None, f"{uuid}:5")
    assert transactions(walked) == [
        (4, "FORMAT_DESCRIPTION", None),
        (126, "PREVIOUS_GTIDS", None),
        (157, "GTID", first),
        (236, "QUERY", first),  # BEGIN
        (311, "TABLE_MAP", first),
        (359, "WRITE_ROWS", first),
        (399, "XID", first),
        (430, "GTID", xa),
        (509, "QUERY", xa),  # XA START
        (599, "TABLE_MAP", xa),
        (647, "WRITE_ROWS", xa),
        (687, "QUERY", xa),  # XA END
        (775, "XA_PREPARE", None),
        (812, "GTID", commit_3),
        (889, "QUERY", commit_3),  # XA COMMIT
        (980, "GTID", commit_5),
        (1057, "QUERY", commit_5),  # XA COMMIT
    ]
    assert len({id(p.transaction) for e, p in walked if 157 <= e.offset <= 399}) == 1
    assert all(p.transaction.closed for _, p in walked if p.transaction is not None)


@pytest.mark.corpus
def test_an_xa_prepare_ends_the_transaction_it_is_in() -> None:
    walked, _ = walk(corpus("mysql-server/std_data/binlog_recovery/orphan_xa_prepare.000001"))
    prepared = (157, None, 236, None, 1644841755328773, None, "b7779f9f-8d91-11ec-8a03-0010e0dc7238:1")
    assert transactions(walked)[2:] == [(157, "GTID", prepared), (236, "XA_PREPARE", prepared)]


@pytest.mark.corpus
def test_xa_start_without_a_gtid_before_it_closes_the_open_transaction_without_an_end_and_opens_one() -> None:
    """orphan_begin_start.000001 (MySQL 8.0.30) with its second GTID (at 487) turned into an unknown
    event type: the BEGIN transaction before it is never ended, the XA START at 566 opens the next."""
    data = rewritten(
        corpus("mysql-server/std_data/binlog_recovery/orphan_begin_start.000001"), 487, type_code=UNKNOWN_TYPE
    )
    walked, _ = walk(data)
    gtid = "88309776-8da4-11ec-9b89-0010e0dc7238:1"  # the last GTID event's, still in force
    begun = (157, None, None, None, None, None, gtid)
    xa = (566, None, 744, None, 1644849836 * 1_000_000, None, gtid)  # XA END's header time
    assert transactions(walked) == [
        (4, "FORMAT_DESCRIPTION", None),
        (126, "PREVIOUS_GTIDS", None),
        (157, "GTID", begun),
        (236, "QUERY", begun),  # BEGIN
        (311, "TABLE_MAP", begun),
        (359, "WRITE_ROWS", begun),
        (399, "TABLE_MAP", begun),
        (447, "WRITE_ROWS", begun),
        (487, "UNKNOWN_100", begun),
        (566, "QUERY", xa),  # XA START
        (656, "TABLE_MAP", xa),
        (704, "WRITE_ROWS", xa),
        (744, "QUERY", xa),  # XA END
        (832, "XA_PREPARE", None),
    ]
    assert at(walked, 157).transaction is not None and at(walked, 157).transaction.closed


@pytest.mark.corpus
def test_begin_opens_a_transaction_without_gtids_and_xid_rollback_and_commit_end_it_at_their_header_time() -> None:
    # MySQL 5.1 (no GTIDs, no checksums): InnoDB (XID), InnoDB + MyISAM rolled back, NDB (COMMIT)
    walked, _ = walk(corpus("mysql-server/std_data/binlog_transaction.000001"))
    at_1253783037 = 1253783037 * 1_000_000
    with_xid = (299, None, 553, None, at_1253783037, 11, None)
    rolled_back = (781, None, 1035, None, at_1253783037, None, None)
    committed = (1302, None, 1556, None, at_1253783037, None, None)
    assert transactions(walked) == [
        (4, "FORMAT_DESCRIPTION", None),
        (98, "QUERY", None),
        (198, "QUERY", None),
        (299, "QUERY", with_xid),
        (368, "QUERY", with_xid),
        (460, "QUERY", with_xid),
        (553, "XID", with_xid),
        (580, "QUERY", None),
        (680, "QUERY", None),
        (781, "QUERY", rolled_back),
        (850, "QUERY", rolled_back),
        (942, "QUERY", rolled_back),
        (1035, "QUERY", rolled_back),  # ROLLBACK
        (1107, "QUERY", None),
        (1204, "QUERY", None),
        (1302, "QUERY", committed),
        (1371, "QUERY", committed),
        (1463, "QUERY", committed),
        (1556, "QUERY", committed),  # COMMIT
        (1626, "ROTATE", None),
    ]


@pytest.mark.corpus
def test_a_rollback_after_a_gtid_ends_its_transaction_at_the_gtids_commit_time() -> None:
    walked, _ = walk(corpus("mysql-server/std_data/binlog_recovery/orphan_rollback.000001"))
    uuid = "777732ad-8dbd-11ec-a93c-0010e0dc7238"
    never_ended = (157, None, None, None, None, None, f"{uuid}:1")
    rolled_back = (510, None, 589, None, 1644860545748440, None, f"{uuid}:2")
    assert transactions(walked)[2:] == [
        (157, "GTID", never_ended),
        (236, "QUERY", never_ended),  # CREATE FUNCTION: no end, closed by the next GTID
        (510, "GTID", rolled_back),
        (589, "QUERY", rolled_back),  # ROLLBACK
    ]


# MySQL GTID, ANONYMOUS_GTID, GTID_TAGGED, MariaDB GTID: each opens a transaction
OPENERS = [
    pytest.param(
        XA_COMMIT_FILE,
        [157, 236, 311, 359, 399],
        (157, None, 399, None, 1644868309434105, 62, GTID_1),
        id="GTID",
    ),
    pytest.param(
        "mysql-server/std_data/rpl_gipk_equivalent_key.000001",
        [369, 434, 506, 554, 609],
        (369, None, 609, None, 1664547681 * 1_000_000, 156, None),  # no immediate commit time: the XID's
        id="ANONYMOUS_GTID",
    ),
    pytest.param(
        "rust_mysql_common/binlog_transaction_with_GTID_TAG.000001",
        [245, 328, 405, 461, 510],
        (245, None, 510, None, 1770368687207196, 40, "55778904-0299-11f1-b1b8-4ef0c4956feb:mytag:3"),
        id="GTID_TAGGED",
    ),
    pytest.param(
        "mariadb-test-data/std_data/mdev29078-mysql-bin.000001",
        [482, 524, 620],
        (482, None, 620, None, 1658586288 * 1_000_000, None, "0-1-2"),  # ended by COMMIT
        id="MARIADB_GTID",
    ),
]


@pytest.mark.corpus
@pytest.mark.parametrize(("relative", "members", "transaction"), OPENERS)
def test_every_kind_of_gtid_event_opens_a_transaction(
    relative: str, members: list[int], transaction: tuple[Any, ...]
) -> None:
    walked, _ = walk(corpus(relative))
    start = transaction[0]
    assert [
        (e.offset, trx(p.transaction)) for e, p in walked if p.transaction and p.transaction.start_offset == start
    ] == [(offset, transaction) for offset in members]


@pytest.mark.corpus
def test_a_transaction_with_no_end_is_closed_by_the_next_opener() -> None:
    # MariaDB 10.3: a CREATE TABLE after a GTID ends nothing; the next GTID closes its transaction
    walked, _ = walk(corpus("mariadb-test-data/std_data/mdev29078-mysql-bin.000001"), finish=False)
    ddl = at(walked, 329).transaction
    assert ddl is not None
    assert (trx(ddl), ddl.closed) == ((329, None, None, None, None, None, "0-1-1"), True)
    assert transactions(walked)[3:] == [
        (329, "MARIADB_GTID", (329, None, None, None, None, None, "0-1-1")),
        (371, "QUERY", (329, None, None, None, None, None, "0-1-1")),
        (482, "MARIADB_GTID", (482, None, 620, None, 1658586288000000, None, "0-1-2")),
        (524, "QUERY", (482, None, 620, None, 1658586288000000, None, "0-1-2")),
        (620, "QUERY", (482, None, 620, None, 1658586288000000, None, "0-1-2")),
        (693, "MARIADB_GTID", (693, None, 824, None, 1658586335000000, None, "0-1-3")),
        (735, "QUERY", (693, None, 824, None, 1658586335000000, None, "0-1-3")),
        (824, "QUERY", (693, None, 824, None, 1658586335000000, None, "0-1-3")),
        (897, "STOP", None),
    ]


@pytest.mark.corpus
def test_a_table_map_outside_any_transaction_opens_one_that_the_end_of_the_file_closes_without_an_end() -> None:
    # MySQL 5.1.15 (NDB) test input: row events with no BEGIN before them
    walked, sequence = walk(corpus("mariadb-test-data/suite/binlog/std_data/bug32407.001"), finish=False)
    implicit = (203, None, None, None, None, None, None)
    assert transactions(walked) == [
        (4, "FORMAT_DESCRIPTION", None),
        (102, "QUERY", None),
        (203, "TABLE_MAP", implicit),
        (242, "WRITE_ROWS_V0", implicit),
        (276, "TABLE_MAP", implicit),
        (315, "WRITE_ROWS_V0", implicit),
        (349, "STOP", implicit),
    ]
    opened = sequence.transaction
    assert opened is at(walked, 203).transaction and opened is not None and not opened.closed
    sequence.finish()
    assert (opened.closed, sequence.transaction, trx(opened)) == (True, None, implicit)


@pytest.mark.corpus
def test_an_event_whose_checksum_failed_belongs_to_the_open_transaction_and_ends_nothing() -> None:
    # MySQL 8.0.30 binlog-recovery input: the XID at 672 fails its CRC32, so transaction 430 has no end
    walked, sequence = walk(corpus("mysql-server/std_data/binlog_recovery/duplicate_xid.000001"), finish=False)
    bad_xid, place = walked[-1]
    assert (bad_xid.offset, bad_xid.type_name, bad_xid.checksum_ok) == (672, "XID", False)
    open_one = (430, None, None, None, None, None, "f5ffaa9a-8aae-11ec-8505-0010e0dc7238:2")
    assert (trx(place.transaction), place.gtid, place.table_id, place.map) == (
        open_one,
        "f5ffaa9a-8aae-11ec-8505-0010e0dc7238:2",
        None,
        None,
    )
    assert sequence.transaction is place.transaction and not place.transaction.closed
    sequence.finish()
    assert (place.transaction.closed, trx(place.transaction)) == (True, open_one)


def _summary(walked: Walked) -> list[tuple[Any, ...]]:
    """Everything the walk said about each event, final values."""
    return [
        (e.offset, e.inner_index, trx(p.transaction), p.gtid, p.table_id, p.statement_end, force(p.map))
        for e, p in walked
    ]


@pytest.mark.parametrize(
    "source",
    [
        pytest.param(XA_COMMIT_FILE, marks=pytest.mark.corpus, id="mysql-8.0-xa"),
        FIXTURES / "sample" / "mysql-bin.000004",
    ],
    ids=str,
)
def test_breaking_the_checksum_of_any_one_event_changes_nothing_for_the_events_after_it(source: str | Path) -> None:
    """Every event but the first FORMAT_DESCRIPTION, in turn, gets a wrong stored CRC32 (its last
    byte inverted): it belongs to the transaction open before it, and every other event's place is
    what a walk that never saw it gives."""
    data = source.read_bytes() if isinstance(source, Path) else corpus(source)
    events = [e for e, _ in walk(data)[0]]
    assert all(e.checksum_ok for e in events)
    for skipped in events[1:]:
        sequence = FileSequence()
        without: Walked = []
        before: tuple[Transaction | None, str | None] = (None, None)
        for e in events:
            if e is skipped:
                before = (sequence.transaction, sequence.gtid)
                continue
            without.append((e, sequence.step(e)))
        sequence.finish()
        failed, _ = walk(with_broken_checksum(data, skipped.offset))
        own = [p for e, p in failed if e.offset == skipped.offset]
        assert [(e.checksum_ok) for e, _ in failed if e.offset == skipped.offset] == [False], skipped.offset
        assert [(trx(p.transaction), p.gtid, p.table_id, p.statement_end, p.map, p.shape_changed) for p in own] == [
            (trx(before[0]), before[1], None, None, None, None)
        ], skipped.offset
        assert _summary([w for w in failed if w[0].offset != skipped.offset]) == _summary(without), skipped.offset


@pytest.mark.corpus
def test_an_xid_whose_body_does_not_decode_ends_nothing() -> None:
    """duplicate_xid_xa_commit.000001 with the XID at 399 cut to 4 body bytes (an XID holds 8):
    transaction 157 is left without an end and the next GTID (now at 426) closes it."""
    data = corpus(XA_COMMIT_FILE)
    walked, _ = walk(rewritten(data, 399, body=body_of(data, 399)[:4]))
    unended = (157, None, None, None, None, None, GTID_1)
    assert transactions(walked)[2:9] == [
        (157, "GTID", unended),
        (236, "QUERY", unended),
        (311, "TABLE_MAP", unended),
        (359, "WRITE_ROWS", unended),
        (399, "XID", unended),
        (426, "GTID", (426, None, 683, None, 1644868309436702, None, "8aeeb092-8dcf-11ec-905c-0010e0dc7238:2")),
        (505, "QUERY", (426, None, 683, None, 1644868309436702, None, "8aeeb092-8dcf-11ec-905c-0010e0dc7238:2")),
    ]


@pytest.mark.corpus
def test_a_gtid_whose_body_does_not_decode_opens_nothing_and_leaves_the_gtid_in_force() -> None:
    """duplicate_xid_xa_commit.000001 with the GTID at 430 cut to 10 body bytes: the XA START after
    it opens the transaction, under the GTID of the event before."""
    data = corpus(XA_COMMIT_FILE)
    walked, _ = walk(rewritten(data, 430, body=body_of(data, 430)[:10]))
    shift = len(body_of(data, 430)) - 10
    opened = (509 - shift, None, 687 - shift, None, 1644868309 * 1_000_000, None, GTID_1)
    assert [(e.offset, e.type_name, p.gtid, trx(p.transaction)) for e, p in walked][6:12] == [
        (399, "XID", GTID_1, (157, None, 399, None, 1644868309434105, 62, GTID_1)),
        (430, "GTID", GTID_1, None),
        (509 - shift, "QUERY", GTID_1, opened),  # XA START
        (599 - shift, "TABLE_MAP", GTID_1, opened),
        (647 - shift, "WRITE_ROWS", GTID_1, opened),
        (687 - shift, "QUERY", GTID_1, opened),  # XA END, at its own header time
    ]


# -- commit times ----------------------------------------------------------------------------------

MYSQL_8_WITH_COMMIT_TIMES = [
    "mariadb-test-data/std_data/rpl/mysql-8.0.13-stm-temporal-round-binlog.000001",
    "maxwell/binlog.000004",
    "mysql-cdc-rs/8.0/02_query_bigger/binlog.000733",
    "mysql-cdc-rs/8.0/19_30_Table_map_event_Write_rows_log_event/binlog.000018",
    "mysql-cdc-rs/8.0/31_update_rows_v2/binlog.000001",
    "mysql-cdc-rs/8.0/32_delete_rows_v2/binlog.000001",
    "mysql-server/std_data/binlog_recovery/ddl_in_transaction.000001",
    "mysql-server/std_data/binlog_recovery/duplicate_xid.000001",
    "mysql-server/std_data/binlog_recovery/duplicate_xid_ddl.000001",
    XA_COMMIT_FILE,
    "mysql-server/std_data/binlog_recovery/duplicate_xid_xa_prepare.000001",
    "mysql-server/std_data/binlog_recovery/duplicate_xid_xa_rollback.000001",
    "mysql-server/std_data/binlog_recovery/malformed_xid_xa_commit.000001",
    "mysql-server/std_data/binlog_recovery/malformed_xid_xa_rollback.000001",
    "mysql-server/std_data/binlog_recovery/orphan_begin_start.000001",
    "mysql-server/std_data/binlog_recovery/orphan_commit.000001",
    "mysql-server/std_data/binlog_recovery/orphan_rollback.000001",
    "mysql-server/std_data/binlog_recovery/orphan_xa_commit.000001",
    "mysql-server/std_data/binlog_recovery/orphan_xa_prepare.000001",
    "mysql-server/std_data/binlog_recovery/orphan_xa_rollback.000001",
    "mysql-server/std_data/binlog_recovery/orphan_xid.000001",
    "mysql-server/std_data/replicated-bin.000001",
    "mysql-server/std_data/replicated-bin.000002",
    "mysql-server/std_data/rpl_binlog_with_gipk_info_full_metadata.000001",
    "mysql-server/std_data/rpl_binlog_with_gipk_info_minimal_metadata.000001",
    "mysql-server/std_data/rpl_binlog_with_gipk_info_no_gipk.000001",
    "mysql-server/std_data/rpl_binlog_with_gipk_info_with_gipk.000001",
    "mysql-server/std_data/rpl_binlog_with_no_gipk_info.000001",
    "mysql-server/std_data/rpl_no_gipk_low_column_number.000001",
    "mysql-server/std_data/rpl_no_gipk_minus_one_column_number.000001",
    "mysql-server/std_data/rpl_no_gipk_schema_divergence.000001",
    "mysql-server/std_data/rpl_unfiltered_hidden_gcol.000001",
    "mysql-server/std_data/upgrade/data_80028_empty_log_fast_shutdown/data/binlog.000001",
    "mysql-server/std_data/upgrade/data_wl13352_8017/data_upgrade/binlog.000002",
    "rust_mysql_common/binlog-invisible-columns.000001",
    "rust_mysql_common/binlog_transaction_with_GTID_TAG.000001",
    "rust_mysql_common/json-opaque.binlog",
    "rust_mysql_common/json.binlog.000001",
    "rust_mysql_common/minimal_row_metadata.000001",
    "rust_mysql_common/mysql-enum-string-set.000001",
    "rust_mysql_common/mysql_type_bit.000001",
    "rust_mysql_common/time_issue.000001",
    "rust_mysql_common/vector.binlog",
]
"""MySQL 8.0-9.6 files of the corpus whose GTID events carry an ``immediate_commit_timestamp`` and
that hold at least one transaction with an end."""

COMPRESSED_TRANSACTIONS = [
    "mysql-binlog-connector-java/mysql-bin.compressed",
    "mysql-binlog-connector-rust/mysql-bin.000057",
    "rust_mysql_common/transaction_compression.000001",
]
"""MySQL 8.0 files whose transactions are TRANSACTION_PAYLOAD events after their GTID."""


@pytest.mark.corpus
@pytest.mark.parametrize(
    "relative",
    [
        *MYSQL_8_WITH_COMMIT_TIMES,
        *COMPRESSED_TRANSACTIONS,
    ],
)
def test_every_transaction_of_a_mysql_8_file_commits_at_its_gtids_immediate_commit_timestamp(relative: str) -> None:
    decoded = list(decode_file(corpus_path(relative)))
    gtids = {
        d.event.offset: d.body.immediate_commit_timestamp  # type: ignore[union-attr]
        for d in decoded
        if getattr(d.body, "immediate_commit_timestamp", None) is not None
    }
    ended = {id(t): t for d in decoded if (t := d.place.transaction) is not None and t.end_offset is not None}  # type: ignore[union-attr]
    assert ended
    assert {t.start_offset: t.commit_us for t in ended.values()} == {
        t.start_offset: gtids.get(t.start_offset) for t in ended.values()
    }
    assert all(len(str(us)) == 16 for us in gtids.values())  # microseconds since the epoch, not seconds


@pytest.mark.corpus
def test_a_compressed_transaction_is_the_transaction_of_the_gtid_before_its_payload() -> None:
    walked, _ = walk(corpus("mysql-binlog-connector-rust/mysql-bin.000057"))
    gtid_12 = (378, None, 457, 4, 1668952358419905, 10, "76f3e7be-6720-11ed-9cad-0242ac110002:12")
    assert [(e.offset, e.inner_index, e.type_name, trx(p.transaction)) for e, p in walked][4:11] == [
        (378, None, "GTID", gtid_12),
        (457, None, "TRANSACTION_PAYLOAD", gtid_12),
        (457, 0, "QUERY", gtid_12),  # BEGIN
        (457, 1, "ROWS_QUERY", gtid_12),
        (457, 2, "TABLE_MAP", gtid_12),
        (457, 3, "WRITE_ROWS", gtid_12),
        (457, 4, "XID", gtid_12),
    ]


def _fixture_files() -> list[Path]:
    return [*sorted(FIXTURES.glob("*/mysql-bin.[0-9]*")), MISC]


EXPECTED_FIXTURE_TRANSACTIONS = 563
"""Transactions with an end in the MariaDB fixture files (every variant, and the misc file)."""


def test_without_an_immediate_commit_timestamp_a_transaction_commits_at_its_ending_events_header_second() -> None:
    # the MariaDB fixtures: no file carries MySQL's immediate_commit_timestamp
    checked = 0
    for path in _fixture_files():
        decoded = {(d.event.offset, d.event.inner_index): d for d in decode_file(path)}
        places = [d.place for d in decoded.values() if d.place is not None]
        ended = {id(t): t for p in places if (t := p.transaction) is not None and t.end_offset is not None}
        assert {t.start_offset: t.commit_us for t in ended.values()} == {
            t.start_offset: decoded[t.end_offset, t.end_inner_index].event.header.timestamp * 1_000_000  # type: ignore[index]
            for t in ended.values()
        }, path
        checked += len(ended)
    assert checked == EXPECTED_FIXTURE_TRANSACTIONS


@pytest.mark.corpus
def test_a_transaction_commits_at_the_second_of_its_end_not_of_its_start() -> None:
    # MariaDB 11.8: the one transaction of the file whose GTID and XID carry different seconds
    walked, _ = walk(corpus("mariadb-poc/domain_id_0/mariadb-repl-bin.000005"))
    opener, place = next((e, p) for e, p in walked if e.offset == 65618)
    ending = next(e for e, _ in walked if e.offset == 66434)
    assert (opener.type_name, opener.header.timestamp, ending.type_name, ending.header.timestamp) == (
        "MARIADB_GTID",
        1767128185,
        "XID",
        1767128186,
    )
    assert place.transaction is not None
    assert (place.transaction.end_offset, place.transaction.commit_us) == (66434, 1767128186000000)


# -- the two walkers agree -------------------------------------------------------------------------


def _decoder_places(path: Path) -> list[tuple[Any, ...]]:
    items: list[DecodedEvent] = []
    with contextlib.suppress(BinlogError):  # a fatal error: framing stops at the same event
        for item in decode_file(path):
            items.append(item)
    out = []
    for item in items:  # read once the walk is over: what later events told is filled in
        e, p = item.event, item.place
        assert p is not None
        own = p.map if e.type_code == EventType.TABLE_MAP else None
        read_with = p.map if e.type_code != EventType.TABLE_MAP else None
        out.append(
            (
                e.offset,
                e.inner_index,
                p.gtid,
                *(trx(p.transaction) or (None,) * 7)[:6],
                p.table_id,
                p.statement_end,
                *((read_with.offset, read_with.inner_index) if read_with else (None, None)),
                *(force(own)[3:] if own else (None,) * 4),  # type: ignore[index]
            )
        )
    return out


def _framing_places(path: Path) -> Iterator[tuple[Any, ...]]:
    for r in frame_file(functools.partial(path.open, "rb"), f"file:{path}", path.name):
        if isinstance(r, EventRow):
            yield (
                r.offset,
                r.inner_index,
                r.gtid,
                r.trx_offset,
                r.trx_inner_index,
                r.trx_end_offset,
                r.trx_end_inner_index,
                r.commit_timestamp,
                r.xid,
                r.table_id,
                r.statement_end,
                r.map_offset,
                r.map_inner_index,
                r.in_force_until,
                r.in_force_until_inner_index,
                r.ended_by,
                r.rows_events,
            )


def _every_file() -> list[Any]:
    return [
        *(pytest.param(p, id=f"fixture:{p.parent.name}/{p.name}") for p in _fixture_files()),
        *(pytest.param(r, id=r, marks=pytest.mark.corpus) for r in corpus_files()),
    ]


@pytest.mark.parametrize("source", _every_file())
def test_the_decoder_and_bronze_framing_give_every_event_the_same_place(source: Path | str) -> None:
    path = source if isinstance(source, Path) else corpus_path(source)
    decoder = _decoder_places(path)
    framing = list(_framing_places(path))
    assert [row[:2] for row in framing] == [row[:2] for row in decoder]
    assert framing == decoder
