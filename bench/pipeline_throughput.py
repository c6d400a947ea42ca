"""End-to-end throughput and peak memory of the pipeline (bronze -> silver -> gold) on ``local[2]``,
side by side with the decoder alone.

::

    .venv/bin/python bench/pipeline_throughput.py [--binlog .cache/bench/oltp/mysql-bin.000001]
        [--repeats 1] [--prefix 0.25] [--config conf/local.yaml] [--json report.json]

The binlog is the generated OLTP file of ``make_oltp_binlog.py`` (see ``bench/README.md``).
Each round, each in a fresh process:

1. ``decoder``: ``binlog_core.decoder.decode_file`` over the file, every value of every row
   change touched, pinned to one CPU (``decode_throughput.py``'s ``ours``).
2. ``pipeline``: a new lakehouse under ``--out``; a Spark session with the settings of
   ``--config`` (``conf/local.yaml``: ``driver_memory: 1536m``), the master forced to ``local[2]``
   and the UI off, its JVM started for one run as the job command starts it (quick compiler only);
   then one ``run`` of bronze, silver and gold, quality gates included, as the
   ``binlog-lakehouse run`` job does; the end-to-end time counts the session's start, and each
   stage's time, Spark jobs and Delta commits come from the run's report. A thread samples the
   resident memory of the driver process, its JVM and the JVM's Python workers every 0.2 s
   (``bench/memory.py``: RSS per group, and the sum of their proportional set sizes).
   The run must reconcile: ``changes`` holds as many row changes as the decoder saw, nothing is
   quarantined and no gate fails.
3. ``pipeline`` on the file's first ``--prefix`` share (cut after a transaction): peak memory
   of the whole file against a quarter of it.

Prints median seconds, row changes per second into gold, the ratio to the decoder alone and the
peak resident memory of each process group.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as ``python bench/pipeline_throughput.py``
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import ROOT, cut_at_transaction, json_child, mib
from bench.decode_throughput import DEFAULT_BINLOG, run_child
from bench.memory import Sampler

Result = dict[str, Any]
STAGES = ("bronze", "silver", "gold")


def pipeline_child(binlog: Path, config: str, out: Path) -> Result:
    """One pipeline run over the folder holding only ``binlog``, in this process; its figures."""
    from conf import load_config
    from pipelines.run import run
    from pipelines.session import build_spark
    from pipelines.storage import Lakehouse, Layer, Table

    cfg = load_config(config)
    lake_root = Path(tempfile.mkdtemp(prefix="lake-", dir=out))
    cfg = cfg.model_copy(
        update={
            "spark": cfg.spark.model_copy(update={"master": "local[2]", "ui_enabled": False}),
            "input": cfg.input.model_copy(update={"path": str(binlog.parent), "glob": binlog.name}),
            "storage": cfg.storage.model_copy(update={"root": str(lake_root), "register_tables": False}),
        }
    )
    sampler = Sampler()
    sampler.start()
    started = time.perf_counter()
    spark = build_spark(cfg.spark, one_run=True)  # as the job command starts it
    result: Result = {"session_seconds": time.perf_counter() - started}
    try:
        report = run(spark, cfg, STAGES, err=sys.stderr, progress_every=None)
        result["seconds"] = time.perf_counter() - started
        for stage in STAGES:
            result[f"{stage}_seconds"] = report.stage_seconds[stage]
            result[f"{stage}_jobs"] = report.spark_jobs[stage]
            result[f"{stage}_commits"] = report.delta_commits[stage]
        result["end_seconds"] = report.seconds - sum(report.stage_seconds.values())
        if report.exit_code != 0:
            raise SystemExit(f"the run ended with exit code {int(report.exit_code)} (gate {report.failed_gate})")
        peaks = sampler.stop()
        lake = Lakehouse(spark, cfg.storage)
        result["events"] = lake.read(Table.bronze("binlog_events")).count()
        result["rows"] = lake.read(Table.gold("changes")).count()
        result["quarantined"] = lake.read(Table.bronze("quarantine")).count()
        per_table = [name for name in lake.tables(Layer.GOLD) if name != "changes"]
        result["gold_tables"] = len(per_table)
    finally:
        spark.stop()
        shutil.rmtree(lake_root, ignore_errors=True)
    result |= {
        "rss_jvm_mib": mib(peaks.jvm),
        "rss_workers_mib": mib(peaks.workers),
        "rss_driver_mib": mib(peaks.driver_python),
        "rss_total_mib": mib(peaks.total),
        "pss_total_mib": mib(peaks.total_pss),
        "driver_memory": cfg.spark.driver_memory,
    }
    return result


def run_pipeline(binlog: Path, config: str, out: Path) -> Result:
    """:func:`pipeline_child` in a fresh process (a fresh JVM, memory measured from its start)."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "--binlog", str(binlog)]
    cmd += ["--config", config, "--out", str(out)]
    return json_child(cmd, f"pipeline on {binlog}")


