"""Gold over input that changes many tables: rows events decoded in groups of tables
(``pipelines.gold.stage.DECODE_GROUP``) against one decode of every table, side by side.

::

    .venv/bin/python bench/gold_tables.py [--input ../shared/corpus] [--repeats 2]
        [--config conf/local.yaml] [--json report.json]

Each round runs both, each in a fresh process: a new lakehouse, a Spark session with the
settings of ``--config`` (the master forced to ``local[2]``, the UI off), then one ``run`` of
bronze, silver and gold over every file below ``--input`` (the corpus by default: 150 files of
real servers, 103 gold tables), as the ``binlog-lakehouse run`` job does. ``grouped`` is gold as
it ships; ``one decode`` sets ``DECODE_GROUP`` above any number of tables, so one decode carries a
typed column for every table and every typed table's write reads every decoded row.

Prints the median seconds of the run and of each stage, gold's Spark jobs and Delta commits, and
gold's seconds grouped against one decode.  Both must write the same row changes and fail no
gate (files the corpus holds damaged on purpose are quarantined: exit code 4).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as ``python bench/gold_tables.py``
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import ROOT, json_child

Result = dict[str, Any]
STAGES = ("bronze", "silver", "gold")
MODES = ("grouped", "one decode")
DEFAULT_INPUT = Path(os.environ.get("BINLOG_CORPUS") or ROOT.parent / "shared" / "corpus")


def child(mode: str, input_path: Path, config: str, out: Path) -> Result:
    """One run over ``input_path`` in this process; its figures."""
    import pipelines.gold.stage as gold_stage
    from conf import load_config
    from pipelines.exits import Exit
    from pipelines.run import run
    from pipelines.session import build_spark
    from pipelines.storage import Lakehouse, Layer, Table

    if mode == "one decode":
        gold_stage.DECODE_GROUP = sys.maxsize
    cfg = load_config(config)
    lake_root = Path(tempfile.mkdtemp(prefix="lake-", dir=out))
    cfg = cfg.model_copy(
        update={
            "spark": cfg.spark.model_copy(update={"master": "local[2]", "ui_enabled": False}),
            "input": cfg.input.model_copy(update={"path": str(input_path), "glob": "*", "recursive": True}),
            "storage": cfg.storage.model_copy(update={"root": str(lake_root), "register_tables": False}),
            "current": cfg.current.model_copy(update={"enabled": False}),
        }
    )
    started = time.perf_counter()
    spark = build_spark(cfg.spark, one_run=True)  # as the job command starts it
    try:
        report = run(spark, cfg, STAGES, err=sys.stderr, progress_every=None)
        result: Result = {"seconds": time.perf_counter() - started}
        if report.failed_gate is not None or report.exit_code not in (Exit.OK, Exit.BAD_INPUT):
            raise SystemExit(f"the run ended with exit code {int(report.exit_code)} (gate {report.failed_gate})")
        for stage in STAGES:
            result[f"{stage}_seconds"] = report.stage_seconds[stage]
        result["gold_jobs"] = report.spark_jobs["gold"]
        result["gold_commits"] = report.delta_commits["gold"]
        lake = Lakehouse(spark, cfg.storage)
        result["rows"] = lake.read(Table.gold("changes")).count()
        result["gold_tables"] = len([name for name in lake.tables(Layer.GOLD) if name != "changes"])
    finally:
        spark.stop()
        shutil.rmtree(lake_root, ignore_errors=True)
    return result


def run_child(mode: str, input_path: Path, config: str, out: Path) -> Result:
    """:func:`child` in a fresh process (a fresh JVM)."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", mode, "--input", str(input_path)]
    cmd += ["--config", config, "--out", str(out)]
    return json_child(cmd, mode)


def _report(samples: dict[str, list[Result]]) -> Result:
    rows = {r["rows"] for results in samples.values() for r in results}
    if len(rows) != 1:
        raise SystemExit(f"MISMATCH: the runs wrote {sorted(rows)} row changes")
    report: Result = {"rows": rows.pop(), "gold_tables": samples["grouped"][0]["gold_tables"]}
    for mode, results in samples.items():
        report[mode] = {key: statistics.median(r[key] for r in results) for key in results[0] if key != "rows"}
        report[mode]["runs"] = [r["seconds"] for r in results]
    report["gold_grouped_vs_one_decode"] = report["grouped"]["gold_seconds"] / report["one decode"]["gold_seconds"]
    return report


def _print(report: Result) -> None:
    print(f"{report['rows']} row changes into {report['gold_tables']} gold tables")
    for mode in MODES:
        r = report[mode]
        print(f"{mode:<11} run {r['seconds']:6.1f} s (runs {', '.join(f'{s:.1f}' for s in r['runs'])}): "
              f"bronze {r['bronze_seconds']:.1f} s, silver {r['silver_seconds']:.1f} s, "
              f"gold {r['gold_seconds']:.1f} s ({r['gold_jobs']:.0f} Spark jobs, "
              f"{r['gold_commits']:.0f} Delta commits)")  # fmt: skip
    print(f"gold grouped / one decode: {report['gold_grouped_vs_one_decode']:.2f}x")


def main(argv: Sequence[str] | None = None) -> int:
    """Run both modes round after round, print the medians and the ratio."""
    parser = argparse.ArgumentParser(prog="bench/gold_tables.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--input", type=Path, default=DEFAULT_INPUT, help="folder of binlogs (recursive)")
    parser.add_argument("--repeats", type=int, default=2, help="rounds of both modes")
    parser.add_argument("--config", default=str(ROOT / "conf" / "local.yaml"), help="Spark settings come from here")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "gold_tables", help="work directory")
    parser.add_argument("--json", type=Path, help="also write the report here")
    parser.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.child:
        print(json.dumps(child(args.child, args.input, args.config, args.out)))
        return 0
    if not args.input.is_dir():
        parser.error(f"--input {args.input} is not a folder")
    samples: dict[str, list[Result]] = {mode: [] for mode in MODES}
    for round_number in range(args.repeats):
        for mode in MODES:
            samples[mode].append(run_child(mode, args.input, args.config, args.out))
        print(
            f"round {round_number + 1}: "
            + ", ".join(f"{mode} gold {samples[mode][-1]['gold_seconds']:.1f} s" for mode in MODES),
            file=sys.stderr,
        )
    report = _report(samples)
    _print(report)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
