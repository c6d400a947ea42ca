"""Running the stages: build -> quality gate -> write, progress lines, and the run summary.

``run(spark, cfg, stages)`` runs the given stages in order (bronze, silver, gold), each the same
shape (:mod:`pipelines.stage`), and returns a :class:`RunReport`; its ``exit_code`` tells an
orchestrator what happened (:mod:`pipelines.exits` declares the codes: 0 done, 3 a gate failed,
4 the input's files carry bad input, 6 a stage run alone found files its upstream has not built;
the job entry point adds 1, 2, 5, 130 and 143).

While a stage runs, progress lines go to ``err`` (``[binlog-lakehouse] <stage>: ...``): the
stage's milestones (files to frame and their bytes, files pending, gate outcome, each table
written) and, every ``progress_every`` seconds while Spark works, its active jobs and stages
with their tasks done (:class:`pipelines.progress.SparkProgress`). :func:`summary` tells what
this run did and what the lakehouse holds after it.  The report also counts the Spark jobs and
Delta commits each stage made.

The gates validate with great-expectations in the lakehouse's quality project
(:class:`pipelines.quality.gx.QualityProject`); a run that gated anything rebuilds its Data Docs
at the end (``report.data_docs``: the index page).  A run with nothing to gate does not import
great-expectations at all.
"""

from __future__ import annotations

import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TextIO

from pyspark.sql import DataFrame, SparkSession

from conf.models import AppConfig
from pipelines.bronze.discover import list_files
from pipelines.bronze.stage import BronzeStage
from pipelines.control import Interrupted
from pipelines.current.stage import CurrentStage
from pipelines.execution import ExecutionMode
from pipelines.exits import SHORT, Exit
from pipelines.gold.stage import GoldStage
from pipelines.progress import LakeState, SparkProgress
from pipelines.quality.gate import GateFailed, GateOutcome, run_gate
from pipelines.quality.gx import QualityProject, project_folder
from pipelines.silver.stage import SilverStage
from pipelines.stage import Built, Context, Stage
from pipelines.storage import Lakehouse, TableRef, Write
from pipelines.tables import GATE_RESULTS, QUARANTINE, Layer

STAGES = ("bronze", "silver", "gold", "current")
UPSTREAM = {"silver": "bronze", "gold": "silver", "current": "gold"}
"""The stage each stage builds from."""


STAGE_OBJECTS: dict[str, Callable[[], Stage[Any]]] = {
    "bronze": BronzeStage,
    "silver": SilverStage,
    "gold": GoldStage,
    "current": CurrentStage,
}
"""Stage name -> the stage (every stage the same shape: build, gate, write)."""

PROGRESS_EVERY = 10.0
"""Seconds between two looks at Spark's running jobs while a stage runs (None: never)."""

UNPARSED_SHOWN = 5
"""Positions of DDL statements the replay did not understand named in the summary."""

FAILING_SHOWN = 5
"""Failing files (with their first offending offsets) named in the summary per failed check."""

Reason = tuple[str, str, str]
"""A quarantine reason: ``(stage, code, severity)``."""

Say = Callable[[str], None]


@dataclass(frozen=True)
class DdlCoverage:
    """How many DDL statements the schema replay understood, and where the first others are."""

    statements: int
    parsed: int
    unparsed_at: list[str] = field(default_factory=list)
    """``file_name@offset`` (``#inner_index`` inside a compressed transaction), in binlog order."""

    @property
    def share(self) -> float:
        """Parsed statements over all statements (1.0 when there is none)."""
        return self.parsed / self.statements if self.statements else 1.0

    def line(self, shown: int = UNPARSED_SHOWN) -> str:
        """``DDL: 12 statement(s), 11 parsed (91.7%); not parsed: mysql-bin.000003@4410``."""
        text = f"DDL: {self.statements} statement(s), {self.parsed} parsed ({self.share:.1%})"
        if self.unparsed_at:
            listed = self.unparsed_at[:shown]
            more = self.statements - self.parsed - len(listed)
            text += f"; not parsed: {', '.join(listed)}" + (f" (+{more} more)" if more > 0 else "")
        return text


