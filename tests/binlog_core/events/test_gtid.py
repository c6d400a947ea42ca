"""Transaction identity: MySQL GTID / ANONYMOUS_GTID / GTID_TAGGED, PREVIOUS_GTIDS, XA_PREPARE, and
MariaDB's GTID, GTID_LIST and BINLOG_CHECKPOINT.

Expected values are those of real events. ``mariadb-binlog`` prints MariaDB's GTIDs, GTID lists,
checkpoints and every XA PREPARE (asserted against its output below); it only says "Ignorable" for
MySQL's GTIDs, so those values are checked against what the file itself says elsewhere: the
transaction length reaches the next transaction, the server version is the description's, the
commit timestamp falls in the second of the event header. Layouts no real file holds (an original
commit timestamp and server version of a replicated transaction, a commit group ticket, the
ALTER sequence number, ...) are built from the server's documented layout:

* MySQL ``Gtid_event`` (``libs/mysql/binlog/event/control_events.cpp``, constructor and
  ``read_gtid_tagged_log_event``; fields of the tagged form: ``control_events.h``
  ``Gtid_event::define_fields``; the message format: ``libs/mysql/serialization``)
  https://github.com/mysql/mysql-server/blob/trunk/libs/mysql/binlog/event/control_events.cpp
* MySQL ``Gtid_set::encode`` (``sql/rpl_gtid_set.cc``)
* MariaDB ``Gtid_log_event``, ``Gtid_list_log_event``, ``Binlog_checkpoint_log_event``
  (``sql/log_event.cc``) https://github.com/MariaDB/server/blob/11.4/sql/log_event.cc
"""

from __future__ import annotations

import pytest

from binlog_core.constants import EventType
from binlog_core.errors import BinlogError, MalformedError, TruncatedError, UnsupportedError
from binlog_core.events import decode_body
from binlog_core.events.control import BinlogCheckpointEvent
from binlog_core.events.gtid import (
    GtidEvent,
    GtidListEvent,
    GtidSetEntry,
    MariaDBGtidEvent,
    MariaDBGtidPosition,
    PreviousGtidsEvent,
    XaPrepareEvent,
)
from tests.binlog_core.events import (
    body_at,
    built_event,
    corpus_event,
    description_of,
    event_at,
    file_events,
    printed_matches,
)
from tests.binlog_core.real_events import MISC
from tests.fixtures.truth import FIXTURES
from tests.harness.corpus import corpus_path

MAXWELL = "maxwell/binlog.000004"
"""MySQL 8.0.29, GTID mode on."""
TAGGED = "rust_mysql_common/binlog_transaction_with_GTID_TAG.000001"
"""MySQL 9.6.0: a tagged GTID and a tagged PREVIOUS_GTIDS."""
MARIADB_11_8 = "mariadb-poc/domain_id_0/mariadb-repl-bin.000010"
"""MariaDB 11.8.5: GTIDs with the 11.5+ thread id, a non-empty GTID list."""
MARIADB_10_3 = "mariadb-test-data/std_data/rpl/master-bin-seq_10.3.36.000001"
"""MariaDB 10.3.36: group-committed GTIDs with a commit id."""

MAXWELL_UUID = "83759871-1141-11ed-b12d-0242ac130003"
TAGGED_UUID = "55778904-0299-11f1-b1b8-4ef0c4956feb"
ANONYMOUS_UUID = "00000000-0000-0000-0000-000000000000"


def mysql_gtid(**fields: object) -> GtidEvent:
    """A GtidEvent: the untagged defaults of a 5.6 event, then ``fields``."""
    values: dict[str, object] = {
        "tag": None,
        "last_committed": None,
        "sequence_number": None,
        "immediate_commit_timestamp": None,
        "original_commit_timestamp": None,
        "transaction_length": None,
        "immediate_server_version": None,
        "original_server_version": None,
        "commit_group_ticket": None,
        "trailing": b"",
    }
    values.update(fields)
    return GtidEvent(**values)  # type: ignore[arg-type]


# -- MySQL GTID and ANONYMOUS_GTID -----------------------------------------------------------


