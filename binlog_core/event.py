"""One framed event and the FORMAT_DESCRIPTION state it is read with.

Event layout (binlog v3/v4, MySQL 4.0.2+)::

    0       4       5          9            13          17      19
    +-------+-------+----------+------------+-----------+-------+----------------+---------+
    | when  | type  | server_id| event_size | log_pos   | flags | post-header,   | [CRC32] |
    | u32   | u8    | u32      | u32        | u32       | u16   | body           |  u32    |
    +-------+-------+----------+------------+-----------+-------+----------------+---------+

v1 (MySQL 3.23) events have a 13-byte header: when, type, server_id, event_size.

https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_replication_binlog_event.html
MySQL ``libs/mysql/binlog/event/control_events.cpp`` (``Format_description_event``),
MariaDB ``sql/log_event.cc`` (``Format_description_log_event``).
"""

from __future__ import annotations

import json
import re
import zlib
from dataclasses import dataclass
from struct import Struct
from typing import NamedTuple

from binlog_core.constants import (
    CHECKSUM_LEN,
    LOG_EVENT_HEADER_LEN,
    OLD_HEADER_LEN,
    ST_SERVER_VER_LEN,
    ChecksumAlg,
    EventFlags,
    EventType,
    Flavor,
    event_type_name,
)
from binlog_core.cursor import Cursor
from binlog_core.errors import BinlogError, ChecksumMismatchError, MalformedError, TruncatedError

HEADER = Struct("<IBIIIH")
"""The 19-byte common header: when, type, server_id, event_size, log_pos, flags."""

OLD_HEADER = Struct("<IBII")
"""The 13-byte v1 header: when, type, server_id, event_size."""

CRC = Struct("<I")

MAX_EVENT_SIZE = 1 << 30
"""Largest event a server writes (``max_allowed_packet`` caps at 1 GiB); bigger sizes are corrupt."""

START_V3_BODY_LEN = 2 + ST_SERVER_VER_LEN + 4
_CHECKSUM_ALG_DESC_LEN = 1

_CHECKSUM_SPLIT = {Flavor.MYSQL: (5, 6, 1), Flavor.MARIADB: (5, 3, 0)}
"""First server version that writes the checksum-algorithm byte into FORMAT_DESCRIPTION."""

_VERSION_RE = re.compile(rb"(\d+)\.(\d+)\.(\d+)")


class EventHeader(NamedTuple):
    """The common header of one event."""

    timestamp: int
    type_code: int
    server_id: int
    event_size: int
    log_pos: int  # orig: log_pos -- next position for v4, own position for v3; 0 for MariaDB 11.4+
    flags: int


@dataclass(frozen=True, slots=True)
class FormatDescription:
    """What the latest FORMAT_DESCRIPTION (or START_V3) says about how to read the events after it."""

    binlog_version: int
    server_version: str
    create_timestamp: int
    header_length: int
    post_header_lengths: bytes  # orig: post_header_len; index = type code - 1
    checksum_alg: ChecksumAlg
    flavor: Flavor
    version: tuple[int, int, int]
    type_permutation: bytes | None = None
    """On-disk type code -> type code, for the 5.1/5.2 development trees that numbered events
    differently (``None`` everywhere else); framing applies it to every header."""

    @property
    def has_checksum(self) -> bool:
        """Events after this description end with a CRC32."""
        return self.checksum_alg == ChecksumAlg.CRC32

    def post_header_len(self, type_code: int) -> int:
        """Post-header length the file declares for a type (0 when the table does not list it)."""
        if 0 < type_code <= len(self.post_header_lengths):
            return self.post_header_lengths[type_code - 1]
        return 0

    def at_least(self, major: int, minor: int, patch: int) -> bool:
        """The writing server's version is at least ``major.minor.patch``."""
        return self.version >= (major, minor, patch)

    def to_json(self) -> str:
        """A compact JSON form, so a description can be stored beside events and rebuilt."""
        return json.dumps(
            {
                "binlog_version": self.binlog_version,
                "server_version": self.server_version,
                "create_timestamp": self.create_timestamp,
                "header_length": self.header_length,
                "post_header_lengths": self.post_header_lengths.hex(),
                "checksum_alg": int(self.checksum_alg),
                "flavor": self.flavor.name.lower(),
                "version": list(self.version),
                "type_permutation": None if self.type_permutation is None else self.type_permutation.hex(),
            },
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, text: str) -> FormatDescription:
        """Rebuild a description stored with :meth:`to_json`."""
        d = json.loads(text)
        major, minor, patch = d["version"]
        return cls(
            binlog_version=d["binlog_version"],
            server_version=d["server_version"],
            create_timestamp=d["create_timestamp"],
            header_length=d["header_length"],
            post_header_lengths=bytes.fromhex(d["post_header_lengths"]),
            checksum_alg=ChecksumAlg(d["checksum_alg"]),
            flavor=Flavor[d["flavor"].upper()],
            version=(major, minor, patch),
            type_permutation=None if d["type_permutation"] is None else bytes.fromhex(d["type_permutation"]),
        )


