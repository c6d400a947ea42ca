"""Gold's decoder inputs built from real binlog files, without a Spark session.

The rows events are bronze's own framing of a file (:func:`pipelines.bronze.framing.frame_file`),
as the ``ROWS_INPUT`` rows gold reads; each TABLE_MAP becomes one :class:`pipelines.gold.decode.Plan`
(keyed by its position), with the schema-history columns in force at it when the map carries no
names -- the history replayed from the DDL of the files given, in order
(:func:`pipelines.silver.history.replay_history`), as silver replays it.  The typed layout of each
gold table is :func:`pipelines.gold.transforms.table_layout` over its maps' column versions in
binlog order, as the gold stage builds it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from binlog_core.columns import DecodeOptions
from binlog_core.constants import EventType
from binlog_core.event import FormatDescription
from binlog_core.events import decode_body
from binlog_core.events.query import QueryEvent, StatementKind
from binlog_core.framing import iter_events
from binlog_core.table_map import decode_table_map
from pipelines.bronze.discover import sequence_of
from pipelines.bronze.framing import EventRow, FileSummary, frame_file
from pipelines.gold.decode import HISTORY_FIELDS, ROWS_INPUT, GoldDecoder, Plan, table_map_of
from pipelines.gold.names import gold_table_name
from pipelines.gold.transforms import table_layout
from pipelines.gold.types import column_kind
from pipelines.silver.history import names_at, replay_history

SERVER = "srv"


def framed(path: Path) -> tuple[list[dict[str, Any]], FileSummary]:
    """Bronze's event rows (dicts) and summary of one file."""
    out = list(frame_file(lambda: path.open("rb"), str(path), path.name, size=path.stat().st_size))
    summary = out[-1]
    assert isinstance(summary, FileSummary)
    return [row._asdict() for row in out if isinstance(row, EventRow)], summary


def ddl_history(paths: list[Path]) -> list[dict[str, Any]]:
    """Schema-history rows of one server replayed from the DDL of ``paths`` (its files, in any order)."""
    ddl = []
    for path in paths:
        with path.open("rb") as stream:
            for event in iter_events(stream, path.name):
                if event.type_code != EventType.QUERY:
                    continue
                body = decode_body(event)
                if isinstance(body, QueryEvent) and body.kind == StatementKind.DDL:
                    ddl.append(
                        {
                            "file": str(path),
                            "offset": event.offset,
                            "inner_index": event.inner_index,
                            "sequence": sequence_of(path.name),
                            "default_schema": body.schema or None,
                            "statement": body.statement,
                        }
                    )
    rows, _ = replay_history(None, ddl, [])
    return rows


@dataclass
class GoldInputs:
    """What the gold stage hands its decoder for some files: plans, layouts and the rows events."""

    plans: dict[str, Plan]
    tables: list[str]
    images: list[StructType]
    rows: list[dict[str, Any]]
    """``ROWS_INPUT`` rows, in file order."""
    kinds: dict[str, list[list[str]]] = field(default_factory=dict)
    """Gold table -> the kinds of each of its plans' columns."""
    descriptions: dict[tuple[str, int], str] = field(default_factory=dict)
    """The FORMAT_DESCRIPTION text at ``(file, offset)``."""
    columns: dict[str, tuple[list[str], list[str]]] = field(default_factory=dict)
    """Plan key -> its column names and kinds (what the gold stage joins onto ``changes``)."""

    def batch(self, rows: list[dict[str, Any]] | None = None) -> pa.RecordBatch:
        schema = to_arrow_schema(ROWS_INPUT, timezone="UTC")
        return pa.RecordBatch.from_pylist(self.rows if rows is None else rows, schema=schema)

    def decoder(self, options: DecodeOptions | None = None) -> GoldDecoder:
        return GoldDecoder(
            self.plans, self.images, self.tables, {r["file"]: SERVER for r in self.rows}, options, self.descriptions
        )

    def decode(self, rows: list[dict[str, Any]] | None = None) -> list[pa.RecordBatch]:
        """The decoder's output batches for ``rows`` (all rows events by default), in one input batch."""
        return list(self.decoder().decode_batch(self.batch(rows)))


def map_key(file: str, offset: int, inner_index: int | None) -> str:
    return f"{file}@{offset}#{-1 if inner_index is None else inner_index}"


def gold_inputs(paths: list[Path], *, history: list[dict[str, Any]] | None = None) -> GoldInputs:
    """The decoder inputs of ``paths`` (files of one server, in binlog order).

    ``history``: schema-history rows naming the maps that carry no names (None: maps keep what they carry).
    """
    maps: list[tuple[str, bytes, str, tuple[tuple[Any, ...], ...] | None]] = []
    rows: list[dict[str, Any]] = []
    descriptions: dict[tuple[str, int], str] = {}
    for path in paths:
        events, summary = framed(path)
        descriptions.update(((str(path), at), text) for at, text in summary.format_descriptions.items())
        sequence = sequence_of(path.name)
        for e in events:
            if e["checksum_ok"] is False:
                continue
            fde = summary.format_descriptions[e["fde_offset"]]
            if e["event_class"] == "table_map":
                table_map = decode_table_map(e["body"], FormatDescription.from_json(fde))
                columns = None
                if history is not None and not table_map.has_names:
                    found = names_at(
                        history, table_map.schema, table_map.table, e["file"], e["offset"], e["inner_index"], sequence
                    )
                    if found is not None and len(found) == len(table_map.columns):
                        columns = tuple(tuple(c[n] for n in HISTORY_FIELDS) for c in found)
                maps.append((map_key(e["file"], e["offset"], e["inner_index"]), e["body"], fde, columns))
            elif e["event_class"] == "rows":
                micros = e["commit_timestamp"]
                rows.append(
                    {
                        **{name: e[name] for name in ROWS_INPUT.names if name in e},
                        "xid": None if e["xid"] is None else Decimal(e["xid"]),
                        "commit_timestamp": micros,
                        "plan_key": None
                        if e["map_offset"] is None
                        else map_key(e["file"], e["map_offset"], e["map_inner_index"]),
                    }
                )
    versions: dict[str, list[tuple[list[str], list[str]]]] = defaultdict(list)
    routed: list[tuple[str, bytes, str, Any, str, list[str], list[str]]] = []
    for key, body, fde, columns in maps:
        named = None if columns is None else [dict(zip(HISTORY_FIELDS, c, strict=True)) for c in columns]
        table_map = table_map_of(body, fde, named)
        names = [c.display_name for c in table_map.columns]
        kinds = [column_kind(c) for c in table_map.columns]
        table = gold_table_name(table_map.schema, table_map.table)
        versions[table].append((names, kinds))
        routed.append((key, body, fde, columns, table, names, kinds))
    tables = sorted(versions)
    layouts = {name: table_layout(versions[name]) for name in tables}
    plans = {
        key: Plan(body, fde, columns, tables.index(table), layouts[table].routes(names, kinds))
        for key, body, fde, columns, table, names, kinds in routed
    }
    keys = set(plans)
    assert all(r["plan_key"] in keys for r in rows if r["plan_key"] is not None)
    kinds_of: dict[str, list[list[str]]] = defaultdict(list)
    for _, _, _, _, table, _, kinds in routed:
        kinds_of[table].append(kinds)
    columns = {key: (names, kinds) for key, _, _, _, _, names, kinds in routed}
    images = [layouts[n].struct_type() for n in tables]
    return GoldInputs(plans, tables, images, rows, dict(kinds_of), descriptions, columns)