@dataclass
class RunReport:
    """What a run did, for the summary and the exit code (every count is of this run only)."""

    run_id: str
    logical_date: str | None = None
    """The orchestrator's logical date of the run (``--logical-date``, ISO 8601), when it gave one."""
    stages: list[str] = field(default_factory=list)
    files_built: dict[str, int] = field(default_factory=dict)
    stage_seconds: dict[str, float] = field(default_factory=dict)
    spark_jobs: dict[str, int] = field(default_factory=dict)
    delta_commits: dict[str, int] = field(default_factory=dict)
    events_framed: int = 0
    """Events bronze wrote (inner events of compressed transactions included)."""
    row_changes: int = 0
    """Row changes gold wrote to ``changes``."""
    rebuilt: int = 0
    """Files silver resolved again because the schema history changed under them."""
    waiting: int = 0
    """Files gold could not build because silver has not built them."""
    current_tables: int = 0
    """Source tables whose current state and history the current stage replayed."""
    quarantined: Counter[Reason] = field(default_factory=Counter)
    """Quarantine rows the stages wrote, by ``(stage, code, severity)``."""
    ddl: DdlCoverage | None = None
    """DDL parse coverage of the files silver built."""
    gates: list[GateOutcome] = field(default_factory=list)
    failed_gate: str | None = None
    upstream_missing: str | None = None
    """A stage run without its upstream found files that upstream has not built (what, in words)."""
    interrupted: str | None = None
    """The stage that was running when the run was told to stop."""
    bad_input: Counter[Reason] = field(default_factory=Counter)
    """Error-severity quarantine rows of the input's files in the lakehouse, whichever run wrote them."""
    totals: dict[str, Any] | None = None
    """What the lakehouse holds after the run (:func:`lake_totals`)."""
    data_docs: str | None = None
    """The quality Data Docs index this run rebuilt (None: no gate ran)."""
    quality_seconds: float = 0.0
    """Seconds the run waited for great-expectations (import, checkpoints, Data Docs)."""
    seconds: float = 0.0

    @property
    def errors_quarantined(self) -> int:
        """Quarantine rows of severity ``error`` this run wrote."""
        return sum(n for (_stage, _code, severity), n in self.quarantined.items() if severity == "error")

    @property
    def exit_code(self) -> Exit:
        """See the module doc."""
        if self.failed_gate is not None:
            return Exit.GATE_FAILED
        if self.upstream_missing is not None:
            return Exit.UPSTREAM_MISSING
        if self.errors_quarantined or self.bad_input or any(g.quarantined for g in self.gates):
            return Exit.BAD_INPUT
        return Exit.OK


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


def _gate(ctx: Context, stage: str, out: Built, report: RunReport, quality: QualityProject | None = None) -> None:
    """Run the stage's gate on its facts: raise :class:`GateFailed` on a ``fail`` check, else add
    the quarantine rows a failed ``quarantine`` check asks for."""
    outcome = run_gate(stage, out.facts, ctx.cfg.quality, quality, ctx.run_id)
    if not outcome.results:
        return
    report.gates.append(outcome)
    failing = [f"{r.rule.name} ({action})" for r, action in outcome.results if not r.success]
    ctx.say(f"gate: {len(outcome.results)} check(s), " + (f"failed: {', '.join(failing)}" if failing else "all pass"))
    if outcome.failed:
        report.failed_gate = stage
        raise GateFailed(f"{stage} gate failed: {', '.join(outcome.failed)} (see the gate_results table)")
    rows = outcome.quarantine_rows(ctx.run_id)
    if rows:
        out.add_quarantine(
            ctx.spark.createDataFrame([tuple(r[n] for n in QUARANTINE.names) for r in rows], QUARANTINE.schema)
        )
        out.extra_quarantine = len(rows)
        if out.reasons is not None:
            out.reasons.update((str(r["stage"]), str(r["code"]), str(r["severity"])) for r in rows)


