"""Every table of the lakehouse, declared once: layer, name, schema, natural key, layout and a comment
per column.

Stages build frames with these schemas, :class:`pipelines.storage.Lakehouse` writes and registers
them (column comments included, so ``DESCRIBE`` shows them), gates read their facts from them
and the README's table list is checked against :data:`TABLES` by a test.  Adding a table is
adding a :class:`TableSpec` here and the stage that fills it.

Bookkeeping tables (layer ``_state``) are not registered in the catalog: analysts never see them.

Positions: every table is keyed by where its facts come from: ``file`` (the full path or URI as
listed), ``offset`` (byte offset of the event, computed from the bytes read, never from
``log_pos``), ``inner_index`` (index inside a MySQL compressed transaction; null otherwise) and,
for row changes, ``row_index``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DataType,
    DecimalType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)


class Layer(StrEnum):
    """Where a table lives: its folder under the lakehouse root and its catalog database."""

    BRONZE = "bronze"
    SILVER = "silver"
    GOLD = "gold"
    QUALITY = "quality"
    CURRENT = "current"
    HISTORY = "history"
    STATE = "_state"
    """Bookkeeping: never registered in the catalog."""


CATALOGED: tuple[Layer, ...] = (Layer.BRONZE, Layer.SILVER, Layer.GOLD, Layer.CURRENT, Layer.HISTORY, Layer.QUALITY)
"""The layers whose tables have a catalog database (every one but the bookkeeping)."""


@dataclass(frozen=True)
class Col:
    """One column: name, type, nullability and what it holds."""

    name: str
    type: DataType
    comment: str
    nullable: bool = True

    def field(self) -> StructField:
        """The Spark field, its comment in the metadata (what ``DESCRIBE`` shows)."""
        return StructField(self.name, self.type, self.nullable, {"comment": self.comment})


CHANGE_FEED = "delta.enableChangeDataFeed"
"""The Delta table property that keeps a change data feed of the table (``table_changes``)."""

STATS_COLUMNS = "delta.dataSkippingStatsColumns"
STATS_PREFIX = "delta.dataSkippingStringPrefixLength"
STATS_PREFIX_LENGTH = 256
"""Characters of a string column's minimum and maximum that file statistics keep. Every table is
keyed by ``file``, a binlog's full path or URI: with Delta's default of 32, the paths of one folder
share their kept prefix, and a read of some files' rows (``file IN (...)``) skips no data file."""


@dataclass(frozen=True)
class TableSpec:
    """A table: where it lives, what one row is, its columns, natural key and physical layout."""

    layer: Layer
    name: str
    row: str
    """What one row is, for the README (``file: size, status, ...``)."""
    columns: tuple[Col, ...]
    key: tuple[str, ...]
    partition_by: tuple[str, ...] = ()
    registered: bool = True
    skipping: tuple[str, ...] | None = None
    """Columns besides the key that Delta keeps file statistics for (min, max, nulls: data skipping),
    those reads and analysts filter on; None: Delta's default (the first 32 columns). Statistics
    are computed row by row as files are written, so a large table lists only what pays."""
    small: bool = False
    """A table of a few rows per file (bookkeeping, histories, lifecycles): written on the driver whatever
    the size of the work (:meth:`pipelines.storage.Lakehouse.write`)."""

    @property
    def properties(self) -> dict[str, str]:
        """Delta table properties of its layout, set when the table is created."""
        properties = {STATS_PREFIX: str(STATS_PREFIX_LENGTH)}
        if self.skipping is not None:
            wanted = {*self.key, *self.skipping}
            properties[STATS_COLUMNS] = ",".join(c for c in self.names if c in wanted)
        return properties

    @property
    def folder(self) -> str:
        """``<layer>/<name>``: where it lives under the lakehouse root, and how task output names it."""
        return f"{self.layer.value}/{self.name}"

    @property
    def schema(self) -> StructType:
        """The Spark schema, with the comments."""
        return StructType([c.field() for c in self.columns])

    @property
    def names(self) -> list[str]:
        """Column names in order."""
        return [c.name for c in self.columns]

    def column(self, name: str) -> Col:
        """The column called ``name``."""
        for col in self.columns:
            if col.name == name:
                return col
        raise KeyError(f"{self.layer.value}.{self.name} has no column {name!r}")


def _c(name: str, data_type: DataType, comment: str, nullable: bool = True) -> Col:
    return Col(name, data_type, comment, nullable)


def _nn(name: str, data_type: DataType, comment: str) -> Col:
    return Col(name, data_type, comment, False)


