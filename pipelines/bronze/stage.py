"""The bronze stage: list the binlog files, frame the new, grown and changed ones, write the tables.

::

    out = BronzeStage().build(ctx)   # discover, frame (checkpointed), summaries and facts
    BronzeStage().write(ctx, out)    # binlog_events and quarantine, then binlog_files

Framing runs in Spark tasks, one file per task (largest first, or a few small files packed
together), each streaming its file through :func:`pipelines.bronze.framing.frame_file` and writing
the events and quarantine rows it frames as files of those tables (not committed yet:
:mod:`pipelines.staging`), so memory does not depend on file or event sizes and the rows are
written once.  A file framed from its start that is larger than its share of the run's bytes
over the cores (at least :data:`MIN_PIECE_BYTES`) is cut at transaction starts into pieces of
about that share, each framed by a task of its own (:func:`in_pieces`); their summaries merge into
the one a single walk gives, and a file whose pieces do not fit together (the state a piece starts
in is not the one a single walk is in there) is framed again in one piece (the pieces' files are
deleted).  The file summaries, the files written and the few maps whose ``shape_changed`` only a
single walk tells come back to the driver, which decides what only all files together tell:

* **duplicates**: a file whose content (``content_sha256``: all the bytes framed) equals an
  ingested file's, or another new file's, is the same binlog under another name; the file
  ingested first (among new ones, the one framed furthest, then the first path) keeps the
  rows, the copy gets status ``duplicate``, no events, and a ``DUPLICATE_FILE`` quarantine row
  (an error when the copy holds more than the file kept);
* **a truncated first event** in a file that is not the newest of its server's sequence: the
  server was done with that file, so it is ``corrupt`` (an error), not the active binlog.

The gate's facts come from the summaries (counts, and where the first offending events are): no
event is read again.  Each table is then one Delta commit of the files the tasks wrote.

Idempotence: ``binlog_files`` is written last and is what the next run compares against.
New and changed files replace all their rows (``file IN (...)``); a grown file replaces its
rows from where it was resumed (``file = X AND offset >= R``) -- its quarantine rows too.  A run
killed after any write redoes the same work from the same ``binlog_files`` and writes the same
rows again.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema

from pipelines.bronze.discover import Discovery, ListedFile, WorkItem, discover, same_time, sequence_of, server_of
from pipelines.bronze.framing import (
    CORRUPT,
    DUPLICATE,
    ERROR,
    STAGE,
    TRUNCATED,
    UNREADABLE,
    UNREADABLE_FILE,
    WARNING,
    FileSummary,
    file_problem,
    merge_parts,
    plan_parts,
)
from pipelines.bronze.transforms import (
    DEFAULT_BATCH_BYTES,
    EVENT,
    FILE,
    OUTPUT,
    STAGED_FILE,
    SUMMARY_FIELDS,
    WALK_FIELDS,
    WORK_ITEMS,
    frame_files,
    open_binary,
)
from pipelines.progress import file_predicate, quote_literal
from pipelines.stage import Built, Context
from pipelines.staging import Staged, StagedFile
from pipelines.storage import Write, hadoop_filesystem_options
from pipelines.tables import BINLOG_EVENTS, BINLOG_FILES, QUARANTINE, Layer, TableSpec

MAX_TASKS = 512
"""Most framing tasks per run; beyond it small files share tasks (balanced by size)."""

TASK_BYTES = 16 << 20
"""Bytes small files share one framing task for: a task costs its scheduling and the writing of a
data file per table partition, more than framing a file of a few KiB does."""

DUPLICATE_FILE = "DUPLICATE_FILE"
FIRST_EVENT_CUT = "TRUNCATED"


@dataclass
class BronzeOutput(Built):
    """What a bronze build framed: the events' and quarantine's files, the ``binlog_files`` rows."""

    events: Staged | None = None
    binlog_files: list[dict[str, Any]] = field(default_factory=list)
    replace_predicate: str = "false"
    quarantine_predicate: str = "false"
    resumed: dict[str, int] = field(default_factory=dict)

    def staged(self) -> list[tuple[TableSpec, Staged]]:
        """The events' and quarantine's files."""
        return super().staged() + ([(BINLOG_EVENTS, self.events)] if self.events is not None else [])


@dataclass
class _Framed:
    """What framing tasks handed back: summaries, the files they wrote, the maps the driver writes."""

    summaries: list[dict[str, Any]] = field(default_factory=list)
    files: list[StagedFile] = field(default_factory=list)
    maps: list[dict[str, Any]] = field(default_factory=list)
    kept: dict[str, list[tuple[int, int | None]]] = field(default_factory=dict)
    """By file framed in pieces: the maps whose ``shape_changed`` a single walk says False."""

    def add(self, rows: list[Any]) -> None:
        for row in rows:
            if row.kind == FILE:
                self.summaries.append(row[FILE].asDict())
            elif row.kind == STAGED_FILE:
                self.files.append(StagedFile.of(row[STAGED_FILE]))
            elif row.kind == EVENT:
                self.maps.append(row[EVENT].asDict())

    def of(self, table: str) -> tuple[StagedFile, ...]:
        """The files written for ``table`` (``<layer>/<name>``)."""
        return tuple(f for f in self.files if f.table == table)

    def drop(self, files: set[str]) -> list[StagedFile]:
        """Forget what was framed of ``files`` (framed again); the written files holding their rows."""
        gone = [f for f in self.files if not files.isdisjoint(f.sources)]
        self.files = [f for f in self.files if files.isdisjoint(f.sources)]
        self.summaries = [r for r in self.summaries if r["file"] not in files]
        self.maps = [r for r in self.maps if r["file"] not in files]
        return gone


def replace_predicates(whole: list[str], resumed: dict[str, int]) -> tuple[str, str]:
    """The ``replaceWhere`` predicates of ``binlog_events`` and of bronze's quarantine rows.

    >>> replace_predicates(["f1"], {"f2": 900})[0]
    "`file` IN ('f1') OR (`file` = 'f2' AND `offset` >= 900)"
    """
    events: list[str] = [file_predicate(whole)] if whole else []
    quarantine: list[str] = list(events)
    for file, offset in sorted(resumed.items()):
        events.append(f"(`file` = {quote_literal(file)} AND `offset` >= {offset})")
        quarantine.append(f"(`file` = {quote_literal(file)} AND (`offset` IS NULL OR `offset` >= {offset}))")
    if not events:
        return "false", "false"
    return " OR ".join(events), f"`stage` = '{STAGE}' AND ({' OR '.join(quarantine)})"


def _bins(items: list[WorkItem], count: int) -> list[list[WorkItem]]:
    """Spread ``items`` (largest first) over ``count`` bins, each to the least loaded one."""
    bins: list[list[WorkItem]] = [[] for _ in range(count)]
    loads = [0] * count
    for item in items:
        target = loads.index(min(loads))
        bins[target].append(item)
        loads[target] += item.to_read
    return [b for b in bins if b]


def work_frame(spark: SparkSession, items: list[WorkItem], max_tasks: int = MAX_TASKS) -> DataFrame:
    """The work items as a ``WORK_ITEMS`` frame, one partition per framing task: a file (or piece) per
    task where the files are large, small files sharing tasks of about :data:`TASK_BYTES`, at least
    as many tasks as Spark has cores (while there are items), at most ``max_tasks``."""
    wanted = max(spark.sparkContext.defaultParallelism, -(-sum(item.to_read for item in items) // TASK_BYTES))
    bins = _bins(items, min(len(items), max_tasks, wanted))
    rows = [[item.row() for item in b] for b in bins]
    rdd = spark.sparkContext.parallelize(rows, len(rows)).flatMap(lambda b: b)
    return spark.createDataFrame(rdd, WORK_ITEMS)


def work_table(items: list[WorkItem]) -> pa.Table:
    """The work items as ``WORK_ITEMS`` rows in Arrow, in order (framed in this process)."""
    schema = to_arrow_schema(WORK_ITEMS, timezone="UTC")
    return pa.Table.from_pylist([dict(zip(schema.names, item.row(), strict=True)) for item in items], schema=schema)


MIN_PIECE_BYTES = 32 << 20
"""The smallest piece of a large file that a task of its own frames."""


def in_pieces(items: list[WorkItem], parallelism: int, options: dict[str, str]) -> list[WorkItem]:
    """``items``, with each file framed from its start that is larger than a fair share of the work
    (the bytes to read over ``parallelism``, at least :data:`MIN_PIECE_BYTES`) cut into pieces of about
    that share (:func:`pipelines.bronze.framing.plan_parts`), so idle cores frame a part of it."""
    share = max(MIN_PIECE_BYTES, -(-sum(item.to_read for item in items) // max(1, parallelism)))
    work: list[WorkItem] = []
    for item in items:
        count = item.size // share if item.resume is None else 0
        parts = plan_parts(open_binary(item.file, options, random_access=True), item.size, count) if count > 1 else []
        work += [replace(item, part=part) for part in parts] or [item]
    return work


def whole_summaries(
    rows: list[dict[str, Any]],
) -> tuple[list[dict[str, Any]], set[str], dict[str, list[tuple[int, int | None]]]]:
    """The framing summaries with those of each file framed in pieces merged into one
    (:func:`pipelines.bronze.framing.merge_parts`), the files whose pieces do not fit together,
    and by file the maps whose ``shape_changed`` a single walk says False."""
    whole: list[dict[str, Any]] = []
    pieces: dict[str, list[FileSummary]] = defaultdict(list)
    for row in rows:
        if row.get("part") is None:
            whole.append(row)
        else:
            pieces[row["file"]].append(FileSummary(**{k: v for k, v in row.items() if k in SUMMARY_FIELDS}))
    again: set[str] = set()
    kept: dict[str, list[tuple[int, int | None]]] = {}
    for file, summaries in pieces.items():
        merged = merge_parts(summaries)
        if merged is None:
            again.add(file)
            continue
        summary, kept[file] = merged
        whole.append({name: getattr(summary, name) for name in SUMMARY_FIELDS})
    return whole, again, {f: at for f, at in kept.items() if at}


def byte_size(size: int) -> str:
    """A byte count for progress lines.

    >>> byte_size(512), byte_size(27030), byte_size(3 << 30)
    ('512 B', '26.4 KiB', '3.0 GiB')
    """
    if size < 1024:
        return f"{size} B"
    for unit, shift in (("GiB", 30), ("MiB", 20)):
        if size >= 1 << shift:
            return f"{size / (1 << shift):.1f} {unit}"
    return f"{size / 1024:.1f} KiB"


def work_summary(items: list[WorkItem]) -> str:
    """What discovery found to do, for a progress line.

    >>> work_summary(items)
    '3 file(s) to frame (1 grown, 2 new), 2.4 MiB to read'
    """
    decisions = Counter(item.decision.value for item in items)
    kinds = ", ".join(f"{n} {decision}" for decision, n in sorted(decisions.items()))
    to_read = sum(item.to_read for item in items)
    return f"{len(items)} file(s) to frame ({kinds}), {byte_size(to_read)} to read"


def _unlisted_summary(listed: ListedFile) -> FileSummary:
    """The summary of a file the listing could not read at all (a dangling link)."""
    return FileSummary(
        listed.file,
        listed.file_name,
        listed.size,
        listed.modification_time,
        UNREADABLE,
        error_code=UNREADABLE_FILE,
        error_message=listed.problem,
    )


def _file_row(summary: dict[str, Any], pattern: str | None, run_id: str) -> dict[str, Any]:
    """A ``binlog_files`` row from a framing summary (as a dict)."""
    row = {name: summary[name] for name in SUMMARY_FIELDS if name not in WALK_FIELDS}
    row["server"] = server_of(summary["file"], pattern)
    row["sequence"] = sequence_of(summary["file_name"])
    row["duplicate_of"] = None
    row["run_id"] = run_id
    return row


def decide_duplicates(rows: list[dict[str, Any]], known: dict[str, dict[str, Any]]) -> list[tuple[dict[str, Any], str]]:
    """The copies among ``rows`` (new summaries), each with the file kept: ``(row, kept file)``.

    A row is a copy when its ``content_sha256`` equals that of a file kept before (in ``known``,
    not itself a duplicate, not this very file) or of another new row with a smaller path.
    """
    kept: dict[str, str] = {}
    for file, row in sorted(known.items()):
        if row.get("content_sha256") and row["status"] != DUPLICATE:
            kept.setdefault(row["content_sha256"], file)
    copies = []
    for row in sorted(rows, key=lambda r: r["file"]):
        content = row.get("content_sha256")
        if content:
            first = kept.setdefault(content, row["file"])
            if first != row["file"]:
                copies.append((row, first))
    return copies


def newest_in_sequence(rows: list[dict[str, Any]], known: dict[str, dict[str, Any]]) -> dict[str, int]:
    """The highest sequence number of each server, over new rows and every ingested file."""
    newest: dict[str, int] = defaultdict(lambda: -1)
    for row in [*known.values(), *rows]:
        if row.get("sequence") is not None and row.get("server") is not None:
            newest[row["server"]] = max(newest[row["server"]], row["sequence"])
    return dict(newest)


BRONZE_FACTS = ["file", "offset_gaps", "unexplained_tail", "unreadable", "checksum_failures", "unknown_events"]
"""The bronze gate's facts per file (each but ``file`` with an ``<name>_at`` column: where)."""