def _count_quarantine(report: RunReport, out: Built) -> None:
    """Add the quarantine rows a stage is about to write to the report, by reason."""
    if out.reasons is not None:
        report.quarantined.update(out.reasons)
        return
    if not isinstance(out.quarantine, DataFrame):
        return
    for row in out.quarantine.groupBy("stage", "code", "severity").count().collect():
        report.quarantined[(row.stage, row.code, row.severity)] += row["count"]


def _write_gate_results(ctx: Context, report: RunReport) -> None:
    """One append of every gate result of the run."""
    now = datetime.now(UTC)
    rows = [
        (*(row[n] for n in GATE_RESULTS.names if n != "checked_at"), now)
        for g in report.gates
        for row in g.rows(ctx.run_id)
    ]
    if rows:
        frame = ctx.spark.createDataFrame(rows, GATE_RESULTS.schema)
        ctx.lake.write(Write(GATE_RESULTS, frame, mode="append"))


def _jobs_of(spark: SparkSession, group: str) -> int:
    return len(spark.sparkContext.statusTracker().getJobIdsForGroup(group))


def run(
    spark: SparkSession,
    cfg: AppConfig,
    stages: Sequence[str] = STAGES,
    *,
    err: TextIO | None = None,
    progress_every: float | None = PROGRESS_EVERY,
    run_id: str | None = None,
) -> RunReport:
    """Run ``stages`` in order; a failed gate stops the run (``report.failed_gate``).

    Progress lines go to ``err`` (``sys.stderr`` as it is when the run starts, by default);
    ``progress_every``: seconds between two reports of Spark's running jobs (None or 0:
    milestones only).  An :class:`pipelines.control.Interrupted`
    raised meanwhile (SIGINT, SIGTERM) goes on up with ``report`` attached and
    ``report.interrupted`` set; nothing more is asked of Spark then.

    >>> run(spark, cfg).exit_code
    <Exit.OK: 0>
    """
    report = RunReport(run_id=run_id or new_run_id())
    log = _Log(sys.stderr if err is None else err)
    current: dict[str, Say] = {}

    def wrote(table: TableRef) -> None:
        if table.layer not in (Layer.QUALITY, Layer.STATE) and "say" in current:
            current["say"](f"wrote {table.layer.value}.{table.name}")

    execution = ExecutionMode(spark, cfg.spark.small_work_mib)
    lake = Lakehouse(spark, cfg.storage, on_write=wrote, small_work=lambda: execution.small)
    quality = QualityProject(project_folder(cfg))

    def expect_work(size: int) -> None:
        execution.fit(size)
        quality.prepare()
        lake.warm_catalog()
        lake.warm_commits()

    ctx = Context(spark, cfg, lake, report.run_id, expect_work=expect_work)
    tracker = spark.sparkContext.statusTracker()
    started = time.monotonic()
    if not cfg.current.enabled and len(stages) > 1:
        stages = [name for name in stages if name != "current"]
    try:
        with lake.registering_at_end():  # the tables this run created, and any a killed run left unregistered
            try:
                for name in stages:
                    report.interrupted = name
                    execution.reset()
                    if not _stage(ctx, name, stages, report, log, current, tracker, progress_every, quality):
                        break
                report.interrupted = None
            except Interrupted as exc:
                quality.close()
                report.seconds = time.monotonic() - started
                exc.report = report  # type: ignore[attr-defined]
                raise
            except Exception:
                _release_handed(ctx)
                raise
            _release_handed(ctx)
            current.pop("say", None)
            quality.build_docs()  # in the background, while the end of the run asks Spark
            spark.sparkContext.setJobGroup(f"{report.run_id}:end", "binlog-lakehouse end of run")
            execution.fit(0)  # the end of the run writes a few rows and registers tables: small work
            _write_gate_results(ctx, report)
    finally:
        execution.reset()
    report.bad_input = bad_input(ctx)
    report.totals = lake_totals(ctx.state)
    report.data_docs = quality.finish()
    report.quality_seconds = quality.seconds
    if quality.docs_error is not None:
        log.say(f"quality Data Docs not rebuilt: {quality.docs_error}")
    report.seconds = time.monotonic() - started
    report.spark_jobs["end"] = _jobs_of(spark, f"{report.run_id}:end")
    spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
    return report


