"""The silver tables' schemas, declared once."""

from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
)

_POSITION = [
    StructField("file", StringType(), False),
    StructField("file_name", StringType(), False),
    StructField("offset", LongType(), False),
    StructField("inner_index", IntegerType(), True),
]

TABLE_MAP_COLUMN = StructType(
    [
        StructField("position", IntegerType(), False),  # 1-based
        StructField("name", StringType(), True),  # null when the file carries no names
        StructField("type", StringType(), False),  # LONG, VARCHAR, NEWDECIMAL, ... (the real type behind STRING)
        StructField("type_code", IntegerType(), False),
        StructField("wire_type_code", IntegerType(), False),  # the type byte as written
        StructField("meta", IntegerType(), False),
        StructField("nullable", BooleanType(), False),
        StructField("unsigned", BooleanType(), True),
        StructField("length", IntegerType(), False),
        StructField("precision", IntegerType(), False),
        StructField("scale", IntegerType(), False),
        StructField("fsp", IntegerType(), False),
        StructField("bits", IntegerType(), False),
        StructField("pack_length", IntegerType(), False),
        StructField("collation_id", IntegerType(), True),  # default charset, per-column overrides and charsets
        StructField("charset", StringType(), True),  # name of the collation's character set
        StructField("collation", StringType(), True),  # collation name, as the file's flavour names it
        StructField("enum_values", ArrayType(StringType(), False), True),
        StructField("set_values", ArrayType(StringType(), False), True),
        StructField("geometry_type", IntegerType(), True),
        StructField("vector_dimensions", IntegerType(), True),
        StructField("visible", BooleanType(), True),
        StructField("primary_key_prefix", IntegerType(), True),  # null: not in the key; 0: whole column
        StructField("mysql_type", StringType(), False),  # MySQL type text when the map tells it, else `type`
    ]
)

UNKNOWN_OPTIONAL = StructType(
    [StructField("field_type", IntegerType(), False), StructField("value", BinaryType(), False)]
)

HISTORY_COLUMN = StructType(
    [
        StructField("position", IntegerType(), True),
        StructField("name", StringType(), True),
        # MySQL type text ("decimal(10,2)", "int unsigned"); a map's binlog type name ("VARCHAR") when it cannot tell
        StructField("type", StringType(), True),
        StructField("nullable", BooleanType(), True),
        StructField("charset", StringType(), True),
        StructField("collation", StringType(), True),
    ]
)

TABLE_MAPS = StructType(
    [
        *_POSITION,
        StructField("table_id", LongType(), False),
        StructField("flags", IntegerType(), False),
        StructField("schema_name", StringType(), False),
        StructField("table_name", StringType(), False),
        StructField("column_count", IntegerType(), False),
        StructField("column_types", ArrayType(IntegerType(), False), False),
        StructField("column_names", ArrayType(StringType(), True), True),  # null: the file carries no names
        StructField("columns", ArrayType(TABLE_MAP_COLUMN, False), False),
        StructField("primary_key", ArrayType(IntegerType(), False), False),  # 1-based positions
        StructField("optional_fields", ArrayType(IntegerType(), False), False),  # optional-metadata types present
        StructField("unknown_optional", ArrayType(UNKNOWN_OPTIONAL, False), False),  # fields this decoder skips
        StructField("fingerprint", StringType(), False),
        StructField("in_force_from", LongType(), False),  # offset of the map
        StructField("in_force_until", LongType(), True),  # offset of the event that ends it (null: end of file)
        StructField("in_force_until_inner_index", IntegerType(), True),  # its inner index (compressed payloads)
        StructField("ended_by", StringType(), True),  # statement_end | replaced | format_description | null
        StructField("rows_events", LongType(), False),  # rows events read with this map
        StructField("resolved_columns", ArrayType(HISTORY_COLUMN, False), True),  # the map's, else the history's
        StructField("resolved_column_names", ArrayType(StringType(), True), True),  # names of resolved_columns
        StructField("names_source", StringType(), True),  # table_map (its own) | ddl | seed | null
        StructField("body", BinaryType(), False),
        StructField("format_description", StringType(), False),
    ]
)
"""Every TABLE_MAP decoded, with the range of the file in which it is in force (``table_maps``)."""

TABLE_ID_LIFECYCLE = StructType(
    [
        StructField("file", StringType(), False),
        StructField("file_name", StringType(), False),
        StructField("table_id", LongType(), False),
        StructField("tables", ArrayType(StringType(), False), False),  # schema.table named by the id
        StructField("first_offset", LongType(), True),
        StructField("last_offset", LongType(), True),  # where the id's last mapping ends
        StructField("maps", LongType(), False),
        StructField("rows_events", LongType(), False),  # rows events read with one of the id's maps
        StructField("rows", LongType(), True),  # row changes: filled by gold once it decoded the file, null before
        StructField("fingerprints", ArrayType(StringType(), False), False),
        StructField("reused_for_other_table", BooleanType(), False),
        StructField("reused_for_other_shape", BooleanType(), False),
    ]
)
"""Per file and table id: what it named and how often (``table_id_lifecycle``)."""

DDL_OBJECT = StructType(
    [
        StructField("schema_name", StringType(), True),
        StructField("object_name", StringType(), False),
        StructField("action", StringType(), False),
    ]
)

DDL_EVENTS = StructType(
    [
        *_POSITION,
        StructField("timestamp", LongType(), False),
        StructField("server_id", LongType(), False),
        StructField("gtid", StringType(), True),
        StructField("event_type_name", StringType(), True),  # QUERY, QUERY_COMPRESSED, EXECUTE_LOAD_QUERY
        StructField("thread_id", LongType(), False),
        StructField("exec_time", LongType(), False),
        StructField("error_code", IntegerType(), False),
        StructField("default_schema", StringType(), True),
        StructField("statement", StringType(), True),  # null when it does not decode
        StructField("statement_raw", BinaryType(), True),  # the bytes when it does not decode
        StructField("kind", StringType(), False),  # BEGIN, COMMIT, ROLLBACK, XA, SAVEPOINT, DDL, DML, OTHER
        StructField("status_vars", MapType(StringType(), StringType(), True), False),
        StructField("status_vars_json", StringType(), False),  # the same, typed values, as a JSON object
        StructField("unknown_status_code", IntegerType(), True),
        StructField("objects", ArrayType(DDL_OBJECT, False), True),  # DDL only
        StructField("ddl_parsed", BooleanType(), True),  # DDL only: replayed without error
        StructField("ddl_error", StringType(), True),
    ]
)
"""Every QUERY event with its session context; DDL with the objects it touches (``ddl_events``)."""

SCHEMA_HISTORY = StructType(
    [
        StructField("schema_name", StringType(), False),
        StructField("table_name", StringType(), False),
        StructField("version", IntegerType(), False),  # 1, 2, ... per table and source order
        StructField("valid_from_file", StringType(), True),  # null for a seed version
        StructField("valid_from_offset", LongType(), True),
        StructField("valid_from_inner_index", IntegerType(), True),
        StructField("columns", ArrayType(HISTORY_COLUMN, False), True),  # null: the table was dropped
        StructField("source", StringType(), False),  # table_map | ddl | seed
        StructField("statement", StringType(), True),
        StructField("fingerprint", StringType(), True),
    ]
)
"""Each table's columns version by version, with where each version starts (``schema_history``)."""
