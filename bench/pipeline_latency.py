"""Fixed cost of the pipeline on small input, against the floor of this machine, measured side by side.

::

    .venv/bin/python bench/pipeline_latency.py [--config conf/local.yaml] [--repeats 3] [--json report.json]

Each round, each a fresh process timed from start to exit, interleaved so that the machine's
load weighs on all alike:

1. ``floor``: a process that starts a Spark session with the same config (``build_spark``, its JVM
   started for one run as the job's is), writes a one-row Delta table, reads it back and stops:
   what any Spark job here pays.
2. ``sample``: ``binlog-lakehouse run`` over the bundled sample binlogs (5 files, 766 events)
   into a new lakehouse, with the config's settings (its catalog registrations included).
3. ``no-op``: the same command again on the same lakehouse: nothing new to do.

Prints the median seconds of each, their ratios to the floor (targets: sample <= 2x, no-op <=
1.25x), and, from the runs' ``--summary-json``, each stage's seconds, Spark jobs and Delta
commits.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "tests" / "fixtures" / "mariadb" / "sample"
TARGETS = {"sample": 2.0, "no-op": 1.25}

FLOOR = textwrap.dedent(
    """
    import sys, tempfile
    from conf import load_config
    from pipelines.session import build_spark
    cfg = load_config(sys.argv[1])
    spark = build_spark(cfg.spark, one_run=True)  # its JVM started as a job command's is
    with tempfile.TemporaryDirectory(prefix="floor-") as folder:
        spark.range(1).write.format("delta").save(folder + "/t")
        assert spark.read.format("delta").load(folder + "/t").count() == 1
    spark.stop()
    """
)


def timed(args: list[str]) -> float:
    """Seconds ``args`` ran for, as a fresh process (failing loudly)."""
    started = time.perf_counter()
    done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args[:4])} ... exited {done.returncode}:\n{done.stderr[-3000:]}")
    return seconds


def config_for(base: str, root: Path, folder: Path) -> Path:
    """``base`` with the bundled sample as input and ``root`` as the lakehouse (the rest unchanged)."""
    data: dict[str, Any] = yaml.safe_load(Path(base).read_text(encoding="utf-8"))
    data["input"] = {**data.get("input", {}), "path": str(SAMPLE)}
    data["storage"] = {**data.get("storage", {}), "root": str(root)}
    spark = data.setdefault("spark", {})
    spark["metastore_dir"] = None
    spark["warehouse_dir"] = None
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def main(argv: Sequence[str] | None = None) -> int:
    """Measure floor, sample run and no-op re-run round after round; print medians and ratios."""
    parser = argparse.ArgumentParser(prog="bench/pipeline_latency.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default=str(ROOT / "conf" / "local.yaml"), help="the config measured")
    parser.add_argument("--repeats", type=int, default=3, help="rounds of floor, sample run and no-op run")
    parser.add_argument("--json", type=Path, help="also write the report here")
    args = parser.parse_args(argv)

    seconds: dict[str, list[float]] = {"floor": [], "sample": [], "no-op": []}
    summaries: dict[str, list[dict[str, Any]]] = {"sample": [], "no-op": []}
    with tempfile.TemporaryDirectory(prefix="latency-") as scratch:
        folder = Path(scratch)
        root = folder / "lake"
        config = config_for(args.config, root, folder)
        run = [str(ROOT / ".venv" / "bin" / "binlog-lakehouse"), "run", "--config", str(config)]
        if not Path(run[0]).exists():
            run = [sys.executable, "-m", "jobs.cli", *run[1:]]
        for round_number in range(1, args.repeats + 1):
            seconds["floor"].append(timed([sys.executable, "-c", FLOOR, str(config)]))
            shutil.rmtree(root, ignore_errors=True)
            for name in ("sample", "no-op"):
                summary = folder / f"{name}.json"
                seconds[name].append(timed([*run, "--summary-json", str(summary)]))
                summaries[name].append(json.loads(summary.read_text(encoding="utf-8")))
            print(
                f"round {round_number}: " + ", ".join(f"{name} {values[-1]:.1f} s" for name, values in seconds.items()),
                flush=True,
            )
    medians = {name: statistics.median(values) for name, values in seconds.items()}
    report: dict[str, Any] = {"config": args.config, "seconds": seconds, "medians": medians}
    floor = medians["floor"]
    print(f"floor (session, one-row Delta write and read, stop): {floor:.1f} s   runs {_runs(seconds['floor'])}")
    for name in ("sample", "no-op"):
        ratio = medians[name] / floor
        chosen = _median_run(summaries[name], seconds[name])
        report[name] = {"ratio": ratio, "target": TARGETS[name], "summary": chosen}
        stages = ", ".join(f"{s} {v:.1f} s" for s, v in chosen["stage_seconds"].items())
        jobs = ", ".join(f"{s} {v}" for s, v in chosen["spark_jobs"].items())
        commits = ", ".join(f"{s} {v}" for s, v in chosen["delta_commits"].items())
        print(
            f"{name:7s} {medians[name]:6.1f} s = {ratio:.2f}x the floor (target <= {TARGETS[name]}x)   "
            f"runs {_runs(seconds[name])}"
        )
        print(f"        stages: {stages}; Spark jobs: {jobs}; Delta commits: {commits}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, default=str), encoding="utf-8")
    return 0


def _runs(values: list[float]) -> str:
    return ", ".join(f"{v:.1f}" for v in values)


def _median_run(summaries: list[dict[str, Any]], seconds: list[float]) -> dict[str, Any]:
    """The summary of the run whose time is the median."""
    order = sorted(range(len(seconds)), key=seconds.__getitem__)
    return summaries[order[len(order) // 2]]


if __name__ == "__main__":
    raise SystemExit(main())