class Event:
    """One framed event: where it is, its header, its body bytes and the description in force.

    ``body`` excludes the common header and the checksum.  ``inner_index`` is ``None`` for
    events of the file and 0, 1, ... for events unpacked from a TRANSACTION_PAYLOAD, which
    share the outer event's ``offset``.  ``checksum_ok`` is ``None`` when the file has no
    checksums (or for inner events, which carry none).  ``problem`` is what framing found wrong
    inside a whole event: a TRANSACTION_PAYLOAD whose events could not all be unpacked (see
    :func:`binlog_core.payload.unpack_payload`); ``None`` otherwise.
    """

    __slots__ = ("body", "checksum_ok", "fde", "file", "header", "inner_index", "offset", "problem", "type_code")

    def __init__(
        self,
        file: str,
        offset: int,
        inner_index: int | None,
        header: EventHeader,
        body: bytes,
        fde: FormatDescription,
        checksum_ok: bool | None,
        problem: BinlogError | None = None,
    ) -> None:
        self.file = file
        self.offset = offset
        self.inner_index = inner_index
        self.header = header
        self.type_code: int = header[1]
        """The header's type byte."""
        self.body = body
        self.fde = fde
        self.checksum_ok = checksum_ok
        self.problem = problem

    @property
    def type_name(self) -> str:
        """``QUERY``, ``WRITE_ROWS``, ... or ``UNKNOWN_<n>``."""
        return event_type_name(self.type_code)

    @property
    def end_offset(self) -> int:
        """Offset just past this event in the file (for inner events: past the outer event)."""
        return self.offset + self.header.event_size if self.inner_index is None else self.offset

    def locate(self, exc: BinlogError) -> BinlogError:
        """Stamp this event's file, offset, inner index and type onto an error."""
        return exc.locate(file=self.file, offset=self.offset, inner_index=self.inner_index, event_type=self.type_name)

    def __repr__(self) -> str:
        inner = "" if self.inner_index is None else f"#{self.inner_index}"
        return f"Event({self.file}@{self.offset}{inner} {self.type_name} size={self.header.event_size})"


def parse_version(server_version: str) -> tuple[tuple[int, int, int], Flavor]:
    """``"10.11.6-MariaDB-log"`` -> ``((10, 11, 6), Flavor.MARIADB)``; unparsable -> ``(0, 0, 0)``."""
    raw = server_version.encode("latin-1", "replace")
    flavor = Flavor.MARIADB if b"mariadb" in raw.lower() else Flavor.MYSQL
    m = _VERSION_RE.match(raw)
    version = (int(m[1]), int(m[2]), int(m[3])) if m else (0, 0, 0)
    return version, flavor


def _server_version(raw: bytes) -> str:
    return raw.split(b"\x00", 1)[0].decode("latin-1")


