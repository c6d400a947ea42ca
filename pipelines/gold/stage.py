"""The gold stage: rows events decoded with their table maps into the change tables.

``GoldStage.build`` takes the files whose silver build gold has not decoded yet (a file silver
has still to build waits), and:

1. collects the distinct **plans** of those files' TABLE_MAPs from silver ``table_maps``
   (one per ``plan_key``: the map's shape, its FORMAT_DESCRIPTION, the columns silver resolved)
   and, on the driver, the typed layout of every gold table they feed (stored fields first);
2. joins the bronze rows events (only that partition is read) with the maps' keys on the map
   position bronze recorded -- an equi-join against a broadcast key table, no sort;
3. decodes each rows event once, in Spark's Python workers, straight into typed Arrow for its
   gold table and the JSON of ``changes`` (:mod:`pipelines.gold.decode`);
4. writes ``changes`` and every typed table from that one decode.

``write`` replaces every row of those files in each table (so re-runs write the same rows),
clears them from gold tables the new build no longer fills (a file rebuilt so that it no longer
changes their source table), fills the ``rows`` of silver's ``table_id_lifecycle`` (row changes
per file and table id: only decoding counts them), and records progress last.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from binlog_core.charsets import CHARSET_CODECS
from binlog_core.columns import DecodeOptions
from binlog_core.errors import BinlogError
from conf.models import AppConfig
from pipelines.bronze.framing import DUPLICATE
from pipelines.gold.decode import HISTORY_FIELDS, Plan, table_map_of
from pipelines.gold.transforms import (
    TableLayout,
    changes_of,
    decode_rows_events,
    gold_table_name,
    problems_of,
    rows_input,
    table_layout,
    typed_of,
    with_row_counts,
)
from pipelines.gold.types import column_kind
from pipelines.progress import file_predicate
from pipelines.silver.transforms import trusted
from pipelines.stage import Built, Context
from pipelines.storage import Table, Write
from pipelines.tables import (
    BINLOG_EVENTS,
    CHANGES,
    QUARANTINE,
    TABLE_ID_LIFECYCLE,
    TABLE_MAPS,
    Layer,
    TableSpec,
    typed_change_table,
)

ROWS_COLUMNS = [
    "file",
    "file_name",
    "offset",
    "inner_index",
    "timestamp",
    "event_type",
    "server_id",
    "gtid",
    "xid",
    "trx_offset",
    "trx_inner_index",
    "commit_timestamp",
    "table_id",
    "body",
    "map_offset",
    "map_inner_index",
    "checksum_ok",
]
"""The bronze columns of a rows event gold reads."""


@dataclass
class GoldOutput(Built):
    """What one gold build produced (frames persisted) for ``files``."""

    changes: DataFrame | None = None
    tables: dict[str, tuple[TableSpec, DataFrame]] = field(default_factory=dict)
    stale: dict[str, list[str]] = field(default_factory=dict)
    """Gold table -> files of this build it held rows of and no longer does."""
    row_counts: list[tuple[str, int, int]] = field(default_factory=list)
    """``(file, table_id, row changes)``: the lifecycle's ``rows``."""
    progress: list[dict[str, Any]] = field(default_factory=list)
    waiting: list[str] = field(default_factory=list)
    """Files silver has still to build: gold waits for them."""


def decode_options(cfg: AppConfig) -> DecodeOptions:
    """The decoder options of the configuration (default charset as a Python codec)."""
    codec = CHARSET_CODECS.get(cfg.decoder.default_charset, cfg.decoder.default_charset)
    return DecodeOptions(default_charset=codec)


@dataclass
class _PlanInfo:
    key: str
    body: bytes
    fde: str
    history: tuple[tuple[Any, ...], ...] | None
    table: str
    names: list[str]
    kinds: list[str]
    first: tuple[Any, ...]


def _history_key(columns: list[Any] | None) -> tuple[tuple[Any, ...], ...] | None:
    if columns is None:
        return None
    return tuple(tuple(c[name] for name in HISTORY_FIELDS) for c in columns)


def _rows_events(row: dict[str, Any]) -> int:
    """The rows events bronze wrote for a file (none for a duplicate: its events are the original's)."""
    return 0 if row["status"] == DUPLICATE else int(row["rows_events"] or 0)