_STR, _LONG, _INT, _BOOL, _BIN, _TS = (
    StringType(),
    LongType(),
    IntegerType(),
    BooleanType(),
    BinaryType(),
    TimestampType(),
)
_NAMES = ArrayType(StringType(), True)
XID_TYPE = DecimalType(20, 0)
"""XIDs are unsigned 64-bit numbers."""

FILE = _nn("file", _STR, "full path or URI of the binlog file as listed: the key of every layer")
FILE_NAME = _nn("file_name", _STR, "base name of the file, e.g. mysql-bin.000042")
SERVER = _nn("server", _STR, "the server whose binlog sequence the file belongs to (input.server_pattern)")
OFFSET = _nn("offset", _LONG, "byte offset of the event in the file, from the bytes read")
INNER_INDEX = _c("inner_index", _INT, "index of the event inside a MySQL compressed transaction; null outside one")
RUN_ID = _nn("run_id", _STR, "the run that wrote this row (--run-id)")
POSITION = (FILE, FILE_NAME, OFFSET, INNER_INDEX)

# -- bronze --------------------------------------------------------------------------------------

BINLOG_FILES = TableSpec(
    Layer.BRONZE,
    "binlog_files",
    "file: size, status (complete, truncated, corrupt, encrypted, not_a_binlog, empty, unreadable, "
    "duplicate), error and its offset, server, sequence number, version and flavour, checksum algorithm, "
    "how far it is framed",
    (
        FILE,
        FILE_NAME,
        SERVER,
        _c("sequence", _LONG, "the file's number in its server's sequence (mysql-bin.000042: 42); null without one"),
        _nn("size", _LONG, "length in bytes when it was listed"),
        _nn("modification_time", _TS, "modification time when it was listed"),
        _nn(
            "status",
            _STR,
            "complete | truncated (ends inside an event: the active binlog) | corrupt | encrypted | not_a_binlog "
            "| empty | unreadable | duplicate (the same binlog as duplicate_of)",
        ),
        _c("error_code", _STR, "stable code of what ended framing (TRUNCATED, NOT_A_BINLOG, ...)"),
        _c("error_message", _STR, "what ended framing, in words"),
        _c("error_offset", _LONG, "where framing ended"),
        _c("duplicate_of", _STR, "status duplicate: the file already ingested with the same content"),
        _nn("framed_until", _LONG, "end offset of the last complete event"),
        _nn(
            "resume_offset",
            _LONG,
            "where a later run continues the file when it grows: the start of the "
            "transaction still open at framed_until, else framed_until",
        ),
        _c("resume_gtid", _STR, "the GTID in force at resume_offset"),
        _nn(
            "resume_counts",
            MapType(StringType(), LongType(), False),
            "counters (events, rows events, ...) before resume_offset: a resumed walk starts from them",
        ),
        _nn(
            "resume_shapes",
            MapType(StringType(), StringType(), False),
            "the table shapes seen before resume_offset (which TABLE_MAP shapes a resumed walk has seen)",
        ),
        _c(
            "prefix_sha256",
            _STR,
            "SHA-256 of bytes [0, resume_offset): a grown file continues only if they are unchanged",
        ),
        _c(
            "content_sha256",
            _STR,
            "SHA-256 of bytes [0, framed_until): a copy of the file under another name has the same",
        ),
        _nn("event_count", _LONG, "events of the file, inner events of compressed transactions included"),
        _nn("rows_events", _LONG, "rows events of the file"),
        _c("server_id", _LONG, "server id of the FORMAT_DESCRIPTION"),
        _c("server_version", _STR, "server version of the FORMAT_DESCRIPTION"),
        _c("flavor", _STR, "mysql | mariadb"),
        _c("binlog_version", _INT, "binlog format version (1, 3, 4)"),
        _c("checksum_alg", _STR, "NONE | CRC32 | UNDEF"),
        _c("first_timestamp", _LONG, "smallest non-zero event header time (seconds since the epoch, UTC)"),
        _c("last_timestamp", _LONG, "largest event header time"),
        _nn(
            "format_descriptions",
            MapType(LongType(), StringType(), False),
            "offset -> the FORMAT_DESCRIPTION there, as JSON (events name theirs by fde_offset)",
        ),
        _nn("offset_gaps", _INT, "events not starting where the previous one ended (a framing check: 0)"),
        _nn("checksum_failures", _INT, "events whose CRC32 failed"),
        _nn("unknown_events", _INT, "events of a type code the decoder does not know (kept raw)"),
        _nn("unmapped_rows_events", _LONG, "rows events with no TABLE_MAP in force for their table id"),
        RUN_ID,
    ),
    ("file",),
    small=True,
)

EVENT_CLASSES = ("rows", "table_map", "query", "other")
"""``binlog_events.event_class``: the partition a stage reads (silver: table_map, query; gold: rows)."""

