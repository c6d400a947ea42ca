"""How each binlog column type becomes a Spark type in the gold change tables.

Every column of a TABLE_MAP gets a *kind*: a short string ``"<conversion>:<spark type>"`` such as
``"int:smallint"`` or ``"timestamp:timestamp"``.  It is computed in Python from the column's wire
facts (real type, metadata, signedness, collation) by :func:`column_kind`, travels with every
decoded row (``changes.column_kinds``), and tells the typed projection both the target type and
how to convert MySQL's text of the value (the JSON rendering of :mod:`binlog_core.render`) into
it.  Kinds are plain strings so they can be compared across files and table versions.

==============================  ===========================  =========================================
binlog column                   Spark type                   notes
==============================  ===========================  =========================================
TINYINT / SMALLINT / MEDIUMINT  byte / short / int / long    signed: the narrowest that fits;
INT / BIGINT                                                 UNSIGNED: the next wider type,
                                                             BIGINT UNSIGNED ``decimal(20,0)``
                                                             (signedness unknown: signed)
DECIMAL(p,s)                    ``decimal(p,s)``             p > 38: string of the exact digits
FLOAT / DOUBLE                  float / double               FLOAT exactly the stored float32
DATETIME                        timestamp_ntz                a wall-clock value with no zone, as the
                                                             server stored it; ``<col>__raw`` string
TIMESTAMP                       timestamp                    an instant (UTC); ``<col>__raw`` string
DATE                            date                         ``<col>__raw`` string
TIME                            string                       ``[-]HH[H]:MM:SS[.ffffff]`` as MySQL
                                                             prints it (negative and > 24 h kept)
YEAR                            int                          0 stays 0
BIT(n)                          long                         BIT(64) as the same 64 bits (two's
                                                             complement), so bit tests still work
ENUM / SET                      string                       labels; the 1-based index / the
                                                             bitmask as text when the file carries
                                                             no labels
JSON                            string                       MySQL's text of the document;
                                                             ``<col>__raw`` string
CHAR/VARCHAR/TEXT               string                       ``<col>__raw`` binary
BINARY/VARBINARY/BLOB,          binary                       GEOMETRY: SRID (4 bytes LE) + WKB
GEOMETRY
VECTOR                          ``array<float>``
anything else                   string                       MySQL's text of the value
==============================  ===========================  =========================================

``__raw`` companions keep values that the typed column cannot hold recoverable: a DATE,
DATETIME or TIMESTAMP whose text is a zero or partly zero date (``0000-00-00``,
``2020-00-15 10:00:00``), year 0, or otherwise not a valid calendar value has a NULL typed value
and its MySQL text in ``<col>__raw``; a text value whose bytes do not decode in the column's
charset has a NULL typed value and its bytes in ``<col>__raw``; a JSON column MySQL updated
partially (``binlog_row_value_options=PARTIAL_JSON``) has a NULL typed after value and the diffs
in ``<col>__raw`` as ``{"json_diffs": [{"op", "path", "value"}, ...]}``.  ``__raw`` is NULL
whenever the typed column holds the value.
"""

from __future__ import annotations

import re

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    TimestampNTZType,
    TimestampType,
)

from binlog_core.charsets import BINARY_COLLATION
from binlog_core.constants import ColumnType
from binlog_core.names import DECLARED_TYPES
from binlog_core.table_map import BLOB_COMPRESSED, VARCHAR_COMPRESSED, Column

MAX_DECIMAL_PRECISION = 38
"""Spark's largest DecimalType precision; wider MySQL DECIMALs become strings."""

RAW_SUFFIX = "__raw"
"""Suffix of the companion field that keeps values the typed field cannot hold."""

