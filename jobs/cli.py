"""``binlog-lakehouse run|bronze|silver|gold --config FILE``: run stages and print the summary;
``binlog-lakehouse sql --config FILE "SELECT ..."``: query the tables by name.

Exit codes: :mod:`pipelines.exits` (0 done, 1 unexpected error, 2 bad configuration or usage, 3 a
quality gate failed, 4 the input's files carry bad input, 5 the lakehouse is locked by another
run, 6 a stage's upstream has not built its files, 130/143 interrupted). Progress lines go to
stderr, the summary to stdout; Spark's own output (Ivy, log4j, Hive) goes to a log file named in
the summary. ``--run-id`` names the run (recorded on every row it writes), ``--logical-date``
records an orchestrator's logical date of it in the summary, ``--summary-json`` writes the summary
for machines. Before Spark starts, the input, the storage root and the metastore are checked: a
problem is one line and exit code 2, within seconds.

``sql`` takes one statement, or ``--file FILE.sql`` with one or more ``;``-separated statements,
and ``--config`` anywhere on the line. It answers in this process by default (DuckDB over the
Delta snapshots, read by delta-rs: no JVM, no metastore; see ``pipelines.query``), or through a
Spark session and its catalog with ``--engine spark``. Results print as an aligned table, or
``--format tsv|csv|jsonl|parquet``; a failing statement prints one line on stderr and exits 1.

Only the commands that need Spark import it: ``sql`` with the default engine starts in a fraction
of a second.
"""

from __future__ import annotations

import argparse
import gc
import io
import os
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING

from pipelines.exits import Exit

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from conf.models import AppConfig
    from conf.query import QuerySettings
    from pipelines.query.engine import Result

STAGES = ("bronze", "silver", "gold", "current")
"""The stages in order (``pipelines.run.STAGES``; kept here so that ``sql`` need not import Spark)."""
PROGRESS_EVERY = 10.0
COMMANDS = {"run": STAGES, **{stage: (stage,) for stage in STAGES}}
SQL = "sql"
ASOF = "asof"
FLASHBACK = "flashback"
ENGINES = ("embedded", "spark")
PROG = "binlog-lakehouse"


