"""Transaction identity: MySQL and MariaDB GTIDs, GTID sets and lists, XA PREPARE.

Each GTID body carries a ``gtid`` field with the string the server tools print:
``3e11fa47-71ca-11e1-9e33-c80aa9429562:23`` (MySQL), ``uuid:tag:gno`` (MySQL 8.3+ tagged),
``0-1-100`` (MariaDB: domain, server id, sequence number); anonymous MySQL transactions have
``gtid = None``.  Sets and lists render under other names (``gtid_set``, ``gtid_list``) so
that ``gtid`` always names the transaction being read.

Sources: MySQL ``libs/mysql/binlog/event/control_events.{h,cpp}`` (``Gtid_event``,
``Previous_gtids_event``, ``XA_prepare_event``), ``sql/rpl_gtid_set.cc`` (``Gtid_set::encode``),
``libs/mysql/serialization`` (the format of GTID_TAGGED); MariaDB ``sql/log_event.cc``
(``Gtid_log_event``, ``Gtid_list_log_event``).
https://github.com/mysql/mysql-server/tree/trunk/libs/mysql/binlog/event
https://github.com/MariaDB/server/blob/11.4/sql/log_event.cc
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum, IntFlag
from struct import Struct
from typing import Final

from binlog_core.constants import EventType
from binlog_core.cursor import Cursor, bounded_count
from binlog_core.errors import MalformedError, TruncatedError, UnsupportedError
from binlog_core.event import Event
from binlog_core.events.common import Decoder, body_cursor, expect_end, name_text, uuid_text

GNO_END: Final = (1 << 63) - 1
"""One past the largest GNO (``# orig: GNO_END``); GNOs start at 1."""

TAG_MAX_LENGTH: Final = 32
"""``# orig: mysql::gtid::tag_max_length``."""

# -- the variable-length integers of MySQL's serialization library --------------------------


def read_varlen(c: Cursor, what: str, limit: int = (1 << 64) - 1) -> int:
    """An unsigned variable-length integer of ``libs/mysql/serialization`` (1-9 bytes)::

        first byte: n-1 trailing one bits, a zero bit, then the low value bits; n = bytes in all
        n <= 8:  value = (first >> n) | (next n-1 bytes, little-endian) << (8 - n)
        n == 9:  (first byte 0xff) value = the next 8 bytes, little-endian

    ``# orig: read_varlen_bytes_unsigned``; values above ``limit`` (the field type's maximum)
    are malformed, as the library reports them.
    """
    first = c.u8(what)
    n = 9 if first == 0xFF else (~first & (first + 1)).bit_length()
    if n == 1:
        value = first >> 1
    else:
        rest = int.from_bytes(c.take(n - 1, what), "little")
        value = rest if n == 9 else (first >> n) | (rest << (8 - n))
    if value > limit:
        raise MalformedError(f"{what}: {value} exceeds the field's maximum {limit}")
    return value


def read_varlen_signed(c: Cursor, what: str) -> int:
    """A signed variable-length integer: zig-zag (sign in bit 0) over :func:`read_varlen`."""
    raw = read_varlen(c, what)
    return -(raw >> 1) - 1 if raw & 1 else raw >> 1


# -- GTID sets (PREVIOUS_GTIDS, and inside TRANSACTION_CONTEXT) ------------------------------

GTID_SET_HEADER = Struct("<Q")
INTERVAL = Struct("<qq")
TAGGED_FORMAT: Final = 1
"""Format byte of a tagged GTID set (MySQL 8.3+), repeated in the lowest and highest header byte."""


@dataclass(frozen=True, slots=True)
class GtidSetEntry:
    """One UUID (and tag) of a GTID set; ``intervals`` are inclusive ``(first, last)`` GNOs."""

    uuid: str
    tag: str
    intervals: tuple[tuple[int, int], ...]


@dataclass(frozen=True, slots=True)
class GtidSet:
    """A decoded GTID set and ``text``, the way MySQL prints it."""

    tagged: bool
    entries: tuple[GtidSetEntry, ...]
    text: str


def format_gtid_set(entries: tuple[GtidSetEntry, ...]) -> str:
    """MySQL's text: ``uuid:1-5:7,\\nuuid2:1-3:tag:1-2`` (``# orig: Gtid_set::to_string``).

    Entries of one UUID are joined (untagged intervals first, as the encoding sorts them);
    UUIDs are separated by ``",\\n"`` like ``@@gtid_executed``.
    """
    groups: dict[str, list[str]] = {}
    for entry in entries:
        parts = groups.setdefault(entry.uuid, [entry.uuid])
        if entry.tag:
            parts.append(entry.tag)
        parts.extend(str(first) if first == last else f"{first}-{last}" for first, last in entry.intervals)
    return ",\n".join(":".join(parts) for parts in groups.values())


def decode_gtid_set(raw: bytes) -> GtidSet:
    """Decode an encoded GTID set (``# orig: Gtid_set::encode``)::

    header u64:  untagged  number of UUIDs (the top byte is 0)
                 tagged    1 | number of UUIDs, 6 bytes | 1     (MySQL 8.3+)
    per UUID:    uuid[16] | [tag: varlen length | bytes -- tagged only] |
                 n_intervals u64 | { start u64 | end u64 (exclusive) } * n_intervals
    """
    c = Cursor(raw)
    (word,) = c.unpack(GTID_SET_HEADER, "GTID set header")
    tagged = word >> 56 == TAGGED_FORMAT
    if tagged:
        if word & 0xFF != TAGGED_FORMAT:
            raise MalformedError(f"tagged GTID set header {word:#018x}: the format byte is not repeated")
        num_sids = (word >> 8) & ((1 << 48) - 1)
    elif word >> 56 == 0:
        num_sids = word
    else:
        raise MalformedError(f"GTID set format {word >> 56} (0 untagged, 1 tagged)")
    bounded_count(num_sids, c.remaining // 25, "GTID set UUIDs")
    entries = []
    for _ in range(num_sids):
        uuid = uuid_text(c.take(16, "UUID"))
        tag = ""
        if tagged:
            tag = name_text(c.take(read_varlen(c, "tag length", TAG_MAX_LENGTH), "tag"))
        num_intervals = bounded_count(c.u64("interval count"), c.remaining // INTERVAL.size, "GTID intervals")
        intervals = []
        for _ in range(num_intervals):
            start, end = c.unpack(INTERVAL, "GTID interval")
            if start <= 0 or end <= start:
                raise MalformedError(f"GTID interval [{start}, {end}) of {uuid} is empty or below 1")
            intervals.append((start, end - 1))
        entries.append(GtidSetEntry(uuid, tag, tuple(intervals)))
    expect_end(c, "the GTID set")
    done = tuple(entries)
    return GtidSet(tagged, done, format_gtid_set(done))


@dataclass(frozen=True, slots=True)
class PreviousGtidsEvent:
    """PREVIOUS_GTIDS: every GTID written to the files before this one (``gtid_set`` as MySQL prints it)."""

    gtid_set: str
    tagged: bool
    entries: tuple[GtidSetEntry, ...]


def decode_previous_gtids(event: Event) -> PreviousGtidsEvent:
    """Layout: an encoded GTID set, the whole body (see :func:`decode_gtid_set`)."""
    c, post_header = body_cursor(event)
    c.skip(post_header, "previous GTIDs post-header")
    gtid_set = decode_gtid_set(c.rest())
    return PreviousGtidsEvent(gtid_set.text, gtid_set.tagged, gtid_set.entries)


# -- MySQL GTID, ANONYMOUS_GTID, GTID_TAGGED -------------------------------------------------

GTID_FIXED = Struct("<B16sq")
"""flags u8 | sid[16] | gno i64."""

LOGICAL_CLOCK = Struct("<qq")
"""last_committed i64 | sequence_number i64."""

LOGICAL_TIMESTAMP_TYPECODE: Final = 2
COMMIT_TIMESTAMP_LEN: Final = 7
ORIGINAL_PRESENT_TS: Final = 1 << 55
"""Bit 55 of the 7-byte immediate commit timestamp: an original commit timestamp follows."""
ORIGINAL_PRESENT_VERSION: Final = 1 << 31
"""Bit 31 of the immediate server version: an original server version follows."""
FLAG_MAY_HAVE_SBR: Final = 0x01


@dataclass(frozen=True, slots=True)
class GtidEvent:
    """MySQL GTID, ANONYMOUS_GTID or GTID_TAGGED: the transaction that follows.

    Fields after ``gno`` are ``None`` when the writing server predates them.  Commit
    timestamps are microseconds since the epoch; server versions are ``80036``-style numbers.
    When no original value is stored it equals the immediate one, as the server reads it.
    ``trailing`` keeps bytes after the fields this format defines (newer servers' additions).
    """

    gtid: str | None
    uuid: str
    gno: int
    tag: str | None
    flags: int
    may_have_sbr: bool
    last_committed: int | None
    sequence_number: int | None
    immediate_commit_timestamp: int | None
    original_commit_timestamp: int | None
    transaction_length: int | None
    immediate_server_version: int | None
    original_server_version: int | None
    commit_group_ticket: int | None
    trailing: bytes = b""


def _check_gno(type_code: int, gno: int) -> None:
    if type_code == EventType.ANONYMOUS_GTID:
        if gno != 0:
            raise MalformedError(f"anonymous GTID with GNO {gno} (must be 0)")
    elif not 1 <= gno < GNO_END:
        raise MalformedError(f"GNO {gno} outside 1..2^63-2")


def decode_gtid(event: Event) -> GtidEvent:
    """GTID and ANONYMOUS_GTID, read as ``Gtid_event`` reads them (each part only if bytes remain)::

    flags u8 | sid[16] | gno i64 |
    [ typecode u8 (2) | last_committed i64 | sequence_number i64 |           -- 5.7+
      [ immediate_commit_ts 7 bytes (bit 55: original follows) | [original_commit_ts 7 bytes] |
        [ transaction_length packed |                                          -- 8.0.2+
          [ immediate_server_version u32 (bit 31: original follows) | [original u32] |
            [ commit_group_ticket u64 ] ] ] ] ]
    """
    c = Cursor(event.body)
    flags, sid, gno = c.unpack(GTID_FIXED, "GTID")
    _check_gno(event.type_code, gno)
    last_committed = sequence_number = None
    immediate_ts = original_ts = trx_length = immediate_version = original_version = ticket = None
    if not c.at_end() and c.buf[c.pos] == LOGICAL_TIMESTAMP_TYPECODE:
        c.skip(1, "logical timestamp typecode")
        last_committed, sequence_number = c.unpack(LOGICAL_CLOCK, "logical clock")
        if c.remaining >= COMMIT_TIMESTAMP_LEN:
            immediate_ts = c.uint(COMMIT_TIMESTAMP_LEN, "immediate commit timestamp")
            original_ts = immediate_ts
            if immediate_ts & ORIGINAL_PRESENT_TS:
                immediate_ts &= ~ORIGINAL_PRESENT_TS
                original_ts = c.uint(COMMIT_TIMESTAMP_LEN, "original commit timestamp")
            if not c.at_end():
                trx_length = c.packed_int("transaction length")
            if c.remaining >= 4:
                immediate_version = c.u32("immediate server version")
                original_version = immediate_version
                if immediate_version & ORIGINAL_PRESENT_VERSION:
                    immediate_version &= ~ORIGINAL_PRESENT_VERSION
                    original_version = c.u32("original server version")
                if c.remaining >= 8:
                    ticket = c.u64("commit group ticket")
    uuid = uuid_text(sid)
    gtid = None if event.type_code == EventType.ANONYMOUS_GTID else f"{uuid}:{gno}"
    return GtidEvent(
        gtid, uuid, gno, None, flags, bool(flags & FLAG_MAY_HAVE_SBR), last_committed, sequence_number,
        immediate_ts, original_ts, trx_length, immediate_version, original_version, ticket, c.rest(),
    )  # fmt: skip


class TaggedField(IntEnum):
    """Field ids of GTID_TAGGED (``# orig: Gtid_event::define_fields``, numbered in order)."""

    GTID_FLAGS = 0
    UUID = 1
    GNO = 2
    TAG = 3
    LAST_COMMITTED = 4
    SEQUENCE_NUMBER = 5
    IMMEDIATE_COMMIT_TIMESTAMP = 6
    ORIGINAL_COMMIT_TIMESTAMP = 7
    TRANSACTION_LENGTH = 8
    IMMEDIATE_SERVER_VERSION = 9
    ORIGINAL_SERVER_VERSION = 10
    COMMIT_GROUP_TICKET = 11


SERIALIZATION_FORMAT_VERSION: Final = 1
"""``# orig: serialization_format_version``: the id of the top-level message."""

_U8, _U32, _U64 = (1 << 8) - 1, (1 << 32) - 1, (1 << 64) - 1


def _uuid_field(c: Cursor) -> str:
    return uuid_text(bytes(read_varlen(c, "UUID byte", _U8) for _ in range(16)))


def _tag_field(c: Cursor) -> str:
    return name_text(c.take(read_varlen(c, "tag length", TAG_MAX_LENGTH), "tag"))


_TAGGED_READERS: Final[dict[TaggedField, Callable[[Cursor], object]]] = {
    TaggedField.GTID_FLAGS: lambda c: read_varlen(c, "GTID flags", _U8),
    TaggedField.UUID: _uuid_field,
    TaggedField.GNO: lambda c: read_varlen_signed(c, "GNO"),
    TaggedField.TAG: _tag_field,
    TaggedField.LAST_COMMITTED: lambda c: read_varlen_signed(c, "last_committed"),
    TaggedField.SEQUENCE_NUMBER: lambda c: read_varlen_signed(c, "sequence_number"),
    TaggedField.IMMEDIATE_COMMIT_TIMESTAMP: lambda c: read_varlen(c, "immediate commit timestamp"),
    TaggedField.ORIGINAL_COMMIT_TIMESTAMP: lambda c: read_varlen(c, "original commit timestamp"),
    TaggedField.TRANSACTION_LENGTH: lambda c: read_varlen(c, "transaction length"),
    TaggedField.IMMEDIATE_SERVER_VERSION: lambda c: read_varlen(c, "immediate server version", _U32),
    TaggedField.ORIGINAL_SERVER_VERSION: lambda c: read_varlen(c, "original server version", _U32),
    TaggedField.COMMIT_GROUP_TICKET: lambda c: read_varlen(c, "commit group ticket", _U64),
}
"""How each field of GTID_TAGGED is stored: integers as variable-length integers (signed ones
zig-zag), the UUID as 16 one-byte integers, the tag as a length-prefixed string."""


def decode_gtid_tagged(event: Event) -> GtidEvent:
    """GTID_TAGGED (MySQL 8.3+), a message of MySQL's serialization library::

        format_version varlen (1) | message_size varlen (of the whole message) |
        last_non_ignorable_field_id varlen | { field_id varlen | value } ...

    Fields appear in id order; optional ones are simply absent.  A field id this decoder does
    not know is skipped when it is ignorable (``last_non_ignorable_field_id`` says so) and
    unsupported otherwise, as the server does.
    """
    c = Cursor(event.body)
    version = read_varlen(c, "serialization format version")
    if version != SERIALIZATION_FORMAT_VERSION:
        raise UnsupportedError(f"serialization format version {version} (known: 1)")
    size = read_varlen(c, "message size")
    if size > len(event.body):
        raise TruncatedError(f"message declares {size} bytes, the event body has {len(event.body)}")
    if size < len(event.body):
        raise MalformedError(f"{len(event.body) - size} bytes after the {size}-byte message")
    last_non_ignorable = read_varlen(c, "last non-ignorable field id")
    if last_non_ignorable > max(TaggedField) + 1:
        raise UnsupportedError(f"non-ignorable field {last_non_ignorable - 1} is newer than this decoder")
    values: dict[TaggedField, object] = {}
    for field_id, reader in _TAGGED_READERS.items():
        if c.at_end():
            break
        start = c.pos
        if read_varlen(c, "field id") != field_id:
            c.pos = start  # absent: the next field's id is there
            continue
        values[field_id] = reader(c)
    trailing = c.rest()  # ignorable fields of a newer server
    uuid, gno = values.get(TaggedField.UUID), values.get(TaggedField.GNO)
    if not isinstance(uuid, str) or not isinstance(gno, int):
        raise MalformedError("tagged GTID without a UUID or a GNO")
    _check_gno(event.type_code, gno)
    tag = str(values.get(TaggedField.TAG, ""))
    flags = _int_or_none(values, TaggedField.GTID_FLAGS) or 0
    immediate_ts = _int_or_none(values, TaggedField.IMMEDIATE_COMMIT_TIMESTAMP)
    immediate_version = _int_or_none(values, TaggedField.IMMEDIATE_SERVER_VERSION)
    original_ts = _int_or_none(values, TaggedField.ORIGINAL_COMMIT_TIMESTAMP)
    original_version = _int_or_none(values, TaggedField.ORIGINAL_SERVER_VERSION)
    return GtidEvent(
        gtid=f"{uuid}:{tag}:{gno}" if tag else f"{uuid}:{gno}",
        uuid=uuid,
        gno=gno,
        tag=tag,
        flags=flags,
        may_have_sbr=bool(flags & FLAG_MAY_HAVE_SBR),
        last_committed=_int_or_none(values, TaggedField.LAST_COMMITTED),
        sequence_number=_int_or_none(values, TaggedField.SEQUENCE_NUMBER),
        immediate_commit_timestamp=immediate_ts,
        original_commit_timestamp=immediate_ts if original_ts is None else original_ts,
        transaction_length=_int_or_none(values, TaggedField.TRANSACTION_LENGTH),
        immediate_server_version=immediate_version,
        original_server_version=immediate_version if original_version is None else original_version,
        commit_group_ticket=_int_or_none(values, TaggedField.COMMIT_GROUP_TICKET),
        trailing=trailing,
    )


def _int_or_none(values: dict[TaggedField, object], key: TaggedField) -> int | None:
    value = values.get(key)
    return value if isinstance(value, int) else None


# -- XA_PREPARE -----------------------------------------------------------------------------

XA_PREPARE = Struct("<BiII")
"""one_phase u8 | format_id i32 | gtrid_length u32 | bqual_length u32."""
MAX_XID_PART: Final = 64
"""``# orig: MAXGTRIDSIZE``, ``MAXBQUALSIZE``."""


def format_xid(gtrid: bytes, bqual: bytes, format_id: int) -> str:
    """The XID as ``XA PREPARE`` is printed: ``X'6774',X'6271',3``."""
    return f"X'{gtrid.hex().upper()}',X'{bqual.hex().upper()}',{format_id}"


@dataclass(frozen=True, slots=True)
class XaPrepareEvent:
    """XA_PREPARE: ends the first phase of an XA transaction (or commits it, ``one_phase``)."""

    one_phase: bool
    format_id: int
    gtrid: bytes
    bqual: bytes
    xid: str


def decode_xa_prepare(event: Event) -> XaPrepareEvent:
    """Layout (``# orig: XA_prepare_event``)::

    one_phase u8 | format_id i32 | gtrid_length u32 | bqual_length u32 | gtrid | bqual
    """
    c, post_header = body_cursor(event)
    c.skip(post_header, "XA prepare post-header")
    one_phase, format_id, gtrid_len, bqual_len = c.unpack(XA_PREPARE, "XA prepare")
    if gtrid_len > MAX_XID_PART or bqual_len > MAX_XID_PART:
        raise MalformedError(f"XID parts of {gtrid_len} and {bqual_len} bytes (at most 64 each)")
    gtrid = c.take(gtrid_len, "gtrid")
    bqual = c.take(bqual_len, "bqual")
    expect_end(c, "the XID")
    return XaPrepareEvent(bool(one_phase), format_id, gtrid, bqual, format_xid(gtrid, bqual, format_id))


# -- MariaDB GTID, GTID_LIST ----------------------------------------------------------------


class MariaDBGtidFlags(IntFlag):
    """``flags2`` of a MariaDB GTID (``# orig: Gtid_log_event::FL_*``)."""

    STANDALONE = 0x01
    GROUP_COMMIT_ID = 0x02
    TRANSACTIONAL = 0x04
    ALLOW_PARALLEL = 0x08
    WAITED = 0x10
    DDL = 0x20
    PREPARED_XA = 0x40
    COMPLETED_XA = 0x80


class MariaDBGtidExtraFlags(IntFlag):
    """``flags_extra`` (10.5+; ``# orig: Gtid_log_event::FL_*_E1``)."""

    MULTI_ENGINE = 0x01
    START_ALTER = 0x02
    COMMIT_ALTER = 0x04
    ROLLBACK_ALTER = 0x08
    THREAD_ID = 0x10  # 11.5+


_FL_GROUP_COMMIT_ID: Final = int(MariaDBGtidFlags.GROUP_COMMIT_ID)
_FL_XA: Final = int(MariaDBGtidFlags.PREPARED_XA | MariaDBGtidFlags.COMPLETED_XA)
_FL_E1_MULTI_ENGINE: Final = int(MariaDBGtidExtraFlags.MULTI_ENGINE)
_FL_E1_ALTER_END: Final = int(MariaDBGtidExtraFlags.COMMIT_ALTER | MariaDBGtidExtraFlags.ROLLBACK_ALTER)
_FL_E1_THREAD_ID: Final = int(MariaDBGtidExtraFlags.THREAD_ID)
_GTID_FLAG_NAMES: Final = tuple(tuple(f.name or "" for f in MariaDBGtidFlags if flags & f) for flags in range(256))
"""``flags2`` byte -> names of its set flags (plain ints in the hot path: ``IntFlag`` operators are slow)."""

MARIADB_GTID = Struct("<QIB")
"""seq_no u64 | domain_id u32 | flags2 u8."""
MARIADB_XID = Struct("<iBB")
"""format_id i32 | gtrid_length u8 | bqual_length u8."""


@dataclass(frozen=True, slots=True)
class MariaDBGtidEvent:
    """MariaDB GTID: starts an event group (``gtid`` = ``domain-server-seq``).

    ``xa_*`` are set for XA PREPARE / XA COMMIT groups; the ``flags_extra`` byte and what
    it announces (engine count, START/COMMIT/ROLLBACK ALTER sequence number, thread id)
    come with MariaDB 10.5+.  ``trailing`` keeps non-zero bytes after the known fields.
    """

    gtid: str
    domain_id: int
    server_id: int
    seq_no: int
    flags: int
    flag_names: tuple[str, ...]
    commit_id: int | None
    xa_format_id: int | None
    xa_gtrid: bytes | None
    xa_bqual: bytes | None
    flags_extra: int | None
    extra_engines: int | None
    sa_seq_no: int | None
    thread_id: int | None
    trailing: bytes = b""


_new = object.__new__
_slots = vars(MariaDBGtidEvent)
_set_gtid = _slots["gtid"].__set__
_set_domain_id = _slots["domain_id"].__set__
_set_server_id = _slots["server_id"].__set__
_set_seq_no = _slots["seq_no"].__set__
_set_flags = _slots["flags"].__set__
_set_flag_names = _slots["flag_names"].__set__
_set_flags_extra = _slots["flags_extra"].__set__
_set_trailing = _slots["trailing"].__set__
_SET_NONE = tuple(
    _slots[name].__set__
    for name in ("commit_id", "xa_format_id", "xa_gtrid", "xa_bqual", "extra_engines", "sa_seq_no", "thread_id")
)


def decode_mariadb_gtid(event: Event) -> MariaDBGtidEvent:
    """Layout (``# orig: Gtid_log_event``), zero-padded to the 19-byte post-header when shorter::

    seq_no u64 | domain_id u32 | flags2 u8 |
    [commit_id u64                                  -- flags2 & GROUP_COMMIT_ID] |
    [format_id i32 | gtrid_len u8 | bqual_len u8 | gtrid | bqual  -- PREPARED_XA|COMPLETED_XA] |
    [flags_extra u8 | [extra_engines u8 -- MULTI_ENGINE] |
     [sa_seq_no u64 -- COMMIT_ALTER|ROLLBACK_ALTER] | [thread_id u32 -- THREAD_ID]]
    """
    body = event.body
    if (
        len(body) == 19
        and not body[12] & (_FL_GROUP_COMMIT_ID | _FL_XA)
        and not body[13]
        and not body[14:].strip(b"\x00")
    ):
        # the usual shape: no commit id, no XA, zero flags_extra and padding
        seq_no, domain_id, flags = MARIADB_GTID.unpack_from(body, 0)
        server_id = event.header.server_id
        # MariaDBGtidEvent(...) filled through its slots: the frozen dataclass's __init__ pays a
        # __setattr__ call per field, and this runs once per transaction
        gtid = _new(MariaDBGtidEvent)
        _set_gtid(gtid, f"{domain_id}-{server_id}-{seq_no}")
        _set_domain_id(gtid, domain_id)
        _set_server_id(gtid, server_id)
        _set_seq_no(gtid, seq_no)
        _set_flags(gtid, flags)
        _set_flag_names(gtid, _GTID_FLAG_NAMES[flags])
        _set_flags_extra(gtid, 0)
        for setter in _SET_NONE:
            setter(gtid, None)
        _set_trailing(gtid, b"")
        return gtid
    c = Cursor(body)
    seq_no, domain_id, flags = c.unpack(MARIADB_GTID, "GTID")
    commit_id = xa_format = xa_gtrid = xa_bqual = None
    flags_extra = engines = sa_seq_no = thread_id = None
    if flags & _FL_GROUP_COMMIT_ID:
        commit_id = c.u64("commit id")
    if flags & _FL_XA:
        xa_format, gtrid_len, bqual_len = c.unpack(MARIADB_XID, "XID")
        if gtrid_len > MAX_XID_PART or bqual_len > MAX_XID_PART:
            raise MalformedError(f"XID parts of {gtrid_len} and {bqual_len} bytes (at most 64 each)")
        xa_gtrid = c.take(gtrid_len, "gtrid")
        xa_bqual = c.take(bqual_len, "bqual")
    if not c.at_end():
        flags_extra = c.u8("flags_extra")
        if flags_extra & _FL_E1_MULTI_ENGINE:
            engines = c.u8("extra engines")
        if flags_extra & _FL_E1_ALTER_END:
            sa_seq_no = c.u64("start alter sequence number")
        if flags_extra & _FL_E1_THREAD_ID:
            thread_id = c.u32("thread id")
    rest = c.rest()
    server_id = event.header.server_id
    return MariaDBGtidEvent(
        gtid=f"{domain_id}-{server_id}-{seq_no}",
        domain_id=domain_id,
        server_id=server_id,
        seq_no=seq_no,
        flags=flags,
        flag_names=_GTID_FLAG_NAMES[flags],
        commit_id=commit_id,
        xa_format_id=xa_format,
        xa_gtrid=xa_gtrid,
        xa_bqual=xa_bqual,
        flags_extra=flags_extra,
        extra_engines=engines,
        sa_seq_no=sa_seq_no,
        thread_id=thread_id,
        trailing=rest if rest.strip(b"\x00") else b"",
    )


GTID_LIST_ENTRY = Struct("<IIQ")
"""domain_id u32 | server_id u32 | seq_no u64."""
GTID_LIST_COUNT_MASK: Final = (1 << 28) - 1
EMPTY_GTID_LIST_PADDING: Final = 2


@dataclass(frozen=True, slots=True)
class MariaDBGtidPosition:
    """One ``domain-server-seq`` entry of a GTID list."""

    domain_id: int
    server_id: int
    seq_no: int


@dataclass(frozen=True, slots=True)
class GtidListEvent:
    """GTID_LIST (MariaDB): the last GTID of each domain and server before this file.

    ``gtid_list`` is ``0-1-100,1-2-5``; ``flags`` are the count word's top 4 bits
    (1 = UNTIL_REACHED, 2 = IGN_GTIDS; both only in events a server generates on the fly).
    """

    gtid_list: str
    gtids: tuple[MariaDBGtidPosition, ...]
    flags: int


def decode_gtid_list(event: Event) -> GtidListEvent:
    """Layout (``# orig: Gtid_list_log_event``)::

    count u32 (low 28 bits: entries, top 4: flags) | { domain_id u32 | server_id u32 | seq_no u64 } * count
    """
    c, post_header = body_cursor(event, 4)
    word = c.u32("count and flags")
    if post_header > 4:
        c.skip(post_header - 4, "GTID list post-header")
    count = bounded_count(word & GTID_LIST_COUNT_MASK, c.remaining // GTID_LIST_ENTRY.size, "GTID list entries")
    gtids = tuple(MariaDBGtidPosition(*c.unpack(GTID_LIST_ENTRY, "GTID list entry")) for _ in range(count))
    if not gtids and c.remaining == EMPTY_GTID_LIST_PADDING:
        # the server pads an empty list with two zero bytes (``# orig: Gtid_list_log_event::to_packet``)
        c.skip(EMPTY_GTID_LIST_PADDING, "empty GTID list padding")
    expect_end(c, "the GTID list")
    text = ",".join(f"{g.domain_id}-{g.server_id}-{g.seq_no}" for g in gtids)
    return GtidListEvent(text, gtids, word >> 28)


GTID_DECODERS: Final[dict[int, Decoder]] = {
    EventType.GTID: decode_gtid,
    EventType.ANONYMOUS_GTID: decode_gtid,
    EventType.PREVIOUS_GTIDS: decode_previous_gtids,
    EventType.XA_PREPARE: decode_xa_prepare,
    EventType.GTID_TAGGED: decode_gtid_tagged,
    EventType.MARIADB_GTID: decode_mariadb_gtid,
    EventType.GTID_LIST: decode_gtid_list,
}
"""Type code -> decoder for the GTID family."""