_SIGNED_INT = {
    ColumnType.TINY: "tinyint",
    ColumnType.SHORT: "smallint",
    ColumnType.INT24: "int",
    ColumnType.LONG: "int",
    ColumnType.LONGLONG: "bigint",
}
_UNSIGNED_INT = {
    ColumnType.TINY: "smallint",
    ColumnType.SHORT: "int",
    ColumnType.INT24: "int",
    ColumnType.LONG: "bigint",
    ColumnType.LONGLONG: "decimal(20,0)",
}
TEXT_OR_BINARY: frozenset[int] = frozenset(
    {
        ColumnType.STRING,
        ColumnType.VARCHAR,
        ColumnType.VAR_STRING,
        ColumnType.TINY_BLOB,
        ColumnType.BLOB,
        ColumnType.MEDIUM_BLOB,
        ColumnType.LONG_BLOB,
        VARCHAR_COMPRESSED,
        BLOB_COMPRESSED,
    }
)
"""Wire types of CHAR/VARCHAR/TEXT and BINARY/VARBINARY/BLOB alike: the collation tells which."""
_FIXED_KINDS: dict[int, str] = {
    ColumnType.FLOAT: "float:float",
    ColumnType.DOUBLE: "double:double",
    ColumnType.TIMESTAMP: "timestamp:timestamp",
    ColumnType.TIMESTAMP2: "timestamp:timestamp",
    ColumnType.DATETIME: "datetime:timestamp_ntz",
    ColumnType.DATETIME2: "datetime:timestamp_ntz",
    ColumnType.DATE: "date:date",
    ColumnType.NEWDATE: "date:date",
    ColumnType.TIME: "time:string",
    ColumnType.TIME2: "time:string",
    ColumnType.YEAR: "year:int",
    ColumnType.BIT: "bit:bigint",
    ColumnType.ENUM: "enum:string",
    ColumnType.SET: "set:string",
    ColumnType.JSON: "json:string",
    ColumnType.GEOMETRY: "binary:binary",
    ColumnType.VECTOR: "vector:array<float>",
}

_SPARK_TYPES: dict[str, DataType] = {
    "tinyint": ByteType(),
    "smallint": ShortType(),
    "int": IntegerType(),
    "bigint": LongType(),
    "float": FloatType(),
    "double": DoubleType(),
    "timestamp": TimestampType(),
    "timestamp_ntz": TimestampNTZType(),
    "date": DateType(),
    "string": StringType(),
    "binary": BinaryType(),
    "array<float>": ArrayType(FloatType(), True),
}
_DECIMAL = re.compile(r"^decimal\((\d+),(\d+)\)$")

RAW_TYPES: dict[str, DataType] = {
    "timestamp": StringType(),
    "datetime": StringType(),
    "date": StringType(),
    "text": BinaryType(),
    "json": StringType(),
}
"""Conversions whose values may not fit the typed field, and the type of their ``__raw`` companion."""


def column_kind(column: Column) -> str:
    """The gold kind of a TABLE_MAP column: ``"<conversion>:<spark type>"``.

    >>> from binlog_core.table_map import Column
    >>> column_kind(Column(0, ColumnType.LONGLONG, ColumnType.LONGLONG, 0, True, unsigned=True))
    'int:decimal(20,0)'
    >>> column_kind(Column(0, ColumnType.NEWDECIMAL, ColumnType.NEWDECIMAL, 0, True, precision=65, scale=2))
    'decimal:string'
    """
    real = column.type
    if real in _SIGNED_INT:
        return "int:" + (_UNSIGNED_INT if column.unsigned else _SIGNED_INT)[ColumnType(real)]
    if real == ColumnType.NEWDECIMAL:
        if 0 < column.precision <= MAX_DECIMAL_PRECISION and column.scale <= column.precision:
            return f"decimal:decimal({column.precision},{column.scale})"
        return "decimal:string"
    if real in TEXT_OR_BINARY:
        return "binary:binary" if column.collation == BINARY_COLLATION else "text:string"
    return _FIXED_KINDS.get(real, "other:string")