def parser() -> argparse.ArgumentParser:
    """The command line: a command, then its arguments and options in any order."""
    config = argparse.ArgumentParser(add_help=False)
    config.add_argument(
        "--config",
        default=argparse.SUPPRESS,
        metavar="FILE",
        help="YAML configuration (default: conf/local.yaml)",
    )
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    p.add_argument("--config", default=None, metavar="FILE", help="YAML configuration (default: conf/local.yaml)")
    commands = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in (*sorted(COMMANDS), SQL):
        if name == SQL:
            continue
        stage = commands.add_parser(
            name,
            parents=[config],
            help="run bronze, silver and gold in order (then current, with current.enabled)"
            if name == "run"
            else f"run the {name} stage",
        )
        stage.add_argument(
            "--progress-every",
            type=float,
            default=PROGRESS_EVERY,
            metavar="SECONDS",
            help=f"seconds between progress lines on Spark's running jobs (default {PROGRESS_EVERY:g}; "
            "0: milestones only)",
        )
        stage.add_argument(
            "--run-id", metavar="ID", help="this run's id, recorded on every row it writes (default: generated)"
        )
        stage.add_argument(
            "--summary-json", metavar="PATH", help="also write the run's summary as JSON to PATH (for orchestrators)"
        )
        if name == "current":
            stage.add_argument(
                "--if-enabled",
                action="store_true",
                help="do nothing (exit 0) when the configuration's current.enabled is false "
                "(for an orchestrator whose DAG always holds the task)",
            )
        stage.add_argument(
            "--logical-date",
            type=logical_date,
            metavar="TIME",
            help="the orchestrator's logical date of this run (ISO 8601, UTC without a zone), recorded in its summary",
        )
    from pipelines.query.output import FORMATS  # noqa: PLC0415 (pyspark-free, small)

    sql = commands.add_parser(
        SQL,
        parents=[config],
        help="query the tables by name (database.table)",
        description="Run Spark SQL over the lakehouse's tables, named database.table as in the Spark catalog.",
    )
    sql.add_argument("statement", nargs="?", help='the statement(s), e.g. "SELECT count(*) FROM binlog_gold.changes"')
    sql.add_argument("--file", "-f", metavar="FILE.sql", help="read ;-separated statements from FILE ('-': stdin)")
    asof = commands.add_parser(
        ASOF,
        parents=[config],
        help="a table as it was right after a commit time, a transaction or a binlog position",
        description="Print SCHEMA.TABLE as it was right after the point given, from its history table "
        "(the current stage must have built it).",
    )
    asof.add_argument("--table", required=True, metavar="SCHEMA.TABLE", help="the source table, e.g. shop.orders")
    point = asof.add_mutually_exclusive_group(required=True)
    point.add_argument("--at", metavar="TIMESTAMP", help="a commit time, e.g. '2024-03-01 10:30:00' (session zone)")
    point.add_argument("--gtid", metavar="GTID", help="right after that transaction, e.g. 0-1-41")
    point.add_argument(
        "--position", metavar="FILE:OFFSET", help="right after the event at that offset, e.g. mysql-bin.000003:1201"
    )
    asof.add_argument(
        "--server",
        metavar="SERVER",
        help="only this server's rows: binlog_files.server, or its end (e.g. db1/mysql-bin); "
        "needed with --position when several servers' files share names",
    )
    flashback = commands.add_parser(
        FLASHBACK,
        parents=[config],
        help="SQL that undoes transactions the lakehouse holds, newest first",
        description="Write MySQL-dialect SQL that undoes the selected transactions, newest first (as "
        "binlog-dump --flashback does from the files), completing partial row images from the history tables.",
    )
    flashback.add_argument("--gtid", nargs="+", default=(), metavar="GTID", help="the transactions, e.g. 0-1-41 0-1-42")
    flashback.add_argument("--from", dest="start", metavar="FILE:OFFSET", help="transactions opening at or after it")
    flashback.add_argument("--to", dest="stop", metavar="FILE:OFFSET", help="transactions opening before it")
    flashback.add_argument("--since", metavar="TIMESTAMP", help="transactions committed at or after it")
    flashback.add_argument("--until", metavar="TIMESTAMP", help="transactions committed before it")
    flashback.add_argument("--server", metavar="SERVER", help="only this server's transactions (as for asof)")
    flashback.add_argument("--output", "-o", metavar="FILE", help="write the script to FILE instead of stdout")
    for command in (sql, asof, flashback):
        command.add_argument(
            "--engine",
            choices=ENGINES,
            default="embedded",
            help="embedded (default): DuckDB over the Delta snapshots, in this process; "
            "spark: a Spark session built from the config, with its catalog",
        )
    for command in (sql, asof):
        command.add_argument(
            "--format",
            choices=FORMATS,
            default="table",
            help="table (aligned, default), tsv, csv, jsonl, or parquet (to --output, or to a stdout that is "
            "not a terminal)",
        )
        command.add_argument("--output", "-o", metavar="FILE", help="write the result to FILE instead of stdout")
    return p


def logical_date(text: str) -> str:
    """An ISO 8601 date or time as ``--logical-date`` records it: with its offset, UTC when it has none.

    >>> logical_date("2024-03-01"), logical_date("2024-03-01T10:00:00+02:00")
    ('2024-03-01T00:00:00+00:00', '2024-03-01T10:00:00+02:00')
    """
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO 8601 date or time: {text!r}") from None
    return (value if value.tzinfo is not None else value.replace(tzinfo=UTC)).isoformat()


def main(
    argv: Sequence[str] | None = None, *, config: AppConfig | None = None, spark: SparkSession | None = None
) -> int:
    """Run the command; ``config`` and ``spark`` may be injected (tests, notebooks)."""
    try:
        args = parser().parse_args(argv)
    except SystemExit as exc:
        return Exit.USAGE if exc.code else Exit.OK
    if args.command == SQL:
        return _sql(args, config, spark)
    if args.command == ASOF:
        return _asof(args, config, spark)
    if args.command == FLASHBACK:
        return _flashback(args, config, spark)
    gc.enable()
    from conf.loader import ConfigError, load_config  # noqa: PLC0415

    try:
        cfg = config or load_config(args.config)
    except ConfigError as exc:
        _say(str(exc))
        return Exit.USAGE
    return _run(args, cfg, spark)


