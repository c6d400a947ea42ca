"""Running the stages: build -> quality gate -> write, progress lines, and the run summary.

``run(spark, cfg, stages)`` runs the given stages in order (bronze, silver, gold) and returns a
:class:`RunReport`; its ``exit_code`` tells an orchestrator what happened:

====  ==========================================================================================
0     done, nothing wrong (warnings, such as the truncated tail of an active binlog, may be
      recorded in the quarantine table and ``gate_results``)
1     unexpected error (raised by the job entry point)
2     bad configuration or usage
3     a quality gate with action ``fail`` failed: that stage was not written
4     done, but bad input was quarantined: this run wrote at least one quarantine row of
      severity ``error`` (a file that is corrupt, encrypted or not a binlog, an event that does
      not decode, a check with action ``quarantine`` that failed)
====  ==========================================================================================

While a stage runs, progress lines go to ``err`` (``[binlog-lakehouse] <stage>: ...``): the
stage's milestones (files to frame and their bytes, files pending, gate outcome, each table
written) and, every ``progress_every`` seconds while Spark works, its active jobs and stages
with their tasks done (:class:`pipelines.progress.SparkProgress`). :func:`summary` tells what
this run did and what the lakehouse holds after it.
"""

from __future__ import annotations

import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from conf.models import AppConfig, StorageSettings
from pipelines.bronze.schema import BINLOG_EVENTS, BINLOG_FILES, QUARANTINE
from pipelines.bronze.stage import build_bronze, write_bronze
from pipelines.gold.stage import build_gold, write_gold
from pipelines.progress import SparkProgress, file_predicate, pending_files
from pipelines.quality.facts import bronze_facts, ddl_facts, gold_facts, silver_facts
from pipelines.quality.gate import GATE_RESULTS, GateFailed, GateOutcome, run_gate
from pipelines.storage import Lakehouse, Layer, Table

STAGES = ("bronze", "silver", "gold")
EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_GATE_FAILED, EXIT_QUARANTINED = 0, 1, 2, 3, 4
EXIT_MEANINGS = {
    EXIT_OK: "done",
    EXIT_GATE_FAILED: "a quality gate failed",
    EXIT_QUARANTINED: "done, bad input quarantined",
}

PROGRESS_EVERY = 10.0
"""Seconds between two looks at Spark's running jobs while a stage runs (None: never)."""

UNPARSED_SHOWN = 5
"""Positions of DDL statements the replay did not understand named in the summary."""

EVENTS = Table.bronze("binlog_events")
FILES = Table.bronze("binlog_files")
QUARANTINE_TABLE = Table.bronze("quarantine")
GATE_TABLE = Table.quality("gate_results")
DDL_TABLE = Table.silver("ddl_events")
CHANGES_TABLE = Table.gold("changes")

Reason = tuple[str, str, str]
"""A quarantine reason: ``(stage, code, severity)``."""

Say = Callable[[str], None]


@dataclass(frozen=True)
class DdlCoverage:
    """How many DDL statements the schema replay understood, and where the first others are."""

    statements: int
    parsed: int
    unparsed_at: list[str] = field(default_factory=list)
    """``file_name@offset`` (``#inner_index`` inside a compressed transaction), in file order."""

    @property
    def share(self) -> float:
        """Parsed statements over all statements (1.0 when there is none)."""
        return self.parsed / self.statements if self.statements else 1.0

    def line(self) -> str:
        """``DDL: 12 statement(s), 11 parsed (91.7%); not parsed: mysql-bin.000003@4410``."""
        text = f"DDL: {self.statements} statement(s), {self.parsed} parsed ({self.share:.1%})"
        if self.unparsed_at:
            more = self.statements - self.parsed - len(self.unparsed_at)
            text += f"; not parsed: {', '.join(self.unparsed_at)}" + (f" (+{more} more)" if more > 0 else "")
        return text