MEASURED = ("_seconds", "_mib", "_jobs", "_commits")
"""Suffixes of the figures a pipeline run reports (medians over runs)."""


def _median(results: list[Result], key: str) -> float:
    return statistics.median(r[key] for r in results)


def _report(binlog: Path, prefix: Path | None, samples: dict[str, list[Result]]) -> Result:
    decoder, pipeline = samples["decoder"], samples["pipeline"]
    rows = decoder[0]["rows"]
    for result in pipeline + samples.get("pipeline_prefix", []):
        if result["quarantined"]:
            raise SystemExit(f"MISMATCH: the pipeline quarantined {result['quarantined']} item(s)")
    if any(r["rows"] != rows for r in pipeline):
        raise SystemExit(f"MISMATCH: gold holds {[r['rows'] for r in pipeline]} row changes, the decoder {rows}")
    report: Result = {
        "binlog": str(binlog),
        "size_mib": mib(binlog.stat().st_size),
        "events": pipeline[0]["events"],
        "rows": rows,
        "gold_tables": pipeline[0]["gold_tables"],
        "decoder": {"seconds": _median(decoder, "seconds"), "cpu_seconds": _median(decoder, "cpu_seconds"),
                    "rss_mib": max(r["max_rss_mib"] for r in decoder), "runs": [r["seconds"] for r in decoder]},
        "pipeline": {key: _median(pipeline, key) for key in pipeline[0] if key.endswith(MEASURED)}
        | {"seconds": _median(pipeline, "seconds"), "runs": [r["seconds"] for r in pipeline],
           "driver_memory": pipeline[0]["driver_memory"]},
    }  # fmt: skip
    report["decoder"]["rows_per_second"] = rows / report["decoder"]["seconds"]
    report["pipeline"]["rows_per_second"] = rows / report["pipeline"]["seconds"]
    report["pipeline_vs_decoder"] = report["pipeline"]["rows_per_second"] / report["decoder"]["rows_per_second"]
    if prefix is not None:
        quarter = samples["pipeline_prefix"]
        report["prefix"] = {
            "size_mib": mib(prefix.stat().st_size),
            "rows": quarter[0]["rows"],
            "seconds": _median(quarter, "seconds"),
            "rss_total_mib": _median(quarter, "rss_total_mib"),
            "rss_jvm_mib": _median(quarter, "rss_jvm_mib"),
            "rss_workers_mib": _median(quarter, "rss_workers_mib"),
        }
    return report