BINLOG_EVENTS = TableSpec(
    Layer.BRONZE,
    "binlog_events",
    "event (inner events of compressed transactions exploded): header fields, checksum verdict, what the "
    "order of the file tells (transaction and its commit, TABLE_MAP in force), the raw body",
    (
        *POSITION,
        _nn("timestamp", _LONG, "header time, seconds since the epoch (UTC): when the statement started"),
        _nn("event_type", _INT, "type code"),
        _nn("event_type_name", _STR, "QUERY, WRITE_ROWS, ..., UNKNOWN_<n>"),
        _nn("server_id", _LONG, "header server id"),
        _nn("event_size", _LONG, "header event size (header, body and checksum)"),
        _nn("log_pos", _LONG, "header next position as written (not trusted as identity)"),
        _nn("flags", _INT, "header flags"),
        _c("checksum_ok", _BOOL, "CRC32 verdict; null: no checksum (or an inner event)"),
        _nn("fde_offset", _LONG, "offset of the FORMAT_DESCRIPTION in force (binlog_files.format_descriptions)"),
        _c("gtid", _STR, "GTID in force: the last GTID event's"),
        _c(
            "trx_offset",
            _LONG,
            "where the event's transaction opened (GTID, BEGIN, or its first TABLE_MAP); null outside one",
        ),
        _c("trx_inner_index", _INT, "inner index of that opening event"),
        _c(
            "trx_end_offset",
            _LONG,
            "the event that ended the transaction (XID, COMMIT, XA END); null: no end in the file",
        ),
        _c("trx_end_inner_index", _INT, "inner index of that ending event"),
        _c(
            "commit_timestamp",
            _TS,
            "when the transaction committed: MySQL's immediate_commit_timestamp (microseconds) "
            "where the file has it, else the ending event's header time; null without an end",
        ),
        _c("xid", XID_TYPE, "the XID of the XID event that ended the transaction"),
        _c("table_id", _LONG, "TABLE_MAP and rows events: the table id"),
        _c("statement_end", _BOOL, "rows events: the STMT_END flag"),
        _c("map_offset", _LONG, "rows events: offset of the TABLE_MAP in force (null: none is)"),
        _c("map_inner_index", _INT, "rows events: inner index of the TABLE_MAP in force"),
        _c("in_force_until", _LONG, "TABLE_MAP: offset of the event that ended its force (null: the end of the file)"),
        _c("in_force_until_inner_index", _INT, "TABLE_MAP: inner index of that event"),
        _c("ended_by", _STR, "TABLE_MAP: statement_end | replaced | format_description | null (end of file)"),
        _c("rows_events", _LONG, "TABLE_MAP: rows events read with it"),
        _c("shape_changed", _BOOL, "TABLE_MAP: differs from the previous map of the same table in the file"),
        _nn("body", _BIN, "body bytes: header and checksum excluded"),
        _nn("event_class", _STR, "rows | table_map | query | other: the partition"),
        RUN_ID,
    ),
    ("file", "offset", "inner_index"),
    partition_by=("event_class",),
    skipping=("timestamp", "event_type", "gtid", "commit_timestamp"),
)

QUARANTINE = TableSpec(
    Layer.BRONZE,
    "quarantine",
    "problem a stage met (stage, stable code, severity error or warning, file, offset, field path, "
    "message, the event's bytes): the same problems, codes and offsets as binlog-dump reports",
    (
        _nn("stage", _STR, "bronze | silver | gold"),
        FILE,
        FILE_NAME,
        _c("offset", _LONG, "the event; null when the whole file is concerned"),
        INNER_INDEX,
        _c("event_type_name", _STR, "type of the event"),
        _nn("code", _STR, "stable code: TRUNCATED, CHECKSUM_MISMATCH, DUPLICATE_FILE, GATE_<CHECK>, ..."),
        _nn("severity", _STR, "error (input that could not be used) | warning (nothing lost)"),
        _c("path", _STR, "field path, e.g. WRITE_ROWS -> row 3 -> col 7 created_at"),
        _nn("message", _STR, "what is wrong, in words"),
        _c("body", _BIN, "the event's bytes when there are any"),
        RUN_ID,
    ),
    ("stage", "file", "offset", "inner_index", "code"),
)

# -- silver --------------------------------------------------------------------------------------