LOCATED = ("offset_gaps", "checksum_failures", "unknown_events")
"""The facts whose offsets only the framed events tell (:func:`located_problems`)."""


def bronze_facts(rows: list[dict[str, Any]], located: dict[str, dict[str, list[int]]] | None = None) -> pd.DataFrame:
    """Per file: what the bronze gate checks, from the summaries (no table is scanned), and where:
    the tail's start, the offset where an unreadable file stopped, and ``located`` (file -> fact ->
    first offsets, :func:`located_problems`)."""
    located = located or {}
    records = []
    for r in rows:
        tail = int(r["status"] == "complete" and r["framed_until"] != r["size"])
        unreadable = int(r["status"] in ("corrupt", "encrypted", "not_a_binlog", "unreadable"))
        where = located.get(r["file"], {})
        records.append(
            {
                "file": r["file"],
                "offset_gaps": r["offset_gaps"],
                "unexplained_tail": tail,
                "unreadable": unreadable,
                "checksum_failures": r["checksum_failures"],
                "unknown_events": r["unknown_events"],
                "offset_gaps_at": where.get("offset_gaps", []),
                "unexplained_tail_at": [r["framed_until"]] if tail else [],
                "unreadable_at": [r["error_offset"]] if unreadable and r.get("error_offset") is not None else [],
                "checksum_failures_at": where.get("checksum_failures", []),
                "unknown_events_at": where.get("unknown_events", []),
            }
        )
    return pd.DataFrame(records, columns=[*BRONZE_FACTS, *(f"{name}_at" for name in BRONZE_FACTS[1:])])