def ddl_coverage(ddl_events: DataFrame, shown: int = UNPARSED_SHOWN) -> DdlCoverage:
    """The DDL parse coverage of silver ``ddl_events`` rows (those of ``kind = 'DDL'``)."""
    ddl = ddl_events.where(F.col("kind") == "DDL")
    totals = ddl.agg(
        F.count(F.lit(1)).alias("statements"),
        F.coalesce(F.sum(F.col("ddl_parsed").cast("int")), F.lit(0)).alias("parsed"),
    ).first()
    unparsed = (
        ddl.where(~F.coalesce(F.col("ddl_parsed"), F.lit(False)))
        .orderBy("file", "offset", F.coalesce("inner_index", F.lit(-1)))
        .select("file_name", "offset", "inner_index")
        .limit(shown)
        .collect()
    )
    positions = [f"{r.file_name}@{r.offset}" + ("" if r.inner_index is None else f"#{r.inner_index}") for r in unparsed]
    statements, parsed = (0, 0) if totals is None else (int(totals.statements), int(totals.parsed))
    return DdlCoverage(statements, parsed, positions)


@dataclass
class RunReport:
    """What a run did, for the summary and the exit code (every count is of this run only)."""

    run_id: str
    stages: list[str] = field(default_factory=list)
    files_built: dict[str, int] = field(default_factory=dict)
    stage_seconds: dict[str, float] = field(default_factory=dict)
    events_framed: int = 0
    """Events bronze wrote (inner events of compressed transactions included)."""
    row_changes: int = 0
    """Row changes gold wrote to ``changes``."""
    quarantined: Counter[Reason] = field(default_factory=Counter)
    """Quarantine rows the stages wrote, by ``(stage, code, severity)``."""
    ddl: DdlCoverage | None = None
    """DDL parse coverage of the files silver built."""
    gates: list[GateOutcome] = field(default_factory=list)
    failed_gate: str | None = None
    seconds: float = 0.0

    @property
    def errors_quarantined(self) -> int:
        """Quarantine rows of severity ``error`` this run wrote."""
        return sum(n for (_stage, _code, severity), n in self.quarantined.items() if severity == "error")

    @property
    def exit_code(self) -> int:
        """See the module doc."""
        if self.failed_gate is not None:
            return EXIT_GATE_FAILED
        if self.errors_quarantined or any(g.quarantined for g in self.gates):
            return EXIT_QUARANTINED
        return EXIT_OK


class _Log:
    """Progress lines to ``err``, whole lines even when the progress thread writes too."""

    def __init__(self, err: TextIO) -> None:
        self.err = err
        self.lock = threading.Lock()

    def say(self, message: str) -> None:
        with self.lock:
            self.err.write(f"[binlog-lakehouse] {message}\n")
            self.err.flush()

    def for_stage(self, stage: str) -> Say:
        return lambda message: self.say(f"{stage}: {message}")


class _AnnouncingLakehouse(Lakehouse):
    """The lakehouse, saying each table a stage wrote (a milestone per table)."""

    def __init__(self, spark: SparkSession, settings: StorageSettings) -> None:
        super().__init__(spark, settings)
        self.say: Say | None = None

    def _wrote(self, table: Table) -> None:
        if self.say is not None and table.layer != Layer.QUALITY and not table.name.startswith("_"):
            self.say(f"wrote {table.layer.value}.{table.name}")

    def replace_where(self, df: DataFrame, table: Table, predicate: str, *, merge_schema: bool = False) -> None:
        super().replace_where(df, table, predicate, merge_schema=merge_schema)
        self._wrote(table)

    def overwrite(self, df: DataFrame, table: Table) -> None:
        super().overwrite(df, table)
        self._wrote(table)

    def merge(self, df: DataFrame, table: Table, keys: list[str]) -> None:
        super().merge(df, table, keys)
        self._wrote(table)


@dataclass
class _Stage:
    """What a stage runner works with."""

    spark: SparkSession
    cfg: AppConfig
    lake: Lakehouse
    report: RunReport
    say: Say


def _gate(ctx: _Stage, gate: str, facts: dict[str, DataFrame], quarantine: DataFrame) -> DataFrame:
    """Run ``gate``; raise :class:`GateFailed` on a ``fail`` check, else ``quarantine`` plus the gate's rows."""
    outcome = run_gate(ctx.spark, gate, facts, ctx.cfg.quality)
    ctx.report.gates.append(outcome)
    ctx.lake.append(ctx.spark.createDataFrame(outcome.rows(ctx.report.run_id), GATE_RESULTS), GATE_TABLE)
    failing = [f"{r.rule.name} ({action})" for r, action in outcome.results if not r.success]
    ctx.say(f"gate: {len(outcome.results)} check(s), " + (f"failed: {', '.join(failing)}" if failing else "all pass"))
    if outcome.failed:
        ctx.report.failed_gate = gate
        raise GateFailed(f"{gate} gate failed: {', '.join(outcome.failed)} (see {ctx.lake.qualified_name(GATE_TABLE)})")
    rows = outcome.quarantine_rows()
    if not rows:
        return quarantine
    return quarantine.unionByName(ctx.spark.createDataFrame(rows, QUARANTINE))