@pytest.mark.corpus
def test_mysql_8_gtid_carries_logical_clock_commit_timestamp_length_and_server_version() -> None:
    event = corpus_event(MAXWELL, 197)
    assert decode_body(event) == mysql_gtid(
        gtid=f"{MAXWELL_UUID}:6",
        uuid=MAXWELL_UUID,
        gno=6,
        flags=1,
        may_have_sbr=True,
        last_committed=0,
        sequence_number=1,
        immediate_commit_timestamp=1659322528799820,
        original_commit_timestamp=1659322528799820,  # bit 55 clear: the transaction originated here
        transaction_length=305,  # 197 + 305 = 502, where the next GTID starts
        immediate_server_version=80029,  # the description says "8.0.29"
        original_server_version=80029,  # bit 31 clear
    )
    # the commit time falls in the second the event header carries
    assert event.header.timestamp == 1659322528799820 // 1_000_000


@pytest.mark.corpus
def test_gtid_flags_zero_says_the_transaction_has_no_statement_based_event() -> None:
    gtid = body_at(corpus_path(MAXWELL), 9417)
    assert isinstance(gtid, GtidEvent)
    assert (gtid.gtid, gtid.flags, gtid.may_have_sbr) == (f"{MAXWELL_UUID}:21", 0, False)
    assert (gtid.last_committed, gtid.sequence_number, gtid.transaction_length) == (15, 16, 744)


@pytest.mark.corpus
@pytest.mark.parametrize(
    "relative",
    [
        MAXWELL,
        "mariadb-test-data/std_data/rpl/mysql-8.0.13-stm-temporal-round-binlog.000001",
        "rust_mysql_common/binlog-invisible-columns.000001",
        TAGGED,
    ],
)
def test_transaction_length_reaches_exactly_the_next_transaction(relative: str) -> None:
    # transaction_length counts the bytes from the GTID to the end of its transaction, GTID
    # included: the next GTID, or the ROTATE/STOP after the last transaction, or the file's end
    path = corpus_path(relative)
    events = [event for event in file_events(path) if event.inner_index is None]
    gtid_types = {EventType.GTID, EventType.ANONYMOUS_GTID, EventType.GTID_TAGGED}
    starts = [event.offset for event in events if event.type_code in gtid_types]
    closing = [e.offset for e in events if e.offset > starts[-1] and e.type_code in (EventType.ROTATE, EventType.STOP)]
    ends = [*starts[1:], closing[0] if closing else path.stat().st_size]
    lengths = [decode_body(event).transaction_length for event in events if event.type_code in gtid_types]  # type: ignore[attr-defined]
    assert [start + length for start, length in zip(starts, lengths, strict=True)] == ends


@pytest.mark.corpus
def test_mysql_5_7_gtid_has_a_logical_clock_and_nothing_after_it() -> None:
    uuid = "e3e2a4ee-b6dc-11ea-8bcf-0242ac150002"
    assert body_at(corpus_path("mysql-cdc-rs/5.7/02_query/log.bin"), 154) == mysql_gtid(
        gtid=f"{uuid}:1", uuid=uuid, gno=1, flags=1, may_have_sbr=True, last_committed=0, sequence_number=1
    )


@pytest.mark.corpus
def test_mysql_5_6_gtid_has_only_flags_uuid_and_gno() -> None:
    uuid = "006c2cf2-b1ea-11e4-9057-8c705a3d3e78"
    event = corpus_event("mysql-server/std_data/binlog_transaction_with_GTID.000001", 151)
    assert len(event.body) == 25  # flags | sid | gno: 5.6 wrote no logical clock
    assert decode_body(event) == mysql_gtid(gtid=f"{uuid}:1", uuid=uuid, gno=1, flags=1, may_have_sbr=True)


@pytest.mark.corpus
def test_anonymous_gtid_of_mysql_8_0_13_has_commit_timestamp_and_length_but_no_server_version() -> None:
    relative = "mariadb-test-data/std_data/rpl/mysql-8.0.13-stm-temporal-round-binlog.000001"
    assert body_at(corpus_path(relative), 155) == mysql_gtid(
        gtid=None,
        uuid=ANONYMOUS_UUID,
        gno=0,
        flags=1,
        may_have_sbr=True,
        last_committed=0,
        sequence_number=1,
        immediate_commit_timestamp=1543931433477257,
        original_commit_timestamp=1543931433477257,
        transaction_length=357,  # 155 + 357 = 512, the next ANONYMOUS_GTID
    )


