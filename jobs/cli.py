"""``binlog-lakehouse run|bronze|silver|gold --config FILE``: run stages and print the summary;
``binlog-lakehouse sql --config FILE "SELECT ..."``: query the tables by name.

Exit codes: 0 done; 1 unexpected error; 2 bad configuration or usage; 3 a quality gate failed
(that stage was not written); 4 done, but bad input was quarantined (this run wrote a quarantine
row of severity error). Progress lines go to stderr, the summary to stdout. ``sql`` prints a header
and tab-separated rows, and exits 1 when the statement fails.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Sequence

from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from conf.loader import ConfigError, load_config
from conf.models import AppConfig
from pipelines.run import EXIT_ERROR, EXIT_USAGE, PROGRESS_EVERY, STAGES, run, summary
from pipelines.session import build_spark, run_sql

COMMANDS = {"run": STAGES, **{stage: (stage,) for stage in STAGES}}
SQL = "sql"


def parser() -> argparse.ArgumentParser:
    """The command line."""
    p = argparse.ArgumentParser(prog="binlog-lakehouse", description=__doc__.splitlines()[0])
    p.add_argument("command", choices=[*sorted(COMMANDS), SQL], help="`run` runs bronze, silver and gold in order")
    p.add_argument("statement", nargs="?", help="with `sql`: the statement to run, e.g. a SELECT of a table")
    p.add_argument("--config", default=None, help="YAML configuration (default: conf/local.yaml)")
    p.add_argument(
        "--progress-every",
        type=float,
        default=PROGRESS_EVERY,
        metavar="SECONDS",
        help=f"seconds between progress lines on Spark's running jobs (default {PROGRESS_EVERY:g}; 0: milestones only)",
    )
    return p


def main(
    argv: Sequence[str] | None = None, *, config: AppConfig | None = None, spark: SparkSession | None = None
) -> int:
    """Run the command; ``config`` and ``spark`` may be injected (tests, notebooks)."""
    try:
        args = parser().parse_args(argv)
    except SystemExit as exc:
        return EXIT_USAGE if exc.code else 0
    if (args.command == SQL) != (args.statement is not None):
        print("binlog-lakehouse: a statement goes with `sql`, and only with it", file=sys.stderr)
        return EXIT_USAGE
    try:
        cfg = config or load_config(args.config)
    except ConfigError as exc:
        print(f"binlog-lakehouse: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        session = spark or build_spark(cfg.spark)
        if args.command == SQL:
            return _sql(session, args.statement)
        report = run(session, cfg, COMMANDS[args.command], progress_every=args.progress_every or None)
        print(summary(session, cfg, report))
        return report.exit_code
    except Exception:
        traceback.print_exc()
        return EXIT_ERROR


def _sql(spark: SparkSession, statement: str) -> int:
    try:
        lines = run_sql(spark, statement)
    except PySparkException as exc:
        print(f"binlog-lakehouse: {str(exc).splitlines()[0]}", file=sys.stderr)
        return EXIT_ERROR
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
