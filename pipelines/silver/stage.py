"""The silver stage: table maps, table-id lifecycle, QUERY/DDL events and schema history.

``SilverStage.build`` reads, for the files silver has still to build (bronze rewrote them since),
only the bronze partitions of TABLE_MAP and QUERY-shaped events, and decodes each of those
bodies once (``mapInArrow``), never a row image:

* ``table_maps``: every TABLE_MAP decoded, with its in-force range and rows events as bronze
  recorded them while walking the file, and the columns valid at its position
  (:func:`pipelines.silver.transforms.resolve_columns`: what gold decodes and names rows with);
* ``table_id_lifecycle``: per file and table id, aggregated from the maps;
* ``ddl_events``: every QUERY-shaped event with its transaction, DDL with the objects it
  touches and whether the replay understood it (the parse coverage);
* ``schema_history``: rebuilt for every server a built file belongs to, from the seed snapshot
  (``silver.seed_path``), the DDL of all the server's files replayed in binlog order (files by
  sequence number) and the shapes its table maps show (:mod:`pipelines.silver.history`).

**Convergence.**  The lake is a function of the input set, not of the order files arrive in.
When a build changes a server's history (a late file with earlier DDL, a seed added later),
files already built whose maps read names from that history are resolved again, and those whose
resolution (or whose DDL replay outcome) changed are rewritten in the same run and become pending
for gold.  Maps that carry their own names (``binlog_row_metadata=FULL``) never depend on it:
each file's silver progress counts its maps without names (``maps_without_names``), and only the
files that have some are read again (none, on a server that logs full metadata).

Decoding failures go to the quarantine table with ``stage = 'silver'``.
"""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StringType, StructField, StructType

from conf.models import AppConfig
from pipelines.progress import file_predicate
from pipelines.quality.rules import FIRST_OFFSETS
from pipelines.silver.ddl import DdlResult, SchemaRegistry, parse_seed
from pipelines.silver.decode import Descriptions, query_rows, table_map_rows
from pipelines.silver.history import event_key, replay_history
from pipelines.silver.transforms import (
    RESOLVED,
    lifecycle,
    map_history_columns,
    quarantine_of,
    resolve_columns,
    trusted,
)
from pipelines.stage import Built, Context
from pipelines.storage import Write
from pipelines.tables import (
    BINLOG_EVENTS,
    DDL_EVENTS,
    QUARANTINE,
    SCHEMA_HISTORY,
    TABLE_ID_LIFECYCLE,
    TABLE_MAPS,
    Layer,
    conform,
)

SEED = "seed:"
"""Progress key of the seed snapshot (``_state/progress`` row of layer silver, file ``seed:<path>``)."""

NAMELESS_MAPS = "maps_without_names"
"""Silver progress count of a file's decoded maps without column names: the files a changed
schema history may name differently (none when every map has its names)."""

_ERRORS = [
    StructField("problem_code", StringType(), True),
    StructField("problem_severity", StringType(), True),
    StructField("problem_message", StringType(), True),
    StructField("problem_path", StringType(), True),
    StructField("event_type_name", StringType(), True),
]


def _nullable(fields: list[StructField]) -> StructType:
    """The fields, all nullable (decoder output mixes decoded rows and error rows)."""
    return StructType([StructField(f.name, f.dataType, True) for f in fields])


RESOLVED_LATER = ("server", "run_id", *RESOLVED)
"""``table_maps`` columns the decode leaves out: filled once the schema history is known."""

MAPS_OUT = _nullable([f for f in TABLE_MAPS.schema.fields if f.name not in RESOLVED_LATER] + _ERRORS)
"""Decoded TABLE_MAPs (``table_maps`` columns, names not resolved) and error rows (``problem_*`` set)."""
QUERIES_OUT = _nullable(
    [f for f in DDL_EVENTS.schema.fields if f.name not in ("event_type_name", "server", "run_id")]
    + _ERRORS
    + [StructField("body", BINLOG_EVENTS.schema["body"].dataType, True)]
)
"""Decoded QUERY events (``ddl_events`` columns, no replay yet) and error rows."""