def new_run_id() -> str:
    """A fresh run id (when the orchestrator gives none)."""
    return uuid.uuid4().hex


def _stage(
    ctx: Context,
    name: str,
    stages: Sequence[str],
    report: RunReport,
    log: _Log,
    current: dict[str, Say],
    tracker: Any,
    progress_every: float | None,
    quality: QualityProject | None = None,
) -> bool:
    """Run one stage: build, gate, write; False when a failed gate stops the run."""
    spark, lake = ctx.spark, ctx.lake
    stage = STAGE_OBJECTS[name]()
    say = log.for_stage(name)
    current["say"] = ctx.say = say
    say("started")
    stage_start, commits = time.monotonic(), lake.commits
    group = f"{report.run_id}:{name}"
    spark.sparkContext.setJobGroup(group, f"binlog-lakehouse {name}", interruptOnCancel=True)
    out: Built | None = None
    interrupted = done = False
    try:
        with SparkProgress(tracker, say, progress_every):
            out = stage.build(ctx)
            if out.files:
                _gate(ctx, name, out, report, quality)
                _count_quarantine(report, out)
            written = out.written()
            ctx.state.begin(Layer(name), written)
            stage.write(ctx, out)
            ctx.state.finish(Layer(name), written)
            lake.register_soon()  # while the next stages run
            done = True
    except Interrupted:
        interrupted = True
        raise  # nothing more is asked of Spark: the call the signal landed in was abandoned
    except GateFailed as exc:
        say(str(exc))
        if out is not None:  # what its tasks wrote enters no table
            for spec, staged in out.staged():
                lake.discard(spec, staged)
        return False
    finally:
        report.stage_seconds[name] = time.monotonic() - stage_start
        if not interrupted:
            if out is not None:
                if done:  # what later stages of the run read instead of the tables just written
                    ctx.handed[name] = out
                else:
                    out.release()
            report.spark_jobs[name] = _jobs_of(spark, group)
            report.delta_commits[name] = lake.commits - commits
    report.stages.append(name)
    report.files_built[name] = len(out.files)
    report.events_framed += out.counts.get("events_framed", 0)
    report.row_changes += out.counts.get("row_changes", 0)
    report.rebuilt += out.counts.get("rebuilt", 0)
    report.current_tables += out.counts.get("current_tables", 0)
    if name == "gold":
        report.waiting = len(getattr(out, "waiting", []))
    if "ddl_statements" in out.counts:
        report.ddl = DdlCoverage(
            out.counts["ddl_statements"], out.counts["ddl_parsed"], list(getattr(out, "unparsed", []))
        )
    upstream = UPSTREAM.get(name)
    if upstream is not None and upstream not in stages:
        missing = _not_built_upstream(ctx, name, out)
        if missing:
            report.upstream_missing = missing
            say(missing)
    say(f"{len(out.files)} file(s) built in {report.stage_seconds[name]:.1f}s")
    return True


def _release_handed(ctx: Context) -> None:
    """Release the frames stages kept for a stage after them (the run ends)."""
    for out in ctx.handed.values():
        out.release()
    ctx.handed.clear()