TABLE_MAP_COLUMN = StructType(
    [
        StructField("position", IntegerType(), False),
        StructField("name", StringType(), True),
        StructField("type", StringType(), False),
        StructField("type_code", IntegerType(), False),
        StructField("wire_type_code", IntegerType(), False),
        StructField("meta", IntegerType(), False),
        StructField("nullable", BooleanType(), False),
        StructField("unsigned", BooleanType(), True),
        StructField("length", IntegerType(), False),
        StructField("precision", IntegerType(), False),
        StructField("scale", IntegerType(), False),
        StructField("fsp", IntegerType(), False),
        StructField("bits", IntegerType(), False),
        StructField("pack_length", IntegerType(), False),
        StructField("collation_id", IntegerType(), True),
        StructField("charset", StringType(), True),
        StructField("collation", StringType(), True),
        StructField("enum_values", ArrayType(StringType(), False), True),
        StructField("set_values", ArrayType(StringType(), False), True),
        StructField("geometry_type", IntegerType(), True),
        StructField("vector_dimensions", IntegerType(), True),
        StructField("visible", BooleanType(), True),
        StructField("primary_key_prefix", IntegerType(), True),
        StructField("mysql_type", StringType(), False),
    ]
)
"""One column of a TABLE_MAP, every fact the map tells (``position`` 1-based; ``type`` the real type
behind STRING; ``primary_key_prefix`` null: not in the key, 0: the whole column)."""

UNKNOWN_OPTIONAL = StructType(
    [StructField("field_type", IntegerType(), False), StructField("value", BinaryType(), False)]
)

HISTORY_COLUMN = StructType(
    [
        StructField("position", IntegerType(), True),
        StructField("name", StringType(), True),
        StructField("type", StringType(), True),
        StructField("nullable", BooleanType(), True),
        StructField("charset", StringType(), True),
        StructField("collation", StringType(), True),
        StructField("default", StringType(), True),
        StructField("primary_key", BooleanType(), True),
    ]
)
"""A column of a schema-history version: name, MySQL type text (``decimal(10,2)``, ``int unsigned``;
a map's binlog type name when it cannot tell), nullability, charset, DDL default (its SQL text)
and whether it is part of the primary key."""

TABLE_MAPS = TableSpec(
    Layer.SILVER,
    "table_maps",
    "TABLE_MAP: types, metadata, every optional-metadata field, fingerprint, the range of the file in "
    "which it is in force, the column names (resolved from the schema history when the file has none)",
    (
        *POSITION,
        SERVER,
        _nn("table_id", _LONG, "table id (meaningful inside this file only)"),
        _nn("flags", _INT, "map flags"),
        _nn("schema_name", _STR, "database"),
        _nn("table_name", _STR, "table"),
        _nn("column_count", _INT, "columns"),
        _nn("column_types", ArrayType(IntegerType(), False), "type byte of each column"),
        _c("column_names", _NAMES, "names the file carries (binlog_row_metadata=FULL); null without"),
        _nn("columns", ArrayType(TABLE_MAP_COLUMN, False), "every fact of every column"),
        _nn("primary_key", ArrayType(IntegerType(), False), "1-based positions of the primary key the map carries"),
        _nn("optional_fields", ArrayType(IntegerType(), False), "optional-metadata field types present"),
        _nn("unknown_optional", ArrayType(UNKNOWN_OPTIONAL, False), "optional-metadata fields this decoder skips"),
        _nn("fingerprint", _STR, "hash of the shape (types, metadata, names)"),
        _nn("in_force_from", _LONG, "offset of the map"),
        _c("in_force_until", _LONG, "offset of the event that ended its force (null: the end of the file)"),
        _c("in_force_until_inner_index", _INT, "inner index of that event"),
        _c("ended_by", _STR, "statement_end | replaced | format_description | null"),
        _nn("rows_events", _LONG, "rows events read with this map"),
        _c(
            "shape_changed",
            _BOOL,
            "the first map of its table in the file, or one whose shape differs from the one before",
        ),
        _c(
            "resolved_columns",
            ArrayType(HISTORY_COLUMN, False),
            "the map's own columns, else the schema history's at its position",
        ),
        _c("resolved_column_names", _NAMES, "names of resolved_columns"),
        _c("names_source", _STR, "table_map (its own) | ddl | seed | null (unknown: @1, @2, ...)"),
        _c("history_version", _INT, "the schema_history version that named it (null: its own names)"),
        _nn(
            "shape_key",
            _STR,
            "hash of the body past the table id and of the FORMAT_DESCRIPTION: the same for "
            "maps of one shape in any file",
        ),
        _nn(
            "plan_key",
            _STR,
            "hash of what decoding its rows depends on (body past the table id, "
            "FORMAT_DESCRIPTION, resolved columns): gold decodes once per plan",
        ),
        _nn("fde_offset", _LONG, "offset of the FORMAT_DESCRIPTION in force"),
        _nn("body", _BIN, "the map's body"),
        RUN_ID,
    ),
    ("file", "offset", "inner_index"),
    skipping=("schema_name", "table_name", "table_id"),
)