MAP_INPUT = [
    "file",
    "file_name",
    "offset",
    "inner_index",
    "fde_offset",
    "in_force_until",
    "in_force_until_inner_index",
    "ended_by",
    "rows_events",
    "shape_changed",
    "body",
]
QUERY_INPUT = [
    "file",
    "file_name",
    "offset",
    "inner_index",
    "timestamp",
    "event_type",
    "event_type_name",
    "server_id",
    "event_size",
    "log_pos",
    "flags",
    "fde_offset",
    "gtid",
    "trx_offset",
    "commit_timestamp",
    "body",
]
"""The bronze columns each decode reads (the rest of an event row stays on disk)."""


@dataclass
class SilverOutput(Built):
    """What one silver build produced for ``files`` (and ``rebuilt``: files resolved again)."""

    table_maps: DataFrame | None = None
    built_maps: DataFrame | None = None
    """The ``table_maps`` rows of ``files`` decoded in this run (kept): what gold reads for those files in
    the same run, instead of the table just written (:data:`pipelines.run.HANDED_ON`)."""
    table_id_lifecycle: DataFrame | None = None
    ddl_events: DataFrame | None = None
    schema_history: DataFrame | None = None
    servers: list[str] = field(default_factory=list)
    rebuilt: list[str] = field(default_factory=list)
    progress: list[dict[str, Any]] = field(default_factory=list)
    unparsed: list[str] = field(default_factory=list)
    """``file_name@offset[#inner]`` of the built files' DDL statements the replay did not understand,
    in binlog order."""

    def written(self) -> list[str]:
        """The files built and those resolved again."""
        return sorted(set(self.files) | set(self.rebuilt))


def decode_table_maps(events: DataFrame, fdes: Descriptions) -> DataFrame:
    """Bronze TABLE_MAP events -> decoded maps (:data:`MAPS_OUT`), error rows included; no names yet."""
    arrow_schema = to_arrow_schema(MAPS_OUT, timezone="UTC")

    def per_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return table_map_rows(batches, arrow_schema, fdes)

    return events.select(*MAP_INPUT).mapInArrow(per_partition, MAPS_OUT)


def decode_queries(events: DataFrame, fdes: Descriptions) -> DataFrame:
    """Bronze QUERY-shaped events -> :data:`QUERIES_OUT` rows (DDL replay not applied yet)."""
    arrow_schema = to_arrow_schema(QUERIES_OUT, timezone="UTC")

    def per_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return query_rows(batches, arrow_schema, fdes)

    return events.select(*QUERY_INPUT).mapInArrow(per_partition, QUERIES_OUT)


def load_seed(spark: SparkSession, cfg: AppConfig) -> tuple[SchemaRegistry | None, str | None]:
    """The seed snapshot of ``silver.seed_path`` (a local path or any URI Spark reads) and its digest."""
    path = cfg.silver.seed_path
    if path is None:
        return None, None
    if "://" not in path:
        text = Path(path.removeprefix("file:")).read_text(encoding="utf-8")
    else:
        first = spark.read.text(path, wholetext=True).first()
        text = "" if first is None else first[0]
    return parse_seed(text), hashlib.sha256(text.encode()).hexdigest()


def _replay_frame(spark: SparkSession, results: dict[tuple[str, int, int], DdlResult]) -> DataFrame:
    rows = [
        {
            "file": key[0],
            "offset": key[1],
            "inner_key": key[2],
            "r_objects": [{"schema_name": s, "object_name": o, "action": a} for s, o, a in r.objects],
            "r_parsed": r.error is None,
            "r_error": r.error,
        }
        for key, r in results.items()
    ]
    schema = (
        "file string, offset long, inner_key int, r_objects array<struct<schema_name:string,object_name:string,"
        "action:string>>, r_parsed boolean, r_error string"
    )
    return spark.createDataFrame(rows, schema)