def _count_quarantine(ctx: _Stage, quarantine: DataFrame) -> None:
    """Add the quarantine rows a stage is about to write to the report, by reason."""
    for row in quarantine.groupBy("stage", "code", "severity").count().collect():
        ctx.report.quarantined[(row.stage, row.code, row.severity)] += row["count"]


def _bronze(ctx: _Stage) -> int:
    out = build_bronze(ctx.spark, ctx.cfg, ctx.lake, say=ctx.say)
    try:
        if out.files:
            facts = {"files": bronze_facts(out.events, out.binlog_files, out.resumed)}
            out.quarantine = _gate(ctx, "bronze", facts, out.quarantine)
            ctx.report.events_framed += out.events.count()
            _count_quarantine(ctx, out.quarantine)
        write_bronze(ctx.lake, out)
    finally:
        out.unpersist()
    return len(out.files)


def _silver(ctx: _Stage) -> int:
    try:
        from pipelines.silver.stage import build_silver, write_silver  # noqa: PLC0415 (optional layer)
    except ImportError as exc:
        ctx.say(f"skipped, the silver stage is not available ({exc})")
        return 0
    ctx.say(f"{len(pending_files(ctx.lake, Layer.SILVER))} file(s) pending")
    out = build_silver(ctx.spark, ctx.cfg, ctx.lake)
    try:
        if out.files:
            events = ctx.lake.read_or_empty(EVENTS, BINLOG_EVENTS).where(file_predicate(out.files))
            facts = {
                "files": silver_facts(events, out.table_maps, out.table_id_lifecycle),
                "run": ddl_facts(out.ddl_events),
            }
            out.quarantine = _gate(ctx, "silver", facts, out.quarantine)
            ctx.report.ddl = ddl_coverage(out.ddl_events)
            _count_quarantine(ctx, out.quarantine)
        write_silver(ctx.lake, out)
    finally:
        out.unpersist()
    return len(out.files)


def _gold(ctx: _Stage) -> int:
    ctx.say(f"{len(pending_files(ctx.lake, Layer.GOLD))} file(s) pending")
    out = build_gold(ctx.spark, ctx.cfg, ctx.lake)
    try:
        if out.files:
            events = ctx.lake.read_or_empty(EVENTS, BINLOG_EVENTS).where(file_predicate(out.files))
            facts = {"files": gold_facts(events, out.changes, out.quarantine)}
            out.quarantine = _gate(ctx, "gold", facts, out.quarantine)
            ctx.report.row_changes += out.changes.count()
            _count_quarantine(ctx, out.quarantine)
            ctx.say(f"writing changes and {len(out.tables)} typed table(s)")
        write_gold(ctx.lake, out)
    finally:
        out.unpersist()
    return len(out.files)


RUNNERS: dict[str, Callable[[_Stage], int]] = {
    "bronze": _bronze,
    "silver": _silver,
    "gold": _gold,
}


def run(
    spark: SparkSession,
    cfg: AppConfig,
    stages: Sequence[str] = STAGES,
    *,
    err: TextIO | None = None,
    progress_every: float | None = PROGRESS_EVERY,
) -> RunReport:
    """Run ``stages`` in order; a failed gate stops the run (``report.failed_gate``).

    Progress lines go to ``err`` (``sys.stderr`` as it is when the run starts, by default);
    ``progress_every``: seconds between two reports of Spark's running jobs (None or 0:
    milestones only).

    >>> run(spark, cfg).exit_code
    0
    """
    report = RunReport(run_id=uuid.uuid4().hex)
    log = _Log(sys.stderr if err is None else err)
    lake = _AnnouncingLakehouse(spark, cfg.storage)
    tracker = spark.sparkContext.statusTracker()
    started = time.monotonic()
    for stage in stages:
        say = log.for_stage(stage)
        lake.say = say
        say("started")
        stage_start = time.monotonic()
        try:
            with SparkProgress(tracker, say, progress_every):
                report.files_built[stage] = RUNNERS[stage](_Stage(spark, cfg, lake, report, say))
        except GateFailed as exc:
            say(str(exc))
            break
        finally:
            report.stage_seconds[stage] = time.monotonic() - stage_start
        report.stages.append(stage)
        say(f"{report.files_built[stage]} file(s) built in {report.stage_seconds[stage]:.1f}s")
    lake.say = None
    report.seconds = time.monotonic() - started
    return report


