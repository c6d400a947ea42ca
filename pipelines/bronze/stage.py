"""The bronze stage: list the binlog files, frame the new, grown and changed ones, write the tables.

::

    out = BronzeStage().build(ctx)   # discover, frame (checkpointed), summaries and facts
    BronzeStage().write(ctx, out)    # binlog_events and quarantine, then binlog_files

Framing runs in Spark tasks, one file per task (largest first, or a few small files packed
together), each streaming its file through :func:`pipelines.bronze.framing.frame_file`.  A file
framed from its start that is larger than its share of the run's bytes over the cores (at least
:data:`MIN_PIECE_BYTES`) is cut at transaction starts into pieces of about that share, each framed
by a task of its own (:func:`in_pieces`); their summaries merge into the one a single walk gives,
and a file whose pieces do not fit together (the state a piece starts in is not the one a single
walk is in there) is framed again in one piece.  The framed rows are stored on local disk (an
eager local checkpoint, row by row, so memory does not depend on file or event sizes) and the
writes read them from there.  The file summaries
come back to the driver, which decides what only all files together tell:

* **duplicates**: a file whose content (``content_sha256``: all the bytes framed) equals an
  ingested file's, or another new file's, is the same binlog under another name; the file
  ingested first (among new ones, the one framed furthest, then the first path) keeps the
  rows, the copy gets status ``duplicate``, no events, and a ``DUPLICATE_FILE`` quarantine row
  (an error when the copy holds more than the file kept);
* **a truncated first event** in a file that is not the newest of its server's sequence: the
  server was done with that file, so it is ``corrupt`` (an error), not the active binlog.

Idempotence: ``binlog_files`` is written last and is what the next run compares against.
New and changed files replace all their rows (``file IN (...)``); a grown file replaces its
rows from where it was resumed (``file = X AND offset >= R``) -- its quarantine rows too.  A run
killed after any write redoes the same work from the same ``binlog_files`` and writes the same
rows again.
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

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
    SUMMARY_FIELDS,
    WALK_FIELDS,
    WORK_ITEMS,
    frame_files,
    framed_events,
    framed_file,
    framed_quarantine,
    framed_summaries,
    open_binary,
    shapes_kept,
)
from pipelines.progress import file_predicate, quote_literal
from pipelines.quality.rules import FIRST_OFFSETS
from pipelines.stage import Built, Context
from pipelines.storage import Write, hadoop_filesystem_options
from pipelines.tables import BINLOG_EVENTS, BINLOG_FILES, QUARANTINE, Layer

MAX_TASKS = 512
"""Most framing tasks per run; beyond it small files share tasks (balanced by size)."""

TASK_BYTES = 16 << 20
"""Bytes small files share one framing task for: a task costs its scheduling and the writing of a
data file per table partition, more than framing a file of a few KiB does."""

DUPLICATE_FILE = "DUPLICATE_FILE"
FIRST_EVENT_CUT = "TRUNCATED"


@dataclass
class BronzeOutput(Built):
    """What a bronze build framed: the event frame on local disk, the ``binlog_files`` rows."""

    events: DataFrame | None = None
    binlog_files: list[dict[str, Any]] = field(default_factory=list)
    replace_predicate: str = "false"
    quarantine_predicate: str = "false"
    resumed: dict[str, int] = field(default_factory=dict)
    framed: DataFrame | None = None
    checkpoints: list[DataFrame] = field(default_factory=list)
    """The framing results stored on local disk that ``framed`` reads."""
    shapes_kept: dict[str, list[tuple[int, int | None]]] = field(default_factory=dict)
    """By file framed in pieces: the TABLE_MAPs whose ``shape_changed`` is False in a single walk
    (:func:`pipelines.bronze.framing.merge_parts`)."""

    def release(self) -> None:
        """Release the framing results stored on local disk (else freed when the session drops them)."""
        super().release()
        for checkpoint in self.checkpoints:
            with contextlib.suppress(Exception):  # another plan shape: Spark's cleaner frees the blocks later
                checkpoint._jdf.queryExecution().logical().rdd().unpersist(False)
        self.checkpoints = []
        self.framed = None


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


def located_problems(framed: DataFrame, files: list[str]) -> dict[str, dict[str, list[int]]]:
    """File -> fact -> the first offsets (:data:`FIRST_OFFSETS`) of the events failing their checksum,
    of unknown type, or starting past where the previous one ended, in the framed rows of ``files``.

    One Spark job over what bronze framed (no table is read); run only for files whose summary
    counted such events.  An event after a gap is one whose offset no other event of the file ends at
    (the file's first framed event aside).
    """
    events = framed.where(F.col("kind") == "event").select("event.*").where(F.col("file").isin(files))
    outer = events.where(F.col("inner_index").isNull()).select("file", "offset", "event_size")
    ends = outer.select(F.col("file").alias("e_file"), (F.col("offset") + F.col("event_size")).alias("e_end"))
    first = outer.groupBy(F.col("file").alias("f_file")).agg(F.min("offset").alias("f_first"))
    after_gap = (
        outer.join(ends, (F.col("file") == F.col("e_file")) & (F.col("offset") == F.col("e_end")), "left_anti")
        .join(first, F.col("file") == F.col("f_file"))
        .where(F.col("offset") != F.col("f_first"))
        .select("file", "offset", F.lit("offset_gaps").alias("fact"))
    )
    flagged = events.select(
        "file",
        "offset",
        F.when(F.col("checksum_ok") == F.lit(False), F.lit("checksum_failures"))
        .when(F.col("event_type_name").startswith("UNKNOWN_"), F.lit("unknown_events"))
        .alias("fact"),
    ).where(F.col("fact").isNotNull())
    rows = (
        flagged.unionByName(after_gap)
        .groupBy("file", "fact")
        .agg(F.slice(F.array_sort(F.collect_set("offset")), 1, FIRST_OFFSETS).alias("offsets"))
        .collect()
    )
    located: dict[str, dict[str, list[int]]] = defaultdict(dict)
    for row in rows:
        located[row.file][row.fact] = [int(o) for o in row.offsets]
    return dict(located)


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
        if items:
            started = time.monotonic()
            options = hadoop_filesystem_options(spark)
            work = in_pieces(items, spark.sparkContext.defaultParallelism, options)
            cut = [w.file for w in work if w.part is not None]
            if cut:
                ctx.say(f"{len(set(cut))} large file(s) in {len(cut)} pieces, one task each")
            framed = self._frame(ctx, out, work, options)
            rows, again, out.shapes_kept = whole_summaries(
                [row.asDict() for row in framed.transform(framed_summaries).collect()]
            )
            if again:  # pieces that do not fit together: those files are framed again in one walk
                ctx.say(f"framing {len(again)} file(s) again in one piece")
                whole = self._frame(ctx, out, [item for item in items if item.file in again], options)
                rows += [row.asDict() for row in whole.transform(framed_summaries).collect()]
                framed = framed.where(~framed_file().isin(sorted(again))).unionByName(whole)
            out.framed = framed
            summaries += rows
            ctx.say(f"framed {len(summaries)} file(s) in {time.monotonic() - started:.1f}s")
        if not summaries:
            return out
        self._decide(ctx, out, summaries, found, [f.file for f in unreadable])
        return out

    def _frame(self, ctx: Context, out: BronzeOutput, work: list[WorkItem], options: dict[str, str]) -> DataFrame:
        """Frame ``work`` in Spark tasks; the result stored on local disk, framed once, here."""
        spark = ctx.spark
        framed = (
            work_frame(spark, work)
            .transform(
                frame_files(
                    verify_checksums=ctx.cfg.decoder.verify_checksums,
                    batch_rows=max(1, int(spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch") or 10_000)),
                    batch_bytes=DEFAULT_BATCH_BYTES,
                    filesystem_options=options,
                )
            )
            # rows are stored one by one on local disk (a cache's column batches would hold 10 000
            # rows, however large their bodies, in memory); eager: framing runs here, once
            .localCheckpoint(eager=True, storageLevel=StorageLevel.DISK_ONLY)
        )
        out.checkpoints.append(framed)
        return framed

    def _decide(
        self, ctx: Context, out: BronzeOutput, summaries: list[dict[str, Any]], found: Discovery, unlisted: list[str]
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
        flagged = [r["file"] for r in rows if any(r[name] for name in LOCATED)]
        located = located_problems(out.framed, flagged) if flagged and out.framed is not None else {}
        out.facts = {"files": bronze_facts(rows, located)}
        before = {item.file: item.resume.counts.get("event_count", 0) for item in found.work if item.resume is not None}
        out.counts = {
            "events_framed": sum(int(r["event_count"]) for r in rows if r["status"] != DUPLICATE)
            - sum(before.get(s["file"], 0) for s in summaries if s["resumed_from"])
        }
        spark = ctx.spark
        extra_rows = spark.createDataFrame([(*q, ctx.run_id) for q in extra], QUARANTINE.schema)
        if out.framed is None:
            out.events = spark.createDataFrame([], BINLOG_EVENTS.schema)
            out.quarantine = extra_rows
            return
        events = out.framed.transform(framed_events(ctx.run_id))
        if out.shapes_kept:
            events = events.transform(shapes_kept(out.shapes_kept))
        if duplicates:
            events = events.where(~F.col("file").isin(duplicates))
        out.events = events
        quarantine = out.framed.transform(framed_quarantine(ctx.run_id))
        if cut_first:
            first_cut = F.col("file").isin(cut_first) & (F.col("code") == FIRST_EVENT_CUT)
            message = F.concat(
                F.col("message"),
                F.lit(": the first event claims more bytes than the file has, and newer files of its server exist"),
            )
            quarantine = quarantine.withColumn("severity", F.when(first_cut, F.lit(ERROR)).otherwise(F.col("severity")))
            quarantine = quarantine.withColumn("message", F.when(first_cut, message).otherwise(F.col("message")))
        if duplicates:
            quarantine = quarantine.where(~F.col("file").isin(duplicates))
        out.quarantine = quarantine.unionByName(extra_rows)

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
    "decide_duplicates",
    "located_problems",
    "newest_in_sequence",
    "replace_predicates",
    "work_frame",
    "work_summary",
]