TABLE_ID_LIFECYCLE = TableSpec(
    Layer.SILVER,
    "table_id_lifecycle",
    "file and table id: tables named, offsets, maps, rows events, row changes (counted when gold has "
    "decoded the file), fingerprints, reuse flags",
    (
        FILE,
        FILE_NAME,
        _nn("table_id", _LONG, "table id"),
        _nn("tables", ArrayType(StringType(), False), "schema.table named by the id"),
        _c("first_offset", _LONG, "first map of the id"),
        _c("last_offset", _LONG, "where the id's last mapping ends"),
        _nn("maps", _LONG, "TABLE_MAPs of the id"),
        _nn("rows_events", _LONG, "rows events read with one of the id's maps"),
        _c("rows", _LONG, "row changes: filled by gold once it decoded the file, null before"),
        _nn("fingerprints", ArrayType(StringType(), False), "shapes seen"),
        _nn("reused_for_other_table", _BOOL, "the id named more than one table"),
        _nn("reused_for_other_shape", _BOOL, "the id had more than one shape"),
        RUN_ID,
    ),
    ("file", "table_id"),
    small=True,
)

DDL_OBJECT = StructType(
    [
        StructField("schema_name", StringType(), True),
        StructField("object_name", StringType(), False),
        StructField("action", StringType(), False),
    ]
)

DDL_EVENTS = TableSpec(
    Layer.SILVER,
    "ddl_events",
    "QUERY event: status variables, statement, kind, objects a DDL touches, whether the replay understood it",
    (
        *POSITION,
        SERVER,
        _nn("timestamp", _LONG, "header time"),
        _nn("server_id", _LONG, "header server id"),
        _c("gtid", _STR, "GTID in force"),
        _c("trx_offset", _LONG, "where its transaction opened"),
        _c("commit_timestamp", _TS, "when its transaction committed (null: outside one, or no end)"),
        _c("event_type_name", _STR, "QUERY, QUERY_COMPRESSED, EXECUTE_LOAD_QUERY"),
        _nn("thread_id", _LONG, "thread id"),
        _nn("exec_time", _LONG, "execution time (seconds)"),
        _nn("error_code", _INT, "error code"),
        _c("default_schema", _STR, "default database"),
        _c("statement", _STR, "the statement; null when it does not decode"),
        _c("statement_raw", _BIN, "its bytes when it does not decode"),
        _nn("kind", _STR, "BEGIN, COMMIT, ROLLBACK, XA, SAVEPOINT, DDL, DML, OTHER"),
        _nn("status_vars", MapType(StringType(), StringType(), True), "status variables as text"),
        _nn("status_vars_json", _STR, "status variables, typed, as a JSON object"),
        _c("unknown_status_code", _INT, "first status variable code not read"),
        _c("objects", ArrayType(DDL_OBJECT, False), "DDL: the objects it touches"),
        _c("ddl_parsed", _BOOL, "DDL: replayed without error"),
        _c("ddl_error", _STR, "DDL: why the replay did not understand it"),
        RUN_ID,
    ),
    ("file", "offset", "inner_index"),
)

SCHEMA_HISTORY = TableSpec(
    Layer.SILVER,
    "schema_history",
    "table version of one server: columns (name, type, charset, default, key), where it starts and ends, "
    "source (table_map, ddl, seed)",
    (
        SERVER,
        _nn("schema_name", _STR, "database"),
        _nn("table_name", _STR, "table"),
        _nn("version", _INT, "1, 2, ... per server and table, in binlog order"),
        _c("valid_from_sequence", _LONG, "sequence number of the file where the version starts"),
        _c("valid_from_file", _STR, "where the version starts (null: a seed version)"),
        _c("valid_from_offset", _LONG, "its offset"),
        _c("valid_from_inner_index", _INT, "its inner index"),
        _c("valid_to_sequence", _LONG, "sequence number of the file where the next version starts"),
        _c("valid_to_file", _STR, "where the next version starts (null: still in force)"),
        _c("valid_to_offset", _LONG, "its offset"),
        _c("valid_to_inner_index", _INT, "its inner index"),
        _c("columns", ArrayType(HISTORY_COLUMN, False), "the columns; null: the table was dropped"),
        _nn("source", _STR, "table_map | ddl | seed"),
        _c("statement", _STR, "the DDL statement"),
        _c("fingerprint", _STR, "the map's fingerprint (source table_map)"),
        RUN_ID,
    ),
    ("server", "schema_name", "table_name", "version"),
    small=True,
)

# -- gold ----------------------------------------------------------------------------------------

