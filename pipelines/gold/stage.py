"""The gold stage: rows events decoded with their table maps into the change tables.

``GoldStage.build`` takes the files whose silver build gold has not decoded yet (a file silver
has still to build waits), and:

1. collects the distinct **plans** of those files' TABLE_MAPs from silver ``table_maps``
   (one per ``plan_key``: the map's shape, its FORMAT_DESCRIPTION, the columns silver resolved;
   from silver's in-run frame when silver built those files in the same run)
   and, on the driver, the typed layout of every gold table they feed (stored fields first);
2. joins the bronze rows events (only that partition is read) with the maps' keys on the map
   position bronze recorded -- an equi-join against a broadcast key table, no sort;
3. decodes each rows event once, in Spark's Python workers, straight into typed Arrow for its
   gold table and the JSON of ``changes`` (:mod:`pipelines.gold.decode`), and the same task writes
   every gold table's files, ``changes`` and the quarantine from that decode
   (:mod:`pipelines.gold.write`): one Spark job, whatever the number of tables, and nothing
   decoded is stored or scanned again; the tasks hand back the files and the gate's counts;
4. commits each table's files in one Delta commit.

``write`` replaces every row of those files in each table (so re-runs write the same rows),
clears them from gold tables the new build no longer fills (a file rebuilt so that it no longer
changes their source table), fills the ``rows`` of silver's ``table_id_lifecycle`` (row changes
per file and table id: only decoding counts them), and records progress last.
"""

from __future__ import annotations

import functools
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from binlog_core.charsets import CHARSET_CODECS
from binlog_core.columns import DecodeOptions
from conf.models import AppConfig
from pipelines.bronze.framing import DUPLICATE
from pipelines.gold.decode import HISTORY_FIELDS, Plan, table_map_of
from pipelines.gold.names import gold_table_name
from pipelines.gold.transforms import TableLayout, rows_input, table_layout, with_row_counts
from pipelines.gold.types import column_kind
from pipelines.gold.write import FACTS, OUTPUT, STAGED_FILE, GoldTargets, staged_decode
from pipelines.progress import file_predicate
from pipelines.quality.rules import FIRST_OFFSETS
from pipelines.silver.stage import SilverOutput, bronze_events
from pipelines.stage import Built, Context
from pipelines.staging import Staged, StagedFile
from pipelines.storage import Table, Write
from pipelines.tables import (
    BINLOG_EVENTS,
    CHANGES,
    GOLD_PLANS,
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
    "fde_offset",
    "map_inner_index",
    "checksum_ok",
]
"""The bronze columns of a rows event gold reads."""


@dataclass
class GoldOutput(Built):
    """What one gold build produced (frames persisted) for ``files``."""

    changes: Staged | None = None
    tables: dict[str, tuple[TableSpec, Staged]] = field(default_factory=dict)
    stale: dict[str, list[str]] = field(default_factory=dict)
    """Gold table -> files of this build it held rows of and no longer does."""
    row_counts: list[tuple[str, int, int]] = field(default_factory=list)
    """``(file, table_id, row changes)``: the lifecycle's ``rows``."""
    progress: list[dict[str, Any]] = field(default_factory=list)
    waiting: list[str] = field(default_factory=list)
    """Files silver has still to build: gold waits for them."""
    rebuild: set[str] = field(default_factory=set)
    """Gold tables written whole (their layout changed): every file feeding them is in ``files``."""
    usages: list[_Usage] = field(default_factory=list)

    def staged(self) -> list[tuple[TableSpec, Staged]]:
        """The files of ``changes``, of every typed table and of the quarantine."""
        mine = [(CHANGES, self.changes)] if self.changes is not None else []
        return super().staged() + mine + list(self.tables.values())


def decode_options(cfg: AppConfig) -> DecodeOptions:
    """The decoder options of the configuration (default charset as a Python codec)."""
    codec = CHARSET_CODECS.get(cfg.decoder.default_charset, cfg.decoder.default_charset)
    return DecodeOptions(default_charset=codec)


@dataclass
class _PlanInfo:
    """A plan decoded on the driver: what its rows decode with and which gold table they feed."""

    key: str
    body: bytes
    fde: str
    history: tuple[tuple[Any, ...], ...] | None
    table: str
    names: list[str]
    kinds: list[str]