def with_replay(replayed: DataFrame, run_id: str) -> Any:
    """``queries -> ddl_events``: each DDL's replay outcome attached (objects, parse result)."""

    def transform(queries: DataFrame) -> DataFrame:
        joined = queries.withColumn("inner_key", F.coalesce("inner_index", F.lit(-1))).join(
            F.broadcast(replayed), ["file", "offset", "inner_key"], "left"
        )
        is_ddl = F.col("kind") == "DDL"
        return (
            joined.withColumn("objects", F.when(is_ddl, F.col("r_objects")))
            .withColumn("ddl_parsed", F.when(is_ddl, F.col("r_parsed")))
            .withColumn("ddl_error", F.when(is_ddl, F.col("r_error")))
            .withColumn("run_id", F.lit(run_id))
            .transform(conform(DDL_EVENTS))
        )

    return transform


class SilverStage:
    """Silver: decoded metadata and schema history (see the module doc)."""

    name = "silver"

    def build(self, ctx: Context) -> SilverOutput:
        """Decode the metadata of every file pending for silver, and resolve again what history changes touch."""
        spark, lake, state = ctx.spark, ctx.lake, ctx.state
        files = state.files()
        upstream = {f: row["run_id"] for f, row in files.items()}
        seed, seed_digest = load_seed(spark, ctx.cfg)
        seed_key = f"{SEED}{ctx.cfg.silver.seed_path}" if seed_digest is not None else None
        if seed_key is not None and seed_digest is not None:
            upstream[seed_key] = seed_digest
        pending = state.pending(Layer.SILVER, upstream)
        seed_changed = seed_key in pending
        pending = [f for f in pending if f in files]
        ctx.say(f"{len(pending)} file(s) pending" + (", seed snapshot changed" if seed_changed else ""))
        out = SilverOutput(files=pending)
        if not pending and not seed_changed:
            return out
        ctx.expect_work(ctx.size_of(pending))
        servers = sorted({files[f]["server"] for f in files} if seed_changed else {files[f]["server"] for f in pending})
        out.servers = servers
        fdes: Descriptions = {
            (f, int(offset)): text for f in pending for offset, text in (files[f]["format_descriptions"] or {}).items()
        }
        info = spark.createDataFrame(
            [(f, files[f]["server"], files[f]["sequence"]) for f in pending],
            "file string, server string, sequence long",
        )
        events = lake.read_or_empty(BINLOG_EVENTS).where(file_predicate(pending)).transform(trusted)
        kept = out.kept
        # the decoded maps and their resolved columns are wide and nested (a large binlog's hundreds of
        # thousands of maps): stored on local disk row by row, not built into column batches in the heap
        maps_out = kept.keep(
            decode_table_maps(events.where(F.col("event_class") == "table_map"), fdes).join(F.broadcast(info), "file"),
            rows_on_disk=True,
        )
        queries_out = kept.keep(
            decode_queries(events.where(F.col("event_class") == "query"), fdes).join(
                F.broadcast(info.drop("sequence")), "file"
            )
        )
        new_queries = queries_out.where(F.col("problem_code").isNull()).drop("problem_code")
        # the history of each server built: every file's DDL and map shapes, in binlog order
        sequences = {f: row["sequence"] for f, row in files.items()}
        server_of = {f: row["server"] for f, row in files.items()}
        ddl, old_results = self._ddl_rows(ctx, pending, new_queries, servers, server_of)
        shapes = self._shape_rows(ctx, pending, maps_out, servers)
        history_rows: list[dict[str, Any]] = []
        results: dict[tuple[str, int, int], DdlResult] = {}
        for server in servers:
            history, replayed = replay_history(
                seed,
                [{**r, "sequence": sequences.get(r["file"])} for r in ddl[server]],
                [{**r, "sequence": sequences.get(r["file"])} for r in shapes[server]],
            )
            history_rows += [{**row, "server": server, "run_id": ctx.run_id} for row in history]
            results.update(replayed)
        history_frame = kept.keep(spark.createDataFrame(history_rows, SCHEMA_HISTORY.schema))
        replayed_frame = _replay_frame(spark, results)
        new_maps = maps_out.where(F.col("problem_code").isNull()).withColumn("run_id", F.lit(ctx.run_id))
        table_maps = kept.keep(new_maps.transform(resolve_columns(history_frame)), rows_on_disk=True)
        out.built_maps = table_maps.transform(conform(TABLE_MAPS))
        ddl_events = kept.keep(new_queries.transform(with_replay(replayed_frame, ctx.run_id)))
        # files built before whose names or DDL outcome the new history changes
        again = self._resolved_again(ctx, pending, servers, history_frame)
        changed_ddl = sorted(
            {
                key[0]
                for key, result in results.items()
                if key[0] not in pending and old_results.get(key) != _outcome(result)
            }
        )
        out.rebuilt = sorted(set(again) | set(changed_ddl))
        if out.rebuilt:
            table_maps = table_maps.unionByName(
                self._maps_again(ctx, out.rebuilt, history_frame, servers), allowMissingColumns=True
            )
            ddl_events = ddl_events.unionByName(
                lake.read(DDL_EVENTS)
                .where(file_predicate(out.rebuilt))
                .drop("objects", "ddl_parsed", "ddl_error")
                .transform(with_replay(replayed_frame, ctx.run_id))
            )
        out.table_maps = table_maps.transform(conform(TABLE_MAPS))
        out.ddl_events = ddl_events
        out.schema_history = history_frame
        out.table_id_lifecycle = kept.keep(out.table_maps.where(file_predicate(pending)).transform(lifecycle))
        out.quarantine = kept.keep(
            quarantine_of(maps_out, ctx.run_id).unionByName(quarantine_of(queries_out, ctx.run_id))
        ).transform(conform(QUARANTINE))
        self._facts(ctx, out, maps_out, results, pending, seed_key, seed_digest)
        return out

    def _ddl_rows(
        self,
        ctx: Context,
        pending: list[str],
        new_queries: DataFrame,
        servers: list[str],
        server_of: dict[str, str],
    ) -> tuple[dict[str, list[dict[str, Any]]], dict[tuple[str, int, int], tuple[Any, ...]]]:
        """The DDL statements of every file of ``servers`` (small: collected for the replay), by server,
        and the replay outcome ``ddl_events`` holds for the files not rebuilt now."""
        cols = ["file", "offset", "inner_index", "default_schema", "statement"]
        lake = ctx.lake
        old = (
            lake.read_or_empty(DDL_EVENTS)
            .where((F.col("kind") == "DDL") & F.col("server").isin(servers) & ~F.expr(file_predicate(pending)))
            .select(*cols, "objects", "ddl_parsed", "ddl_error")
        )
        fresh = new_queries.where(F.col("kind") == "DDL").select(
            *cols,
            F.lit(None).alias("objects"),
            F.lit(None).cast("boolean").alias("ddl_parsed"),
            F.lit(None).cast("string").alias("ddl_error"),
        )
        by_server: dict[str, list[dict[str, Any]]] = defaultdict(list)
        outcomes: dict[tuple[str, int, int], tuple[Any, ...]] = {}
        for row in old.unionByName(fresh, allowMissingColumns=True).where(F.col("statement").isNotNull()).collect():
            record = row.asDict(recursive=True)
            by_server[server_of[record["file"]]].append({c: record[c] for c in cols})
            if record["ddl_parsed"] is not None:
                outcomes[event_key(record["file"], record["offset"], record["inner_index"])] = (
                    record["ddl_parsed"],
                    record["ddl_error"],
                    [(o["schema_name"], o["object_name"], o["action"]) for o in record["objects"] or []],
                )
        return by_server, outcomes

    def _shape_rows(
        self, ctx: Context, pending: list[str], maps_out: DataFrame, servers: list[str]
    ) -> dict[str, list[dict[str, Any]]]:
        """The maps with names where a table's shape may change (bronze flagged them), by server."""
        cols = ["file", "offset", "inner_index", "schema_name", "table_name", "fingerprint"]
        old = (
            ctx.lake.read_or_empty(TABLE_MAPS)
            .where(
                F.col("shape_changed")
                & F.col("column_names").isNotNull()
                & F.col("server").isin(servers)
                & ~F.expr(file_predicate(pending))
            )
            .select(*cols, "server", map_history_columns().alias("columns"))
        )
        fresh = maps_out.where(
            F.col("problem_code").isNull() & F.col("shape_changed") & F.col("column_names").isNotNull()
        ).select(*cols, "server", map_history_columns().alias("columns"))
        by_server: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for row in old.unionByName(fresh).collect():
            record = row.asDict(recursive=True)
            by_server[record.pop("server")].append(record)
        return by_server

    def _resolved_again(self, ctx: Context, pending: list[str], servers: list[str], history: DataFrame) -> list[str]:
        """Files built before (of ``servers``) whose maps without names resolve differently now.

        Only the files whose progress counts maps without names (or does not say: built before the
        count was kept) are read again: none, when every stored map of the servers has its names."""
        lake = ctx.lake
        files = ctx.state.files()
        built = ctx.state.progress(Layer.SILVER)
        candidates = [
            f
            for f, row in built.items()
            if f in files
            and f not in pending
            and files[f]["server"] in servers
            and (row.get("counts") or {}).get(NAMELESS_MAPS, 1)
        ]
        if not candidates or not lake.exists(TABLE_MAPS):
            return []
        stored = lake.read(TABLE_MAPS).where(F.col("column_names").isNull() & F.expr(file_predicate(candidates)))
        now = (
            stored.select(
                "file",
                "offset",
                "inner_index",
                "server",
                "schema_name",
                "table_name",
                "column_names",
                "column_count",
                "columns",
                "primary_key",
                "shape_key",
                F.col("plan_key").alias("stored_plan"),
            )
            .join(F.broadcast(self._sequences(ctx, servers)), "file")
            .transform(resolve_columns(history))
        )
        changed = now.where(F.col("plan_key") != F.col("stored_plan")).select("file").distinct()
        return sorted(row.file for row in changed.collect())

    def _sequences(self, ctx: Context, servers: list[str]) -> DataFrame:
        """``file, sequence`` of every file of ``servers``."""
        rows = [(f, row["sequence"]) for f, row in ctx.state.files().items() if row["server"] in servers]
        return ctx.spark.createDataFrame(rows, "file string, sequence long")

    def _maps_again(self, ctx: Context, rebuilt: list[str], history: DataFrame, servers: list[str]) -> DataFrame:
        """The stored maps of ``rebuilt`` files, their names resolved with the new history."""
        return (
            ctx.lake.read(TABLE_MAPS)
            .where(file_predicate(rebuilt))
            .drop(*RESOLVED)
            .join(F.broadcast(self._sequences(ctx, servers)), "file")
            .transform(resolve_columns(history))
            .withColumn("run_id", F.lit(ctx.run_id))
        )

    def _facts(
        self,
        ctx: Context,
        out: SilverOutput,
        maps_out: DataFrame,
        results: dict[tuple[str, int, int], DdlResult],
        pending: list[str],
        seed_key: str | None,
        seed_digest: str | None,
    ) -> None:
        files = ctx.state.files()
        failed: dict[str, tuple[int, int]] = {}
        nameless: dict[str, int] = {}
        problem = F.col("problem_code").isNotNull()
        for row in (
            maps_out.groupBy("file")
            .agg(
                F.sum(F.when(problem & (F.col("problem_severity") == "error"), F.col("rows_events"))).alias("unmapped"),
                F.count(F.when(problem, 1)).alias("problems"),
                F.count(F.when(~problem & F.col("column_names").isNull(), 1)).alias("nameless"),
            )
            .collect()
        ):
            nameless[row.file] = int(row.nameless)
            if row.problems:
                failed[row.file] = (int(row.unmapped or 0), int(row.problems))
        queries_failed: dict[str, int] = defaultdict(int)
        if out.quarantine is not None:  # by file and reason: what the gate and the run's summary count
            out.reasons = Counter()
            for row in (
                out.quarantine.groupBy(
                    "file", (F.col("event_type_name") == "TABLE_MAP").alias("of_map"), "stage", "code", "severity"
                )
                .agg(F.count(F.lit(1)).alias("n"))
                .collect()
            ):
                out.reasons[(row.stage, row.code, row.severity)] += int(row.n)
                if row.of_map is False:
                    queries_failed[row.file] += int(row.n)
        reused = {
            row.file: (int(row.n), [int(o) for o in row.at])
            for row in out.table_id_lifecycle.groupBy("file")  # type: ignore[union-attr]
            .agg(
                F.sum(F.col("reused_for_other_table").cast("int")).alias("n"),
                F.slice(
                    F.array_sort(F.collect_set(F.when(F.col("reused_for_other_table"), F.col("first_offset")))),
                    1,
                    FIRST_OFFSETS,
                ).alias("at"),
            )
            .collect()
        }
        unmapped = {f: int(files[f]["unmapped_rows_events"] or 0) + failed.get(f, (0, 0))[0] for f in pending}
        unmapped_at = _unmapped_at(ctx, [f for f in pending if unmapped[f]], maps_out) if any(unmapped.values()) else {}
        out.facts = {
            "files": pd.DataFrame(
                [
                    {
                        "file": f,
                        "unmapped_rows_events": unmapped[f],
                        "ids_reused_for_other_table": reused.get(f, (0, []))[0],
                        "unmapped_rows_events_at": unmapped_at.get(f, []),
                        "ids_reused_for_other_table_at": reused.get(f, (0, []))[1],
                    }
                    for f in pending
                ],
                columns=[
                    "file",
                    "unmapped_rows_events",
                    "ids_reused_for_other_table",
                    "unmapped_rows_events_at",
                    "ids_reused_for_other_table_at",
                ],
            ),
            "run": _ddl_share(results, pending),
        }
        per_file: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for (file, _, _), result in results.items():
            per_file[file][0] += 1
            per_file[file][1] += result.error is None
        built_from = {f: files[f]["run_id"] for f in files}
        previous = ctx.state.progress(Layer.SILVER)
        out.progress = [
            {
                "file": f,
                "built_from": built_from[f] if f in pending else previous[f]["built_from"],
                "run_id": ctx.run_id,
                "quarantined": failed.get(f, (0, 0))[1] + queries_failed.get(f, 0)
                if f in pending
                else previous[f]["quarantined"],
                "counts": {
                    "ddl_statements": per_file[f][0],
                    "ddl_parsed": per_file[f][1],
                    **_nameless_count(f, nameless, previous),
                },
            }
            for f in sorted(set(pending) | set(out.rebuilt))
        ]
        if seed_key is not None and seed_digest is not None:
            out.progress.append(
                {"file": seed_key, "built_from": seed_digest, "run_id": ctx.run_id, "quarantined": 0, "counts": {}}
            )
        names = {f: row["file_name"] for f, row in files.items()}
        out.unparsed = [
            f"{names[file]}@{offset}" + ("" if inner < 0 else f"#{inner}")
            for (file, offset, inner), result in sorted(
                results.items(), key=lambda item: (files[item[0][0]]["sequence"] or -1, *item[0])
            )
            if file in pending and result.error is not None
        ]
        run_facts = out.facts["run"]
        run_facts["ddl_parsed_share_at"] = pd.Series(
            [out.unparsed[:FIRST_OFFSETS]], index=run_facts.index, dtype=object
        )
        out.counts = {
            "ddl_statements": sum(per_file[f][0] for f in pending),
            "ddl_parsed": sum(per_file[f][1] for f in pending),
            "rebuilt": len(out.rebuilt),
        }

    def write(self, ctx: Context, out: SilverOutput) -> None:
        """Replace the rows of the built files in each silver table and the history of their servers,
        then record progress (last)."""
        if not out.progress:
            return
        built = sorted(set(out.files) | set(out.rebuilt))
        predicate = file_predicate(built)
        state = ctx.state
        fresh = state.fresh(Layer.SILVER, built)
        files = state.files()
        servers = set(out.servers)
        # a server's history is new when silver has built (or begun) none of its files before
        new_servers = state.fresh(Layer.SILVER, [f for f, row in files.items() if row["server"] in servers])
        writes = [
            Write(TABLE_MAPS, out.table_maps, predicate, fresh=fresh),  # type: ignore[arg-type]
            Write(DDL_EVENTS, out.ddl_events, predicate, fresh=fresh),  # type: ignore[arg-type]
            Write(SCHEMA_HISTORY, out.schema_history, file_predicate(out.servers, "server"), fresh=new_servers),  # type: ignore[arg-type]
        ]
        if out.files:
            mine = file_predicate(out.files)
            writes.append(Write(TABLE_ID_LIFECYCLE, out.table_id_lifecycle, mine, fresh=fresh))  # type: ignore[arg-type]
            if _needs_quarantine_write(ctx, out):
                writes.append(
                    Write(QUARANTINE, out.quarantine, f"stage = 'silver' AND ({mine})", fresh=fresh)  # type: ignore[arg-type]
                )
        ctx.lake.write_all(writes)
        ctx.state.record(Layer.SILVER, out.progress)