def _run(args: argparse.Namespace, cfg: AppConfig, spark: SparkSession | None) -> int:
    """A stage command: checks before work, the lock, the run, the summary; the exit code."""
    from pipelines.bronze.discover import InputError  # noqa: PLC0415 (Spark only for the commands that need it)
    from pipelines.control import (  # noqa: PLC0415
        Interrupted,
        Interrupts,
        Locked,
        Unusable,
        lock_for,
        preflight,
        scratch_folder,
    )
    from pipelines.quality.gx import import_ahead  # noqa: PLC0415
    from pipelines.run import as_json, new_run_id, run, summary  # noqa: PLC0415

    run_id = args.run_id or new_run_id()
    command = f"{PROG} {args.command}"
    if getattr(args, "if_enabled", False) and not cfg.current.enabled:
        print(f"{command}: current.enabled is false in the configuration: nothing to build")
        return Exit.OK
    try:
        if spark is None:
            preflight(cfg)
    except (InputError, Unusable) as exc:
        _say(str(exc))
        return Exit.USAGE
    lock = None
    try:
        with scratch_folder(cfg, run_id) as scratch:
            lock = lock_for(cfg, run_id, command) if _local_root(cfg) else None
            if lock is not None:
                lock.acquire()
            with Interrupts(lambda signum: _stop_spark(spark)) as interrupts:
                if spark is None:  # the gates' library loads while the JVM starts
                    import_ahead()
                session = spark or _session(cfg, scratch, run_id)
                interrupts.on_signal = lambda signum: _stop_spark(session)
                interrupts.reclaim()
                if lock is None:
                    lock = lock_for(cfg, run_id, command, session)
                    lock.acquire()
                report = run(
                    session,
                    cfg,
                    COMMANDS[args.command],
                    progress_every=args.progress_every or None,
                    run_id=run_id,
                )
                report.logical_date = args.logical_date
                text = summary(session, cfg, report)
            print(text)
            if args.summary_json:
                _write_json(args.summary_json, as_json(report))
            return int(report.exit_code)
    except Locked as exc:
        _say(str(exc))
        return Exit.LOCKED
    except (InputError, Unusable) as exc:
        _say(str(exc))
        return Exit.USAGE
    except Interrupted as exc:
        partial = getattr(exc, "report", None)
        where = partial.interrupted if partial is not None and partial.interrupted else "start-up"
        _say(f"interrupted ({exc}) during {where}, re-run to complete")
        if partial is not None:
            partial.totals = None
            partial.logical_date = args.logical_date
            print(_partial_summary(partial))
            if args.summary_json:
                data = as_json(partial)
                data["exit_code"] = exc.exit_code
                _write_json(args.summary_json, data)
        return exc.exit_code
    except Exception:
        import traceback  # noqa: PLC0415

        traceback.print_exc()
        return Exit.ERROR
    finally:
        if lock is not None:
            lock.release()


def _local_root(cfg: AppConfig) -> bool:
    from conf.paths import local_path_of  # noqa: PLC0415

    return local_path_of(cfg.storage.root) is not None


def _session(cfg: AppConfig, scratch: str, run_id: str) -> SparkSession:
    """The run's Spark session: scratch in the run's folder, the JVM's output in the run's log file."""
    from pipelines.session import build_spark  # noqa: PLC0415

    return build_spark(cfg.spark, scratch=scratch, log_file=log_file(cfg, run_id), one_run=True)


def log_file(cfg: AppConfig, run_id: str) -> str:
    """Where a run's JVM output goes: ``<storage.root>/_state/logs/<run id>.log`` (local root), else
    the scratch folder's ``logs``."""
    from pipelines.control import local_state_folder, scratch_root  # noqa: PLC0415

    folder = local_state_folder(cfg) or scratch_root(cfg)
    return os.path.join(folder, "logs", f"{run_id}.log")


def _stop_spark(spark: SparkSession | None) -> None:
    """On SIGINT/SIGTERM: Spark says nothing more, its running jobs are cancelled."""
    if spark is None:
        return
    spark.sparkContext.setLogLevel("OFF")
    spark.sparkContext.cancelAllJobs()


