"""Running the stages: build -> quality gate -> write, progress lines, and the run summary.

``run(spark, cfg, stages)`` runs the given stages in order (bronze, silver, gold) and returns a
:class:`RunReport`; its ``exit_code`` tells an orchestrator what happened:

====  ==========================================================================
0     done, nothing wrong
1     unexpected error (raised by the job entry point)
2     bad configuration or usage
3     a quality gate with action ``fail`` failed: that stage was not written
4     done, but bad input was quarantined (see the summary and the quarantine table)
====  ==========================================================================
"""

from __future__ import annotations

import sys
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from conf.models import AppConfig
from pipelines.bronze.schema import BINLOG_EVENTS, BINLOG_FILES, QUARANTINE
from pipelines.bronze.stage import build_bronze, write_bronze
from pipelines.gold.stage import build_gold, write_gold
from pipelines.progress import file_predicate
from pipelines.quality.facts import bronze_facts, ddl_facts, gold_facts, silver_facts
from pipelines.quality.gate import GATE_RESULTS, GateFailed, GateOutcome, run_gate
from pipelines.storage import Lakehouse, Table

STAGES = ("bronze", "silver", "gold")
EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_GATE_FAILED, EXIT_QUARANTINED = 0, 1, 2, 3, 4

EVENTS = Table.bronze("binlog_events")
FILES = Table.bronze("binlog_files")
QUARANTINE_TABLE = Table.bronze("quarantine")
GATE_TABLE = Table.quality("gate_results")


@dataclass
class RunReport:
    """What a run did, for the summary and the exit code."""

    run_id: str
    stages: list[str] = field(default_factory=list)
    files_built: dict[str, int] = field(default_factory=dict)
    gates: list[GateOutcome] = field(default_factory=list)
    failed_gate: str | None = None
    seconds: float = 0.0

    @property
    def exit_code(self) -> int:
        """See the module doc."""
        if self.failed_gate is not None:
            return EXIT_GATE_FAILED
        if any(g.quarantined for g in self.gates):
            return EXIT_QUARANTINED
        return EXIT_OK


def _say(err: TextIO, message: str) -> None:
    err.write(f"[binlog-lakehouse] {message}\n")
    err.flush()


def _gate(
    spark: SparkSession, cfg: AppConfig, lake: Lakehouse, report: RunReport, gate: str, facts: dict[str, DataFrame]
) -> None:
    outcome = run_gate(spark, gate, facts, cfg.quality)
    report.gates.append(outcome)
    lake.append(spark.createDataFrame(outcome.rows(report.run_id), GATE_RESULTS), GATE_TABLE)
    if outcome.failed:
        report.failed_gate = gate
        raise GateFailed(f"{gate} gate failed: {', '.join(outcome.failed)} (see {lake.qualified_name(GATE_TABLE)})")


def _bronze(spark: SparkSession, cfg: AppConfig, lake: Lakehouse, report: RunReport) -> int:
    out = build_bronze(spark, cfg, lake)
    try:
        if out.files:
            _gate(spark, cfg, lake, report, "bronze", {"files": bronze_facts(out.events, out.binlog_files)})
        write_bronze(lake, out)
    finally:
        out.unpersist()
    return len(out.files)


def _silver(spark: SparkSession, cfg: AppConfig, lake: Lakehouse, report: RunReport) -> int:
    try:
        from pipelines.silver.stage import build_silver, write_silver  # noqa: PLC0415 (optional layer)
    except ImportError as exc:
        _say(sys.stderr, f"silver: skipped, the silver stage is not available ({exc})")
        return 0
    out = build_silver(spark, cfg, lake)
    try:
        if out.files:
            events = lake.read_or_empty(EVENTS, BINLOG_EVENTS).where(file_predicate(out.files))
            facts = {
                "files": silver_facts(events, out.table_maps, out.table_id_lifecycle),
                "run": ddl_facts(out.ddl_events),
            }
            _gate(spark, cfg, lake, report, "silver", facts)
        write_silver(lake, out)
    finally:
        out.unpersist()
    return len(out.files)