_DDL_TYPES: dict[str, int] = {
    **{name: min(wire) for name, wire in DECLARED_TYPES.items()},  # any of them: column_kind maps them alike
    "json": ColumnType.JSON,
    "dec": ColumnType.NEWDECIMAL,
    "fixed": ColumnType.NEWDECIMAL,
    "vector": ColumnType.VECTOR,
    **dict.fromkeys(("inet4", "inet6", "uuid"), ColumnType.STRING),  # MariaDB logs them as BINARY(n)
}
"""A wire type a column of each DDL type name is logged with (``column_kind`` maps it): the names
:data:`binlog_core.names.DECLARED_TYPES` knows, and a few more. JSON is MySQL's; MariaDB logs its
JSON as LONGTEXT (``text:string``): the same Spark type."""
_BINARY_DDL_TYPES = frozenset(
    {"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob", "inet4", "inet6", "uuid"}
)
_DDL_TYPE = re.compile(r"^\s*([a-z][a-z0-9]*)\s*(?:\(([^)]*)\))?(.*)$")
_TEXT_COLLATION = 45  # utf8mb4_general_ci: any collation but binary's
_MYSQL_DEFAULT_PRECISION = 10


def ddl_kind(type_text: str) -> str:
    """The gold kind of a column known from its DDL type text (``decimal(8,2)``, ``int unsigned``)
    alone: the kind :func:`column_kind` gives the TABLE_MAP column the server logs for that type.

    >>> ddl_kind("int unsigned"), ddl_kind("decimal(8,2)"), ddl_kind("varbinary(4)"), ddl_kind("sometype")
    ('int:bigint', 'decimal:decimal(8,2)', 'binary:binary', 'other:string')
    """
    match = _DDL_TYPE.match(type_text.lower())
    if match is None or match.group(1) not in _DDL_TYPES:
        return "other:string"
    name, arguments, rest = match.groups()
    real = _DDL_TYPES[name]
    numbers = [int(n) for n in re.findall(r"\d+", arguments or "")] if real == ColumnType.NEWDECIMAL else []
    precision = numbers[0] if numbers else _MYSQL_DEFAULT_PRECISION
    scale = numbers[1] if len(numbers) > 1 else 0
    column = Column(
        0,
        real,
        real,
        0,
        True,
        precision=precision,
        scale=scale,
        unsigned="unsigned" in rest.split(),
        collation=BINARY_COLLATION if name in _BINARY_DDL_TYPES else _TEXT_COLLATION,
    )
    return column_kind(column)


def conversion_of(kind: str) -> str:
    """The conversion part of a kind (``"int"`` of ``"int:smallint"``)."""
    return kind.split(":", 1)[0]


def type_name_of(kind: str) -> str:
    """The Spark type part of a kind (``"smallint"`` of ``"int:smallint"``)."""
    return kind.split(":", 1)[1]


def spark_type(kind: str) -> DataType:
    """The Spark type of a kind's typed field.

    >>> spark_type("int:decimal(20,0)")
    DecimalType(20,0)
    """
    name = type_name_of(kind)
    match = _DECIMAL.match(name)
    if match:
        return DecimalType(int(match.group(1)), int(match.group(2)))
    return _SPARK_TYPES[name]


def raw_type(kind: str) -> DataType | None:
    """The type of the ``__raw`` companion of a kind, or None when its values always fit."""
    return RAW_TYPES.get(conversion_of(kind))


def type_suffix(kind: str) -> str:
    """A name suffix for a field whose type changed: ``"__decimal_12_2"`` for ``decimal(12,2)``."""
    return "__" + re.sub(r"[^a-z0-9]+", "_", type_name_of(kind).lower()).strip("_")


__all__ = [
    "MAX_DECIMAL_PRECISION",
    "RAW_SUFFIX",
    "RAW_TYPES",
    "TEXT_OR_BINARY",
    "column_kind",
    "conversion_of",
    "ddl_kind",
    "raw_type",
    "spark_type",
    "type_name_of",
    "type_suffix",
]