def _quarantine_lines(reasons: Counter[Reason], indent: str) -> list[str]:
    """``quarantined: N (error E, warning W)`` and one line per reason."""
    by_severity: Counter[str] = Counter()
    for (_stage, _code, severity), n in reasons.items():
        by_severity[severity] += n
    head = f"{indent}quarantined: {sum(reasons.values())}"
    if by_severity:
        head += f" ({_pairs(dict(by_severity))})"
    return [head] + [
        f"{indent}  {stage} {code} ({severity}): {n}" for (stage, code, severity), n in sorted(reasons.items())
    ]


def summary(spark: SparkSession, cfg: AppConfig, report: RunReport) -> str:
    """The end-of-run summary: first what this run did, then what the lakehouse holds after it.

    This run: files built per stage and time, events framed, row changes decoded, quarantine rows
    written with their reasons, DDL parse coverage, every gate result. The lakehouse (all runs so
    far): files by status, events, row changes per table, quarantine by reason, DDL parse coverage.
    """
    lake = Lakehouse(spark, cfg.storage)
    code = report.exit_code
    lines = [
        f"binlog-lakehouse run {report.run_id}: stages {', '.join(report.stages) or 'none'} "
        f"in {report.seconds:.1f}s (exit code {code}: {EXIT_MEANINGS.get(code, 'error')})",
        "  this run:",
        f"    built now: {_pairs(report.files_built)}; time: "
        + _pairs({stage: f"{seconds:.1f}s" for stage, seconds in report.stage_seconds.items()}),
        f"    events framed: {report.events_framed}",
        f"    row changes decoded: {report.row_changes}",
        *_quarantine_lines(report.quarantined, "    "),
    ]
    if report.ddl is not None:
        lines.append(f"    {report.ddl.line()}")
    for gate in report.gates:
        for result, action in gate.results:
            mark = "ok" if result.success else f"FAILED ({action})"
            lines.append(f"    gate {gate.gate}/{result.rule.name}: {mark}; {result.observed}")

    lines.append("  lakehouse (all runs):")
    files = lake.read_or_empty(FILES, BINLOG_FILES)
    by_status = {r.status: r["count"] for r in files.groupBy("status").count().collect()}
    lines.append(f"    files: {sum(by_status.values())} ({_pairs(by_status)})")
    lines.append(f"    events: {lake.read_or_empty(EVENTS, BINLOG_EVENTS).count()}")
    if lake.exists(CHANGES_TABLE):
        per_table = lake.read(CHANGES_TABLE).groupBy("schema_name", "table_name").count()
        rows = per_table.orderBy("schema_name", "table_name").collect()
        lines.append(f"    row changes: {sum(r['count'] for r in rows)} in {len(rows)} table(s)")
        lines += [f"      {r.schema_name}.{r.table_name}: {r['count']}" for r in rows]
    quarantine = lake.read_or_empty(QUARANTINE_TABLE, QUARANTINE)
    reasons = quarantine.groupBy("stage", "code", "severity").agg(F.count(F.lit(1)).alias("n")).collect()
    lines += _quarantine_lines(Counter({(r.stage, r.code, r.severity): r.n for r in reasons}), "    ")
    if lake.exists(DDL_TABLE):
        lines.append(f"    {ddl_coverage(lake.read(DDL_TABLE)).line()}")
    return "\n".join(lines)


def _pairs(counts: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "none"


__all__ = [
    "EXIT_ERROR",
    "EXIT_GATE_FAILED",
    "EXIT_OK",
    "EXIT_QUARANTINED",
    "EXIT_USAGE",
    "PROGRESS_EVERY",
    "STAGES",
    "DdlCoverage",
    "RunReport",
    "ddl_coverage",
    "run",
    "summary",
]