@pytest.mark.corpus
def test_anonymous_gtid_of_mysql_5_7_names_no_transaction() -> None:
    assert body_at(corpus_path("mysql-cdc-rs/5.7/34_anonymous_gtid/log.bin"), 154) == mysql_gtid(
        gtid=None, uuid=ANONYMOUS_UUID, gno=0, flags=1, may_have_sbr=True, last_committed=0, sequence_number=1
    )


def _maxwell_gtid_prefix() -> bytes:
    """flags | sid | gno | typecode | last_committed | sequence_number of the real GTID at 197."""
    return corpus_event(MAXWELL, 197).body[:42]


@pytest.mark.corpus
def test_bit_55_and_bit_31_announce_the_original_commit_timestamp_and_server_version() -> None:
    # a transaction replicated from an older source: Gtid_event writes the immediate timestamp
    # with bit 55 set, then the original one (7 bytes each); the transaction length; the
    # immediate server version with bit 31 set, then the original one; then the commit group
    # ticket (8 bytes) when one is set
    immediate_ts, original_ts = 1659322528799820, 1659322500000001
    body = (
        _maxwell_gtid_prefix()
        + (immediate_ts | 1 << 55).to_bytes(7, "little")
        + original_ts.to_bytes(7, "little")
        + b"\xfc\x31\x01"  # transaction length 305, a length-encoded integer
        + (80029 | 1 << 31).to_bytes(4, "little")
        + (50744).to_bytes(4, "little")
        + (77).to_bytes(8, "little")
    )
    gtid = decode_body(built_event(description_of(corpus_path(MAXWELL)), EventType.GTID, body))
    assert isinstance(gtid, GtidEvent)
    assert (gtid.immediate_commit_timestamp, gtid.original_commit_timestamp) == (immediate_ts, original_ts)
    assert gtid.transaction_length == 305
    assert (gtid.immediate_server_version, gtid.original_server_version) == (80029, 50744)
    assert gtid.commit_group_ticket == 77
    assert gtid.trailing == b""


@pytest.mark.corpus
def test_a_gtid_cut_inside_the_original_commit_timestamp_is_truncated() -> None:
    body = _maxwell_gtid_prefix() + (1 << 55 | 5).to_bytes(7, "little") + b"\x01\x02"
    with pytest.raises(TruncatedError):
        decode_body(built_event(description_of(corpus_path(MAXWELL)), EventType.GTID, body))


@pytest.mark.corpus
@pytest.mark.parametrize(
    ("type_code", "gno"),
    [(EventType.ANONYMOUS_GTID, 1), (EventType.GTID, 0), (EventType.GTID, -3), (EventType.GTID, (1 << 63) - 1)],
)
def test_a_gno_outside_what_the_server_accepts_is_malformed(type_code: int, gno: int) -> None:
    # anonymous transactions have GNO 0; others 1 .. 2^63-2 (``Gtid_event``: "Invalid GNO")
    prefix = _maxwell_gtid_prefix()
    body = prefix[:17] + gno.to_bytes(8, "little", signed=True) + prefix[25:]
    with pytest.raises(MalformedError, match="GNO"):
        decode_body(built_event(description_of(corpus_path(MAXWELL)), type_code, body))


# -- GTID_TAGGED (MySQL 8.3+) ----------------------------------------------------------------


@pytest.mark.corpus
def test_tagged_gtid_reads_every_field_of_its_serialized_message() -> None:
    # the 60-byte body, read by hand with libs/mysql/serialization's rules:
    #   02 version 1 | 78 message size 60 | 00 last non-ignorable field id 0
    #   00 00 flags 0 | 02 + 16 one-byte varlens: uuid 55778904-0299-11f1-b1b8-4ef0c4956feb
    #   04 0c gno 3 (zig-zag) | 06 0a "mytag" | 08 00 last_committed 0 | 0a 04 sequence_number 1
    #   0c 7f 1c f3 b8 14 24 4a 06 immediate commit timestamp 1770368687207196 (9 bytes, n=8)
    #   10 a1 04 transaction length 296 (field 7, the original timestamp, absent: same as immediate)
    #   12 43 0f 0b immediate server version 90600 (field 10 absent: same)
    event = corpus_event(TAGGED, 245)
    assert decode_body(event) == mysql_gtid(
        gtid=f"{TAGGED_UUID}:mytag:3",
        uuid=TAGGED_UUID,
        gno=3,
        tag="mytag",
        flags=0,
        may_have_sbr=False,
        last_committed=0,
        sequence_number=1,
        immediate_commit_timestamp=1770368687207196,
        original_commit_timestamp=1770368687207196,
        transaction_length=296,  # 245 + 296 = 541, the ROTATE after the transaction
        immediate_server_version=90600,  # the description says "9.6.0"
        original_server_version=90600,
    )
    assert event.header.timestamp == 1770368687207196 // 1_000_000