CHANGE_COORDINATES = (
    FILE,
    FILE_NAME,
    SERVER,
    OFFSET,
    INNER_INDEX,
    _nn("row_index", _INT, "row inside the rows event, from 0"),
    _nn("event_type", _STR, "WRITE_ROWS, UPDATE_ROWS_V1, ..."),
    _c("gtid", _STR, "GTID of the transaction"),
    _c("xid", XID_TYPE, "XID of the transaction"),
    _c("trx_offset", _LONG, "where the transaction opened: with file, it names the transaction"),
    _c("trx_inner_index", _INT, "inner index of that opening event"),
    _c("commit_timestamp", _TS, "when the transaction committed (null: the file holds no end for it)"),
    _nn("event_timestamp", _TS, "the rows event's header time (when its statement started)"),
    _nn("server_id", _LONG, "header server id"),
    _nn("schema_name", _STR, "database"),
    _nn("table_name", _STR, "table"),
    _nn("table_id", _LONG, "table id"),
    _nn("op", _STR, "insert | update | delete"),
)
"""Columns every change table starts with."""

CHANGES = TableSpec(
    Layer.GOLD,
    "changes",
    "row change of any table: op, before/after as JSON text, absent columns, coordinates, GTID, XID, "
    "commit and event time",
    (
        *CHANGE_COORDINATES,
        _c("before", _STR, "JSON object {column: value}; null for inserts"),
        _c("after", _STR, "JSON object {column: value}; null for deletes"),
        _c("absent_before", _NAMES, "columns not in the before image (MINIMAL/NOBLOB)"),
        _c("absent_after", _NAMES, "columns not in the after image"),
        _c("undecoded_before", _NAMES, "columns held in another form: text kept as bytes, JSON diffs"),
        _c("undecoded_after", _NAMES, "likewise for the after image"),
        _nn("column_names", _NAMES, "the table's columns in order"),
        _nn("column_kinds", _NAMES, "gold kind of each column (pipelines.gold.types)"),
        RUN_ID,
    ),
    ("file", "offset", "inner_index", "row_index"),
    skipping=("schema_name", "table_name", "op", "gtid", "commit_timestamp"),
)

ABSENT_COLUMNS = StructType([StructField("before", _NAMES, True), StructField("after", _NAMES, True)])


def typed_change_table(name: str, image: StructType) -> TableSpec:
    """The spec of a typed change table ``<schema>__<table>`` whose images have type ``image``."""
    return TableSpec(
        Layer.GOLD,
        name,
        "row change of one table: typed before and after structs, op, coordinates, GTID, commit and event time",
        (
            *CHANGE_COORDINATES,
            _c("before", image, "the row before the change, typed; null for inserts"),
            _c("after", image, "the row after the change, typed; null for deletes"),
            _c("absent_columns", ABSENT_COLUMNS, "columns absent from each image (MINIMAL/NOBLOB), not NULL"),
            RUN_ID,
        ),
        ("file", "offset", "inner_index", "row_index"),
        skipping=("op", "gtid", "commit_timestamp"),
    )


TYPED_CHANGES_EXAMPLE = typed_change_table("<schema>__<table>", StructType([]))
"""The typed change tables as the README lists them."""

# -- current state and history -------------------------------------------------------------------

CURRENT_META = (
    _nn("_server", _STR, "the server whose table this row is of"),
    _nn(
        "_op",
        _STR,
        "the change that gave the row these values: insert | update | rename (RENAME TABLE carried it "
        "here) | fill (ALTER TABLE added a column with a default)",
    ),
    _c("_gtid", _STR, "GTID of that change's transaction"),
    _c("_committed_at", _TS, "when that transaction committed (null: its file holds no end for it)"),
    _c("_sequence", _LONG, "sequence number of the file of that change"),
    _nn("_file", _STR, "the file of that change"),
    _nn("_offset", _LONG, "its event's offset"),
    _c("_inner_index", _INT, "its inner index"),
    _c("_row_index", _INT, "its row inside the rows event (a DDL statement: the row's rank among those it reopened)"),
)
"""What every current-state row says of the change that last set it (after the source columns)."""