def _not_built_upstream(ctx: Context, name: str, out: Built) -> str | None:
    """What a stage run alone could not build because its upstream has not built it (None: nothing)."""
    waiting = list(getattr(out, "waiting", []))
    if name == "gold" and waiting:
        return f"{len(waiting)} file(s) wait for silver (e.g. {waiting[0]}): run silver first"
    files = ctx.state.files()
    listed = list_files(ctx.spark, ctx.cfg.input)
    unknown = [f.file for f in listed if f.file not in files]
    if unknown:
        return f"{len(unknown)} input file(s) bronze has not framed (e.g. {unknown[0]}): run bronze first"
    return None


def bad_input(ctx: Context) -> Counter[Reason]:
    """Error-severity quarantine rows of the input's files (every file bronze knows that is still
    listed), by reason, whichever run wrote them."""
    files = ctx.state.listed if ctx.state.listed is not None else list(ctx.state.files())
    if not files:
        return Counter()
    listed = set(files)
    return Counter(
        (row["stage"], row["code"], row["severity"])
        for row in ctx.lake.rows(QUARANTINE, ["stage", "code", "severity", "file"])
        if row["severity"] == "error" and row["file"] in listed
    )


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


def lake_totals(state: LakeState) -> dict[str, Any]:
    """What the lakehouse holds, from ``binlog_files`` and the progress rows (no table is scanned)."""
    files = state.files()
    by_status = Counter(row["status"] for row in files.values())
    gold = state.progress(Layer.GOLD)
    silver = state.progress(Layer.SILVER)
    per_table: Counter[str] = Counter()
    for row in gold.values():
        per_table.update(row.get("counts") or {})
    return {
        "files": dict(by_status),
        "events": sum(int(row["event_count"] or 0) for row in files.values() if row["status"] != "duplicate"),
        "row_changes": dict(per_table),
        "ddl": DdlCoverage(
            sum(int((row.get("counts") or {}).get("ddl_statements", 0)) for f, row in silver.items() if f in files),
            sum(int((row.get("counts") or {}).get("ddl_parsed", 0)) for f, row in silver.items() if f in files),
        ),
    }


def summary(spark: SparkSession, cfg: AppConfig, report: RunReport) -> str:
    """The end-of-run summary: first what this run did, then what the lakehouse holds after it.

    This run: files built per stage and time, Spark jobs and Delta commits, events framed, row
    changes decoded, quarantine rows written with their reasons, DDL parse coverage, every gate
    result. The lakehouse (all runs so far): files by status, events, row changes per gold table,
    DDL parse coverage, and the bad input its files carry (what exit code 4 is about).
    """
    code = report.exit_code
    lines = [
        f"binlog-lakehouse run {report.run_id}: stages {', '.join(report.stages) or 'none'} "
        f"in {report.seconds:.1f}s (exit code {int(code)}: {SHORT[code]})",
        "  this run:",
        *([f"    logical date: {report.logical_date}"] if report.logical_date is not None else []),
        f"    built now: {_pairs(report.files_built)}; time: "
        + _pairs({stage: f"{seconds:.1f}s" for stage, seconds in report.stage_seconds.items()}),
        f"    Spark jobs: {_pairs(report.spark_jobs)}; Delta commits: {_pairs(report.delta_commits)}",
        f"    events framed: {report.events_framed}",
        f"    row changes decoded: {report.row_changes}",
        *_quarantine_lines(report.quarantined, "    "),
    ]
    if report.rebuilt:
        lines.append(f"    files resolved again (schema history changed): {report.rebuilt}")
    if report.waiting:
        lines.append(f"    files waiting for silver: {report.waiting}")
    if report.current_tables:
        lines.append(f"    current and history tables replayed: {report.current_tables}")
    if report.ddl is not None:
        lines.append(f"    {report.ddl.line()}")
    for gate in report.gates:
        for result, action in gate.results:
            mark = "ok" if result.success else f"FAILED ({action})"
            lines.append(f"    gate {gate.gate}/{result.rule.name}: {mark}; {result.observed}")
            lines += [f"      {_where(failing)}" for failing in result.failing[:FAILING_SHOWN]]
            if len(result.failing) > FAILING_SHOWN:
                lines.append(f"      (+{len(result.failing) - FAILING_SHOWN} more)")
    if report.data_docs is not None:
        lines.append(f"    quality Data Docs: {report.data_docs}")
    totals = report.totals or lake_totals(LakeState(Lakehouse(spark, cfg.storage)))
    lines.append("  lakehouse (all runs):")
    lines.append(f"    files: {sum(totals['files'].values())} ({_pairs(totals['files'])})")
    lines.append(f"    events: {totals['events']}")
    rows = totals["row_changes"]
    lines.append(f"    row changes: {sum(rows.values())} in {len(rows)} table(s)")
    lines += [f"      {name}: {n}" for name, n in sorted(rows.items())]
    lines.append(f"    {totals['ddl'].line()}")
    bad = report.bad_input
    lines.append(f"    bad input (error-severity quarantine rows of its files): {sum(bad.values())}")
    lines += [f"      {stage} {code}: {n}" for (stage, code, _severity), n in sorted(bad.items())]
    return "\n".join(lines)