def _needs_quarantine_write(ctx: Context, out: SilverOutput) -> bool:
    """Whether silver has quarantine rows to write or rows of earlier builds of these files to remove."""
    previous = ctx.state.progress(Layer.SILVER)
    wrote = {row["file"]: row["quarantined"] for row in out.progress}
    return (
        out.extra_quarantine > 0
        or any(wrote.get(f, 0) for f in out.files)
        or any(previous.get(f, {}).get("quarantined", 0) for f in out.files)
    )


def _nameless_count(file: str, counted: dict[str, int], previous: dict[str, dict[str, Any]]) -> dict[str, int]:
    """``{NAMELESS_MAPS: n}`` for a file silver decoded now (``counted``), else what its progress said."""
    if file in counted or file not in previous:
        return {NAMELESS_MAPS: counted.get(file, 0)}
    before = (previous[file].get("counts") or {}).get(NAMELESS_MAPS)
    return {} if before is None else {NAMELESS_MAPS: before}


def _outcome(result: DdlResult) -> tuple[Any, ...]:
    return (result.error is None, result.error, list(result.objects))


def _unmapped_at(ctx: Context, files: list[str], maps_out: DataFrame) -> dict[str, list[int]]:
    """File -> the first offsets of its rows events without a decoded TABLE_MAP in force: none in
    force (bronze found none), or one whose body did not decode.  Run only for files that have some:
    it reads their bronze rows events' positions (silver reads no rows event otherwise)."""
    bad_maps = maps_out.where(F.col("problem_code").isNotNull() & (F.col("problem_severity") == "error")).select(
        F.col("file").alias("m_file"),
        F.col("offset").alias("m_offset"),
        F.coalesce("inner_index", F.lit(-1)).alias("m_inner"),
        F.lit(True).alias("bad_map"),
    )
    events = (
        ctx.lake.read_or_empty(BINLOG_EVENTS)
        .where(file_predicate(files))
        .where(F.col("event_class") == "rows")
        .transform(trusted)
        .select("file", "offset", "map_offset", "map_inner_index")
    )
    joined = events.join(
        F.broadcast(bad_maps),
        (F.col("file") == F.col("m_file"))
        & (F.col("map_offset") == F.col("m_offset"))
        & (F.coalesce("map_inner_index", F.lit(-1)) == F.col("m_inner")),
        "left",
    )
    rows = (
        joined.where(F.col("map_offset").isNull() | F.col("bad_map").isNotNull())
        .groupBy("file")
        .agg(F.slice(F.array_sort(F.collect_set("offset")), 1, FIRST_OFFSETS).alias("at"))
        .collect()
    )
    return {row.file: [int(o) for o in row.at] for row in rows}


def _ddl_share(results: dict[tuple[str, int, int], DdlResult], pending: list[str]) -> pd.DataFrame:
    """One row: the share of the built files' DDL statements the replay understood (1.0 when none)."""
    mine = [r for (f, _, _), r in results.items() if f in set(pending)]
    parsed = sum(r.error is None for r in mine)
    return pd.DataFrame([{"ddl_parsed_share": parsed / len(mine) if mine else 1.0, "ddl_statements": len(mine)}])


__all__ = [
    "MAPS_OUT",
    "NAMELESS_MAPS",
    "QUERIES_OUT",
    "SilverOutput",
    "SilverStage",
    "decode_queries",
    "decode_table_maps",
    "load_seed",
]