def _tagged(last_non_ignorable: int, extra: bytes = b"") -> bytes:
    """The real tagged GTID's message with another last non-ignorable field id and ``extra`` fields."""
    body = corpus_event(TAGGED, 245).body
    size = len(body) + len(extra)
    assert size < 64 and last_non_ignorable < 64  # one-byte varlens: value << 1
    return bytes([body[0], size << 1, last_non_ignorable << 1]) + body[3:] + extra


@pytest.mark.corpus
def test_tagged_gtid_accepts_non_ignorable_fields_up_to_the_twelve_it_knows() -> None:
    # the server refuses a message when ``last_known_field_id + 1 < last_non_ignorable_field_id``
    # (Serializer_default::decode_serializable_metadata); Gtid_event defines fields 0..11, and
    # the id written is that of the last non-ignorable field present, plus one: 12 is readable
    fde = description_of(corpus_path(TAGGED))
    gtid = decode_body(built_event(fde, EventType.GTID_TAGGED, _tagged(12)))
    assert isinstance(gtid, GtidEvent) and gtid.gtid == f"{TAGGED_UUID}:mytag:3"
    with pytest.raises(UnsupportedError, match="non-ignorable field 12"):
        decode_body(built_event(fde, EventType.GTID_TAGGED, _tagged(13)))


@pytest.mark.corpus
def test_tagged_gtid_keeps_ignorable_fields_of_a_newer_server_as_trailing_bytes() -> None:
    newer_field = bytes([12 << 1, 5 << 1])  # field 12 (unknown here), value 5
    gtid = decode_body(built_event(description_of(corpus_path(TAGGED)), EventType.GTID_TAGGED, _tagged(0, newer_field)))
    assert isinstance(gtid, GtidEvent)
    assert (gtid.gtid, gtid.immediate_server_version, gtid.trailing) == (f"{TAGGED_UUID}:mytag:3", 90600, newer_field)


@pytest.mark.corpus
@pytest.mark.parametrize(("declared", "error"), [(59, MalformedError), (61, TruncatedError)])
def test_tagged_gtid_whose_message_size_is_not_its_body_is_refused(declared: int, error: type[BinlogError]) -> None:
    body = bytearray(corpus_event(TAGGED, 245).body)
    body[1] = declared << 1
    with pytest.raises(error):
        decode_body(built_event(description_of(corpus_path(TAGGED)), EventType.GTID_TAGGED, bytes(body)))


# -- PREVIOUS_GTIDS --------------------------------------------------------------------------


@pytest.mark.corpus
def test_tagged_previous_gtids_lists_the_untagged_and_the_tagged_intervals_of_one_uuid() -> None:
    # header 01 02 00 00 00 00 00 01: format 1 in the lowest and highest byte, 2 entries between;
    # then uuid | tag (varlen length 0, or 5 "mytag") | 1 interval | [1, 14) or [1, 3)
    assert body_at(corpus_path(TAGGED), 127) == PreviousGtidsEvent(
        gtid_set=f"{TAGGED_UUID}:1-13:mytag:1-2",
        tagged=True,
        entries=(GtidSetEntry(TAGGED_UUID, "", ((1, 13),)), GtidSetEntry(TAGGED_UUID, "mytag", ((1, 2),))),
    )


@pytest.mark.corpus
def test_untagged_previous_gtids_lists_the_executed_intervals() -> None:
    # GNOs 1-5 before this file: the first GTID of the file is 6 (the test above)
    assert body_at(corpus_path(MAXWELL), 126) == PreviousGtidsEvent(
        gtid_set=f"{MAXWELL_UUID}:1-5", tagged=False, entries=(GtidSetEntry(MAXWELL_UUID, "", ((1, 5),)),)
    )


@pytest.mark.corpus
def test_previous_gtids_of_a_server_that_never_had_a_gtid_is_empty() -> None:
    event = corpus_event("mysql-server/std_data/binlog_recovery/orphan_xa_prepare.000001", 126)
    assert event.body == bytes(8)  # number of UUIDs: 0
    assert decode_body(event) == PreviousGtidsEvent(gtid_set="", tagged=False, entries=())


