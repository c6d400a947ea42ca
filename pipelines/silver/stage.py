"""The silver stage: table maps, table-id lifecycle, QUERY/DDL events and schema history.

``SilverStage.build`` reads, for the files silver has still to build (bronze rewrote them since),
only the bronze partitions of TABLE_MAP and QUERY-shaped events (the files bronze wrote in the
same run, when it framed them all: no Delta log is read), and decodes each of those bodies once,
never a row image, in two jobs of Python tasks that write the tables' files themselves
(:mod:`pipelines.silver.write`): the queries and the maps whose shape changed first (what the
schema replay needs, handed back), then, once the driver has replayed each server's history, every
map:

* ``table_maps``: every TABLE_MAP decoded, with its in-force range and rows events as bronze
  recorded them while walking the file, and the columns valid at its position
  (:class:`pipelines.silver.write.Resolver`: what gold decodes and names rows with);
* ``table_id_lifecycle``: per file and table id, added up from the tasks' counts;
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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from conf.models import AppConfig
from pipelines.bronze.stage import BronzeOutput
from pipelines.progress import file_predicate
from pipelines.quality.rules import FIRST_OFFSETS
from pipelines.silver.ddl import DdlResult, SchemaRegistry, parse_seed
from pipelines.silver.decode import Descriptions
from pipelines.silver.history import event_key, replay_history
from pipelines.silver.transforms import STORED_PLAN, resolved_again, trusted
from pipelines.silver.write import (
    MAP_INPUT,
    MAP_OUTPUT,
    QUERY_INPUT,
    QUERY_OUTPUT,
    SilverTargets,
    map_pairs,
    merged_lifecycle,
    merged_plans,
    own_columns,
    staged_maps,
    staged_queries,
)
from pipelines.stage import Built, Context
from pipelines.staging import Staged, StagedFile
from pipelines.storage import Write
from pipelines.tables import (
    BINLOG_EVENTS,
    DDL_EVENTS,
    QUARANTINE,
    SCHEMA_HISTORY,
    TABLE_ID_LIFECYCLE,
    TABLE_MAPS,
    Layer,
    TableSpec,
)

SEED = "seed:"
"""Progress key of the seed snapshot (``_state/progress`` row of layer silver, file ``seed:<path>``)."""

NAMELESS_MAPS = "maps_without_names"
"""Silver progress count of a file's decoded maps without column names: the files a changed
schema history may name differently (none when every map has its names)."""


@dataclass
class SilverOutput(Built):
    """What one silver build produced for ``files`` (and ``rebuilt``: files resolved again)."""

    table_maps: Staged | None = None
    table_id_lifecycle: DataFrame | None = None
    ddl_events: Staged | None = None
    schema_history: DataFrame | None = None
    plans: list[dict[str, Any]] = field(default_factory=list)
    """Each plan a built file's maps use, at its first map in the file (:data:`pipelines.silver.write.PLAN`):
    what gold decodes the file's rows with."""
    servers: list[str] = field(default_factory=list)
    rebuilt: list[str] = field(default_factory=list)
    progress: list[dict[str, Any]] = field(default_factory=list)
    unparsed: list[str] = field(default_factory=list)
    """``file_name@offset[#inner]`` of the built files' DDL statements the replay did not understand,
    in binlog order."""

    def written(self) -> list[str]:
        """The files built and those resolved again."""
        return sorted(set(self.files) | set(self.rebuilt))

    def staged(self) -> list[tuple[TableSpec, Staged]]:
        """The maps' and queries' files, and the quarantine's."""
        mine = [(TABLE_MAPS, self.table_maps), (DDL_EVENTS, self.ddl_events)]
        return super().staged() + [(spec, staged) for spec, staged in mine if staged is not None]