HISTORY_META = (
    *CURRENT_META[:3],  # _server, _op, _gtid
    _c("_valid_from", _TS, "commit time of the change that opened this version"),
    _c("_valid_to", _TS, "commit time of the step that closed it (null: still current, or no end known)"),
    _nn("_is_current", _BOOL, "the version is the row as it is now"),
    _c(
        "_closed_by",
        _STR,
        "what closed it: update | delete | truncate | drop | create | drop_database | rename | fill",
    ),
    _c("_valid_from_sequence", _LONG, "sequence number of the file of the opening change"),
    _nn("_valid_from_file", _STR, "the file of the opening change"),
    _nn("_valid_from_offset", _LONG, "its offset"),
    _c("_valid_from_inner_index", _INT, "its inner index"),
    _c(
        "_valid_from_row_index",
        _INT,
        "its row inside the rows event (a DDL statement: the row's rank among those it reopened)",
    ),
    _c("_valid_to_sequence", _LONG, "sequence number of the file of the closing step"),
    _c("_valid_to_file", _STR, "the file of the closing step (null: still current)"),
    _c("_valid_to_offset", _LONG, "its offset"),
    _c("_valid_to_inner_index", _INT, "its inner index"),
    _c("_valid_to_row_index", _INT, "its row inside the rows event (null: a DDL statement)"),
)
"""What every history row says of the versions' bounds (after the source columns)."""


def _source_columns(image: StructType) -> tuple[Col, ...]:
    return tuple(Col(f.name, f.dataType, f.metadata.get("comment") or "source column " + f.name) for f in image.fields)


def current_table(name: str, image: StructType) -> TableSpec:
    """The spec of ``binlog_current.<name>``: the source columns of gold table ``name`` (``image``), at top level."""
    return TableSpec(
        Layer.CURRENT,
        name,
        "live row of one source table as the binlogs leave it: its columns under their own names and types, "
        "the change that last set it",
        (*_source_columns(image), *CURRENT_META),
        ("_server", "_file", "_offset", "_inner_index", "_row_index"),
    )


def history_table(name: str, image: StructType) -> TableSpec:
    """The spec of ``binlog_history.<name>``: every version of every row of gold table ``name``."""
    return TableSpec(
        Layer.HISTORY,
        name,
        "version of a row of one source table (SCD type 2): its columns, the change that opened it, "
        "valid from/to (commit times and binlog positions)",
        (*_source_columns(image), *HISTORY_META),
        (
            "_server",
            "_valid_from_file",
            "_valid_from_offset",
            "_valid_from_inner_index",
            "_valid_from_row_index",
        ),
    )


CURRENT_EXAMPLE = current_table("<schema>__<table>", StructType([]))
HISTORY_EXAMPLE = history_table("<schema>__<table>", StructType([]))

# -- quality and bookkeeping ---------------------------------------------------------------------

GATE_RESULTS = TableSpec(
    Layer.QUALITY,
    "gate_results",
    "quality check of a run",
    (
        RUN_ID,
        _nn("gate", _STR, "bronze | silver | gold"),
        _nn("check", _STR, "the rule's name"),
        _nn("success", _BOOL, "it passed"),
        _nn("action", _STR, "fail | quarantine | warn"),
        _nn("observed", _STR, "what was found"),
        _nn("details", _STR, "failing files and values, JSON"),
        _nn("description", _STR, "what the rule checks"),
        _nn("checked_at", _TS, "when"),
    ),
    ("run_id", "gate", "check"),
    small=True,
)

PROGRESS = TableSpec(
    Layer.STATE,
    "progress",
    "file and derived layer: the upstream state it was built from",
    (
        _nn("layer", _STR, "silver | gold"),
        FILE,
        _nn(
            "built_from",
            _STR,
            "the upstream run the file was built from (bronze binlog_files.run_id; for gold, the silver build)",
        ),
        RUN_ID,
        _nn("quarantined", _LONG, "quarantine rows this layer wrote for the file"),
        _nn(
            "counts",
            MapType(StringType(), LongType(), False),
            "what the layer holds of the file (gold: row changes per gold table; silver: DDL statements and parsed)",
        ),
    ),
    ("layer", "file"),
    small=True,
    registered=False,
)

_ZERO: dict[type[DataType], object] = {
    StringType: "",
    BinaryType: bytearray(),
    LongType: 0,
    IntegerType: 0,
    BooleanType: False,
    TimestampType: datetime(1970, 1, 1, tzinfo=UTC),
}
"""Stand-ins that only tell Spark a non-nullable column is never null (they are never taken)."""


def _loose(data_type: DataType) -> DataType:
    """The type with every nested field, element and value nullable (casts may not tighten those)."""
    if isinstance(data_type, StructType):
        return StructType([StructField(f.name, _loose(f.dataType), True, f.metadata) for f in data_type.fields])
    if isinstance(data_type, ArrayType):
        return ArrayType(_loose(data_type.elementType), True)
    if isinstance(data_type, MapType):
        return MapType(_loose(data_type.keyType), _loose(data_type.valueType), True)
    return data_type