def _interval_set(*entries: tuple[bytes, list[tuple[int, int]]]) -> bytes:
    """An untagged encoded GTID set (``Gtid_set::encode``): count, then uuid | n | [start, end) ..."""
    out = len(entries).to_bytes(8, "little")
    for uuid, intervals in entries:
        out += uuid + len(intervals).to_bytes(8, "little")
        out += b"".join(start.to_bytes(8, "little") + end.to_bytes(8, "little") for start, end in intervals)
    return out


@pytest.mark.corpus
def test_previous_gtids_of_several_uuids_prints_each_on_its_own_line_like_gtid_executed() -> None:
    first, second = bytes.fromhex("83759871114111edb12d0242ac130003"), bytes(range(16))
    body = _interval_set((first, [(1, 6), (7, 8), (10, 21)]), (second, [(1, 3)]))
    gtids = decode_body(built_event(description_of(corpus_path(MAXWELL)), EventType.PREVIOUS_GTIDS, body))
    assert isinstance(gtids, PreviousGtidsEvent)
    assert gtids.gtid_set == f"{MAXWELL_UUID}:1-5:7:10-20,\n00010203-0405-0607-0809-0a0b0c0d0e0f:1-2"


@pytest.mark.corpus
@pytest.mark.parametrize("interval", [(0, 5), (5, 5), (6, 2)])
def test_a_gtid_interval_that_is_empty_or_starts_below_one_is_malformed(interval: tuple[int, int]) -> None:
    body = _interval_set((bytes(range(16)), [interval]))
    with pytest.raises(MalformedError, match="interval"):
        decode_body(built_event(description_of(corpus_path(MAXWELL)), EventType.PREVIOUS_GTIDS, body))


# -- XA_PREPARE ------------------------------------------------------------------------------


@pytest.mark.corpus
def test_mysql_xa_prepare_names_its_xid_as_mariadb_binlog_prints_it() -> None:
    # mariadb-binlog: "XID = X'78',X'',1" then "XA PREPARE X'78',X'',1"
    path = corpus_path("mysql-server/std_data/binlog_recovery/orphan_xa_prepare.000001")
    assert body_at(path, 236) == XaPrepareEvent(False, 1, b"x", b"", "X'78',X'',1")
    assert printed_matches(path, r"\tXID = (.*)$") == {236: ("X'78',X'',1",)}


def test_mariadb_xa_prepare_names_its_xid_as_mariadb_binlog_prints_it() -> None:
    assert body_at(MISC, 2002) == XaPrepareEvent(False, 3, b"gtrid1", b"bq", "X'677472696431',X'6271',3")
    assert printed_matches(MISC, r"\tXID = (.*)$") == {2002: ("X'677472696431',X'6271',3",)}


def test_one_phase_xa_commit_and_oversized_xid_parts() -> None:
    # XA_prepare_event: one_phase u8 | formatID u32 | gtrid_length u32 | bqual_length u32 | data;
    # each part is at most 64 bytes ("Invalid XID information in XA Prepare")
    fde = description_of(MISC)
    body = b"\x01" + (7).to_bytes(4, "little") + (2).to_bytes(4, "little") + (1).to_bytes(4, "little") + b"ab" + b"c"
    assert decode_body(built_event(fde, EventType.XA_PREPARE, body)) == XaPrepareEvent(
        True, 7, b"ab", b"c", "X'6162',X'63',7"
    )
    oversized = b"\x00" + (7).to_bytes(4, "little") + (65).to_bytes(4, "little") + bytes(4) + bytes(65)
    with pytest.raises(MalformedError, match="at most 64"):
        decode_body(built_event(fde, EventType.XA_PREPARE, oversized))


# -- MariaDB GTID ----------------------------------------------------------------------------


def mariadb_gtid(gtid: str, flags: int, flag_names: tuple[str, ...], **fields: object) -> MariaDBGtidEvent:
    """A MariaDBGtidEvent of ``domain-server-seq`` with no optional part unless ``fields`` say so."""
    domain_id, server_id, seq_no = (int(part) for part in gtid.split("-"))
    values: dict[str, object] = {
        "commit_id": None,
        "xa_format_id": None,
        "xa_gtrid": None,
        "xa_bqual": None,
        "flags_extra": 0,
        "extra_engines": None,
        "sa_seq_no": None,
        "thread_id": None,
        "trailing": b"",
    }
    values.update(fields)
    return MariaDBGtidEvent(gtid, domain_id, server_id, seq_no, flags, flag_names, **values)  # type: ignore[arg-type]