def _gold(spark: SparkSession, cfg: AppConfig, lake: Lakehouse, report: RunReport) -> int:
    out = build_gold(spark, cfg, lake)
    try:
        if out.files:
            events = lake.read_or_empty(EVENTS, BINLOG_EVENTS).where(file_predicate(out.files))
            _gate(spark, cfg, lake, report, "gold", {"files": gold_facts(events, out.changes, out.quarantine)})
        write_gold(lake, out)
    finally:
        out.unpersist()
    return len(out.files)


RUNNERS: dict[str, Callable[[SparkSession, AppConfig, Lakehouse, RunReport], int]] = {
    "bronze": _bronze,
    "silver": _silver,
    "gold": _gold,
}


def run(spark: SparkSession, cfg: AppConfig, stages: Sequence[str] = STAGES, *, err: TextIO = sys.stderr) -> RunReport:
    """Run ``stages`` in order; a failed gate stops the run (``report.failed_gate``)."""
    report = RunReport(run_id=uuid.uuid4().hex)
    lake = Lakehouse(spark, cfg.storage)
    started = time.monotonic()
    for stage in stages:
        _say(err, f"{stage}: started")
        stage_start = time.monotonic()
        try:
            report.files_built[stage] = RUNNERS[stage](spark, cfg, lake, report)
        except GateFailed as exc:
            _say(err, f"{stage}: {exc}")
            break
        report.stages.append(stage)
        _say(err, f"{stage}: {report.files_built[stage]} file(s) built in {time.monotonic() - stage_start:.1f}s")
    report.seconds = time.monotonic() - started
    return report


def summary(spark: SparkSession, cfg: AppConfig, report: RunReport) -> str:
    """The end-of-run summary: files by status, events, row changes per table, quarantine, gates, time."""
    lake = Lakehouse(spark, cfg.storage)
    lines = [
        f"binlog-lakehouse run {report.run_id}: stages {', '.join(report.stages) or 'none'} "
        f"in {report.seconds:.1f}s (exit code {report.exit_code})"
    ]
    files = lake.read_or_empty(FILES, BINLOG_FILES)
    by_status = {r.status: r["count"] for r in files.groupBy("status").count().collect()}
    lines.append(f"  files: {sum(by_status.values())} ({_pairs(by_status)}); built now: {_pairs(report.files_built)}")
    lines.append(f"  events: {lake.read_or_empty(EVENTS, BINLOG_EVENTS).count()}")
    changes = lake.read(Table.gold("changes")) if lake.exists(Table.gold("changes")) else None
    if changes is not None:
        per_table = changes.groupBy("schema_name", "table_name").count().orderBy("schema_name", "table_name")
        rows = per_table.collect()
        lines.append(f"  row changes: {sum(r['count'] for r in rows)} in {len(rows)} table(s)")
        lines += [f"    {r.schema_name}.{r.table_name}: {r['count']}" for r in rows]
    quarantine = lake.read_or_empty(QUARANTINE_TABLE, QUARANTINE)
    reasons = quarantine.groupBy("stage", "code", "severity").agg(F.count(F.lit(1)).alias("n")).collect()
    lines.append(f"  quarantined: {sum(r.n for r in reasons)}")
    lines += [f"    {r.stage} {r.code} ({r.severity}): {r.n}" for r in sorted(reasons, key=lambda r: (r.stage, r.code))]
    for gate in report.gates:
        for result, action in gate.results:
            mark = "ok" if result.success else f"FAILED ({action})"
            lines.append(f"  gate {gate.gate}/{result.rule.name}: {mark}; {result.observed}")
    return "\n".join(lines)


def _pairs(counts: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "none"


__all__ = ["EXIT_ERROR", "EXIT_USAGE", "STAGES", "RunReport", "run", "summary"]