def parse_format_description(event_bytes: bytes, header_len: int = LOG_EVENT_HEADER_LEN) -> FormatDescription:
    """Decode a FORMAT_DESCRIPTION event from its full bytes (header, body, and checksum if any).

    Body layout::

        binlog_version u16 | server_version char[50] | create_timestamp u32 |
        header_length u8 | post_header_len u8[n] | [checksum_alg u8 | crc u32]

    The checksum-algorithm byte and the 4 checksum bytes are present when the server is MySQL
    >= 5.6.1 or MariaDB >= 5.3, whatever the algorithm (with ``OFF`` the 4 bytes are still there).
    """
    c = Cursor(event_bytes, header_len)
    binlog_version = c.u16("binlog_version")
    server_version = _server_version(c.take(ST_SERVER_VER_LEN, "server_version"))
    create_timestamp = c.u32("create_timestamp")
    common_header_len = c.u8("header_length")
    version, flavor = parse_version(server_version)
    if common_header_len < LOG_EVENT_HEADER_LEN:
        raise MalformedError(f"header_length {common_header_len} is shorter than the 19-byte header")
    has_alg = version >= _CHECKSUM_SPLIT[flavor]
    tail = _CHECKSUM_ALG_DESC_LEN + CHECKSUM_LEN if has_alg else 0
    if c.remaining < tail:
        raise TruncatedError(f"checksum algorithm: needs {tail} bytes, {c.remaining} remain")
    post_header_lengths = c.take(c.remaining - tail, "post_header_len")
    alg = ChecksumAlg.UNDEF
    if has_alg:
        alg_byte = c.u8("checksum_alg")
        try:
            alg = ChecksumAlg(alg_byte)
        except ValueError:
            raise MalformedError(f"unknown checksum algorithm {alg_byte}") from None
    permutation = _dev_tree_permutation(server_version, len(post_header_lengths))
    if permutation is not None:
        permuted = bytearray(len(post_header_lengths))
        for on_disk in range(1, len(permutation)):
            permuted[permutation[on_disk] - 1] = post_header_lengths[on_disk - 1]
        post_header_lengths = bytes(permuted)
    return FormatDescription(
        binlog_version=binlog_version,
        server_version=server_version,
        create_timestamp=create_timestamp,
        header_length=common_header_len,
        post_header_lengths=post_header_lengths,
        checksum_alg=alg,
        flavor=flavor,
        version=version,
        type_permutation=permutation,
    )


_DEV_TREE_TYPES = bytes(
    (
        EventType.UNKNOWN, EventType.START_V3, EventType.QUERY, EventType.STOP, EventType.ROTATE,
        EventType.INTVAR, EventType.LOAD, EventType.SLAVE, EventType.CREATE_FILE, EventType.APPEND_BLOCK,
        EventType.EXEC_LOAD, EventType.DELETE_FILE, EventType.NEW_LOAD, EventType.RAND, EventType.USER_VAR,
        EventType.FORMAT_DESCRIPTION, EventType.TABLE_MAP, EventType.WRITE_ROWS_V0, EventType.UPDATE_ROWS_V0,
        EventType.DELETE_ROWS_V0, EventType.XID, EventType.BEGIN_LOAD_QUERY, EventType.EXECUTE_LOAD_QUERY,
    )
)  # fmt: skip
"""On-disk type -> type in the 5.1.1-5.1.5/5.1.4/5.2.0-5.2.2 ``-a_drop`` development trees."""


def _dev_tree_permutation(server_version: str, num_types: int) -> bytes | None:
    """The renumbering MySQL applies to the ``-a_drop5p``/``-a_drop6p`` development trees
    (``# orig: Format_description_event`` constructor, ``event_type_permutation``)."""
    v = server_version
    if len(v) < 13 or v[5:12] != "-a_drop" or num_types != 22:
        return None
    known = (
        (v[2] == "1" and "1" <= v[4] <= "5" and v[12] == "5")
        or (v[2] == "1" and v[4] == "4" and v[12] == "6")
        or (v[2] == "2" and "0" <= v[4] <= "2" and v[12] == "6")
    )
    return _DEV_TREE_TYPES if known else None


