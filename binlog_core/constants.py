"""Wire constants of the binlog format: event types, column types, flags.

Sources: MySQL ``libs/mysql/binlog/event/binlog_event.h`` (``Log_event_type``),
``include/field_types.h`` (``enum_field_types``); MariaDB ``sql/log_event.h``.
https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_replication_binlog_event.html
"""

from __future__ import annotations

from enum import IntEnum, IntFlag

BINLOG_MAGIC = b"\xfebin"
"""The four bytes every binlog file starts with."""

MYSQL_ENCRYPTED_MAGIC = b"\xfdbin"
"""MySQL 8.0.14+ encrypted binlog files start with this, then a 512-byte keyring header."""

LOG_EVENT_HEADER_LEN = 19
"""Common header of binlog v3/v4 events: timestamp, type, server id, size, next position, flags."""

OLD_HEADER_LEN = 13
"""Common header of binlog v1 (MySQL 3.23) events: timestamp, type, server id, size."""

ST_SERVER_VER_LEN = 50
"""Width of the NUL-padded server version field of START_V3 and FORMAT_DESCRIPTION."""

CHECKSUM_LEN = 4


class EventType(IntEnum):
    """Event type codes (``# orig: Log_event_type``) of MySQL and MariaDB."""

    UNKNOWN = 0
    START_V3 = 1
    QUERY = 2
    STOP = 3
    ROTATE = 4
    INTVAR = 5
    LOAD = 6
    SLAVE = 7
    CREATE_FILE = 8
    APPEND_BLOCK = 9
    EXEC_LOAD = 10
    DELETE_FILE = 11
    NEW_LOAD = 12
    RAND = 13
    USER_VAR = 14
    FORMAT_DESCRIPTION = 15
    XID = 16
    BEGIN_LOAD_QUERY = 17
    EXECUTE_LOAD_QUERY = 18
    TABLE_MAP = 19
    WRITE_ROWS_V0 = 20  # orig: PRE_GA_WRITE_ROWS_EVENT (5.1 development trees)
    UPDATE_ROWS_V0 = 21  # orig: PRE_GA_UPDATE_ROWS_EVENT
    DELETE_ROWS_V0 = 22  # orig: PRE_GA_DELETE_ROWS_EVENT
    WRITE_ROWS_V1 = 23
    UPDATE_ROWS_V1 = 24
    DELETE_ROWS_V1 = 25
    INCIDENT = 26
    HEARTBEAT = 27
    IGNORABLE = 28
    ROWS_QUERY = 29
    WRITE_ROWS = 30  # orig: WRITE_ROWS_EVENT (v2)
    UPDATE_ROWS = 31
    DELETE_ROWS = 32
    GTID = 33
    ANONYMOUS_GTID = 34
    PREVIOUS_GTIDS = 35
    TRANSACTION_CONTEXT = 36
    VIEW_CHANGE = 37
    XA_PREPARE = 38
    PARTIAL_UPDATE_ROWS = 39
    TRANSACTION_PAYLOAD = 40
    HEARTBEAT_V2 = 41
    GTID_TAGGED = 42
    ANNOTATE_ROWS = 160  # MariaDB
    BINLOG_CHECKPOINT = 161  # MariaDB
    MARIADB_GTID = 162
    GTID_LIST = 163  # MariaDB
    START_ENCRYPTION = 164  # MariaDB
    QUERY_COMPRESSED = 165  # MariaDB
    WRITE_ROWS_COMPRESSED_V1 = 166  # MariaDB
    UPDATE_ROWS_COMPRESSED_V1 = 167  # MariaDB
    DELETE_ROWS_COMPRESSED_V1 = 168  # MariaDB
    WRITE_ROWS_COMPRESSED = 169  # MariaDB (v2)
    UPDATE_ROWS_COMPRESSED = 170  # MariaDB (v2)
    DELETE_ROWS_COMPRESSED = 171  # MariaDB (v2)


GTID_EVENTS = frozenset({EventType.GTID, EventType.ANONYMOUS_GTID, EventType.GTID_TAGGED, EventType.MARIADB_GTID})
"""Events that open a transaction and carry its GTID (MySQL, MySQL anonymous, tagged, MariaDB)."""

_EVENT_TYPE_NAMES: dict[int, str] = {int(t): t.name for t in EventType}
"""Type code -> name (a dict lookup: calling the enum is slow)."""


def event_type_name(type_code: int) -> str:
    """The enum name for a known type code, ``UNKNOWN_<n>`` otherwise (never raises)."""
    name = _EVENT_TYPE_NAMES.get(type_code)
    return name if name is not None else f"UNKNOWN_{type_code}"


class ColumnType(IntEnum):
    """Column type codes stored in TABLE_MAP (``# orig: enum_field_types``)."""

    DECIMAL = 0
    TINY = 1
    SHORT = 2
    LONG = 3
    FLOAT = 4
    DOUBLE = 5
    NULL = 6
    TIMESTAMP = 7
    LONGLONG = 8
    INT24 = 9
    DATE = 10
    TIME = 11
    DATETIME = 12
    YEAR = 13
    NEWDATE = 14
    VARCHAR = 15
    BIT = 16
    TIMESTAMP2 = 17
    DATETIME2 = 18
    TIME2 = 19
    TYPED_ARRAY = 20
    VECTOR = 242
    INVALID = 243
    BOOL = 244
    JSON = 245
    NEWDECIMAL = 246
    ENUM = 247
    SET = 248
    TINY_BLOB = 249
    MEDIUM_BLOB = 250
    LONG_BLOB = 251
    BLOB = 252
    VAR_STRING = 253
    STRING = 254
    GEOMETRY = 255


class ChecksumAlg(IntEnum):
    """Checksum algorithm announced by FORMAT_DESCRIPTION (``# orig: enum_binlog_checksum_alg``)."""

    OFF = 0
    CRC32 = 1
    UNDEF = 255  # the server predates checksums (MySQL < 5.6.1, MariaDB < 5.3): no byte at all


class Flavor(IntEnum):
    """Which server family wrote the file; a few layouts differ between them."""

    MYSQL = 0
    MARIADB = 1


class EventFlags(IntFlag):
    """Header flags (``# orig: LOG_EVENT_*_F``)."""

    BINLOG_IN_USE = 0x1  # set on FORMAT_DESCRIPTION while the server writes the file
    FORCED_ROTATE = 0x2
    THREAD_SPECIFIC = 0x4
    SUPPRESS_USE = 0x8
    UPDATE_TABLE_MAP_VERSION = 0x10
    ARTIFICIAL = 0x20
    RELAY_LOG = 0x40
    IGNORABLE = 0x80
    NO_FILTER = 0x100
    MTS_ISOLATE = 0x200
    SKIP_REPLICATION = 0x8000  # MariaDB