@dataclass(frozen=True)
class _Usage:
    """A file's use of a plan: its gold table, columns and kinds, and where the file first uses it."""

    file: str
    plan_key: str
    table: str
    names: list[str]
    kinds: list[str]
    first: tuple[Any, ...]

    def row(self, run_id: str) -> tuple[Any, ...]:
        """The ``_state/gold_plans`` row."""
        sequence, _, offset, inner = self.first
        return (
            self.file,
            self.plan_key,
            self.table,
            self.names,
            self.kinds,
            None if sequence < 0 else sequence,
            offset,
            inner,
            run_id,
        )


def _fits(stored: StructType, desired: StructType) -> bool:
    """Whether every stored field is a field of the desired layout, with the same type."""
    wanted = {f.name: f.dataType for f in desired.fields}
    return all(wanted.get(f.name) == f.dataType for f in stored.fields)


def _history_key(columns: list[Any] | None) -> tuple[tuple[Any, ...], ...] | None:
    if columns is None:
        return None
    return tuple(tuple(c[name] for name in HISTORY_FIELDS) for c in columns)


GOLD_FILE_FACTS = [
    "file",
    "unreconciled_rows_events",
    "op_image_mismatches",
    "unknown_table_events",
    "commits_before_event",
    "unreconciled_rows_events_at",
    "op_image_mismatches_at",
    "unknown_table_events_at",
    "commits_before_event_at",
]
"""The gold gate's facts per file (``<name>_at``: first offending offsets)."""

_SUMMED = ("wrong", "accounted", "unknown", "problems", "early")
_FIRST = ("wrong_at", "unknown_at", "early_at")
"""The per-file sums and first offsets the gold tasks count per file, table id and gold table
(:data:`pipelines.gold.write.GOLD_FACTS`)."""

GOLD_TABLE_FACTS = ["file", "gold_table", "null_key_inserts", "null_key_inserts_at"]
"""The gold gate's facts per file and gold table (``null_key_inserts`` null: no insert with a key to check)."""


def _lost_at(ctx: Context, out: GoldOutput, files: list[str]) -> dict[str, list[int]]:
    """File -> the first offsets of its bronze rows events that neither decoded nor were quarantined.
    Run only for files that lost some: it reads the positions of the rows gold wrote (``changes``,
    quarantine) and of their rows events again."""
    positions = ["file", "offset", "inner_index"]
    written = [(CHANGES, out.changes), (QUARANTINE, out.quarantine)]
    seen = (
        functools.reduce(
            DataFrame.unionByName,
            [
                ctx.lake.staged_frame(spec, staged).select(*positions)
                for spec, staged in written
                if isinstance(staged, Staged)
            ],
        )
        .select(
            F.col("file").alias("d_file"),
            F.col("offset").alias("d_offset"),
            F.coalesce("inner_index", F.lit(-1)).alias("d_inner"),
        )
        .distinct()
    )
    events = (
        ctx.lake.read_or_empty(BINLOG_EVENTS)
        .where(file_predicate(files))
        .where(F.col("event_class") == "rows")
        .select("file", "offset", F.coalesce("inner_index", F.lit(-1)).alias("inner"))
    )
    missing = events.join(
        seen,
        (F.col("file") == F.col("d_file"))
        & (F.col("offset") == F.col("d_offset"))
        & (F.col("inner") == F.col("d_inner")),
        "left_anti",
    )
    rows = missing.groupBy("file").agg(F.slice(F.array_sort(F.collect_set("offset")), 1, FIRST_OFFSETS).alias("at"))
    return {row.file: [int(o) for o in row.at] for row in rows.collect()}


def _rows_events(row: dict[str, Any]) -> int:
    """The rows events bronze wrote for a file (none for a duplicate: its events are the original's)."""
    return 0 if row["status"] == DUPLICATE else int(row["rows_events"] or 0)


def _built_by_silver(ctx: Context, files: list[str]) -> SilverOutput | None:
    """What silver built in this run, when it built every one of ``files`` (and none again)."""
    handed = ctx.handed.get(Layer.SILVER.value)
    if isinstance(handed, SilverOutput) and set(files) <= set(handed.files) and not set(files) & set(handed.rebuilt):
        return handed
    return None