def bronze_events(ctx: Context, files: list[str], classes: Sequence[str]) -> DataFrame:
    """Bronze's events of ``files`` in the partitions ``classes``, trusted: from the files bronze wrote
    in this run when it framed all of them whole (no Delta log to read), else from the table."""
    bronze = ctx.handed.get(Layer.BRONZE.value)
    fresh = (
        isinstance(bronze, BronzeOutput) and set(files) <= set(bronze.files) and not set(files) & set(bronze.resumed)
    )
    written = ctx.lake.written_frame(BINLOG_EVENTS, {"event_class": classes}) if fresh else None
    if written is None:
        written = (
            ctx.lake.read_or_empty(BINLOG_EVENTS)
            .where(file_predicate(files))
            .where(F.col("event_class").isin(list(classes)))
        )
    return written.transform(trusted)


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


def ddl_rows(
    rows: Iterable[Mapping[str, Any]],
    results: Mapping[tuple[str, int, int], DdlResult],
    servers: Mapping[str, str],
    run_id: str,
) -> list[dict[str, Any]]:
    """``ddl_events`` rows of DDL statements (their status variables as entries: :func:`map_pairs`), each
    with its replay's outcome (the objects it touches, whether the replay understood it)."""
    out = []
    for row in rows:
        result = results.get(event_key(row["file"], row["offset"], row["inner_index"]))
        out.append(
            {
                **{name: row.get(name) for name in DDL_EVENTS.names},
                "status_vars": map_pairs(row["status_vars"]),
                "server": servers[row["file"]],
                "objects": None
                if result is None
                else [{"schema_name": s, "object_name": o, "action": a} for s, o, a in result.objects],
                "ddl_parsed": None if result is None else result.error is None,
                "ddl_error": None if result is None else result.error,
                "run_id": run_id,
            }
        )
    return out


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
        sequences = {f: row["sequence"] for f, row in files.items()}
        server_of = {f: row["server"] for f, row in files.items()}
        quarantine = lake.target(QUARANTINE)
        # 1. the QUERY-shaped events and the maps whose shape changed: what the schema replay needs
        first = _Handed(
            ctx.mapped(
                bronze_events(ctx, pending, ("query", "table_map"))
                .where((F.col("event_class") == "query") | F.col("shape_changed"))
                .select(*sorted({*QUERY_INPUT, *MAP_INPUT}), "event_class"),
                staged_queries(SilverTargets(lake.target(DDL_EVENTS), quarantine, server_of, fdes, ctx.run_id)),
                QUERY_OUTPUT,
            )
        )
        # the history of each server built: every file's DDL and map shapes, in binlog order
        new_ddl = first.rows("ddl")
        ddl, old_results = self._ddl_rows(ctx, pending, new_ddl, servers, server_of)
        shapes = self._shape_rows(ctx, pending, first.rows("shape"), servers)
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
        # 2. every map, named from that history
        second = _Handed(
            ctx.mapped(
                bronze_events(ctx, pending, ("table_map",)).select(*MAP_INPUT),
                staged_maps(
                    SilverTargets(lake.target(TABLE_MAPS), quarantine, server_of, fdes, ctx.run_id),
                    history_rows,
                    sequences,
                ),
                MAP_OUTPUT,
            )
        )
        history_frame = spark.createDataFrame(history_rows, SCHEMA_HISTORY.schema)
        out.schema_history = history_frame
        out.plans = merged_plans(second.rows("plan"))
        lifecycle = merged_lifecycle(second.rows("lifecycle"))
        out.table_id_lifecycle = spark.createDataFrame(lifecycle, TABLE_ID_LIFECYCLE.schema)
        table_maps = Staged(second.files(TABLE_MAPS))
        ddl_events = Staged(first.files(DDL_EVENTS))
        ddl_events = ddl_events.adding(lake.stage_rows(DDL_EVENTS, ddl_rows(new_ddl, results, server_of, ctx.run_id)))
        # files built before whose names or DDL outcome the new history changes
        again = self._resolved_again(ctx, pending, servers, history_rows, sequences)
        changed_ddl = sorted(
            {
                key[0]
                for key, result in results.items()
                if key[0] not in pending and old_results.get(key) != _outcome(result)
            }
        )
        out.rebuilt = sorted(set(again) | set(changed_ddl))
        if out.rebuilt:
            table_maps = table_maps.with_extra(self._maps_again(ctx, out.rebuilt, history_rows, sequences))
            stored = [
                r.asDict(recursive=True)
                for r in lake.read(DDL_EVENTS)
                .where(file_predicate(out.rebuilt))
                .withColumn("status_vars", F.map_entries("status_vars"))  # in their order
                .collect()
            ]
            ddl_events = ddl_events.adding(
                lake.stage_rows(DDL_EVENTS, ddl_rows(stored, results, server_of, ctx.run_id))
            )
        out.table_maps = table_maps
        out.ddl_events = ddl_events
        out.quarantine = Staged(first.files(QUARANTINE) + second.files(QUARANTINE))
        self._facts(ctx, out, first, second, lifecycle, results, pending, seed_key, seed_digest)
        return out

    def _ddl_rows(
        self,
        ctx: Context,
        pending: list[str],
        new_ddl: list[dict[str, Any]],
        servers: list[str],
        server_of: dict[str, str],
    ) -> tuple[dict[str, list[dict[str, Any]]], dict[tuple[str, int, int], tuple[Any, ...]]]:
        """The DDL statements of every file of ``servers`` (small: collected for the replay), by server,
        and the replay outcome ``ddl_events`` holds for the files not rebuilt now."""
        cols = ["file", "offset", "inner_index", "default_schema", "statement"]
        lake = ctx.lake
        old: list[dict[str, Any]] = []
        if lake.exists(DDL_EVENTS) and set(server_of[f] for f in server_of if f not in set(pending)) & set(servers):
            old = [
                row.asDict(recursive=True)
                for row in lake.read(DDL_EVENTS)
                .where((F.col("kind") == "DDL") & F.col("server").isin(servers) & ~F.expr(file_predicate(pending)))
                .select(*cols, "objects", "ddl_parsed", "ddl_error")
                .collect()
            ]
        by_server: dict[str, list[dict[str, Any]]] = defaultdict(list)
        outcomes: dict[tuple[str, int, int], tuple[Any, ...]] = {}
        for record in [*old, *({**r, "ddl_parsed": None} for r in new_ddl)]:
            if record["statement"] is None:
                continue
            by_server[server_of[record["file"]]].append({c: record[c] for c in cols})
            if record["ddl_parsed"] is not None:
                outcomes[event_key(record["file"], record["offset"], record["inner_index"])] = (
                    record["ddl_parsed"],
                    record["ddl_error"],
                    [(o["schema_name"], o["object_name"], o["action"]) for o in record["objects"] or []],
                )
        return by_server, outcomes

    def _shape_rows(
        self, ctx: Context, pending: list[str], new_shapes: list[dict[str, Any]], servers: list[str]
    ) -> dict[str, list[dict[str, Any]]]:
        """The maps with names where a table's shape may change (bronze flagged them), by server."""
        cols = ["file", "offset", "inner_index", "schema_name", "table_name", "fingerprint", "server"]
        old: list[dict[str, Any]] = []
        files = ctx.state.files()
        others = [f for f, row in files.items() if f not in set(pending) and row["server"] in servers]
        if others and ctx.lake.exists(TABLE_MAPS):
            stored = (
                ctx.lake.read(TABLE_MAPS)
                .where(F.col("shape_changed") & F.col("column_names").isNotNull() & F.col("server").isin(servers))
                .where(~F.expr(file_predicate(pending)))
                .select(*cols, "columns", "primary_key")
                .collect()
            )
            for row in stored:
                record = row.asDict(recursive=True)
                old.append(
                    {
                        **{c: record[c] for c in cols},
                        "columns": own_columns(record["columns"], True, record["primary_key"]),
                    }
                )
        by_server: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for record in [*old, *new_shapes]:
            by_server[record.pop("server")].append(record)
        return by_server

    def _resolved_again(
        self,
        ctx: Context,
        pending: list[str],
        servers: list[str],
        history: list[dict[str, Any]],
        sequences: dict[str, int | None],
    ) -> list[str]:
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
        changed = stored.transform(resolved_again(history, sequences)).where(F.col("plan_key") != F.col(STORED_PLAN))
        return sorted(row.file for row in changed.select("file").distinct().collect())

    def _maps_again(
        self, ctx: Context, rebuilt: list[str], history: list[dict[str, Any]], sequences: dict[str, int | None]
    ) -> DataFrame:
        """The stored maps of ``rebuilt`` files, their names resolved with the new history."""
        return (
            ctx.lake.read(TABLE_MAPS)
            .where(file_predicate(rebuilt))
            .transform(resolved_again(history, sequences))
            .drop(STORED_PLAN)
            .withColumn("run_id", F.lit(ctx.run_id))
        )

    def _facts(
        self,
        ctx: Context,
        out: SilverOutput,
        first: _Handed,
        second: _Handed,
        lifecycle: list[dict[str, Any]],
        results: dict[tuple[str, int, int], DdlResult],
        pending: list[str],
        seed_key: str | None,
        seed_digest: str | None,
    ) -> None:
        files = ctx.state.files()
        failed: dict[str, tuple[int, int]] = {}
        queries_failed: dict[str, int] = defaultdict(int)
        out.reasons = Counter()
        for row in first.rows("problems") + second.rows("problems"):
            out.reasons[(Layer.SILVER.value, row["code"], row["severity"])] += int(row["n"])
            if row["of_map"]:
                lost, seen = failed.get(row["file"], (0, 0))
                failed[row["file"]] = (lost + int(row["rows_events"]), seen + int(row["n"]))
            else:
                queries_failed[row["file"]] += int(row["n"])
        nameless = {row["file"]: int(row["n"]) for row in second.rows("nameless")}
        for f in pending:
            nameless.setdefault(f, 0)
        reused: dict[str, tuple[int, list[int]]] = {}
        for row in lifecycle:
            if row["reused_for_other_table"]:
                n, at = reused.get(row["file"], (0, []))
                reused[row["file"]] = (n + 1, sorted([*at, row["first_offset"]])[:FIRST_OFFSETS])
        unmapped = {f: int(files[f]["unmapped_rows_events"] or 0) + failed.get(f, (0, 0))[0] for f in pending}
        unmapped_at = _unmapped_at(ctx, [f for f in pending if unmapped[f]], out) if any(unmapped.values()) else {}
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