def corrected_maps(maps: list[dict[str, Any]], kept: dict[str, list[tuple[int, int | None]]]) -> list[dict[str, Any]]:
    """The maps a piece's task handed back (the first of each table in a piece after the first), with
    ``shape_changed`` False where a single walk says so (``kept``: by file,
    :func:`pipelines.bronze.framing.merge_parts`)."""
    places = {(file, offset, inner) for file, at in kept.items() for offset, inner in at}
    return [
        {**row, "shape_changed": False} if (row["file"], row["offset"], row["inner_index"]) in places else row
        for row in maps
    ]


class BronzeStage:
    """Bronze: the files and their events (see the module doc)."""

    name = "bronze"

    def build(self, ctx: Context) -> BronzeOutput:
        """Discover and frame the files that are new, grown or changed since the last run."""
        spark, cfg = ctx.spark, ctx.cfg
        found: Discovery = discover(spark, cfg.input, ctx.lake)
        ctx.state.know_files(found.known)
        ctx.state.listed = [f.file for f in found.listed]
        unreadable = [f for f in found.listed if f.problem is not None and _changed(f, found.known.get(f.file))]
        items = [item for item in found.work if item.file not in {f.file for f in unreadable}]
        ctx.say(work_summary(items) if items else "no new, grown or changed file")
        if items or unreadable:
            ctx.expect_work(sum(item.to_read for item in items))
        summaries: list[dict[str, Any]] = [
            {name: getattr(_unlisted_summary(f), name) for name in SUMMARY_FIELDS} for f in unreadable
        ]
        out = BronzeOutput(files=[])
        framed = _Framed()
        if items:
            started = time.monotonic()
            options = hadoop_filesystem_options(spark)
            work = in_pieces(items, spark.sparkContext.defaultParallelism, options)
            cut = [w.file for w in work if w.part is not None]
            if cut:
                ctx.say(f"{len(set(cut))} large file(s) in {len(cut)} pieces, one task each")
            framed.add(self._frame(ctx, work, options))
            again = whole_summaries(framed.summaries)[1]
            if again:  # pieces that do not fit together: those files (and any sharing their tasks' files) again
                gone = framed.drop(again)
                again |= {source for f in gone for source in f.sources}
                gone += framed.drop(again)
                self._discard(ctx, gone)
                ctx.say(f"framing {len(again)} file(s) again in one piece")
                framed.add(self._frame(ctx, [item for item in items if item.file in again], options))
            merged, _, framed.kept = whole_summaries(framed.summaries)
            summaries += merged
            ctx.say(f"framed {len(summaries)} file(s) in {time.monotonic() - started:.1f}s")
        if not summaries:
            return out
        self._decide(ctx, out, summaries, found, [f.file for f in unreadable], framed)
        return out

    def _frame(self, ctx: Context, work: list[WorkItem], options: dict[str, str]) -> list[Any]:
        """Frame ``work`` in Spark tasks (small work: in this process), which write the events and
        quarantine rows; what they hand back."""
        spark = ctx.spark
        framing = frame_files(
            ctx.lake.target(BINLOG_EVENTS),
            ctx.lake.target(QUARANTINE),
            ctx.run_id,
            verify_checksums=ctx.cfg.decoder.verify_checksums,
            batch_rows=max(1, int(spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch") or 10_000)),
            batch_bytes=DEFAULT_BATCH_BYTES,
            filesystem_options=options,
        )
        source = work_table(work) if ctx.lake.small_work() else work_frame(spark, work)
        return ctx.mapped(source, framing, OUTPUT)

    def _discard(self, ctx: Context, files: list[StagedFile]) -> None:
        """Delete written files that are not to be committed."""
        for spec in (BINLOG_EVENTS, QUARANTINE):
            ctx.lake.discard(spec, Staged(tuple(f for f in files if f.table == spec.folder)))

    def _decide(
        self,
        ctx: Context,
        out: BronzeOutput,
        summaries: list[dict[str, Any]],
        found: Discovery,
        unlisted: list[str],
        framed: _Framed,
    ) -> None:
        pattern = ctx.cfg.input.server_pattern
        rows = [_file_row(s, pattern, ctx.run_id) for s in summaries]
        unreadable = set(unlisted)
        extra = [
            file_problem(r["file"], r["file_name"], UNREADABLE_FILE, ERROR, f"{r['file_name']} is {r['error_message']}")
            for r in rows
            if r["file"] in unreadable
        ]
        copies = decide_duplicates(rows, found.known)
        for row, original in copies:
            row["status"], row["duplicate_of"] = DUPLICATE, original
            extra.append(
                file_problem(
                    row["file"],
                    row["file_name"],
                    DUPLICATE_FILE,
                    WARNING,
                    f"{row['file_name']} holds the same bytes as {original}: its events are not ingested again",
                )
            )
        newest = newest_in_sequence(rows, found.known)
        cut_first: list[str] = []
        for row in rows:
            not_newest = row["sequence"] is not None and row["sequence"] < newest.get(row["server"], -1)
            if row["status"] == TRUNCATED and row["error_offset"] == 4 and not_newest:
                row["status"] = CORRUPT
                cut_first.append(row["file"])
        duplicates = sorted(row["file"] for row, _ in copies)
        reasons: Counter[tuple[str, str, str]] = Counter((q.stage, q.code, q.severity) for q in extra)
        for summary in summaries:
            if summary["file"] in duplicates:
                continue
            for key, n in (summary.get("problems") or {}).items():
                code, severity = key.rsplit(" ", 1)
                if summary["file"] in cut_first and code == FIRST_EVENT_CUT:
                    severity = ERROR
                reasons[(STAGE, code, severity)] += n
        out.reasons = reasons
        resumed = {s["file"]: s["resumed_from"] for s in summaries if s["resumed_from"]}
        whole = sorted(s["file"] for s in summaries if not s["resumed_from"])
        out.files = sorted(s["file"] for s in summaries)
        out.binlog_files = rows
        out.resumed = resumed
        out.replace_predicate, out.quarantine_predicate = replace_predicates(whole, resumed)
        out.facts = {"files": bronze_facts(rows, {s["file"]: dict(s.get("located") or {}) for s in summaries})}
        before = {item.file: item.resume.counts.get("event_count", 0) for item in found.work if item.resume is not None}
        out.counts = {
            "events_framed": sum(int(r["event_count"]) for r in rows if r["status"] != DUPLICATE)
            - sum(before.get(s["file"], 0) for s in summaries if s["resumed_from"])
        }
        events, quarantine = Staged(framed.of(BINLOG_EVENTS.folder)), Staged(framed.of(QUARANTINE.folder))
        if duplicates:  # their rows are the originals'
            for staged in (events, quarantine):
                self._discard(ctx, [f for f in staged.files if set(f.sources) <= set(duplicates)])
            events, quarantine = events.without(duplicates), quarantine.without(duplicates)
        if cut_first:
            quarantine = quarantine.changed(_first_event_cut(cut_first))
        maps = [{**m, "run_id": ctx.run_id} for m in corrected_maps(framed.maps, framed.kept)]
        events = events.adding(ctx.lake.stage_rows(BINLOG_EVENTS, [m for m in maps if m["file"] not in duplicates]))
        problems = [{**q._asdict(), "run_id": ctx.run_id} for q in extra]
        quarantine = quarantine.adding(ctx.lake.stage_rows(QUARANTINE, problems))
        out.events = events
        out.quarantine = quarantine

    def write(self, ctx: Context, out: BronzeOutput) -> None:
        """Events and quarantine rows, then ``binlog_files`` (last: it marks the files done)."""
        if not out.files:
            return
        lake, state = ctx.lake, ctx.state
        assert out.events is not None
        fresh = not out.resumed and state.fresh(Layer.BRONZE, out.files)
        writes = [Write(BINLOG_EVENTS, out.events, out.replace_predicate, fresh=fresh)]
        if out.quarantine is not None:
            writes.append(Write(QUARANTINE, out.quarantine, out.quarantine_predicate, fresh=fresh))
        lake.write_all(writes)
        files = ctx.spark.createDataFrame(out.binlog_files, BINLOG_FILES.schema)
        recorded = state.files()
        known = any(row["file"] in recorded for row in out.binlog_files)
        lake.write(Write(BINLOG_FILES, files, file_predicate(row["file"] for row in out.binlog_files), fresh=not known))
        state.update_files(out.binlog_files)


def _first_event_cut(files: list[str]) -> Any:
    """``quarantine -> quarantine``: the ``TRUNCATED`` rows of ``files`` (a first event cut in a file that
    is not its server's newest) as errors, saying why."""
    first_cut = F.col("file").isin(files) & (F.col("code") == FIRST_EVENT_CUT)
    message = F.concat(
        F.col("message"),
        F.lit(": the first event claims more bytes than the file has, and newer files of its server exist"),
    )

    def transform(quarantine: DataFrame) -> DataFrame:
        return quarantine.withColumn(
            "severity", F.when(first_cut, F.lit(ERROR)).otherwise(F.col("severity"))
        ).withColumn("message", F.when(first_cut, message).otherwise(F.col("message")))

    return transform


def _changed(listed: ListedFile, previous: dict[str, Any] | None) -> bool:
    return (
        previous is None
        or previous["size"] != listed.size
        or not same_time(previous["modification_time"], listed.modification_time)
    )


__all__ = [
    "MAX_TASKS",
    "BronzeOutput",
    "BronzeStage",
    "bronze_facts",
    "byte_size",
    "corrected_maps",
    "decide_duplicates",
    "newest_in_sequence",
    "replace_predicates",
    "work_frame",
    "work_summary",
]