def _print(report: Result) -> None:
    d, p = report["decoder"], report["pipeline"]
    print(f"{report['binlog']}: {report['size_mib']:.1f} MiB, {report['events']} events, "
          f"{report['rows']} row changes into {report['gold_tables']} gold tables")  # fmt: skip
    print(f"decoder alone (1 CPU)    {d['seconds']:8.1f} s  {d['rows_per_second']:10,.0f} rows/s  "
          f"peak RSS {d['rss_mib']:.0f} MiB   runs {', '.join(f'{s:.1f}' for s in d['runs'])}")  # fmt: skip
    print(f"pipeline (local[2])      {p['seconds']:8.1f} s  {p['rows_per_second']:10,.0f} rows/s  "
          f"runs {', '.join(f'{s:.1f}' for s in p['runs'])}  (driver_memory {p['driver_memory']})")  # fmt: skip
    print(f"  session start {p['session_seconds']:.1f} s, bronze {p['bronze_seconds']:.1f} s, "
          f"silver {p['silver_seconds']:.1f} s, gold {p['gold_seconds']:.1f} s, "
          f"end of run {p['end_seconds']:.1f} s")  # fmt: skip
    print("  Spark jobs: " + ", ".join(f"{s} {p[f'{s}_jobs']:.0f}" for s in STAGES)
          + "; Delta commits: " + ", ".join(f"{s} {p[f'{s}_commits']:.0f}" for s in STAGES))  # fmt: skip
    print(f"  peak RSS: JVM {p['rss_jvm_mib']:.0f} MiB, Python workers {p['rss_workers_mib']:.0f} MiB, "
          f"driver {p['rss_driver_mib']:.0f} MiB, total {p['rss_total_mib']:.0f} MiB; "
          f"peak PSS total {p['pss_total_mib']:.0f} MiB")  # fmt: skip
    print(f"pipeline_vs_decoder: {report['pipeline_vs_decoder']:.2f}x rows per second (end to end into gold)")
    if "prefix" in report:
        q = report["prefix"]
        print(f"first {q['size_mib']:.1f} MiB ({q['rows']} row changes): pipeline {q['seconds']:.1f} s, "
              f"peak RSS total {q['rss_total_mib']:.0f} MiB (JVM {q['rss_jvm_mib']:.0f}, "
              f"workers {q['rss_workers_mib']:.0f}) against {p['rss_total_mib']:.0f} MiB on the whole file: "
              f"{p['rss_total_mib'] / q['rss_total_mib']:.2f}x")  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    """Measure the decoder and the pipeline round after round, print the medians and ratios."""
    parser = argparse.ArgumentParser(prog="bench/pipeline_throughput.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--binlog", type=Path, default=DEFAULT_BINLOG, help="binlog file (make_oltp_binlog.py)")
    parser.add_argument("--repeats", type=int, default=1, help="rounds of decoder + pipeline")
    parser.add_argument("--prefix", type=float, default=0.25, help="share of the file for the memory run (0: none)")
    parser.add_argument("--config", default=str(ROOT / "conf" / "local.yaml"), help="Spark settings come from here")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "pipeline", help="work directory")
    parser.add_argument("--cpu", type=int, default=1, help="CPU the decoder-alone run is pinned to")
    parser.add_argument("--json", type=Path, help="also write the report here")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.child:
        print(json.dumps(pipeline_child(args.binlog, args.config, args.out)))
        return 0
    if not args.binlog.is_file():
        raise SystemExit(f"{args.binlog}: no such file; make it with bench/make_oltp_binlog.py (see bench/README.md)")

    # each pipeline run reads a folder holding its file alone
    whole = args.out / "whole" / args.binlog.name
    whole.parent.mkdir(exist_ok=True)
    if not whole.exists() or whole.stat().st_size != args.binlog.stat().st_size:
        whole.unlink(missing_ok=True)
        shutil.copyfile(args.binlog, whole)
    prefix = None
    if args.prefix > 0:
        prefix = args.out / "prefix" / args.binlog.name
        prefix.parent.mkdir(exist_ok=True)
        cut_at_transaction(args.binlog, prefix, args.prefix)

    samples: dict[str, list[Result]] = {"decoder": [], "pipeline": [], "pipeline_prefix": []}
    for round_number in range(1, args.repeats + 1):
        samples["decoder"].append(run_child("ours", whole, args.cpu))
        samples["pipeline"].append(run_pipeline(whole, args.config, args.out))
        if prefix is not None:
            samples["pipeline_prefix"].append(run_pipeline(prefix, args.config, args.out))
        print(f"round {round_number}: decoder {samples['decoder'][-1]['seconds']:.1f} s, "
              f"pipeline {samples['pipeline'][-1]['seconds']:.1f} s", flush=True)  # fmt: skip
    report = _report(args.binlog, prefix, samples)
    _print(report)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