def _partial_summary(report: object) -> str:
    """What an interrupted run had done (no table is read: Spark is stopping)."""
    from pipelines.run import RunReport  # noqa: PLC0415

    assert isinstance(report, RunReport)
    done = ", ".join(report.stages) or "none"
    lines = [
        f"{PROG} run {report.run_id}: interrupted during {report.interrupted} after {report.seconds:.1f}s",
        f"  stages completed: {done}",
        f"  built now: {', '.join(f'{k} {v}' for k, v in sorted(report.files_built.items())) or 'none'}",
        f"  events framed: {report.events_framed}; row changes decoded: {report.row_changes}",
        "  every table holds whole versions: re-run to complete",
    ]
    return "\n".join(lines)


def _write_json(path: str, data: dict[str, object]) -> None:
    import json  # noqa: PLC0415

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(data, indent=2, default=str) + "\n", encoding="utf-8")


def _say(message: str) -> None:
    """One line on stderr."""
    print(f"{PROG}: {message}", file=sys.stderr)


def _statements(args: argparse.Namespace) -> list[str] | str:
    """The statements to run, or why there are none (a usage error)."""
    from pipelines.query.engine import split_statements  # noqa: PLC0415

    if (args.statement is None) == (args.file is None):
        return "sql takes a statement or --file FILE.sql (one of them)"
    if args.file is None:
        text = args.statement
    elif args.file == "-":
        text = sys.stdin.read()
    else:
        try:
            text = Path(args.file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            return f"{args.file}: cannot read: {getattr(exc, 'strerror', None) or exc}"
    statements = split_statements(text)
    if not statements:
        return f"{args.file or 'the statement'}: holds no statement"
    if args.format == "parquet" and len(statements) > 1:
        return "--format parquet writes one result: give one statement"
    if args.format == "parquet" and args.output is None and sys.stdout.isatty():
        return "--format parquet needs --output FILE (or a stdout that is not a terminal, e.g. > out.parquet)"
    return statements


def _sql(args: argparse.Namespace, config: AppConfig | None, spark: SparkSession | None) -> int:
    """``sql``: run each statement with the chosen engine and print its result."""
    statements = _statements(args)
    if isinstance(statements, str):
        _say(statements)
        return Exit.USAGE
    from conf.common import ConfigError  # noqa: PLC0415

    try:
        cfg = _query_config(args, config)
    except ConfigError as exc:
        _say(str(exc))
        return Exit.USAGE
    from pipelines.query.engine import StatementError  # noqa: PLC0415

    stop: Callable[[], None] = lambda: None  # noqa: E731
    try:
        execute, stop = _engine(args.engine, cfg, spark)
        written = 0
        for number, statement in enumerate(statements, 1):
            try:
                result = execute(statement)
                if result is not None:
                    _write(result, args, first=written == 0)
                    written += 1
            except StatementError as exc:
                where = f"statement {number} of {len(statements)}: " if len(statements) > 1 else ""
                _say(f"{where}{exc}")
                return Exit.ERROR
    except BrokenPipeError:  # the reader went away (| head): not an error of ours
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return Exit.OK
    except OSError as exc:
        _say(f"{exc.filename}: {exc.strerror or exc}" if exc.filename else str(exc))
        return Exit.ERROR
    except Exception as exc:  # e.g. a Spark session that cannot start: still one line, no traceback
        from pipelines.query.engine import one_line  # noqa: PLC0415

        _say(f"{type(exc).__name__}: {one_line(exc)}")
        return Exit.ERROR
    finally:
        stop()
    return Exit.OK


def _asof(args: argparse.Namespace, config: AppConfig | None, spark: SparkSession | None) -> int:
    """``asof``: the table as of the point, by one statement over its history table."""
    from conf.loader import ConfigError, load_config  # noqa: PLC0415
    from pipelines.query.asof import AsOfError, Point, asof_statement, gtid_point, gtid_statement  # noqa: PLC0415
    from pipelines.query.engine import StatementError  # noqa: PLC0415

    try:
        cfg = config or load_config(getattr(args, "config", None))
        if args.position is not None:
            point = Point.parse_position(args.position, args.server)
        elif args.at is not None:
            point = Point(at=args.at, server=args.server)
        asof_statement(cfg.storage, args.table, Point(at="1970-01-01"))  # the table name, checked before work
    except (ConfigError, AsOfError) as exc:
        _say(str(exc))
        return Exit.USAGE
    stop: Callable[[], None] = lambda: None  # noqa: E731
    try:
        execute, stop = _engine(args.engine, cfg, spark)
        if args.gtid is not None:
            found = execute(gtid_statement(cfg.storage, args.gtid, args.server))
            point = gtid_point([tuple(row) for row in found.rows()] if found is not None else [], args.gtid)
        result = execute(asof_statement(cfg.storage, args.table, point))
        if result is not None:
            _write(result, args, first=True)
    except (StatementError, AsOfError) as exc:
        _say(str(exc))
        return Exit.ERROR
    finally:
        stop()
    return Exit.OK


def _flashback(args: argparse.Namespace, config: AppConfig | None, spark: SparkSession | None) -> int:
    """``flashback``: the undo script of the selected transactions, written only when all of it can be."""
    from binlog_core.errors import SqlError  # noqa: PLC0415
    from conf.loader import ConfigError, load_config  # noqa: PLC0415
    from pipelines.current.flashback import Selection, write_flashback  # noqa: PLC0415
    from pipelines.gold.stage import decode_options  # noqa: PLC0415
    from pipelines.query.asof import AsOfError  # noqa: PLC0415
    from pipelines.query.engine import StatementError  # noqa: PLC0415

    modes = [bool(args.gtid), bool(args.start or args.stop), bool(args.since or args.until)]
    if sum(modes) != 1:
        _say("flashback: give one selection: --gtid GTID..., or --from/--to FILE:OFFSET, or --since/--until TIMESTAMP")
        return Exit.USAGE
    selection = Selection(tuple(args.gtid), args.start, args.stop, args.since, args.until, args.server)
    try:
        cfg = config or load_config(getattr(args, "config", None))
        selection.bounds()  # positions checked before work
    except (ConfigError, AsOfError) as exc:
        _say(str(exc))
        return Exit.USAGE
    stop: Callable[[], None] = lambda: None  # noqa: E731
    script = io.StringIO()
    try:
        execute, stop = _engine(args.engine, cfg, spark)
        count = write_flashback(execute, cfg.storage, selection, script, decode_options(cfg))
    except (StatementError, AsOfError, SqlError) as exc:
        _say(str(exc))
        return Exit.ERROR
    finally:
        stop()
    if args.output is not None:
        Path(args.output).write_text(script.getvalue(), encoding="utf-8")
    else:
        sys.stdout.write(script.getvalue())
    _say(f"{count} transaction(s) undone, newest first")
    return Exit.OK


def _query_config(args: argparse.Namespace, config: AppConfig | None) -> AppConfig | QuerySettings:
    """The configuration ``sql`` runs with: the injected one, else the file's, validated in full; for the
    embedded engine only its query settings, which ``conf.query`` serves without validating an unchanged
    file again (pydantic and YAML take longer to import than a query takes)."""
    if config is not None:
        return config
    path = getattr(args, "config", None)
    if args.engine == "spark":
        from conf.loader import load_config  # noqa: PLC0415

        return load_config(path)
    from conf.query import load_query_settings  # noqa: PLC0415

    return load_query_settings(path)


def _engine(
    engine: str, cfg: AppConfig | QuerySettings, spark: SparkSession | None
) -> tuple[Callable[[str], Result | None], Callable[[], None]]:
    """The statement runner of ``engine`` (embedded or spark), and what stops it."""
    from conf.query import QuerySettings  # noqa: PLC0415

    if engine == "spark":
        assert not isinstance(cfg, QuerySettings), "--engine spark runs with the whole configuration"
        return _spark_engine(cfg, spark)
    return _embedded_engine(cfg if isinstance(cfg, QuerySettings) else QuerySettings.of(cfg)), lambda: None


def _embedded_engine(settings: QuerySettings) -> Callable[[str], Result | None]:
    """The default engine: DuckDB over Delta snapshots read by delta-rs, no Spark."""
    from pipelines.query.engine import EmbeddedEngine, session_time_zone  # noqa: PLC0415
    from pipelines.query.lake import LakeTables, hadoop_settings  # noqa: PLC0415

    engine = EmbeddedEngine(
        LakeTables(settings.root, settings.layers),
        hadoop=hadoop_settings(settings.spark_conf),
        time_zone=session_time_zone(settings.spark_conf),
    )
    return engine.execute


def _spark_engine(
    cfg: AppConfig, spark: SparkSession | None
) -> tuple[Callable[[str], Result | None], Callable[[], None]]:
    """``--engine spark``: a session from the config (stopped at the end) or the injected one.

    Without catalog registrations (``storage.register_tables: false``) the lakehouse's table names
    are read from their folders (:func:`pipelines.query.spark.by_path`).
    """
    from pipelines.query.lake import LakeTables  # noqa: PLC0415
    from pipelines.query.spark import by_path, delta_table_at, spark_result  # noqa: PLC0415
    from pipelines.session import build_spark  # noqa: PLC0415

    session = spark or build_spark(cfg.spark)
    metastore = cfg.spark.metastore_dir if cfg.spark.catalog == "hive" else None
    lake = None if cfg.storage.register_tables else LakeTables(cfg.storage.root, cfg.storage.layers())

    def execute(statement: str) -> Result | None:
        if lake is not None:
            statement = by_path(statement, lake, lambda path: delta_table_at(session, path))
        return spark_result(session, statement, metastore)

    return execute, (lambda: None) if spark is not None else session.stop


def _write(result: Result, args: argparse.Namespace, *, first: bool) -> None:
    """Print ``result`` in ``args.format`` to ``args.output`` (appended after the first result) or stdout."""
    from pipelines.query import output  # noqa: PLC0415

    if args.format == "parquet":
        import pyarrow.parquet as pq  # noqa: PLC0415

        table = result.arrow()
        if args.output is not None:
            pq.write_table(table, args.output)
        else:
            buffer = io.BytesIO()
            pq.write_table(table, buffer)
            sys.stdout.flush()
            sys.stdout.buffer.write(buffer.getvalue())
            sys.stdout.buffer.flush()
        return
    rows = result.rows()
    target: IO[str]
    if args.output is not None:
        target = open(args.output, "w" if first else "a", encoding="utf-8", newline="\n")  # noqa: SIM115
    else:
        target = sys.stdout
    try:
        if not first and args.format != "jsonl":
            target.write("\n")
        if args.format == "table":
            output.write_table(result.columns, result.types, rows, target)
        elif args.format == "jsonl":
            output.write_jsonl(result.columns, rows, target)
        else:
            output.write_delimited(result.columns, rows, target, args.format)
        target.flush()
    finally:
        if target is not sys.stdout:
            target.close()


def console() -> None:
    """The ``binlog-lakehouse`` script: :func:`main` with the process's arguments, then exit with its code.

    After ``sql`` with the embedded engine the process ends at once (``os._exit``, output flushed):
    tearing down DuckDB, delta-rs' runtime and the module graph costs more than the query, and
    leaves nothing to save. Commands that started Spark exit normally, so that it stops cleanly.

    A command's start is mostly imports (the config models, SQL dialects, DuckDB): they build many
    long-lived objects and no garbage cycles, so the cyclic collector only costs time there. It is
    off until :func:`main` has chosen a command that runs Spark; ``sql`` keeps it off (reference
    counting frees its results). Pydantic's plugin discovery (a scan of every installed
    distribution) is skipped unless the environment asks for plugins.
    """
    gc.disable()
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    argv = sys.argv[1:]
    code = main(argv)
    if _embedded_sql(argv):
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BrokenPipeError:
            pass
        os._exit(code)
    sys.exit(code)


def _embedded_sql(argv: Sequence[str]) -> bool:
    """True for a command line running ``sql`` with the embedded engine."""
    try:
        args = parser().parse_args(argv)
    except SystemExit:
        return True  # a usage error: nothing was started
    return bool(args.command == SQL and args.engine == "embedded")


if __name__ == "__main__":
    console()
