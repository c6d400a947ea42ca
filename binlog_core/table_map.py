"""TABLE_MAP: which table a table id stands for, with its column types and optional metadata.

Layout (``# orig: Table_map_log_event``)::

    post-header   table_id u48 (u32 when the post-header length is 6) | flags u16
    body          len_schema u8 | schema | 00 | len_table u8 | table | 00 |
                  num_columns packed | column_types u8[num_columns] |
                  len_metadata packed | metadata (per-type, see META_SIZES) |
                  null_bitmap[(num_columns + 7) / 8] |
                  optional metadata: { field_type u8 | len packed | value } ... to the end

Per-type metadata (``# orig: Table_map_log_event::save_field_metadata``)::

    FLOAT DOUBLE BLOB GEOMETRY JSON VECTOR   1 byte: length of the value's length prefix
    VARCHAR VAR_STRING                       2 bytes LE: maximum length in bytes
    NEWDECIMAL                               precision u8 | scale u8    (read big-endian)
    BIT                                      bits % 8 u8 | bits / 8 u8
    STRING ENUM SET                          real_type u8 | length u8   (read big-endian)
    TIMESTAMP2 DATETIME2 TIME2               fractional-second precision u8
    everything else                          nothing

STRING packs long CHAR lengths into the real-type byte: if ``(byte0 & 0x30) != 0x30`` the
length is ``byte1 | (((byte0 & 0x30) ^ 0x30) << 4)`` and the real type ``byte0 | 0x30``.

Optional metadata (MySQL 8.0.1+, MariaDB 10.5+, ``# orig: Optional_metadata_field_type``)::

    1 SIGNEDNESS        bitmap, one bit per numeric column, most significant bit first
    2 DEFAULT_CHARSET   packed default collation, then {packed char-column index, packed collation}
    3 COLUMN_CHARSET    packed collation per character column
    4 COLUMN_NAME       {packed len, name} per column
    5 SET_STR_VALUE     per SET column: packed count, {packed len, label}
    6 ENUM_STR_VALUE    per ENUM column: packed count, {packed len, label}
    7 GEOMETRY_TYPE     packed geometry type per GEOMETRY column
    8 SIMPLE_PRIMARY_KEY         packed column indexes
    9 PRIMARY_KEY_WITH_PREFIX    {packed column index, packed prefix length (0 = whole)}
    10 ENUM_AND_SET_DEFAULT_CHARSET, 11 ENUM_AND_SET_COLUMN_CHARSET   as 2 and 3, for ENUM/SET
    12 COLUMN_VISIBILITY bitmap, one bit per column, most significant bit first
    13 VECTOR_DIMENSIONALITY   packed dimension per VECTOR column

"Character columns" are STRING (real type), VAR_STRING, VARCHAR, BLOB, and VECTOR for MySQL;
MariaDB also counts GEOMETRY. https://dev.mysql.com/doc/dev/mysql-server/latest/classbinary__log_1_1Table__map__event.html
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from enum import IntEnum
from typing import Any

from binlog_core.charsets import decode_text
from binlog_core.constants import ColumnType, EventType, Flavor
from binlog_core.cursor import Cursor, bounded_count
from binlog_core.errors import MalformedError, UnknownOptionalMetadataWarning
from binlog_core.event import Event, FormatDescription


class OptionalField(IntEnum):
    """Optional metadata field types (``# orig: Table_map_event::Optional_metadata_field_type``)."""

    SIGNEDNESS = 1
    DEFAULT_CHARSET = 2
    COLUMN_CHARSET = 3
    COLUMN_NAME = 4
    SET_STR_VALUE = 5
    ENUM_STR_VALUE = 6
    GEOMETRY_TYPE = 7
    SIMPLE_PRIMARY_KEY = 8
    PRIMARY_KEY_WITH_PREFIX = 9
    ENUM_AND_SET_DEFAULT_CHARSET = 10
    ENUM_AND_SET_COLUMN_CHARSET = 11
    COLUMN_VISIBILITY = 12
    VECTOR_DIMENSIONALITY = 13


VARCHAR_COMPRESSED = 140
"""MariaDB 10.3+ compressed VARCHAR column (``# orig: MYSQL_TYPE_VARCHAR_COMPRESSED``)."""
BLOB_COMPRESSED = 141
"""MariaDB 10.3+ compressed BLOB/TEXT column (``# orig: MYSQL_TYPE_BLOB_COMPRESSED``)."""

_ONE = (ColumnType.FLOAT, ColumnType.DOUBLE, ColumnType.BLOB, ColumnType.GEOMETRY, ColumnType.JSON)
_TWO = (ColumnType.VARCHAR, ColumnType.VAR_STRING, ColumnType.NEWDECIMAL, ColumnType.BIT)
_BYTE_SWAPPED = (ColumnType.STRING, ColumnType.ENUM, ColumnType.SET)
_BIG_ENDIAN_META = (*_BYTE_SWAPPED, ColumnType.NEWDECIMAL)
"""Two-byte metadata the server reads first byte high (``# orig: table_def::table_def``)."""
META_SIZES: dict[int, int] = {
    **dict.fromkeys(_ONE, 1),
    **dict.fromkeys((ColumnType.TINY_BLOB, ColumnType.MEDIUM_BLOB, ColumnType.LONG_BLOB), 1),
    **dict.fromkeys((ColumnType.TIMESTAMP2, ColumnType.DATETIME2, ColumnType.TIME2), 1),
    ColumnType.VECTOR: 1,
    BLOB_COMPRESSED: 1,
    **dict.fromkeys(_TWO, 2),
    **dict.fromkeys(_BYTE_SWAPPED, 2),
    VARCHAR_COMPRESSED: 2,
}
"""Bytes of per-type metadata in TABLE_MAP; types not listed have none."""

NUMERIC_TYPES = frozenset(
    {
        ColumnType.TINY,
        ColumnType.SHORT,
        ColumnType.INT24,
        ColumnType.LONG,
        ColumnType.LONGLONG,
        ColumnType.NEWDECIMAL,
        ColumnType.FLOAT,
        ColumnType.DOUBLE,
    }
)
"""Columns that own a bit of the SIGNEDNESS bitmap (``# orig: is_numeric_type``)."""

_CHARACTER_TYPES = {
    Flavor.MYSQL: frozenset(
        {ColumnType.STRING, ColumnType.VAR_STRING, ColumnType.VARCHAR, ColumnType.BLOB, ColumnType.VECTOR}
    ),
    Flavor.MARIADB: frozenset(
        {
            ColumnType.STRING,
            ColumnType.VAR_STRING,
            ColumnType.VARCHAR,
            ColumnType.BLOB,
            ColumnType.GEOMETRY,
            VARCHAR_COMPRESSED,
            BLOB_COMPRESSED,
        }
    ),
}
"""Columns that own an entry of the (DEFAULT_|COLUMN_)CHARSET lists (``# orig: is_character_type``)."""

_ENUM_SET = frozenset({ColumnType.ENUM, ColumnType.SET})


@dataclass(frozen=True, slots=True)
class Column:
    """One column as TABLE_MAP describes it; ``None`` means the file does not say."""

    index: int
    type: int  # the real type: STRING metadata unpacked into STRING, ENUM or SET
    wire_type: int  # the type byte as written in TABLE_MAP
    meta: int  # the per-type metadata as the server reads it (STRING/ENUM/SET/NEWDECIMAL: byte0 << 8 | byte1)
    nullable: bool
    length: int = 0  # CHAR/BINARY/VARCHAR: maximum bytes; ENUM/SET: bytes of the stored value
    precision: int = 0  # NEWDECIMAL
    scale: int = 0  # NEWDECIMAL
    fsp: int = 0  # TIME2/DATETIME2/TIMESTAMP2 fractional-second digits
    bits: int = 0  # BIT
    pack_length: int = 0  # BLOB/GEOMETRY/JSON/VECTOR/FLOAT/DOUBLE: bytes of the length prefix or value
    name: str | None = None
    unsigned: bool | None = None
    collation: int | None = None
    enum_values: tuple[str, ...] | None = None
    set_values: tuple[str, ...] | None = None
    geometry_type: int | None = None
    vector_dimensions: int | None = None
    visible: bool | None = None
    primary_key_prefix: int | None = None  # None: not in the primary key; 0: whole column

    @property
    def type_name(self) -> str:
        """``LONG``, ``VARCHAR``, ... (``VARCHAR_COMPRESSED`` for MariaDB's 140)."""
        if self.type == VARCHAR_COMPRESSED:
            return "VARCHAR_COMPRESSED"
        if self.type == BLOB_COMPRESSED:
            return "BLOB_COMPRESSED"
        try:
            return ColumnType(self.type).name
        except ValueError:
            return f"TYPE_{self.type}"

    @property
    def display_name(self) -> str:
        """The column's name, or ``@n`` (1-based) like mysqlbinlog when the file has no names."""
        return self.name if self.name is not None else f"@{self.index + 1}"


@dataclass(frozen=True, slots=True)
class TableMap:
    """A decoded TABLE_MAP event."""

    table_id: int
    flags: int
    schema: str
    table: str
    columns: tuple[Column, ...]
    primary_key: tuple[int, ...] = ()
    optional_fields: tuple[int, ...] = ()  # field types present, in file order
    unknown_optional: tuple[tuple[int, bytes], ...] = ()
    fingerprint: str = field(default="", compare=False)

    @property
    def qualified_name(self) -> str:
        """``schema.table``."""
        return f"{self.schema}.{self.table}"

    @property
    def column_names(self) -> tuple[str, ...]:
        """Names, or ``@1``, ``@2``... where the file carries none."""
        return tuple(c.display_name for c in self.columns)

    @property
    def has_names(self) -> bool:
        """The file carried column names (binlog_row_metadata=FULL)."""
        return OptionalField.COLUMN_NAME in self.optional_fields


def shape_fingerprint(table: TableMap) -> str:
    """A short stable hash of what the rows of this table map look like on the wire and by name."""
    parts = [table.schema, table.table]
    for c in table.columns:
        parts.append(
            f"{c.wire_type}:{c.meta}:{int(c.nullable)}:{c.name}:{c.unsigned}:{c.collation}:"
            f"{c.enum_values}:{c.set_values}:{c.geometry_type}:{c.vector_dimensions}"
        )
    return hashlib.blake2b("\x1f".join(parts).encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def _name(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


def _column(index: int, wire_type: int, meta: int, nullable: bool) -> Column:
    """Unpack per-type metadata into a Column (no optional metadata yet)."""
    real = wire_type
    length = precision = scale = fsp = bits = pack_length = 0
    if wire_type in _BYTE_SWAPPED:
        byte0, byte1 = meta >> 8, meta & 0xFF
        if meta and (byte0 & 0x30) != 0x30:
            # a CHAR longer than 255 bytes: two length bits hide in the real-type byte (bug #37426)
            real, length = byte0 | 0x30, byte1 | (((byte0 & 0x30) ^ 0x30) << 4)
        elif meta:
            real, length = byte0, byte1
    elif wire_type in (ColumnType.VARCHAR, ColumnType.VAR_STRING, VARCHAR_COMPRESSED):
        length = meta
    elif wire_type == ColumnType.NEWDECIMAL:
        precision, scale = meta >> 8, meta & 0xFF
    elif wire_type == ColumnType.BIT:
        bits = (meta >> 8) * 8 + (meta & 0xFF)
    elif wire_type in (ColumnType.TIMESTAMP2, ColumnType.DATETIME2, ColumnType.TIME2):
        fsp = meta
    elif META_SIZES.get(wire_type) == 1:
        pack_length = meta
    return Column(
        index=index,
        type=real,
        wire_type=wire_type,
        meta=meta,
        nullable=nullable,
        length=length,
        precision=precision,
        scale=scale,
        fsp=fsp,
        bits=bits,
        pack_length=pack_length,
    )


def _read_meta(c: Cursor, wire_type: int) -> int:
    """One column's per-type metadata, as ``# orig: Table_map_log_event::read_field_metadata``."""
    size = META_SIZES.get(wire_type, 0)
    if size == 0:
        return 0
    if size == 1:
        return c.u8("metadata")
    if wire_type in _BIG_ENDIAN_META:
        byte0 = c.u8("metadata")
        return (byte0 << 8) | c.u8("metadata")
    return c.u16("metadata")


def _bitmap_msb(raw: bytes, count: int) -> list[bool]:
    """``count`` bits, most significant bit of the first byte first."""
    return [bool(raw[i >> 3] & (0x80 >> (i & 7))) for i in range(min(count, len(raw) * 8))]


def _charset_list(c: Cursor, n: int, what: str) -> list[int]:
    return [c.packed_int(what) for _ in range(bounded_count(n, c.remaining, what))] if n else []


@dataclass(slots=True)
class _Optional:
    """Optional metadata as read, before it is spread over the columns."""

    signedness: bytes | None = None
    default_charset: tuple[int, dict[int, int]] | None = None
    column_charsets: list[int] | None = None
    names: list[str] | None = None
    set_values: list[list[bytes]] | None = None
    enum_values: list[list[bytes]] | None = None
    geometry_types: list[int] | None = None
    primary_key: list[tuple[int, int]] | None = None
    enum_set_default_charset: tuple[int, dict[int, int]] | None = None
    enum_set_column_charsets: list[int] | None = None
    visibility: bytes | None = None
    vector_dimensions: list[int] | None = None
    present: list[int] = field(default_factory=list)
    unknown: list[tuple[int, bytes]] = field(default_factory=list)


def _packed_list(c: Cursor, what: str) -> list[int]:
    out: list[int] = []
    while not c.at_end():
        out.append(c.packed_int(what))
    return out


def _default_charset(c: Cursor, what: str) -> tuple[int, dict[int, int]]:
    default = c.packed_int(what)
    overrides: dict[int, int] = {}
    while not c.at_end():
        index = c.packed_int(what)
        overrides[index] = c.packed_int(what)
    return default, overrides


def _labels(c: Cursor, what: str) -> list[list[bytes]]:
    columns: list[list[bytes]] = []
    while not c.at_end():
        count = bounded_count(c.packed_int(what), c.remaining, what)
        columns.append([c.packed_bytes(what) for _ in range(count)])
    return columns


def _names(c: Cursor, what: str) -> list[str]:
    out: list[str] = []
    while not c.at_end():
        out.append(_name(c.packed_bytes(what)))
    return out


def _pk_with_prefix(c: Cursor, what: str) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    while not c.at_end():
        index = c.packed_int(what)
        out.append((index, c.packed_int(what)))
    return out


_OPTIONAL_READERS: dict[int, tuple[str, Callable[[Cursor, str], object]]] = {
    OptionalField.SIGNEDNESS: ("signedness", lambda c, _w: c.rest()),
    OptionalField.DEFAULT_CHARSET: ("default_charset", _default_charset),
    OptionalField.COLUMN_CHARSET: ("column_charsets", _packed_list),
    OptionalField.COLUMN_NAME: ("names", _names),
    OptionalField.SET_STR_VALUE: ("set_values", _labels),
    OptionalField.ENUM_STR_VALUE: ("enum_values", _labels),
    OptionalField.GEOMETRY_TYPE: ("geometry_types", _packed_list),
    OptionalField.SIMPLE_PRIMARY_KEY: ("primary_key", lambda c, w: [(i, 0) for i in _packed_list(c, w)]),
    OptionalField.PRIMARY_KEY_WITH_PREFIX: ("primary_key", _pk_with_prefix),
    OptionalField.ENUM_AND_SET_DEFAULT_CHARSET: ("enum_set_default_charset", _default_charset),
    OptionalField.ENUM_AND_SET_COLUMN_CHARSET: ("enum_set_column_charsets", _packed_list),
    OptionalField.COLUMN_VISIBILITY: ("visibility", lambda c, _w: c.rest()),
    OptionalField.VECTOR_DIMENSIONALITY: ("vector_dimensions", _packed_list),
}
"""Optional metadata field type -> (attribute of _Optional, reader of the field's bytes)."""


def _read_optional(c: Cursor) -> _Optional:
    opt = _Optional()
    while not c.at_end():
        field_type = c.u8("optional metadata type")
        value = c.sized(c.packed_int("optional metadata length"), f"optional metadata {field_type}")
        opt.present.append(field_type)
        reader = _OPTIONAL_READERS.get(field_type)
        if reader is None:
            opt.unknown.append((field_type, value.rest()))
            continue
        attr, read = reader
        what = OptionalField(field_type).name
        setattr(opt, attr, read(value, what))
        if not value.at_end():
            raise MalformedError(f"{what}: {value.remaining} bytes left over")
    return opt


def _charsets_for(
    kinds: list[int],
    default: tuple[int, dict[int, int]] | None,
    per_column: list[int] | None,
) -> list[int | None]:
    """Collation of each column in ``kinds`` (the columns that own a charset entry)."""
    if per_column is not None:
        if len(per_column) != len(kinds):
            raise MalformedError(f"{len(per_column)} column charsets for {len(kinds)} columns")
        return list[int | None](per_column)
    if default is not None:
        base, overrides = default
        if overrides and max(overrides) >= len(kinds):
            raise MalformedError(f"charset override for column {max(overrides)} of {len(kinds)}")
        return [overrides.get(i, base) for i in range(len(kinds))]
    return [None] * len(kinds)


def _per_kind(columns: list[Column], kinds: frozenset[int] | set[int]) -> list[int]:
    return [c.index for c in columns if c.type in kinds]


def _spread(columns: list[Column], targets: list[int], values: Sequence[Any] | None, what: str, attr: str) -> None:
    """Give each column in ``targets`` (indexes) its entry of ``values``."""
    if values is None:
        return
    if len(values) != len(targets):
        raise MalformedError(f"{what}: {len(values)} entries for {len(targets)} columns")
    for index, value in zip(targets, values, strict=True):
        columns[index] = replace(columns[index], **{attr: value})


def _apply_optional(columns: list[Column], opt: _Optional, flavor: Flavor) -> tuple[int, ...]:
    """Spread optional metadata over the columns; return the primary key column indexes."""
    everything = list(range(len(columns)))
    numeric = _per_kind(columns, NUMERIC_TYPES)
    if opt.signedness is not None:
        if len(opt.signedness) * 8 < len(numeric):
            raise MalformedError(f"SIGNEDNESS: {len(opt.signedness)} bytes for {len(numeric)} numeric columns")
        _spread(columns, numeric, _bitmap_msb(opt.signedness, len(numeric)), "SIGNEDNESS", "unsigned")
    text = _per_kind(columns, _CHARACTER_TYPES[flavor])
    if opt.default_charset is not None or opt.column_charsets is not None:
        _spread(columns, text, _charsets_for(text, opt.default_charset, opt.column_charsets), "charsets", "collation")
    enum_set = _per_kind(columns, _ENUM_SET)
    if opt.enum_set_default_charset is not None or opt.enum_set_column_charsets is not None:
        charsets = _charsets_for(enum_set, opt.enum_set_default_charset, opt.enum_set_column_charsets)
        _spread(columns, enum_set, charsets, "ENUM/SET charsets", "collation")
    _spread(columns, everything, opt.names, "COLUMN_NAME", "name")
    for attr, kind, raw in (
        ("set_values", ColumnType.SET, opt.set_values),
        ("enum_values", ColumnType.ENUM, opt.enum_values),
    ):
        if raw is not None:
            targets = [c.index for c in columns if c.type == kind]
            if len(raw) != len(targets):
                raise MalformedError(f"{attr.upper()}: {len(raw)} entries for {len(targets)} columns")
            labels = [tuple(_label(v, columns[i].collation) for v in r) for i, r in zip(targets, raw, strict=True)]
            _spread(columns, targets, labels, attr.upper(), attr)
    geometry = [c.index for c in columns if c.type == ColumnType.GEOMETRY]
    _spread(columns, geometry, opt.geometry_types, "GEOMETRY_TYPE", "geometry_type")
    vectors = [c.index for c in columns if c.type == ColumnType.VECTOR]
    _spread(columns, vectors, opt.vector_dimensions, "VECTOR_DIMENSIONALITY", "vector_dimensions")
    if opt.visibility is not None:
        if len(opt.visibility) * 8 < len(columns):
            raise MalformedError(f"COLUMN_VISIBILITY: {len(opt.visibility)} bytes for {len(columns)} columns")
        _spread(columns, everything, _bitmap_msb(opt.visibility, len(columns)), "COLUMN_VISIBILITY", "visible")
    pk: tuple[int, ...] = ()
    if opt.primary_key is not None:
        for index, prefix in opt.primary_key:
            if index >= len(columns):
                raise MalformedError(f"primary key column {index} of {len(columns)}")
            columns[index] = replace(columns[index], primary_key_prefix=prefix)
        pk = tuple(index for index, _ in opt.primary_key)
    return pk


def _label(raw: bytes, collation: int | None) -> str:
    text = decode_text(raw, collation, "utf-8")
    return text if isinstance(text, str) else raw.decode("latin-1")


def decode_table_map(body: bytes, fde: FormatDescription) -> TableMap:
    """Decode a TABLE_MAP event body (the bytes after the common header, checksum removed)."""
    c = Cursor(body)
    table_id = c.uint(4 if fde.post_header_len(EventType.TABLE_MAP) == 6 else 6, "table_id")
    flags = c.u16("flags")
    schema = _name(c.take(c.u8("len_schema"), "schema"))
    c.skip(1, "schema terminator")
    table = _name(c.take(c.u8("len_table"), "table"))
    c.skip(1, "table terminator")
    num_columns = bounded_count(c.packed_int("num_columns"), c.remaining, "num_columns")
    types = c.take(num_columns, "column_types")
    if c.at_end():
        # 5.1 development trees wrote no metadata, no null bitmap
        columns = [_column(i, t, 0, True) for i, t in enumerate(types)]
        return _finish(table_id, flags, schema, table, columns, (), _Optional())
    meta = c.sized(c.packed_int("len_metadata"), "metadata")
    metas = [_read_meta(meta, t) for t in types]
    if not meta.at_end():
        raise MalformedError(f"metadata: {meta.remaining} bytes left after {num_columns} columns")
    nulls = c.take((num_columns + 7) // 8, "null_bitmap")
    columns = [
        _column(i, t, m, bool(nulls[i >> 3] & (1 << (i & 7))))
        for i, (t, m) in enumerate(zip(types, metas, strict=True))
    ]
    opt = _read_optional(c)
    pk = _apply_optional(columns, opt, fde.flavor)
    return _finish(table_id, flags, schema, table, columns, pk, opt)


def _finish(
    table_id: int, flags: int, schema: str, table: str, columns: list[Column], pk: tuple[int, ...], opt: _Optional
) -> TableMap:
    tm = TableMap(
        table_id=table_id,
        flags=flags,
        schema=schema,
        table=table,
        columns=tuple(columns),
        primary_key=pk,
        optional_fields=tuple(opt.present),
        unknown_optional=tuple(opt.unknown),
    )
    return replace(tm, fingerprint=shape_fingerprint(tm))


def optional_metadata_warnings(table_map: TableMap) -> list[UnknownOptionalMetadataWarning]:
    """A warning for each optional metadata field whose type is unknown (kept raw, the map decodes).

    A newer server may describe its columns with a field this decoder cannot read; the rows are
    still decoded, but what the field says is lost to them, so it is never silent.  The warnings
    are not located: the caller stamps the event on them.
    """
    return [
        UnknownOptionalMetadataWarning(
            f"optional metadata field type {field_type} ({len(raw)} bytes) is unknown; kept raw",
            path=(f"optional metadata {field_type}",),
        )
        for field_type, raw in table_map.unknown_optional
    ]


def decode_table_map_event(event: Event) -> TableMap:
    """Registry entry point: decode the TABLE_MAP body of a framed event."""
    return decode_table_map(event.body, event.fde)