def test_mariadb_gtids_of_ddl_transactions_and_xa_agree_with_mariadb_binlog() -> None:
    # mariadb-binlog: "GTID 0-7-1 ddl", "GTID 0-7-3 trans", "GTID 0-7-6 trans" + "XA START
    # X'677472696431',X'6271',3", "GTID 0-7-7 trans" (the XA COMMIT)
    expected = {
        371: mariadb_gtid("0-7-1", 0x29, ("STANDALONE", "ALLOW_PARALLEL", "DDL")),
        747: mariadb_gtid("0-7-3", 0x0C, ("TRANSACTIONAL", "ALLOW_PARALLEL")),
        1748: mariadb_gtid(
            "0-7-6",
            0x4C,
            ("TRANSACTIONAL", "ALLOW_PARALLEL", "PREPARED_XA"),
            xa_format_id=3,
            xa_gtrid=b"gtrid1",
            xa_bqual=b"bq",
            flags_extra=1,  # MULTI_ENGINE, then the engine count byte
            extra_engines=255,
        ),
        2046: mariadb_gtid(
            "0-7-7",
            0x8D,
            ("STANDALONE", "TRANSACTIONAL", "ALLOW_PARALLEL", "COMPLETED_XA"),
            xa_format_id=3,
            xa_gtrid=b"gtrid1",
            xa_bqual=b"bq",
            flags_extra=None,  # 31 bytes: the XID ends the body, no flags_extra byte
        ),
    }
    assert {offset: body_at(MISC, offset) for offset in expected} == expected
    printed = printed_matches(MISC, r"\tGTID (\d+-\d+-\d+)")
    assert {offset: printed[offset][0] for offset in expected} == {o: g.gtid for o, g in expected.items()}
    assert printed_matches(MISC, r"^XA START (.*)/\*!\*/;$") == {1748: ("X'677472696431',X'6271',3",)}


@pytest.mark.corpus
def test_group_committed_mariadb_gtid_carries_its_commit_id() -> None:
    # mariadb-binlog: "GTID 0-1-100 cid=7"
    path = corpus_path(MARIADB_10_3)
    assert body_at(path, 456) == mariadb_gtid(
        "0-1-100", 0x0A, ("GROUP_COMMIT_ID", "ALLOW_PARALLEL"), commit_id=7, flags_extra=None
    )
    assert printed_matches(path, r"\tGTID (\S+) cid=(\d+)$") == {456: ("0-1-100", "7"), 763: ("0-1-101", "7")}


@pytest.mark.corpus
def test_mariadb_11_gtid_carries_the_thread_id_of_its_statements() -> None:
    # flags_extra 0x10 (FL_EXTRA_THREAD_ID, 11.5+) then thread_id u32; the QUERY that follows
    # says the same thread in its own post-header
    path = corpus_path(MARIADB_11_8)
    event = event_at(path, 349)
    assert event.body.hex(" ") == "65 75 04 00 00 00 00 00 00 00 00 00 29 10 05 00 00 00 00"
    assert decode_body(event) == mariadb_gtid(
        "0-10-292197", 0x29, ("STANDALONE", "ALLOW_PARALLEL", "DDL"), flags_extra=0x10, thread_id=5
    )
    assert body_at(path, 391).thread_id == 5  # type: ignore[attr-defined]
    assert printed_matches(path, r"\tGTID (\S+) ddl$")[349] == ("0-10-292197",)


def test_mariadb_gtid_of_a_commit_alter_carries_the_start_alter_sequence_number() -> None:
    # Gtid_log_event: seq_no u64 | domain_id u32 | flags2 u8 | flags_extra u8 (0x04 COMMIT_ALTER)
    # | sa_seq_no u64 -- the sequence number of the START ALTER this ALTER completes
    body = (12).to_bytes(8, "little") + (3).to_bytes(4, "little") + b"\x29" + b"\x04" + (9).to_bytes(8, "little")
    gtid = decode_body(built_event(description_of(MISC), EventType.MARIADB_GTID, body, server_id=2))
    assert gtid == mariadb_gtid("3-2-12", 0x29, ("STANDALONE", "ALLOW_PARALLEL", "DDL"), flags_extra=4, sa_seq_no=9)