@dataclass
class _Handed:
    """What one job's tasks handed back, by kind."""

    rows_of: list[Any]

    def rows(self, kind: str) -> list[dict[str, Any]]:
        return [row[kind].asDict(recursive=True) for row in self.rows_of if row.kind == kind]

    def files(self, spec: TableSpec) -> tuple[StagedFile, ...]:
        return tuple(
            f
            for f in (StagedFile.of(row.staged) for row in self.rows_of if row.kind == "staged")
            if f.table == spec.folder
        )


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


def _unmapped_at(ctx: Context, files: list[str], out: SilverOutput) -> dict[str, list[int]]:
    """File -> the first offsets of its rows events without a decoded TABLE_MAP in force: none in
    force (bronze found none), or one whose body did not decode (in the quarantine rows written).
    Run only for files that have some: it reads their bronze rows events' positions (silver reads no
    rows event otherwise)."""
    problems = ctx.lake.staged_frame(QUARANTINE, out.quarantine) if isinstance(out.quarantine, Staged) else None
    bad_maps = (
        (problems if problems is not None else ctx.spark.createDataFrame([], QUARANTINE.schema))
        .where((F.col("event_type_name") == "TABLE_MAP") & (F.col("severity") == "error"))
        .select(
            F.col("file").alias("m_file"),
            F.col("offset").alias("m_offset"),
            F.coalesce("inner_index", F.lit(-1)).alias("m_inner"),
            F.lit(True).alias("bad_map"),
        )
    )
    events = bronze_events(ctx, files, ("rows",)).select("file", "offset", "map_offset", "map_inner_index")
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
    "NAMELESS_MAPS",
    "SilverOutput",
    "SilverStage",
    "bronze_events",
    "ddl_rows",
    "load_seed",
]