ROTATE_HEADER_LEN = 8
"""ROTATE's post-header: the position u64 in the next file (absent in v1 files)."""

# Post-header lengths of binlog v1-v3 files, which have no FORMAT_DESCRIPTION
# (MySQL 5.0 ``Format_description_log_event::Format_description_log_event`` for binlog_ver 1/3).
_V3_POST_HEADERS = {
    EventType.START_V3: START_V3_BODY_LEN,
    EventType.QUERY: 11,
    EventType.LOAD: 18,
    EventType.CREATE_FILE: 4,
    EventType.APPEND_BLOCK: 4,
    EventType.EXEC_LOAD: 4,
    EventType.DELETE_FILE: 4,
    EventType.NEW_LOAD: 18,
}


def start_v3_description(event_bytes: bytes, header_len: int) -> FormatDescription:
    """The description implied by a START_V3 event opening a v1, v2 or v3 file (MySQL 3.23 to 4.1).

    ``header_len`` is 13 for v1 files (MySQL 3.23) and 19 for v2 (4.0.0-4.0.1) and v3 (4.0.2-4.1).
    """
    c = Cursor(event_bytes, header_len)
    binlog_version = c.u16("binlog_version")
    server_version = _server_version(c.take(ST_SERVER_VER_LEN, "server_version"))
    create_timestamp = c.u32("create_timestamp")
    version, flavor = parse_version(server_version)
    table = bytearray(EventType.NEW_LOAD)
    for type_code, length in _V3_POST_HEADERS.items():
        table[type_code - 1] = length
    # ROTATE's 8-byte position is there in every file with 19-byte headers (v2 from MySQL
    # 4.0.0-4.0.1 too); v1 files (13-byte headers, 3.23) hold the next file's name alone.
    # MySQL 4.0 sql/log_event.cc Rotate_log_event(buf, event_len, old_format): no position when
    # old_format (the 13-byte header), else ``pos = uint8korr(buf + R_POS_OFFSET)``; MySQL 5.0
    # Format_description_log_event: ``post_header_len[ROTATE_EVENT-1] = (binlog_ver==1) ? 0 :
    # ROTATE_HEADER_LEN``.  https://github.com/mysql/mysql-server/blob/5.0/sql/log_event.cc
    table[EventType.ROTATE - 1] = 0 if header_len == OLD_HEADER_LEN else ROTATE_HEADER_LEN
    return FormatDescription(
        binlog_version=binlog_version,
        server_version=server_version,
        create_timestamp=create_timestamp,
        header_length=header_len,
        post_header_lengths=bytes(table),
        checksum_alg=ChecksumAlg.UNDEF,
        flavor=flavor,
        version=version,
    )


def description_crc(event_bytes: bytes) -> int:
    """CRC32 of a FORMAT_DESCRIPTION event as the server computes it: with BINLOG_IN_USE cleared.

    The server sets the in-use flag while it writes the file and clears it on close, in
    place, without rewriting the checksum; so the checksum always covers the cleared flag.
    """
    flags_at = 17
    flags = event_bytes[flags_at] & ~EventFlags.BINLOG_IN_USE
    crc = zlib.crc32(event_bytes[:flags_at])
    crc = zlib.crc32(bytes((flags,)), crc)
    return zlib.crc32(event_bytes[flags_at + 1 :], crc)


def checksum_error(event: Event) -> ChecksumMismatchError:
    """The typed error for an event yielded with ``checksum_ok=False``."""
    return ChecksumMismatchError(
        "stored CRC32 does not match the event's bytes; its body is not trusted",
        file=event.file,
        offset=event.offset,
        inner_index=event.inner_index,
        event_type=event.type_name,
    )