# -- MariaDB GTID_LIST, BINLOG_CHECKPOINT ----------------------------------------------------


def test_first_mariadb_file_has_an_empty_gtid_list() -> None:
    # mariadb-binlog: "Gtid list []"; the count 0 is followed by two padding bytes
    assert body_at(MISC, 256) == GtidListEvent("", (), 0)
    assert printed_matches(MISC, r"\tGtid list \[(.*)\]$") == {256: ("",)}


def test_gtid_list_names_the_last_gtid_before_the_file() -> None:
    # mariadb-binlog: "Gtid list [0-1-34]"
    path = FIXTURES / "full" / "mysql-bin.000002"
    assert body_at(path, 256) == GtidListEvent("0-1-34", (MariaDBGtidPosition(0, 1, 34),), 0)
    assert printed_matches(path, r"\tGtid list \[(.*)\]$") == {256: ("0-1-34",)}


@pytest.mark.corpus
def test_gtid_list_of_mariadb_11_names_the_last_gtid_before_the_file() -> None:
    # mariadb-binlog: "Gtid list [0-10-292196]"; the first GTID of the file is 0-10-292197
    path = corpus_path(MARIADB_11_8)
    assert body_at(path, 256) == GtidListEvent("0-10-292196", (MariaDBGtidPosition(0, 10, 292196),), 0)
    assert printed_matches(path, r"\tGtid list \[(.*)\]$") == {256: ("0-10-292196",)}


def test_gtid_list_of_several_domains_keeps_their_order_and_the_flags_of_the_count_word() -> None:
    # Gtid_list_log_event: count u32 (low 28 bits; top 4 bits flags) | {domain u32 | server u32 |
    # seq_no u64} * count
    entries = [(0, 1, 100), (1, 2, 5), (7, 1, 1 << 40)]
    body = (len(entries) | 2 << 28).to_bytes(4, "little") + b"".join(
        d.to_bytes(4, "little") + s.to_bytes(4, "little") + n.to_bytes(8, "little") for d, s, n in entries
    )
    gtid_list = decode_body(built_event(description_of(MISC), EventType.GTID_LIST, body))
    assert gtid_list == GtidListEvent(
        f"0-1-100,1-2-5,7-1-{1 << 40}", tuple(MariaDBGtidPosition(*entry) for entry in entries), 2
    )


def test_gtid_list_counting_more_entries_than_its_bytes_hold_is_refused_before_reading_them() -> None:
    body = (1000).to_bytes(4, "little") + bytes(16)
    with pytest.raises(TruncatedError, match="GTID list entries"):
        decode_body(built_event(description_of(MISC), EventType.GTID_LIST, body))


def test_binlog_checkpoints_name_the_oldest_file_crash_recovery_needs() -> None:
    # mariadb-binlog: "Binlog checkpoint mysql-bin.000002", then "... mysql-bin.000003"
    assert body_at(MISC, 285) == BinlogCheckpointEvent("mysql-bin.000002")
    assert body_at(MISC, 328) == BinlogCheckpointEvent("mysql-bin.000003")
    assert printed_matches(MISC, r"\tBinlog checkpoint (\S+)$") == {
        285: ("mysql-bin.000002",),
        328: ("mysql-bin.000003",),
    }


def test_binlog_checkpoint_whose_name_length_runs_past_the_event_is_truncated() -> None:
    body = (40).to_bytes(4, "little") + b"mysql-bin.000002"
    with pytest.raises(TruncatedError):
        decode_body(built_event(description_of(MISC), EventType.BINLOG_CHECKPOINT, body))


def test_usual_mariadb_gtids_decode_the_same_on_the_fast_and_the_general_path() -> None:
    # the decoder's fast path (the usual 19-byte shape, zero-padded) and its general path agree
    # on every such real GTID: the general path is forced by one more zero padding byte
    for path in (FIXTURES / "full" / "mysql-bin.000003", FIXTURES / "full" / "mysql-bin.000004", MISC):
        for event in file_events(path):
            if event.type_code != EventType.MARIADB_GTID or len(event.body) != 19:
                continue
            fast = decode_body(event)
            general = decode_body(
                built_event(event.fde, EventType.MARIADB_GTID, event.body + b"\x00", server_id=event.header.server_id)
            )
            assert fast == general
