"""Control events: descriptions, rotation, heartbeats, the statement context events, group replication.

Each decoder reads one event body (common header and checksum already removed) with a
:class:`binlog_core.cursor.Cursor` and returns a frozen dataclass.  Layouts follow MySQL
``libs/mysql/binlog/event/control_events.cpp`` / ``statement_events.cpp`` and MariaDB
``sql/log_event.cc``; each decoder shows its layout.
https://github.com/mysql/mysql-server/tree/trunk/libs/mysql/binlog/event
https://github.com/MariaDB/server/blob/11.4/sql/log_event.cc
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import IntEnum
from struct import Struct
from typing import Final

from binlog_core.charsets import decode_text, is_undecodable
from binlog_core.constants import ST_SERVER_VER_LEN, ChecksumAlg, EventType
from binlog_core.cursor import Cursor, bounded_count
from binlog_core.decimal import decimal_size, decode_decimal
from binlog_core.errors import MalformedError
from binlog_core.event import Event
from binlog_core.events.common import Decoder, body_cursor, expect_end, name_text
from binlog_core.events.gtid import decode_gtid_set
from binlog_core.payload import decode_transaction_payload

# -- FORMAT_DESCRIPTION, START_V3 -----------------------------------------------------------

START_V3 = Struct(f"<H{ST_SERVER_VER_LEN}sIB")
"""binlog_version u16 | server_version char[50] | create_timestamp u32 | header_length u8."""


@dataclass(frozen=True, slots=True)
class FormatDescriptionEvent:
    """FORMAT_DESCRIPTION: how every event after it is framed and laid out.

    ``post_header_lengths`` are as written (index = type code - 1); ``checksum_alg`` is 255
    (UNDEF) for servers older than the checksum (MySQL < 5.6.1, MariaDB < 5.3).
    """

    binlog_version: int
    server_version: str
    create_timestamp: int
    header_length: int
    post_header_lengths: tuple[int, ...]
    checksum_alg: int
    flavor: str
    version: tuple[int, int, int]


def decode_format_description(event: Event) -> FormatDescriptionEvent:
    """Layout (``# orig: Format_description_event``)::

        binlog_version u16 | server_version char[50] | create_timestamp u32 | header_length u8 |
        post_header_len u8[n] | [checksum_alg u8 | 4 bytes]

    The checksum-algorithm byte exists when the server is MySQL >= 5.6.1 or MariaDB >= 5.3;
    with CRC32 framing has removed the 4 checksum bytes, with OFF they are zeros still here.
    """
    c = Cursor(event.body)
    binlog_version, raw_version, created, header_length = c.unpack(START_V3, "format description")
    alg = event.fde.checksum_alg
    tail = 0 if alg == ChecksumAlg.UNDEF else 1 + (4 if alg == ChecksumAlg.OFF else 0)
    c.need(tail, "checksum algorithm")
    lengths = c.take(c.remaining - tail, "post_header_len")
    if tail:
        written = c.u8("checksum_alg")
        if written != alg:
            raise MalformedError(f"checksum algorithm {written} differs from the {int(alg)} framing used")
        c.skip(tail - 1, "checksum room")
    return FormatDescriptionEvent(
        binlog_version=binlog_version,
        server_version=raw_version.split(b"\x00", 1)[0].decode("latin-1"),
        create_timestamp=created,
        header_length=header_length,
        post_header_lengths=tuple(lengths),
        checksum_alg=int(alg),
        flavor=event.fde.flavor.name.lower(),
        version=event.fde.version,
    )


START_V3_BODY = Struct(f"<H{ST_SERVER_VER_LEN}sI")
"""binlog_version u16 | server_version char[50] | create_timestamp u32 (``# orig: Start_event_v3``)."""


@dataclass(frozen=True, slots=True)
class StartV3Event:
    """START_V3: first event of MySQL 3.23-4.x (binlog v1/v3) files."""

    binlog_version: int
    server_version: str
    create_timestamp: int


def decode_start_v3(event: Event) -> StartV3Event:
    """Layout: ``binlog_version u16 | server_version char[50] | create_timestamp u32``."""
    c = Cursor(event.body)
    binlog_version, raw_version, created = c.unpack(START_V3_BODY, "start event")
    expect_end(c, "START_V3")
    return StartV3Event(binlog_version, raw_version.split(b"\x00", 1)[0].decode("latin-1"), created)


# -- ROTATE, STOP, INCIDENT, HEARTBEAT, IGNORABLE -------------------------------------------

FIRST_EVENT_POSITION: Final = 4
"""Where the first event of a file starts (after the magic): ROTATE's position in v1 files."""


@dataclass(frozen=True, slots=True)
class RotateEvent:
    """ROTATE: the server continues in ``next_file`` at ``position``."""

    position: int
    next_file: str


def decode_rotate(event: Event) -> RotateEvent:
    """Layout (``# orig: Rotate_event``)::

    [position u64  -- absent in v1 files (post-header length 0): then 4] | next file name (to the end)
    """
    c, post_header = body_cursor(event)
    position = c.u64("position") if post_header else FIRST_EVENT_POSITION
    if post_header > 8:
        c.skip(post_header - 8, "rotate post-header")
    name = c.rest()
    if not name:
        raise MalformedError("rotate event without a file name")
    return RotateEvent(position, name_text(name))


@dataclass(frozen=True, slots=True)
class StopEvent:
    """STOP: the server shut down; the file ends here."""


def decode_stop(event: Event) -> StopEvent:
    """STOP has no body."""
    expect_end(Cursor(event.body), "STOP")
    return StopEvent()


class IncidentType(IntEnum):
    """``# orig: enum_incident`` (0 NONE and anything above are invalid)."""

    LOST_EVENTS = 1


@dataclass(frozen=True, slots=True)
class IncidentEvent:
    """INCIDENT: something happened on the server that replicas must not paper over."""

    incident: IncidentType
    message: str


def decode_incident(event: Event) -> IncidentEvent:
    """Layout (``# orig: Incident_event``): ``incident u16 | message_len u8 | message``."""
    c, post_header = body_cursor(event, 2)
    number = c.u16("incident")
    try:
        incident = IncidentType(number)
    except ValueError:
        raise MalformedError(f"incident number {number} (only 1 LOST_EVENTS is defined)") from None
    if post_header > 2:
        c.skip(post_header - 2, "incident post-header")
    message = c.take(c.u8("message length"), "message")
    expect_end(c, "the incident message")
    return IncidentEvent(incident, name_text(message))


@dataclass(frozen=True, slots=True)
class HeartbeatEvent:
    """HEARTBEAT (v1): the source is alive; its coordinates are the file and the header's position."""

    log_file: str
    log_position: int


def decode_heartbeat(event: Event) -> HeartbeatEvent:
    """Layout (``# orig: Heartbeat_event``): the log file name, to the end; position = header log_pos."""
    name = event.body
    if not name:
        raise MalformedError("heartbeat without a log file name")
    return HeartbeatEvent(name_text(name), event.header.log_pos)


class HeartbeatField(IntEnum):
    """TLV field types of HEARTBEAT_V2 (``# orig: OTW_HB_*``)."""

    END_MARK = 0
    LOG_FILENAME = 1
    LOG_POSITION = 2


@dataclass(frozen=True, slots=True)
class HeartbeatV2Event:
    """HEARTBEAT_V2 (MySQL 8.0.26+): the coordinates of the last event the source sent."""

    log_file: str | None
    log_position: int | None


def decode_heartbeat_v2(event: Event) -> HeartbeatV2Event:
    """Layout (``# orig: codecs::binary::Heartbeat``), every number a length-encoded integer::

    { field_type | field_len | value[field_len] } ... | 0 (end mark)

    1 = log file name (bytes), 2 = log position (a length-encoded integer); others are skipped.
    """
    c = Cursor(event.body)
    log_file: str | None = None
    log_position: int | None = None
    while not c.at_end():
        field_type = c.packed_int("field type")
        if field_type == HeartbeatField.END_MARK:
            break
        value = c.sized(c.packed_int("field length"), f"heartbeat field {field_type}")
        if field_type == HeartbeatField.LOG_FILENAME:
            log_file = name_text(value.rest())
        elif field_type == HeartbeatField.LOG_POSITION:
            log_position = value.packed_int("log position")
            expect_end(value, "the log position")
    return HeartbeatV2Event(log_file, log_position)


@dataclass(frozen=True, slots=True)
class IgnorableEvent:
    """IGNORABLE: an event a reader may skip; kept as raw bytes."""

    raw: bytes


def decode_ignorable(event: Event) -> IgnorableEvent:
    """The body as it is."""
    return IgnorableEvent(event.body)


# -- XID, INTVAR, RAND ----------------------------------------------------------------------


_XID = Struct("<Q")


@dataclass(frozen=True, slots=True)
class XidEvent:
    """XID: commit of an XA-capable (InnoDB) transaction with this internal id."""

    xid: int


def decode_xid(event: Event) -> XidEvent:
    """Layout: ``xid u64`` (``# orig: Xid_event``; printed unsigned by the server tools)."""
    body = event.body
    if len(body) == 8 and event.fde.post_header_len(event.header.type_code) == 0:  # as every server writes it
        return XidEvent(_XID.unpack(body)[0])
    c, post_header = body_cursor(event)
    c.skip(post_header, "xid post-header")
    xid = c.u64("xid")
    expect_end(c, "the xid")
    return XidEvent(xid)


class IntvarType(IntEnum):
    """``# orig: Intvar_event::Int_event_type`` (0 INVALID_INT is invalid)."""

    LAST_INSERT_ID = 1
    INSERT_ID = 2


INTVAR = Struct("<BQ")
"""type u8 | value u64."""


@dataclass(frozen=True, slots=True)
class IntvarEvent:
    """INTVAR: the LAST_INSERT_ID() or AUTO_INCREMENT value the next statement uses."""

    var_type: IntvarType
    value: int


def decode_intvar(event: Event) -> IntvarEvent:
    """Layout (``# orig: Intvar_event``): ``type u8 | value u64``."""
    c, post_header = body_cursor(event)
    c.skip(post_header, "intvar post-header")
    raw_type, value = c.unpack(INTVAR, "intvar")
    expect_end(c, "the intvar value")
    try:
        var_type = IntvarType(raw_type)
    except ValueError:
        raise MalformedError(f"intvar type {raw_type} (1 LAST_INSERT_ID or 2 INSERT_ID)") from None
    return IntvarEvent(var_type, value)


RAND = Struct("<QQ")
"""seed1 u64 | seed2 u64."""


@dataclass(frozen=True, slots=True)
class RandEvent:
    """RAND: the two seeds of RAND() for the next statement."""

    seed1: int
    seed2: int


def decode_rand(event: Event) -> RandEvent:
    """Layout (``# orig: Rand_event``): ``seed1 u64 | seed2 u64``."""
    c, post_header = body_cursor(event)
    c.skip(post_header, "rand post-header")
    seed1, seed2 = c.unpack(RAND, "rand seeds")
    expect_end(c, "the rand seeds")
    return RandEvent(seed1, seed2)


# -- USER_VAR -------------------------------------------------------------------------------


class UserVarType(IntEnum):
    """``# orig: Item_result`` as USER_VAR stores it (3 ROW_RESULT is invalid here)."""

    STRING = 0
    REAL = 1
    INT = 2
    DECIMAL = 4


USER_VAR_UNSIGNED: Final = 0x01
"""``# orig: User_var_event::UNSIGNED_F`` in the trailing flags byte."""

USER_VAR_VALUE = Struct("<BII")
"""type u8 | charset (collation id) u32 | val_len u32."""

_REAL = Struct("<d")


@dataclass(frozen=True, slots=True)
class UserVarEvent:
    """USER_VAR: the value of ``@name`` the next statement reads.

    ``value`` is ``None`` for NULL, ``str`` for text (``bytes`` for binary strings or text
    that does not decode in its collation: then ``undecodable_text``), ``float`` for REAL,
    ``int`` for INT (unsigned when the flags byte says so), and MySQL's text for DECIMAL.
    """

    name: str
    is_null: bool
    value_type: UserVarType | None
    collation_id: int | None
    value: str | int | float | bytes | None
    flags: int | None
    is_unsigned: bool
    undecodable_text: bool


def decode_user_var(event: Event) -> UserVarEvent:
    """Layout (``# orig: User_var_event``)::

    name_len u32 | name | is_null u8
    if not null:  type u8 | charset u32 | val_len u32 | val[val_len] | [flags u8  -- MySQL 5.5+]

    val:  STRING   the bytes, in collation ``charset``
          REAL     float64
          INT      int64 (uint64 with flags & UNSIGNED_F)
          DECIMAL  precision u8 | scale u8 | binary decimal (``decimal2bin``)
    """
    c, post_header = body_cursor(event)
    c.skip(post_header, "user var post-header")
    name_len = c.u32("name length")
    if name_len == 0:
        raise MalformedError("user variable with an empty name")
    name = name_text(c.take(name_len, "name"))
    if c.u8("is_null"):
        expect_end(c, "a NULL user variable")
        return UserVarEvent(name, True, None, None, None, None, False, False)
    raw_type, collation_id, val_len = c.unpack(USER_VAR_VALUE, "user var value header")
    try:
        value_type = UserVarType(raw_type)
    except ValueError:
        raise MalformedError(f"user variable type {raw_type} (0 STRING, 1 REAL, 2 INT, 4 DECIMAL)") from None
    val = c.sized(val_len, "value")
    flags = None if c.at_end() else c.u8("flags")
    expect_end(c, "the user variable flags")
    unsigned = bool(flags is not None and flags & USER_VAR_UNSIGNED)
    value = _USER_VAR_VALUES[value_type](val, collation_id, unsigned)
    undecodable = value_type == UserVarType.STRING and is_undecodable(value, collation_id)
    return UserVarEvent(name, False, value_type, collation_id, value, flags, unsigned, undecodable)


def _string_value(val: Cursor, collation_id: int, _unsigned: bool) -> str | bytes:
    return decode_text(val.rest(), collation_id, None)


def _real_value(val: Cursor, _collation_id: int, _unsigned: bool) -> float:
    (number,) = val.unpack(_REAL, "REAL value")
    expect_end(val, "the REAL value")
    return float(number)


def _int_value(val: Cursor, _collation_id: int, unsigned: bool) -> int:
    number = val.u64("INT value") if unsigned else val.i64("INT value")
    expect_end(val, "the INT value")
    return number


def _decimal_value(val: Cursor, _collation_id: int, _unsigned: bool) -> str:
    precision = val.u8("decimal precision")
    scale = val.u8("decimal scale")
    size = decimal_size(precision, scale)
    digits = val.take(size, f"DECIMAL({precision},{scale}) value")
    expect_end(val, "the DECIMAL value")
    text, _ = decode_decimal(digits, 0, precision, scale)
    return text


UserVarValue = str | int | float | bytes

_USER_VAR_VALUES: Final[dict[UserVarType, Callable[[Cursor, int, bool], UserVarValue]]] = {
    UserVarType.STRING: _string_value,
    UserVarType.REAL: _real_value,
    UserVarType.INT: _int_value,
    UserVarType.DECIMAL: _decimal_value,
}


# -- statement annotations ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RowsQueryEvent:
    """ROWS_QUERY (MySQL) or ANNOTATE_ROWS (MariaDB): the statement behind the rows events that follow.

    The text is UTF-8 when it decodes; otherwise the bytes are kept and ``undecodable_text`` is set.
    """

    statement: str | bytes
    undecodable_text: bool


def _statement_text(raw: bytes) -> RowsQueryEvent:
    text = decode_text(raw, None, "utf-8")
    return RowsQueryEvent(text, isinstance(text, bytes))


def decode_rows_query(event: Event) -> RowsQueryEvent:
    """Layout (``# orig: Rows_query_event``): ``length u8 (the length mod 256; ignored) | statement``."""
    c, post_header = body_cursor(event)
    c.skip(post_header, "rows query post-header")
    c.skip(1, "statement length byte")
    return _statement_text(c.rest())


def decode_annotate_rows(event: Event) -> RowsQueryEvent:
    """Layout (``# orig: Annotate_rows_log_event``): the statement, the whole body."""
    if event.fde.post_header_len(event.header.type_code) == 0:  # as every server writes it
        try:
            return RowsQueryEvent(event.body.decode("utf-8"), False)
        except UnicodeDecodeError:
            pass
    c, post_header = body_cursor(event)
    c.skip(post_header, "annotate rows post-header")
    return _statement_text(c.rest())


# -- MariaDB: BINLOG_CHECKPOINT, START_ENCRYPTION -------------------------------------------


@dataclass(frozen=True, slots=True)
class BinlogCheckpointEvent:
    """BINLOG_CHECKPOINT (MariaDB): the oldest file crash recovery may still need."""

    file: str


def decode_binlog_checkpoint(event: Event) -> BinlogCheckpointEvent:
    """Layout (``# orig: Binlog_checkpoint_log_event``): ``file_len u32 | file name[file_len]``."""
    c, post_header = body_cursor(event, 4)
    file_len = c.u32("file name length")
    if post_header > 4:
        c.skip(post_header - 4, "checkpoint post-header")
    name = c.take(file_len, "file name")
    expect_end(c, "the checkpoint file name")
    return BinlogCheckpointEvent(name_text(name))


START_ENCRYPTION = Struct("<BI12s")
"""scheme u8 | key_version u32 | nonce[12]."""


@dataclass(frozen=True, slots=True)
class StartEncryptionEvent:
    """START_ENCRYPTION (MariaDB): every event after it is encrypted (framing stops there)."""

    scheme: int
    key_version: int
    nonce: bytes


def decode_start_encryption(event: Event) -> StartEncryptionEvent:
    """Layout (``# orig: Start_encryption_log_event``): ``scheme u8 | key_version u32 | nonce[12]``."""
    c = Cursor(event.body)
    scheme, key_version, nonce = c.unpack(START_ENCRYPTION, "encryption parameters")
    expect_end(c, "the nonce")
    return StartEncryptionEvent(scheme, key_version, nonce)


# -- MySQL group replication: TRANSACTION_CONTEXT, VIEW_CHANGE ------------------------------

TRANSACTION_CONTEXT = Struct("<BIBIII")
"""server_uuid_len u8 | thread_id u32 | gtid_specified u8 | snapshot_version_len u32 |
write_set_len u32 | read_set_len u32."""


@dataclass(frozen=True, slots=True)
class TransactionContextEvent:
    """TRANSACTION_CONTEXT (MySQL group replication): what certification needs of a transaction.

    ``snapshot_version`` is the GTID set the transaction saw, as MySQL prints a GTID set;
    the write and read sets are the hashes of the rows it touched.
    """

    server_uuid: str
    thread_id: int
    gtid_specified: bool
    snapshot_version: str
    write_set: tuple[str, ...]
    read_set: tuple[str, ...]


def _hash_set(c: Cursor, count: int, what: str) -> tuple[str, ...]:
    """``count`` items of ``len u16 | bytes`` (``# orig: Event_reader::read_data_set``)."""
    bounded_count(count, c.remaining // 2, what)
    return tuple(name_text(c.take(c.u16(f"{what} item length"), f"{what} item")) for _ in range(count))


def decode_transaction_context(event: Event) -> TransactionContextEvent:
    """Layout (``# orig: Transaction_context_event``)::

    server_uuid_len u8 | thread_id u32 | gtid_specified u8 | snapshot_version_len u32 |
    write_set_len u32 | read_set_len u32 | server_uuid | snapshot_version (encoded GTID set) |
    write_set: { len u16 | hash } * write_set_len | read_set: { len u16 | hash } * read_set_len
    """
    c = Cursor(event.body)
    uuid_len, thread_id, gtid_specified, snapshot_len, num_write, num_read = c.unpack(
        TRANSACTION_CONTEXT, "transaction context"
    )
    server_uuid = name_text(c.take(uuid_len, "server uuid"))
    snapshot = decode_gtid_set(c.take(snapshot_len, "snapshot version")).text
    write_set = _hash_set(c, num_write, "write set")
    read_set = _hash_set(c, num_read, "read set")
    expect_end(c, "the read set")
    return TransactionContextEvent(server_uuid, thread_id, bool(gtid_specified), snapshot, write_set, read_set)


VIEW_ID_LEN: Final = 40
VIEW_CHANGE = Struct(f"<{VIEW_ID_LEN}sqI")
"""view_id char[40] | seq_number i64 | cert_info_len u32."""


@dataclass(frozen=True, slots=True)
class ViewChangeEvent:
    """VIEW_CHANGE (MySQL group replication): a member joined or left; the certification state then."""

    view_id: str
    seq_number: int
    certification_info: tuple[tuple[str, bytes], ...]


def decode_view_change(event: Event) -> ViewChangeEvent:
    """Layout (``# orig: View_change_event``)::

    view_id char[40] (NUL-padded) | seq_number i64 | cert_info_len u32 |
    { key_len u16 | key | value_len u32 | value } * cert_info_len
    """
    c = Cursor(event.body)
    raw_view_id, seq_number, num_entries = c.unpack(VIEW_CHANGE, "view change")
    view_id = raw_view_id.split(b"\x00", 1)[0]
    if not view_id:
        raise MalformedError("view change with an empty view id")
    bounded_count(num_entries, c.remaining // 6, "certification info entries")
    entries = []
    for _ in range(num_entries):
        key = name_text(c.take(c.u16("certification key length"), "certification key"))
        entries.append((key, c.take(c.u32("certification value length"), "certification value")))
    expect_end(c, "the certification info")
    return ViewChangeEvent(name_text(view_id), seq_number, tuple(entries))


# -- TRANSACTION_PAYLOAD --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TransactionPayloadEvent:
    """TRANSACTION_PAYLOAD (MySQL 8.0.20+): a compressed transaction; framing unpacks its events.

    ``compression_type``: 0 zstd, 255 none.  ``payload`` (not serialized) is still compressed.
    """

    compression_type: int
    payload_size: int
    uncompressed_size: int | None
    payload: bytes = field(repr=False)


def decode_transaction_payload_event(event: Event) -> TransactionPayloadEvent:
    """The TLV header, as :func:`binlog_core.payload.decode_transaction_payload` reads it."""
    header = decode_transaction_payload(event.body)
    return TransactionPayloadEvent(
        header.compression_type, header.payload_size, header.uncompressed_size, header.payload
    )


CONTROL_DECODERS: Final[dict[int, Decoder]] = {
    EventType.START_V3: decode_start_v3,
    EventType.STOP: decode_stop,
    EventType.ROTATE: decode_rotate,
    EventType.INTVAR: decode_intvar,
    EventType.RAND: decode_rand,
    EventType.USER_VAR: decode_user_var,
    EventType.FORMAT_DESCRIPTION: decode_format_description,
    EventType.XID: decode_xid,
    EventType.INCIDENT: decode_incident,
    EventType.HEARTBEAT: decode_heartbeat,
    EventType.IGNORABLE: decode_ignorable,
    EventType.ROWS_QUERY: decode_rows_query,
    EventType.TRANSACTION_CONTEXT: decode_transaction_context,
    EventType.VIEW_CHANGE: decode_view_change,
    EventType.TRANSACTION_PAYLOAD: decode_transaction_payload_event,
    EventType.HEARTBEAT_V2: decode_heartbeat_v2,
    EventType.ANNOTATE_ROWS: decode_annotate_rows,
    EventType.BINLOG_CHECKPOINT: decode_binlog_checkpoint,
    EventType.START_ENCRYPTION: decode_start_encryption,
}
"""Type code -> decoder for the control events of this module."""
