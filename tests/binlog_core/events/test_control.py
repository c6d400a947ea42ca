"""Control events: ROTATE, STOP, XID, INTVAR, RAND, INCIDENT, the heartbeats, IGNORABLE and the two
group replication events, TRANSACTION_CONTEXT and VIEW_CHANGE.

Real events are compared with explicit values and with what ``mariadb-binlog -vv`` prints at
the same offset (``Xid = 117``, ``Rotate to mysql-bin.000004  pos: 4``, ``SET INSERT_ID=1``,
``SET @@RAND_SEED1=..., @@RAND_SEED2=...``, ``Stop``), on MariaDB, MySQL 4.1 to 8.0 files.
Heartbeats never reach a binlog file (a source sends them on the wire), and no file of the
corpus holds a valid INCIDENT, an IGNORABLE event or a group replication event: those are built
from the layouts of MySQL ``libs/mysql/binlog/event/control_events.cpp`` (``Incident_event``,
``Heartbeat_event``, ``Transaction_context_event``, ``View_change_event``), ``event_reader.cpp``
(``read_data_set``, ``read_data_map``) and ``codecs/binary.cpp`` (``Heartbeat::encode``).
https://github.com/mysql/mysql-server/blob/trunk/libs/mysql/binlog/event/control_events.cpp
https://github.com/mysql/mysql-server/blob/trunk/libs/mysql/binlog/event/codecs/binary.cpp
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pytest

from binlog_core.constants import EventType
from binlog_core.errors import MalformedError, TruncatedError
from binlog_core.events import decode_body
from binlog_core.events.control import (
    HeartbeatEvent,
    HeartbeatV2Event,
    IgnorableEvent,
    IncidentEvent,
    IncidentType,
    IntvarEvent,
    IntvarType,
    RandEvent,
    RotateEvent,
    StopEvent,
    TransactionContextEvent,
    ViewChangeEvent,
    XidEvent,
)
from tests.binlog_core.events import (
    body_at,
    built_event,
    description_of,
    event_at,
    file_events,
    printed_by_offset,
    printed_matches,
)
from tests.binlog_core.real_events import MISC
from tests.fixtures.truth import FIXTURES
from tests.harness.corpus import corpus_path

MYSQL_8 = "maxwell/binlog.000004"
OLD_4_1 = "mariadb-test-data/suite/binlog/std_data/binlog_old_version_4_1.000001"
"""MySQL 4.1.24, binlog v3 (START_V3, no FORMAT_DESCRIPTION)."""


# -- agreement with mariadb-binlog ------------------------------------------------------------

PRINTED: dict[type, tuple[str, Callable[[object], tuple[str, ...]]]] = {
    XidEvent: (r"\tXid = (\d+)$", lambda b: (str(b.xid),)),  # type: ignore[attr-defined]
    RotateEvent: (r"\tRotate to (\S+)  pos: (\d+)$", lambda b: (b.next_file, str(b.position))),  # type: ignore[attr-defined]
    IntvarEvent: (r"^SET (INSERT_ID|LAST_INSERT_ID)=(\d+)/\*!\*/;$", lambda b: (b.var_type.name, str(b.value))),  # type: ignore[attr-defined]
    RandEvent: (r"^SET @@RAND_SEED1=(\d+), @@RAND_SEED2=(\d+)/\*!\*/;$", lambda b: (str(b.seed1), str(b.seed2))),  # type: ignore[attr-defined]
    StopEvent: (r"\t(Stop)$", lambda _b: ("Stop",)),
}
"""Body class -> (what the tool prints for it, the same text made from the decoded body)."""

AGREEMENT_FILES = {
    "misc": MISC,
    "full-1": FIXTURES / "full" / "mysql-bin.000001",
    "full-6": FIXTURES / "full" / "mysql-bin.000006",
}
CORPUS_AGREEMENT_FILES = (
    "mysql-cdc-rs/5.7/05_intvar/log.bin",  # MySQL 5.7: LAST_INSERT_ID, XID, ROTATE
    "mysql-cdc-rs/5.7/13_rand/log.bin",  # MySQL 5.7: RAND
    "mysql-server/std_data/rpl_cross_version_default_utf8mb4_collation.000001",  # 5.7: INSERT_ID 12345, STOP
    "mysql-server/std_data/bug33029-slave-relay-bin.000001",  # 5.0 relay log: ROTATE at log_pos 0, INSERT_ID
    "mysql-server/std_data/corrupt-relay-bin.000624",  # 5.0 relay log: ROTATE to position 230184
    "mysql-server/std_data/rpl_gipk_equivalent_key.000001",  # 5.7: a ROTATE to position 154
    "mariadb-test-data/std_data/bug47142_master-bin.000001",  # 4.1 binlog v3: ROTATE
    OLD_4_1,  # 4.1 binlog v3: RAND, LAST_INSERT_ID
    "mariadb-test-data/std_data/rpl/mysql-8.0.13-stm-temporal-round-binlog.000001",  # 8.0: INSERT_ID, XID, STOP
    MYSQL_8,  # 8.0: XID
)


def assert_agrees_with_mariadb_binlog(path: Path) -> None:
    """Every XID, ROTATE, INTVAR, RAND and STOP the tool prints is ours, at the same offset, and
    the tool prints one for each of ours (of the events it reaches: it stops at those it cannot read)."""
    printed = printed_by_offset(path)
    ours: dict[type, dict[int, tuple[str, ...]]] = {kind: {} for kind in PRINTED}
    for event in file_events(path):
        if event.inner_index is None and event.offset in printed:
            body = decode_body(event)
            if type(body) in PRINTED:
                ours[type(body)][event.offset] = PRINTED[type(body)][1](body)
    assert any(ours.values()), f"{path.name}: no event of these types"
    theirs = {kind: printed_matches(path, pattern) for kind, (pattern, _) in PRINTED.items()}
    assert ours == theirs


@pytest.mark.parametrize("source", sorted(AGREEMENT_FILES))
def test_control_events_of_the_mariadb_files_agree_with_mariadb_binlog(source: str) -> None:
    assert_agrees_with_mariadb_binlog(AGREEMENT_FILES[source])


@pytest.mark.corpus
@pytest.mark.parametrize("relative", CORPUS_AGREEMENT_FILES)
def test_control_events_of_mysql_files_agree_with_mariadb_binlog(relative: str) -> None:
    assert_agrees_with_mariadb_binlog(corpus_path(relative))


# -- ROTATE, STOP ----------------------------------------------------------------------------


def test_rotate_names_the_next_file_and_where_to_start_in_it() -> None:
    # mariadb-binlog: "Rotate to mysql-bin.000004  pos: 4"
    assert body_at(MISC, 3199) == RotateEvent(4, "mysql-bin.000004")


@pytest.mark.corpus
def test_relay_log_rotate_names_the_source_position_to_continue_from() -> None:
    # mariadb-binlog: "Rotate to mysql-bin.010260  pos: 230184" (the source's coordinates, in a
    # relay log); the next file's own ROTATE restarts at 4
    path = corpus_path("mysql-server/std_data/corrupt-relay-bin.000624")
    assert body_at(path, 98) == RotateEvent(230184, "mysql-bin.010260")
    assert body_at(path, 91375) == RotateEvent(4, "relay-bin.000625")


@pytest.mark.corpus
def test_binlog_v3_rotate_has_the_position_post_header() -> None:
    # MySQL 4.1.26 (START_V3, binlog v3): ROTATE's post-header is the 8-byte position
    event = event_at(corpus_path("mariadb-test-data/std_data/bug47142_master-bin.000001"), 342)
    assert event.fde.post_header_len(EventType.ROTATE) == 8
    assert decode_body(event) == RotateEvent(4, "master-bin.000002")


@pytest.mark.corpus
def test_binlog_v1_rotate_has_no_position_and_continues_at_4() -> None:
    # binlog v1 (MySQL 3.23) declares no ROTATE post-header: the whole body is the file name and
    # the next file is read from its first event (Rotate_event: "Else, the position is set to 4")
    v3 = description_of(corpus_path("mariadb-test-data/std_data/bug47142_master-bin.000001"))
    lengths = bytearray(v3.post_header_lengths)
    lengths[EventType.ROTATE - 1] = 0
    v1 = dataclasses.replace(v3, binlog_version=1, post_header_lengths=bytes(lengths))
    assert decode_body(built_event(v1, EventType.ROTATE, b"master-bin.002")) == RotateEvent(4, "master-bin.002")


def test_rotate_without_a_file_name_is_malformed() -> None:
    with pytest.raises(MalformedError, match="file name"):
        decode_body(built_event(description_of(MISC), EventType.ROTATE, (4).to_bytes(8, "little")))


def test_stop_has_no_body() -> None:
    # mariadb-binlog: "Stop" (the last event of the empty sixth fixture file)
    path = FIXTURES / "full" / "mysql-bin.000006"
    stops = [e for e in file_events(path) if e.type_code == EventType.STOP]
    assert [(e.body, decode_body(e)) for e in stops] == [(b"", StopEvent())]
    with pytest.raises(MalformedError, match="STOP"):
        decode_body(built_event(description_of(MISC), EventType.STOP, b"\x00"))


# -- XID, INTVAR, RAND -----------------------------------------------------------------------


def test_xid_is_the_internal_id_of_the_committed_transaction() -> None:
    # mariadb-binlog: "Xid = 117", "Xid = 118", "Xid = 120", "Xid = 130", ...
    xids = {e.offset: decode_body(e) for e in file_events(MISC) if e.type_code == EventType.XID}
    assert xids == {
        1081: XidEvent(117),
        1376: XidEvent(118),
        1717: XidEvent(120),
        2378: XidEvent(130),
        2667: XidEvent(132),
        2934: XidEvent(133),
        3168: XidEvent(134),
    }


def test_xid_is_read_unsigned_and_must_be_eight_bytes() -> None:
    fde = description_of(MISC)
    assert decode_body(built_event(fde, EventType.XID, b"\xff" * 8)) == XidEvent((1 << 64) - 1)
    with pytest.raises(TruncatedError):
        decode_body(built_event(fde, EventType.XID, b"\x01" * 7))
    with pytest.raises(MalformedError):
        decode_body(built_event(fde, EventType.XID, b"\x01" * 9))


@pytest.mark.corpus
@pytest.mark.parametrize(
    ("relative", "offset", "expected"),
    [
        # mariadb-binlog: "SET LAST_INSERT_ID=0", "SET INSERT_ID=12345", "SET INSERT_ID=1"
        ("mysql-cdc-rs/5.7/05_intvar/log.bin", 736, IntvarEvent(IntvarType.LAST_INSERT_ID, 0)),
        (
            "mysql-server/std_data/rpl_cross_version_default_utf8mb4_collation.000001",
            664,
            IntvarEvent(IntvarType.INSERT_ID, 12345),
        ),
        ("mysql-server/std_data/bug33029-slave-relay-bin.000001", 1646, IntvarEvent(IntvarType.INSERT_ID, 1)),
        (OLD_4_1, 459, IntvarEvent(IntvarType.LAST_INSERT_ID, 0)),
    ],
)
def test_intvar_gives_the_auto_increment_or_last_insert_id_of_the_next_statement(
    relative: str, offset: int, expected: IntvarEvent
) -> None:
    assert body_at(corpus_path(relative), offset) == expected


def test_intvar_of_type_zero_is_malformed() -> None:
    # Intvar_event::Int_event_type: 0 INVALID_INT_EVENT, 1 LAST_INSERT_ID, 2 INSERT_ID
    with pytest.raises(MalformedError, match="intvar type 0"):
        decode_body(built_event(description_of(MISC), EventType.INTVAR, bytes(9)))


@pytest.mark.corpus
@pytest.mark.parametrize(
    ("relative", "offset", "expected"),
    [
        # mariadb-binlog: "SET @@RAND_SEED1=694882935, @@RAND_SEED2=292094996"
        ("mysql-cdc-rs/5.7/13_rand/log.bin", 736, RandEvent(694882935, 292094996)),
        (OLD_4_1, 339, RandEvent(410306692, 47093669)),
    ],
)
def test_rand_gives_the_two_seeds_of_the_next_statement(relative: str, offset: int, expected: RandEvent) -> None:
    assert body_at(corpus_path(relative), offset) == expected


# -- INCIDENT --------------------------------------------------------------------------------


def test_incident_lost_events_carries_its_message() -> None:
    # Incident_event: incident u16 | message length u8 | message (read_str_at_most_255_bytes)
    message = b"error writing to the binary log"
    body = (1).to_bytes(2, "little") + bytes([len(message)]) + message
    incident = decode_body(built_event(description_of(MISC), EventType.INCIDENT, body))
    assert incident == IncidentEvent(IncidentType.LOST_EVENTS, "error writing to the binary log")


@pytest.mark.corpus
def test_incident_with_a_number_the_server_does_not_define_is_malformed() -> None:
    # bug40482-bin.000001 logs incident 66 with an empty message: the server refuses it
    # ("Invalid incident number in INCIDENT"), mariadb-binlog stops there ("Found invalid event")
    path = corpus_path("mysql-server/std_data/bug40482-bin.000001")
    event = next(e for e in file_events(path) if e.type_code == EventType.INCIDENT)
    assert (event.offset, event.body) == (106, b"\x42\x00\x00")
    with pytest.raises(MalformedError, match="incident number 66"):
        decode_body(event)


def test_incident_whose_message_runs_past_the_event_is_truncated() -> None:
    body = (1).to_bytes(2, "little") + bytes([20]) + b"short"
    with pytest.raises(TruncatedError, match="message"):
        decode_body(built_event(description_of(MISC), EventType.INCIDENT, body))


# -- HEARTBEAT, HEARTBEAT_V2, IGNORABLE ------------------------------------------------------


@pytest.mark.corpus
def test_heartbeat_names_the_source_file_and_takes_the_position_from_its_header() -> None:
    # Heartbeat_event: the body is the log file name; the position is the header's log_pos
    event = built_event(description_of(corpus_path(MYSQL_8)), EventType.HEARTBEAT, b"binlog.000004", log_pos=15044)
    assert decode_body(event) == HeartbeatEvent("binlog.000004", 15044)


def _tlv(field_type: int, value: bytes) -> bytes:
    assert field_type < 251 and len(value) < 251  # one-byte length-encoded integers
    return bytes([field_type, len(value)]) + value


@pytest.mark.corpus
def test_heartbeat_v2_reads_its_file_name_and_position_fields() -> None:
    # Heartbeat::encode: {type | length | value} with 1 = file name, 2 = position (a
    # length-encoded integer: 0xfd + 3 bytes for 1 000 000), then the end mark 0
    body = _tlv(1, b"binlog.000004") + _tlv(2, b"\xfd\x40\x42\x0f") + b"\x00"
    event = built_event(description_of(corpus_path(MYSQL_8)), EventType.HEARTBEAT_V2, body)
    assert decode_body(event) == HeartbeatV2Event("binlog.000004", 1_000_000)


@pytest.mark.corpus
def test_heartbeat_v2_skips_fields_of_a_newer_server() -> None:
    body = _tlv(9, b"later") + _tlv(2, b"\x04") + b"\x00"
    event = built_event(description_of(corpus_path(MYSQL_8)), EventType.HEARTBEAT_V2, body)
    assert decode_body(event) == HeartbeatV2Event(None, 4)


@pytest.mark.corpus
def test_heartbeat_v2_field_longer_than_the_event_is_truncated() -> None:
    body = bytes([1, 40]) + b"binlog"
    with pytest.raises(TruncatedError):
        decode_body(built_event(description_of(corpus_path(MYSQL_8)), EventType.HEARTBEAT_V2, body))


@pytest.mark.corpus
def test_ignorable_event_is_kept_as_its_raw_bytes() -> None:
    raw = b"\x01\x02anything a newer server may write"
    event = built_event(description_of(corpus_path(MYSQL_8)), EventType.IGNORABLE, raw)
    assert decode_body(event) == IgnorableEvent(raw)


# -- group replication: TRANSACTION_CONTEXT, VIEW_CHANGE -------------------------------------


def _gtid_set_one_interval(uuid: bytes, start: int, end: int) -> bytes:
    """An encoded GTID set (``Gtid_set::encode``): 1 UUID with the interval [start, end)."""
    interval = start.to_bytes(8, "little") + end.to_bytes(8, "little")
    return (1).to_bytes(8, "little") + uuid + (1).to_bytes(8, "little") + interval


@pytest.mark.corpus
def test_transaction_context_carries_the_snapshot_and_the_write_set_for_certification() -> None:
    # Transaction_context_event: server_uuid_len u8 | thread_id u32 | gtid_specified u8 |
    # snapshot_version_len u32 | write_set_len u32 | read_set_len u32 | server_uuid | snapshot
    # (an encoded GTID set) | {len u16 | hash} * write_set_len | {len u16 | hash} * read_set_len
    server_uuid = b"83759871-1141-11ed-b12d-0242ac130003"
    snapshot = _gtid_set_one_interval(bytes.fromhex("83759871114111edb12d0242ac130003"), 1, 43)
    hashes = [b"1234567890123", b"98765"]
    body = (
        bytes([len(server_uuid)])
        + (77).to_bytes(4, "little")
        + b"\x01"
        + len(snapshot).to_bytes(4, "little")
        + len(hashes).to_bytes(4, "little")
        + (0).to_bytes(4, "little")
        + server_uuid
        + snapshot
        + b"".join(len(h).to_bytes(2, "little") + h for h in hashes)
    )
    event = built_event(description_of(corpus_path(MYSQL_8)), EventType.TRANSACTION_CONTEXT, body)
    assert decode_body(event) == TransactionContextEvent(
        server_uuid="83759871-1141-11ed-b12d-0242ac130003",
        thread_id=77,
        gtid_specified=True,
        snapshot_version="83759871-1141-11ed-b12d-0242ac130003:1-42",
        write_set=("1234567890123", "98765"),
        read_set=(),
    )


@pytest.mark.corpus
def test_transaction_context_counting_more_hashes_than_its_bytes_hold_is_refused_before_reading() -> None:
    body = b"\x00" + bytes(4) + b"\x00" + (8).to_bytes(4, "little") + (1 << 30).to_bytes(4, "little") + bytes(4)
    body += bytes(8) + b"\x00\x00"
    with pytest.raises(TruncatedError, match="write set"):
        decode_body(built_event(description_of(corpus_path(MYSQL_8)), EventType.TRANSACTION_CONTEXT, body))


@pytest.mark.corpus
def test_view_change_carries_the_view_id_sequence_number_and_certification_info() -> None:
    # View_change_event: view_id char[40] (NUL-padded) | seq_number u64 | cert_info_len u32 |
    # {key_len u16 | key | value_len u32 | value} * cert_info_len (read_data_map)
    view_id = b"16641234567890123:7"
    entries = [(b"group_gtid_executed", b"83759871-1141-11ed-b12d-0242ac130003:1-42"), (b"k2", b"")]
    body = (
        view_id.ljust(40, b"\x00")
        + (42).to_bytes(8, "little")
        + len(entries).to_bytes(4, "little")
        + b"".join(len(k).to_bytes(2, "little") + k + len(v).to_bytes(4, "little") + v for k, v in entries)
    )
    event = built_event(description_of(corpus_path(MYSQL_8)), EventType.VIEW_CHANGE, body)
    assert decode_body(event) == ViewChangeEvent("16641234567890123:7", 42, tuple((k.decode(), v) for k, v in entries))


@pytest.mark.corpus
def test_view_change_with_an_empty_view_id_is_malformed() -> None:
    # the server refuses it: "Invalid View_change information"
    body = bytes(40) + (1).to_bytes(8, "little") + bytes(4)
    with pytest.raises(MalformedError, match="empty view id"):
        decode_body(built_event(description_of(corpus_path(MYSQL_8)), EventType.VIEW_CHANGE, body))
