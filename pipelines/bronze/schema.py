"""The bronze tables' schemas, declared once.

``binlog_events`` is keyed by ``(file, offset, inner_index)``: the file's full path or URI as
Spark lists it, the byte offset of the event in that file (computed from the bytes read, never
from ``log_pos``), and the index of an event inside a compressed transaction payload (null for
events of the file itself; inner events share the outer event's offset).
"""

from __future__ import annotations

from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

BINLOG_EVENTS = StructType(
    [
        StructField("file", StringType(), False),  # full path / URI as listed by binaryFile
        StructField("file_name", StringType(), False),  # base name, e.g. mysql-bin.000042
        StructField("offset", LongType(), False),  # byte offset of the event in the file
        StructField("inner_index", IntegerType(), True),  # index inside a TRANSACTION_PAYLOAD, else null
        StructField("timestamp", LongType(), False),  # header `when`, seconds since the epoch (UTC)
        StructField("event_type", IntegerType(), False),  # type code
        StructField("event_type_name", StringType(), False),  # QUERY, WRITE_ROWS, ..., UNKNOWN_<n>
        StructField("server_id", LongType(), False),
        StructField("event_size", LongType(), False),  # header event_size (bytes, header + body + CRC)
        StructField("log_pos", LongType(), False),  # header next position as written (not trusted)
        StructField("flags", IntegerType(), False),  # header flags
        StructField("checksum_ok", BooleanType(), True),  # null: no checksum (or inner event)
        StructField("format_description", StringType(), False),  # FormatDescription.to_json() in force
        StructField("gtid", StringType(), True),  # GTID of the transaction the event belongs to
        StructField("table_id", LongType(), True),  # TABLE_MAP and rows events: the table id
        StructField("statement_end", BooleanType(), True),  # rows events: STMT_END flag set
        StructField("body", BinaryType(), False),  # body bytes: header and checksum excluded
    ]
)
"""One row per event; inner events of compressed transactions exploded (``binlog_events``)."""

BINLOG_FILES = StructType(
    [
        StructField("file", StringType(), False),
        StructField("file_name", StringType(), False),
        StructField("size", LongType(), False),  # length listed by binaryFile at ingestion
        StructField("modification_time", TimestampType(), False),
        StructField("status", StringType(), False),  # complete | truncated | corrupt | encrypted | not_a_binlog
        StructField("error_code", StringType(), True),  # BinlogError.code of what ended framing
        StructField("error_message", StringType(), True),
        StructField("error_offset", LongType(), True),
        StructField("framed_until", LongType(), False),  # end offset of the last complete event
        StructField("prefix_sha256", StringType(), True),  # sha256 of bytes [0, framed_until)
        StructField("event_count", LongType(), False),  # events of the file incl. inner events
        StructField("server_id", LongType(), True),  # of the FORMAT_DESCRIPTION
        StructField("server_version", StringType(), True),
        StructField("flavor", StringType(), True),  # mysql | mariadb
        StructField("binlog_version", IntegerType(), True),
        StructField("checksum_alg", StringType(), True),  # NONE | CRC32 | UNDEF
        StructField("first_timestamp", LongType(), True),
        StructField("last_timestamp", LongType(), True),
    ]
)
"""One row per ingested file (``binlog_files``), keyed by ``file``."""

QUARANTINE = StructType(
    [
        StructField("stage", StringType(), False),  # bronze | silver | gold
        StructField("file", StringType(), False),
        StructField("file_name", StringType(), False),
        StructField("offset", LongType(), True),  # null when the whole file is rejected before any event
        StructField("inner_index", IntegerType(), True),
        StructField("event_type_name", StringType(), True),
        StructField("code", StringType(), False),  # BinlogError.code (TRUNCATED, CHECKSUM_MISMATCH, ...)
        StructField("severity", StringType(), False),  # error | warning
        StructField("path", StringType(), True),  # field path: WRITE_ROWS -> row 3 -> col 7 created_at
        StructField("message", StringType(), False),
        StructField("body", BinaryType(), True),  # the event's bytes when there are any
    ]
)
"""What a stage could not decode, with a stable reason code (``quarantine``), one table for all stages."""