class GoldStage:
    """Gold: the change tables (see the module doc)."""

    name = "gold"

    def build(self, ctx: Context) -> GoldOutput:
        """Decode the rows events of every file pending for gold."""
        lake, state = ctx.lake, ctx.state
        files = state.files()
        silver = state.progress(Layer.SILVER)
        waiting = sorted(f for f, row in files.items() if silver.get(f, {}).get("built_from") != row["run_id"])
        upstream = {f: silver[f]["run_id"] for f in files if f in silver and f not in waiting}
        pending = state.pending(Layer.GOLD, upstream)
        ctx.say(f"{len(pending)} file(s) pending" + (f", {len(waiting)} waiting for silver" if waiting else ""))
        out = GoldOutput(files=pending, waiting=waiting)
        if not pending:
            return out
        predicate = file_predicate(pending)
        maps = lake.read_or_empty(TABLE_MAPS).where(predicate)
        plans_info = self._plans(ctx, maps)
        layouts, plans, images, names = self._layouts(ctx, plans_info)
        events = (
            lake.read_or_empty(BINLOG_EVENTS)
            .where(predicate)
            .where(F.col("event_class") == "rows")
            .select(*ROWS_COLUMNS)
            .transform(trusted)
        )
        servers = {f: files[f]["server"] for f in pending}
        decoded = out.kept.keep(
            rows_input(events, maps.select("file", "offset", "inner_index", "plan_key")).transform(
                decode_rows_events(plans, images, names, servers, decode_options(ctx.cfg))
            )
        )
        out.changes = decoded.transform(changes_of(ctx.run_id))
        specs = {name: typed_change_table(name, layouts[name].struct_type()) for name in names}
        out.tables = {
            name: (specs[name], decoded.transform(typed_of(i, specs[name], ctx.run_id))) for i, name in enumerate(names)
        }
        out.quarantine = decoded.transform(problems_of(ctx.run_id))
        self._facts(ctx, out, decoded, pending)
        return out

    def _plans(self, ctx: Context, maps: DataFrame) -> list[_PlanInfo]:
        """The distinct plans of the built files' maps, decoded on the driver (few: one per shape)."""
        files = ctx.state.files()
        rows = (
            maps.groupBy("plan_key")
            .agg(
                F.min(F.struct("file", "offset", F.coalesce("inner_index", F.lit(-1)).alias("inner"))).alias("first"),
                F.first("body").alias("body"),
                F.first("file").alias("file"),
                F.first("fde_offset").alias("fde_offset"),
                F.first("resolved_columns").alias("resolved_columns"),
            )
            .collect()
        )
        out: list[_PlanInfo] = []
        for row in rows:
            fde = (files[row.file]["format_descriptions"] or {})[row.fde_offset]
            history = _history_key([c.asDict() for c in row.resolved_columns] if row.resolved_columns else None)
            try:
                table_map = table_map_of(
                    bytes(row.body),
                    fde,
                    None if history is None else [dict(zip(HISTORY_FIELDS, c, strict=True)) for c in history],
                )
            except BinlogError:  # silver kept only maps that decode: a map that stops decoding is a bug
                raise
            names = [c.display_name for c in table_map.columns]
            out.append(
                _PlanInfo(
                    row.plan_key,
                    bytes(row.body),
                    fde,
                    history,
                    gold_table_name(table_map.schema, table_map.table),
                    names,
                    [column_kind(c) for c in table_map.columns],
                    (files[row.first.file]["sequence"] or -1, row.first.file, row.first.offset, row.first.inner),
                )
            )
        return sorted(out, key=lambda p: (p.first, p.key))

    def _layouts(
        self, ctx: Context, plans_info: list[_PlanInfo]
    ) -> tuple[dict[str, TableLayout], dict[str, Plan], list[StructType], list[str]]:
        """Each gold table's typed layout (stored fields first) and each plan's routes into it."""
        versions: dict[str, list[tuple[list[str], list[str]]]] = defaultdict(list)
        for info in plans_info:
            versions[info.table].append((info.names, info.kinds))
        names = sorted(versions)
        layouts: dict[str, TableLayout] = {}
        for name in names:
            table = Table(Layer.GOLD, name)
            existing = None
            if ctx.lake.exists(table):
                after = ctx.lake.read(table).schema["after"].dataType
                existing = after if isinstance(after, StructType) else None
            layouts[name] = table_layout(versions[name], existing)
        index = {name: i for i, name in enumerate(names)}
        plans = {
            info.key: Plan(
                info.body, info.fde, info.history, index[info.table], layouts[info.table].routes(info.names, info.kinds)
            )
            for info in plans_info
        }
        return layouts, plans, [layouts[n].struct_type() for n in names], names

    def _facts(self, ctx: Context, out: GoldOutput, decoded: DataFrame, pending: list[str]) -> None:
        files = ctx.state.files()
        changes = decoded.where(F.col("kind") == "change")
        wrong_op = (
            ((F.col("op") == "insert") & (F.col("before").isNotNull() | F.col("after").isNull()))
            | ((F.col("op") == "delete") & (F.col("before").isNull() | F.col("after").isNotNull()))
            | ((F.col("op") == "update") & (F.col("before").isNull() | F.col("after").isNull()))
        )
        per_table = changes.groupBy("file", "table_id", "gold_table").agg(
            F.count(F.lit(1)).alias("n"), F.sum(wrong_op.cast("int")).alias("wrong")
        )
        events = decoded.groupBy("file").agg(
            F.countDistinct("offset", F.coalesce("inner_index", F.lit(-1))).alias("accounted"),
            F.sum(((F.col("kind") == "problem") & (F.col("code") == "UNKNOWN_TABLE_ID")).cast("int")).alias("unknown"),
            F.sum((F.col("kind") == "problem").cast("int")).alias("problems"),
        )
        counted: dict[str, dict[str, int]] = defaultdict(dict)
        wrong: dict[str, int] = defaultdict(int)
        ids: dict[tuple[str, int], int] = defaultdict(int)
        for row in per_table.collect():
            counted[row.file][row.gold_table] = counted[row.file].get(row.gold_table, 0) + int(row.n)
            wrong[row.file] += int(row.wrong or 0)
            ids[(row.file, row.table_id)] += int(row.n)
        accounted = {
            row.file: (int(row.accounted), int(row.unknown or 0), int(row.problems or 0)) for row in events.collect()
        }
        out.facts = {
            "files": pd.DataFrame(
                [
                    {
                        "file": f,
                        "unreconciled_rows_events": _rows_events(files[f]) - accounted.get(f, (0, 0, 0))[0],
                        "op_image_mismatches": wrong[f],
                        "unknown_table_events": accounted.get(f, (0, 0, 0))[1],
                    }
                    for f in pending
                ],
                columns=["file", "unreconciled_rows_events", "op_image_mismatches", "unknown_table_events"],
            )
        }
        out.row_counts = [(f, table_id, n) for (f, table_id), n in ids.items()]
        previous = ctx.state.progress(Layer.GOLD)
        stale: dict[str, list[str]] = defaultdict(list)
        for f in pending:
            for table, n in (previous.get(f, {}).get("counts") or {}).items():
                if n and table not in counted[f]:
                    stale[table].append(f)
        out.stale = dict(stale)
        silver = ctx.state.progress(Layer.SILVER)
        out.progress = [
            {
                "file": f,
                "built_from": silver[f]["run_id"],
                "run_id": ctx.run_id,
                "quarantined": accounted.get(f, (0, 0, 0))[2],
                "counts": counted[f],
            }
            for f in pending
        ]
        out.counts = {"row_changes": sum(sum(c.values()) for c in counted.values()), "tables": len(out.tables)}

    def write(self, ctx: Context, out: GoldOutput) -> None:
        """Replace the rows of the built files in every gold table and the gold quarantine, then record progress."""
        if not out.files:
            return
        lake, spark = ctx.lake, ctx.spark
        predicate = file_predicate(out.files)
        assert out.changes is not None and out.quarantine is not None
        writes = [Write(CHANGES, out.changes, predicate, merge_schema=True)]
        writes += [Write(spec, frame, predicate, merge_schema=True) for spec, frame in out.tables.values()]
        for name, stale_files in sorted(out.stale.items()):
            table = Table(Layer.GOLD, name)
            if name not in out.tables and lake.exists(table):
                schema = lake.read(table).schema
                spec = typed_change_table(name, schema["after"].dataType)  # type: ignore[arg-type]
                writes.append(Write(spec, spark.createDataFrame([], schema), file_predicate(stale_files)))
        previous = ctx.state.progress(Layer.GOLD)
        if any(row["quarantined"] for row in out.progress) or any(
            previous.get(f, {}).get("quarantined") for f in out.files
        ):
            writes.append(Write(QUARANTINE, out.quarantine, f"stage = 'gold' AND {predicate}"))
        if lake.exists(TABLE_ID_LIFECYCLE):
            counts = spark.createDataFrame(out.row_counts, "file string, table_id long, counted long")
            lifecycle = lake.read(TABLE_ID_LIFECYCLE).where(predicate).transform(with_row_counts(counts))
            writes.append(Write(TABLE_ID_LIFECYCLE, lifecycle, predicate))
        lake.write_all(writes)
        ctx.state.record(Layer.GOLD, out.progress)


__all__ = ["GoldOutput", "GoldStage", "decode_options"]