def _silver_rows(ctx: Context, spec: TableSpec, files: list[str]) -> DataFrame:
    """Silver's ``spec`` rows of ``files`` (``table_maps`` or ``table_id_lifecycle``): what silver wrote of
    them in this run, when it built every one of them (no Delta snapshot to plan), else the table's."""
    built = _built_by_silver(ctx, files)
    if built is not None:
        frame = built.table_id_lifecycle if spec is TABLE_ID_LIFECYCLE else ctx.lake.written_frame(spec)
        if frame is not None:
            return frame.where(file_predicate(files))
    return ctx.lake.read_or_empty(spec).where(file_predicate(files))


def _plan_rows(ctx: Context, files: list[str]) -> list[dict[str, Any]]:
    """Each plan the maps of ``files`` use, at its first map in each file (``file, plan_key, offset,
    inner, body, fde_offset, resolved_columns``): as silver's tasks counted them in this run, when it
    built every one of the files, else from ``table_maps`` (one Spark job)."""
    built = _built_by_silver(ctx, files)
    if built is not None:
        return [row for row in built.plans if row["file"] in set(files)]
    return [
        {**row.asDict(recursive=True), "offset": row.first.offset, "inner": row.first.inner}
        for row in _silver_rows(ctx, TABLE_MAPS, files)
        .groupBy("file", "plan_key")
        .agg(
            F.min(F.struct("offset", F.coalesce("inner_index", F.lit(-1)).alias("inner"))).alias("first"),
            F.first("body").alias("body"),
            F.first("fde_offset").alias("fde_offset"),
            F.first("resolved_columns").alias("resolved_columns"),
        )
        .collect()
    ]


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
        ctx.expect_work(ctx.size_of(pending))
        usages, infos = self._plans(ctx, pending)
        others = self._stored_usages(ctx, pending)
        layouts, rebuild = self._layouts(ctx, usages + others, infos)
        if rebuild:
            again = sorted({u.file for u in others if u.table in rebuild} - set(pending))
            ctx.say(f"{len(rebuild)} gold table(s) rebuilt whole ({', '.join(sorted(rebuild))}): their layout changed")
            more, more_infos = self._plans(ctx, again)
            pending = sorted(set(pending) | set(again))
            usages += more
            infos.update(more_infos)
            others = [u for u in others if u.file not in set(again)]
            layouts, _ = self._layouts(ctx, usages + others, infos, rebuild)
            out.files = pending
        out.rebuild = rebuild
        out.usages = usages
        names = sorted({infos[u.plan_key].table for u in usages})
        events = bronze_events(ctx, pending, ("rows",)).select(*ROWS_COLUMNS)
        servers = {f: files[f]["server"] for f in pending}
        descriptions = {
            (f, int(at)): text for f in pending for at, text in (files[f]["format_descriptions"] or {}).items()
        }
        maps = _silver_rows(ctx, TABLE_MAPS, pending).select("file", "offset", "inner_index", "plan_key")
        rows = rows_input(events, maps)
        specs = {name: typed_change_table(name, layouts[name].struct_type()) for name in names}
        index = {name: i for i, name in enumerate(names)}
        plans = {
            key: Plan(
                info.body, info.fde, info.history, index[info.table], layouts[info.table].routes(info.names, info.kinds)
            )
            for key, info in infos.items()
        }
        targets = GoldTargets(
            {index[name]: lake.target(spec) for name, spec in specs.items()},
            lake.target(CHANGES),
            lake.target(QUARANTINE),
            ctx.run_id,
        )
        decode = staged_decode(
            plans,
            [layouts[name].struct_type() for name in names],
            names,
            servers,
            decode_options(ctx.cfg),
            targets,
            descriptions,
        )
        staged: list[StagedFile] = []
        fact_rows = []
        for row in ctx.mapped(rows, decode, OUTPUT):
            if row.kind == STAGED_FILE:
                staged.append(StagedFile.of(row[STAGED_FILE]))
            else:
                fact_rows.append(row[FACTS])
        for name, spec in specs.items():
            out.tables[name] = (spec, Staged(tuple(f for f in staged if f.table == spec.folder)))
        out.changes = Staged(tuple(f for f in staged if f.table == CHANGES.folder))
        out.quarantine = Staged(tuple(f for f in staged if f.table == QUARANTINE.folder))
        self._facts(ctx, out, fact_rows, pending)
        return out

    def _plans(self, ctx: Context, files: list[str]) -> tuple[list[_Usage], dict[str, _PlanInfo]]:
        """Which plans the maps of ``files`` use (file by file, with their first position), and each
        plan decoded once on the driver (few: one per shape)."""
        if not files:
            return [], {}
        known = ctx.state.files()
        infos: dict[str, _PlanInfo] = {}
        usages: list[_Usage] = []
        for row in _plan_rows(ctx, files):
            key, file = row["plan_key"], row["file"]
            info = infos.get(key)
            if info is None:
                fde = (known[file]["format_descriptions"] or {})[row["fde_offset"]]
                history = _history_key(row["resolved_columns"] or None)
                table_map = table_map_of(
                    bytes(row["body"]),
                    fde,
                    None if history is None else [dict(zip(HISTORY_FIELDS, c, strict=True)) for c in history],
                )
                info = infos[key] = _PlanInfo(
                    key,
                    bytes(row["body"]),
                    fde,
                    history,
                    gold_table_name(table_map.schema, table_map.table),
                    [c.display_name for c in table_map.columns],
                    [column_kind(c) for c in table_map.columns],
                )
            usages.append(
                _Usage(
                    file,
                    key,
                    info.table,
                    info.names,
                    info.kinds,
                    (known[file]["sequence"] or -1, file, row["offset"], row["inner"]),
                )
            )
        return usages, infos

    def _stored_usages(self, ctx: Context, pending: list[str]) -> list[_Usage]:
        """The plans the files built before use, as gold recorded them (``_state/gold_plans``)."""
        building = set(pending)
        return [
            _Usage(
                r["file"],
                r["plan_key"],
                r["gold_table"],
                list(r["column_names"]),
                list(r["column_kinds"]),
                (
                    r["first_sequence"] if r["first_sequence"] is not None else -1,
                    r["file"],
                    r["first_offset"],
                    r["first_inner_index"],
                ),
            )
            for r in ctx.lake.rows(GOLD_PLANS)
            if r["file"] not in building
        ]

    def _layouts(
        self,
        ctx: Context,
        usages: list[_Usage],
        infos: dict[str, _PlanInfo],
        rebuild: set[str] | None = None,
    ) -> tuple[dict[str, TableLayout], set[str]]:
        """Each gold table's typed layout, and the tables whose stored layout must be rebuilt.

        A table's layout is made from every file's plans in binlog order (:func:`table_layout`):
        the same input set gives the same layout, whatever order files arrived in.  A stored table
        whose fields fit it (each stored field is in it with the same type) keeps its fields and gets
        the new ones; one that does not (a field no file fills any more, a type change first seen
        in an earlier file) is rebuilt whole.
        """
        ordered = sorted(usages, key=lambda u: (u.first, u.plan_key))
        versions: dict[str, list[tuple[list[str], list[str]]]] = defaultdict(list)
        for usage in ordered:
            version = (usage.names, usage.kinds)
            if version not in versions[usage.table]:
                versions[usage.table].append(version)
        wanted = {info.table for info in infos.values()}
        layouts: dict[str, TableLayout] = {}
        to_rebuild: set[str] = set(rebuild or ())
        for name in sorted(wanted):
            desired = table_layout(versions[name])
            if name in to_rebuild:
                layouts[name] = desired
                continue
            table = Table(Layer.GOLD, name)
            existing = None
            if ctx.lake.exists(table):
                after = ctx.lake.read(table).schema["after"].dataType
                existing = after if isinstance(after, StructType) else None
            if existing is not None and not _fits(existing, desired.struct_type()):
                to_rebuild.add(name)
                layouts[name] = desired
            else:
                layouts[name] = table_layout(versions[name], existing)
        return layouts, to_rebuild

    def _facts(self, ctx: Context, out: GoldOutput, fact_rows: list[Any], pending: list[str]) -> None:
        files = ctx.state.files()
        counted: dict[str, dict[str, int]] = defaultdict(dict)
        ids: dict[tuple[str, int], int] = defaultdict(int)
        keyed: dict[tuple[str, str], tuple[int, int, list[int]]] = defaultdict(lambda: (0, 0, []))
        per_file: dict[str, dict[str, Any]] = {}
        out.reasons = Counter()
        for row in fact_rows:
            total = per_file.setdefault(row.file, dict.fromkeys(_SUMMED, 0) | {name: [] for name in _FIRST})
            for name in _SUMMED:
                total[name] += int(row[name] or 0)
            for name in _FIRST:
                total[name] = sorted({*total[name], *row[name]})[:FIRST_OFFSETS]
            if row.problems:
                out.reasons[(Layer.GOLD.value, row.code, row.severity)] += int(row.problems)
            if row.gold_table is None:
                continue
            counted[row.file][row.gold_table] = counted[row.file].get(row.gold_table, 0) + int(row.n)
            ids[(row.file, row.table_id)] += int(row.n)
            checked, nulls, at = keyed[(row.file, row.gold_table)]
            keyed[(row.file, row.gold_table)] = (
                checked + int(row.checked or 0),
                nulls + int(row.null_keys or 0),
                sorted({*at, *row.null_key_at})[:FIRST_OFFSETS],
            )
        lost = {f: _rows_events(files[f]) - per_file.get(f, {}).get("accounted", 0) for f in pending}
        lost_at = _lost_at(ctx, out, [f for f, n in lost.items() if n > 0]) if any(lost.values()) else {}

        def of(f: str, name: str) -> Any:
            total = per_file.get(f)
            value = None if total is None else total[name]
            return [int(o) for o in value or []] if name.endswith("_at") else int(value or 0)

        out.facts = {
            "files": pd.DataFrame(
                [
                    {
                        "file": f,
                        "unreconciled_rows_events": lost[f],
                        "op_image_mismatches": of(f, "wrong"),
                        "unknown_table_events": of(f, "unknown"),
                        "commits_before_event": of(f, "early"),
                        "unreconciled_rows_events_at": lost_at.get(f, []),
                        "op_image_mismatches_at": of(f, "wrong_at"),
                        "unknown_table_events_at": of(f, "unknown_at"),
                        "commits_before_event_at": of(f, "early_at"),
                    }
                    for f in pending
                ],
                columns=GOLD_FILE_FACTS,
            ),
            "tables": pd.DataFrame(
                {
                    "file": [f for f, _ in sorted(keyed)],
                    "gold_table": [t for _, t in sorted(keyed)],
                    "null_key_inserts": pd.array(
                        [keyed[k][1] if keyed[k][0] else None for k in sorted(keyed)], dtype="Int64"
                    ),
                    "null_key_inserts_at": [[int(o) for o in keyed[k][2]] for k in sorted(keyed)],
                },
                columns=GOLD_TABLE_FACTS,
            ),
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
                "quarantined": of(f, "problems"),
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
        fresh = ctx.state.fresh(Layer.GOLD, out.files)
        assert out.changes is not None and out.quarantine is not None
        writes = [Write(CHANGES, out.changes, predicate, merge_schema=True, fresh=fresh)]
        writes += [
            Write(spec, frame, mode="overwrite")
            if spec.name in out.rebuild
            else Write(spec, frame, predicate, merge_schema=True, fresh=fresh)
            for spec, frame in out.tables.values()
        ]
        usages = spark.createDataFrame([u.row(ctx.run_id) for u in out.usages], GOLD_PLANS.schema)
        writes.append(Write(GOLD_PLANS, usages, predicate, fresh=fresh))
        for name, stale_files in sorted(out.stale.items()):
            table = Table(Layer.GOLD, name)
            if name not in out.tables and lake.exists(table):
                schema = lake.read(table).schema
                spec = typed_change_table(name, schema["after"].dataType)  # type: ignore[arg-type]
                writes.append(Write(spec, spark.createDataFrame([], schema), file_predicate(stale_files)))
        previous = ctx.state.progress(Layer.GOLD)
        if (
            out.extra_quarantine
            or any(row["quarantined"] for row in out.progress)
            or any(previous.get(f, {}).get("quarantined") for f in out.files)
        ):
            writes.append(Write(QUARANTINE, out.quarantine, f"stage = 'gold' AND {predicate}", fresh=fresh))
        if lake.exists(TABLE_ID_LIFECYCLE):
            counts = spark.createDataFrame(out.row_counts, "file string, table_id long, counted long")
            lifecycle = _silver_rows(ctx, TABLE_ID_LIFECYCLE, out.files).transform(with_row_counts(counts))
            writes.append(Write(TABLE_ID_LIFECYCLE, lifecycle, predicate))
        lake.write_all(writes)
        ctx.state.record(Layer.GOLD, out.progress)


__all__ = ["GoldOutput", "GoldStage", "decode_options"]
