"""Cold-process latency of ``binlog-lakehouse sql`` against the floor of importing its engine.

    .venv/bin/python bench/sql_latency.py [--repeats 5] [--config FILE] [--candidates] [--spark]

Builds the bundled sample lakehouse once (``.cache/bench/sql/lake``, reused; or takes the one a
``--config`` names), then, N times each and interleaved, runs as fresh processes:

* ``floor``: ``python -c "import duckdb"``, the least any DuckDB-based command can cost;
* ``sql``: ``binlog-lakehouse sql --config CFG "SELECT count(*) FROM binlog_gold.changes"``
  (a copy of the console script, ``from jobs.cli import console; console()``, that imports
  this work tree), with the config file's query settings in the cache of validated files
  (``conf.query``; the bench's own folder, filled by one untimed run first), as every run after
  the first one on an unchanged file finds them;
* ``sql-validating``: the same with that cache off (``BINLOG_LAKEHOUSE_CONFIG_CACHE=off``): the
  file is validated in full, as on the first run after an edit;

and prints the medians and ``sql / floor`` (the target: within 3x). ``--candidates`` also times
the engines considered for the embedded path, each answering the same count in a fresh process:
DuckDB over a ``deltalake`` pyarrow dataset, the ``datafusion`` package with delta-rs' table
provider, and delta-rs' own DataFusion (``deltalake.QueryBuilder``). ``--spark`` times one
``--engine spark`` run (a JVM per statement), for scale.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "tests" / "fixtures" / "mariadb" / "sample"
DEFAULT_OUT = ROOT / ".cache" / "bench" / "sql"
STATEMENT = "SELECT count(*) FROM binlog_gold.changes"
CONSOLE_SCRIPT = """import sys
sys.path.insert(0, {root!r})
from jobs.cli import console
console()
"""

CANDIDATES = {
    "duckdb+pyarrow-dataset": """
import sys, duckdb
from deltalake import DeltaTable
con = duckdb.connect()
con.execute('CREATE SCHEMA binlog_gold')
con.register('t', DeltaTable(sys.argv[1] + '/gold/changes').to_pyarrow_dataset())
con.execute('CREATE VIEW binlog_gold.changes AS SELECT * FROM t')
print(con.sql(sys.argv[2]).fetchall())
""",
    "datafusion+deltalake": """
import sys, datafusion
from datafusion.catalog import Schema
from deltalake import DeltaTable
ctx = datafusion.SessionContext()
ctx.catalog().register_schema('binlog_gold', Schema.memory_schema())
ctx.register_table('binlog_gold.changes', DeltaTable(sys.argv[1] + '/gold/changes'))
print(ctx.sql(sys.argv[2]).to_pylist())
""",
    "deltalake-querybuilder": """
import sys
from deltalake import DeltaTable, QueryBuilder
qb = QueryBuilder()
qb.execute('CREATE SCHEMA binlog_gold').read_all()
qb.register('binlog_gold.changes', DeltaTable(sys.argv[1] + '/gold/changes'))
print(qb.execute(sys.argv[2]).read_all())
""",
}


def console_script(out: Path) -> Path:
    """``binlog-lakehouse`` as pip writes it, importing this work tree (a file: pyspark refuses ``-c``)."""
    out.mkdir(parents=True, exist_ok=True)
    script = out / "binlog-lakehouse"
    script.write_text(CONSOLE_SCRIPT.format(root=str(ROOT)), encoding="utf-8")
    return script


def build_lake(out: Path, cli: Path) -> Path:
    """The sample binlogs' lakehouse below ``out`` (built once, with a Derby catalog); its config file."""
    config = out / "lake.yaml"
    if (out / "lake" / "gold" / "changes" / "_delta_log").is_dir() and config.is_file():
        return config
    out.mkdir(parents=True, exist_ok=True)
    settings = {
        "spark": {
            "master": "local[2]",
            "catalog": "hive",
            "driver_memory": "2g",
            "ui_enabled": False,
            "log_level": "ERROR",
            "conf": {"spark.databricks.delta.snapshotPartitions": 2},
        },
        "input": {"path": str(SAMPLE), "recursive": True},
        "storage": {"root": str(out / "lake")},
    }
    config.write_text(yaml.safe_dump(settings), encoding="utf-8")
    print(f"building the sample lakehouse in {out / 'lake'} ...", file=sys.stderr)
    subprocess.run(
        [sys.executable, str(cli), "run", "--config", str(config), "--progress-every", "0"],
        cwd=ROOT,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return config


def timed(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, str]:
    """Wall seconds of one fresh process (in ``env``, default this one's), and its stdout (it must exit 0)."""
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{argv[:3]}... exited {done.returncode}: {done.stderr.strip()[-500:]}")
    return seconds, done.stdout


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark and print its report."""
    parser = argparse.ArgumentParser(prog="bench/sql_latency.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="runs of each command (default 5)")
    parser.add_argument("--config", type=Path, help="an existing lakehouse's config (default: build the sample)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where the sample lakehouse is built")
    parser.add_argument("--statement", default=STATEMENT, help=f"the statement timed (default: {STATEMENT})")
    parser.add_argument("--candidates", action="store_true", help="also time the engines considered")
    parser.add_argument("--spark", action="store_true", help="also time one --engine spark run")
    args = parser.parse_args(argv)

    cli = console_script(args.out)
    config = args.config or build_lake(args.out, cli)
    sys.path.insert(0, str(ROOT))
    from conf import load_config

    lake_root = load_config(config).storage.root
    from conf.query import CACHE_OFF, CACHE_VARIABLE

    cache = args.out / "config-cache"
    shutil.rmtree(cache, ignore_errors=True)
    sql = [sys.executable, str(cli), "sql", "--config", str(config), args.statement]
    commands: dict[str, list[str]] = {
        "floor": [sys.executable, "-c", "import duckdb"],
        "sql": sql,
        "sql-validating": sql,
    }
    environments = {
        "sql": {**os.environ, CACHE_VARIABLE: str(cache)},
        "sql-validating": {**os.environ, CACHE_VARIABLE: CACHE_OFF},
    }
    timed(sql, environments["sql"])  # the file validated once, its query settings kept
    if args.candidates:
        commands["floor-datafusion"] = [sys.executable, "-c", "import datafusion"]
        commands["floor-deltalake"] = [sys.executable, "-c", "import deltalake"]
        for name, code in CANDIDATES.items():
            commands[name] = [sys.executable, "-c", code, lake_root, args.statement]

    samples: dict[str, list[float]] = {name: [] for name in commands}
    answer = ""
    for _ in range(args.repeats):
        for name, command in commands.items():
            seconds, stdout = timed(command, environments.get(name))
            samples[name].append(seconds)
            if name == "sql":
                answer = stdout
    print(f"lakehouse: {lake_root}\nstatement: {args.statement}\nruns: {args.repeats} each, interleaved")
    print(f"answer of sql:\n{answer.rstrip()}\n")
    floor = statistics.median(samples["floor"])
    print(f"{'command':<24} {'median s':>9} {'min s':>7} {'max s':>7} {'x floor':>8}")
    for name, values in samples.items():
        median = statistics.median(values)
        print(f"{name:<24} {median:9.3f} {min(values):7.3f} {max(values):7.3f} {median / floor:8.2f}")
    ratio = statistics.median(samples["sql"]) / floor
    print(f"\nsql / floor = {ratio:.2f} (target: within 3x) on {os.cpu_count()} CPUs")
    if args.spark:
        seconds, _ = timed([*commands["sql"], "--engine", "spark"])
        print(f"sql --engine spark (one run): {seconds:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