def _where(failing: dict[str, Any]) -> str:
    """``mysql-bin.000002 (shop__orders) at offsets 4410, 5120``: what a failing fact row is about."""
    text = str(failing.get("file") or "the run").rsplit("/", 1)[-1]
    if failing.get("gold_table"):
        text += f" ({failing['gold_table']})"
    offsets = failing.get("first_offsets") or []
    if offsets:
        text += f" at {', '.join(str(o) for o in offsets)}"
    return text


def as_json(report: RunReport) -> dict[str, Any]:
    """The report for machines (``--summary-json``): files, events, row changes per table,
    quarantine by code, gate results, the quality Data Docs, timings, Spark jobs, Delta commits,
    exit code."""
    totals = report.totals or {}
    return {
        "run_id": report.run_id,
        "logical_date": report.logical_date,
        "exit_code": int(report.exit_code),
        "exit": SHORT[report.exit_code],
        "stages": report.stages,
        "interrupted_during": report.interrupted,
        "seconds": round(report.seconds, 3),
        "stage_seconds": {k: round(v, 3) for k, v in report.stage_seconds.items()},
        "spark_jobs": report.spark_jobs,
        "delta_commits": report.delta_commits,
        "this_run": {
            "files_built": report.files_built,
            "events_framed": report.events_framed,
            "row_changes": report.row_changes,
            "files_resolved_again": report.rebuilt,
            "files_waiting_for_silver": report.waiting,
            "current_tables_replayed": report.current_tables,
            "quarantined": [
                {"stage": stage, "code": code, "severity": severity, "rows": n}
                for (stage, code, severity), n in sorted(report.quarantined.items())
            ],
            "ddl": None if report.ddl is None else {"statements": report.ddl.statements, "parsed": report.ddl.parsed},
            "upstream_missing": report.upstream_missing,
        },
        "gates": [
            {
                "gate": gate.gate,
                "check": result.rule.name,
                "success": result.success,
                "action": action,
                "observed": result.observed,
                "failing": list(result.failing),
            }
            for gate in report.gates
            for result, action in gate.results
        ],
        "quality": {"data_docs": report.data_docs, "seconds": round(report.quality_seconds, 3)},
        "lakehouse": {
            "files": totals.get("files", {}),
            "events": totals.get("events", 0),
            "row_changes": totals.get("row_changes", {}),
            "ddl": None
            if "ddl" not in totals
            else {"statements": totals["ddl"].statements, "parsed": totals["ddl"].parsed},
            "bad_input": [
                {"stage": stage, "code": code, "rows": n}
                for (stage, code, _severity), n in sorted(report.bad_input.items())
            ],
        },
    }


def _pairs(counts: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "none"


__all__ = [
    "PROGRESS_EVERY",
    "STAGES",
    "DdlCoverage",
    "RunReport",
    "as_json",
    "bad_input",
    "lake_totals",
    "new_run_id",
    "run",
    "summary",
]
