"""Bronze- and silver-shaped inputs for gold tests, built from fixture binlogs with binlog_core.

Each bronze ``binlog_events`` row is what bronze stores for an event (``BINLOG_EVENTS``); each
silver ``table_maps`` row carries the columns gold reads (``TABLE_MAP_COLUMNS``).
"""

from __future__ import annotations

import hashlib
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from binlog_core.constants import EventType
from binlog_core.decoder import BinlogDecoder
from binlog_core.framing import iter_events
from binlog_core.rows import ROWS_KINDS, decode_rows_header
from binlog_core.table_map import decode_table_map
from pipelines.bronze.schema import BINLOG_EVENTS, BINLOG_FILES
from pipelines.gold.stage import TABLE_MAP_COLUMNS
from pipelines.storage import Lakehouse, Table


def bronze_rows(path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    """(binlog_events rows, table_maps rows, binlog_files row) of one binlog file."""
    file, name = str(path), path.name
    events: list[dict[str, Any]] = []
    maps: list[dict[str, Any]] = []
    decoder = BinlogDecoder()
    end = 4
    with open(path, "rb") as stream:
        for event in iter_events(stream, name):
            decoder.decode(event)
            h = event.header
            table_id = statement_end = None
            if event.type_code in ROWS_KINDS:
                header = decode_rows_header(event.body, event.type_code, event.fde)
                table_id, statement_end = header.table_id, header.statement_end
            if event.type_code == EventType.TABLE_MAP:
                tm = decode_table_map(event.body, event.fde)
                table_id = tm.table_id
                maps.append(
                    {
                        "file": file,
                        "file_name": name,
                        "offset": event.offset,
                        "inner_index": event.inner_index,
                        "table_id": tm.table_id,
                        "schema_name": tm.schema,
                        "table_name": tm.table,
                        "column_names": [c.name for c in tm.columns],
                        "body": event.body,
                        "format_description": event.fde.to_json(),
                    }
                )
            events.append(
                {
                    "file": file,
                    "file_name": name,
                    "offset": event.offset,
                    "inner_index": event.inner_index,
                    "timestamp": h.timestamp,
                    "event_type": h.type_code,
                    "event_type_name": event.type_name,
                    "server_id": h.server_id,
                    "event_size": h.event_size,
                    "log_pos": h.log_pos,
                    "flags": h.flags,
                    "checksum_ok": event.checksum_ok,
                    "format_description": event.fde.to_json(),
                    "gtid": decoder.gtid,
                    "table_id": table_id,
                    "statement_end": statement_end,
                    "body": event.body,
                }
            )
            end = max(end, event.end_offset)
    content = path.read_bytes()[:end]
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
        "prefix_sha256": hashlib.sha256(content).hexdigest(),
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
    """Write bronze ``binlog_events``/``binlog_files`` and silver ``table_maps`` for ``paths``."""
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