def _shaped(column: Col, have: DataType | None, nullable: bool) -> Column:
    value: Column = F.col(column.name) if have is not None else F.lit(None)
    if have is None or _loose(have) != _loose(column.type):
        value = value.cast(_loose(column.type))
    if not column.nullable and nullable and type(column.type) in _ZERO:
        value = F.coalesce(value, F.lit(_ZERO[type(column.type)]).cast(column.type))
    return value.alias(column.name, metadata={"comment": column.comment})


def _conformed(schema: StructType, spec: TableSpec) -> bool:
    """Whether ``conform(spec)`` would leave a frame of ``schema`` as it is (it already went through it)."""
    if [f.name for f in schema.fields] != spec.names:
        return False
    return all(
        _loose(f.dataType) == _loose(c.type)
        and (c.nullable or not f.nullable or type(c.type) not in _ZERO)
        and f.metadata.get("comment") == c.comment
        for f, c in zip(schema.fields, spec.columns, strict=True)
    )


def conform(spec: TableSpec) -> Callable[[DataFrame], DataFrame]:
    """``frame -> frame`` with exactly ``spec``'s columns, in order, with their types and comments.

    Missing columns are null; a column of another type is cast (nested nullability is never
    tightened: Spark cannot cast a nullable element to a non-nullable one); a non-nullable
    column the frame does not know to be non-null is marked so (``coalesce`` with a stand-in
    that is never taken), so Delta stores the table's NOT NULL columns as such.
    """

    def transform(df: DataFrame) -> DataFrame:
        if _conformed(df.schema, spec):
            return df
        have = {f.name: f for f in df.schema.fields}
        return df.select(
            *[
                _shaped(
                    c,
                    have[c.name].dataType if c.name in have else None,
                    have[c.name].nullable if c.name in have else True,
                )
                for c in spec.columns
            ]
        )

    return transform


GOLD_PLANS = TableSpec(
    Layer.STATE,
    "gold_plans",
    "file and plan: the gold table a TABLE_MAP shape of the file feeds, with its columns and kinds",
    (
        FILE,
        _nn("plan_key", _STR, "silver table_maps.plan_key"),
        _nn("gold_table", _STR, "the gold change table its rows go to"),
        _nn("column_names", _NAMES, "its columns"),
        _nn("column_kinds", _NAMES, "their gold kinds"),
        _c("first_sequence", _LONG, "sequence number of the file"),
        _nn("first_offset", _LONG, "the file's first map of this plan"),
        _nn("first_inner_index", _INT, "its inner index (-1 outside a compressed transaction)"),
        RUN_ID,
    ),
    ("file", "plan_key"),
    registered=False,
    small=True,
)
"""What each typed gold table's layout is made of: derived from every file, in binlog order, so that
the same input set gives the same layout whatever order files arrived in."""

TABLES: tuple[TableSpec, ...] = (
    BINLOG_FILES,
    BINLOG_EVENTS,
    QUARANTINE,
    TABLE_MAPS,
    TABLE_ID_LIFECYCLE,
    DDL_EVENTS,
    SCHEMA_HISTORY,
    CHANGES,
    TYPED_CHANGES_EXAMPLE,
    CURRENT_EXAMPLE,
    HISTORY_EXAMPLE,
    GATE_RESULTS,
    PROGRESS,
    GOLD_PLANS,
)
"""Every table, in the order the README lists them."""


def readme_table(databases: dict[Layer, str]) -> str:
    """The README's list of tables (Markdown): each registered table by name, what one row is."""
    lines = ["| Table | One row per |", "|---|---|"]
    for spec in TABLES:
        where = f"`{databases[spec.layer]}.{spec.name}`" if spec.registered else f"`{spec.layer.value}/{spec.name}`"
        lines.append(f"| {where} | {spec.row} |")
    return "\n".join(lines)


__all__ = [
    "ABSENT_COLUMNS",
    "BINLOG_EVENTS",
    "BINLOG_FILES",
    "CHANGES",
    "CHANGE_COORDINATES",
    "CURRENT_EXAMPLE",
    "CURRENT_META",
    "DDL_EVENTS",
    "DDL_OBJECT",
    "EVENT_CLASSES",
    "GATE_RESULTS",
    "GOLD_PLANS",
    "HISTORY_COLUMN",
    "HISTORY_EXAMPLE",
    "HISTORY_META",
    "PROGRESS",
    "QUARANTINE",
    "SCHEMA_HISTORY",
    "TABLES",
    "TABLE_ID_LIFECYCLE",
    "TABLE_MAPS",
    "TABLE_MAP_COLUMN",
    "UNKNOWN_OPTIONAL",
    "XID_TYPE",
    "Col",
    "Layer",
    "TableSpec",
    "conform",
    "current_table",
    "history_table",
    "readme_table",
    "typed_change_table",
]
