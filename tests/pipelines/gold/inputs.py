"""Bronze- and silver-shaped inputs for gold tests, built from fixture binlogs.

The ``binlog_events`` rows are bronze's own framing of the file (``pipelines.bronze.framing``);
each silver ``table_maps`` row carries the columns gold reads (``TABLE_MAP_COLUMNS``), decoded
with ``binlog_core``.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

from pipelines.bronze.schema import BINLOG_EVENTS, BINLOG_FILES
from pyspark.sql import SparkSession

from binlog_core.constants import EventType
from binlog_core.event import FormatDescription
from binlog_core.table_map import decode_table_map
from pipelines.bronze.framing import EventRow, frame_file
from pipelines.gold.stage import TABLE_MAP_COLUMNS
from pipelines.progress import record_progress
from pipelines.storage import Lakehouse, Layer, Table


def _opener(path: Path) -> Callable[[], BinaryIO]:
    def open_file() -> BinaryIO:
        return path.open("rb")

    return open_file


def bronze_rows(path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    """(binlog_events rows as bronze frames them, table_maps rows, binlog_files row) of one file."""
    file, name = str(path), path.name
    events = [row._asdict() for row in frame_file(_opener(path), file, name) if isinstance(row, EventRow)]
    maps: list[dict[str, Any]] = []
    for event in events:
        if event["event_type"] != EventType.TABLE_MAP:
            continue
        tm = decode_table_map(event["body"], FormatDescription.from_json(event["format_description"]))
        maps.append(
            {
                "file": file,
                "file_name": name,
                "offset": event["offset"],
                "inner_index": event["inner_index"],
                "table_id": tm.table_id,
                "schema_name": tm.schema,
                "table_name": tm.table,
                "column_names": [c.name for c in tm.columns],
                "body": event["body"],
                "format_description": event["format_description"],
            }
        )
    end = max(e["offset"] + e["event_size"] for e in events if e["inner_index"] is None)
    files_row = {
        "file": file,
        "file_name": name,
        "size": os.path.getsize(path),
        "modification_time": datetime(2026, 1, 1, tzinfo=UTC),
        "status": "complete",
        "error_code": None,
        "error_message": None,
        "error_offset": None,
        "framed_until": end,
        "prefix_sha256": hashlib.sha256(path.read_bytes()[:end]).hexdigest(),
        "event_count": len(events),
        "server_id": None,
        "server_version": None,
        "flavor": "mariadb",
        "binlog_version": 4,
        "checksum_alg": None,
        "first_timestamp": None,
        "last_timestamp": None,
    }
    return events, maps, files_row


def write_inputs(spark: SparkSession, lake: Lakehouse, paths: list[Path]) -> None:
    """Write bronze ``binlog_events``/``binlog_files`` and silver ``table_maps`` for ``paths``, and
    record silver as built for them."""
    events: list[dict[str, Any]] = []
    maps: list[dict[str, Any]] = []
    files: list[dict[str, Any]] = []
    for path in paths:
        e, m, f = bronze_rows(path)
        events += e
        maps += m
        files.append(f)
    lake.overwrite(spark.createDataFrame(events, BINLOG_EVENTS), Table.bronze("binlog_events"))
    lake.overwrite(spark.createDataFrame(files, BINLOG_FILES), Table.bronze("binlog_files"))
    lake.overwrite(spark.createDataFrame(maps, TABLE_MAP_COLUMNS), Table.silver("table_maps"))
    record_progress(lake, Layer.SILVER, [f["file"] for f in files])  # silver is done with them
