"""``binlog-lakehouse sql`` on the sample lakehouse: argument orders, ``--file``, every ``--format``, exit codes.

The statements run through the default (embedded) engine with the config file of the sample lake,
as an analyst runs them; ``--engine spark`` gets the session of the tests injected.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from conf.query import CACHE_VARIABLE
from jobs import cli
from pipelines import run as pipeline_run
from tests.harness.sample_lake import SampleLake

ROOT = Path(__file__).resolve().parents[2]
OPS = "SELECT op, count(*) AS n, sum(after.total) AS total FROM binlog_gold.shop__orders GROUP BY op ORDER BY op"
OPS_TABLE = (
    "op     |  n |     total\n-------+----+----------\ninsert | 34 |      0.00\nupdate | 64 | 100725.51\n(2 rows)\n"
)
PROBE = "SELECT id, part, wall_clock, after, raw FROM binlog_gold.typed_probe ORDER BY id"


def _sql(capsys: pytest.CaptureFixture[str], *argv: str, spark: SparkSession | None = None) -> tuple[int, str, str]:
    code = cli.main(["sql", *argv], spark=spark)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize(
    "order",
    [
        ["sql", "--config", "{cfg}", OPS],  # the README's order
        ["sql", OPS, "--config", "{cfg}"],
        ["--config", "{cfg}", "sql", OPS],
        ["sql", "--format", "table", OPS, "--config", "{cfg}"],
    ],
    ids=["config-first", "config-last", "config-before-command", "options-around"],
)
def test_the_statement_and_options_go_in_any_order(
    sample_lake: SampleLake, capsys: pytest.CaptureFixture[str], order: list[str]
) -> None:
    argv = [str(sample_lake.config_file) if arg == "{cfg}" else arg for arg in order]
    assert cli.main(argv) == 0
    assert capsys.readouterr().out == OPS_TABLE


def test_a_file_of_statements_prints_each_result_in_turn(
    sample_lake: SampleLake, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "report.sql"
    script.write_text(
        "-- orders by operation; the ';' in this comment separates nothing\n"
        f"{OPS};\n"
        "SELECT 'a;b' AS text, count(*) AS n FROM binlog_gold.typed_probe WHERE part = 'a';\n\n",
        encoding="utf-8",
    )
    code, out, err = _sql(capsys, "--file", str(script), "--config", str(sample_lake.config_file))
    assert (code, err) == (0, "")
    assert out == OPS_TABLE + "\ntext | n\n-----+--\na;b  | 2\n(1 row)\n"


def test_a_view_made_by_one_statement_of_a_file_is_read_by_the_next(
    sample_lake: SampleLake, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "view.sql"
    script.write_text(
        "CREATE TEMPORARY VIEW priced AS SELECT after.id AS id, after.total AS total FROM binlog_gold.shop__orders"
        " WHERE op = 'update';\n"
        "SELECT o.op, count(*) AS n, max(p.total) AS top FROM binlog_gold.shop__orders o"
        " JOIN priced p ON p.id = o.after.id GROUP BY o.op ORDER BY o.op;\n",
        encoding="utf-8",
    )
    code, out, err = _sql(capsys, "--config", str(sample_lake.config_file), "--format", "tsv", "-f", str(script))
    assert (code, err) == (0, "")
    assert out == "op\tn\ttop\ninsert\t64\t4848.59\nupdate\t168\t4848.59\n"


def test_the_aligned_table_shows_nulls_structs_decimals_binary_and_timestamps_unambiguously(
    sample_lake: SampleLake, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _sql(capsys, PROBE, "--config", str(sample_lake.config_file))
    assert code == 0
    assert out.splitlines() == [
        "id | part | wall_clock              | after                                                                  | raw",  # noqa: E501
        "---+------+-------------------------+------------------------------------------------------------------------+---------",
        ' 1 | a    | 2024-03-01 10:29:00.046 | {"total": "12.50", "seen": "2024-03-01T23:59:59.999999", "note": null} | hex:00ff',  # noqa: E501
        ' 2 | b    | NULL                    | {"total": null, "seen": null, "note": null}                            | NULL',  # noqa: E501
        ' 3 | a    | 1999-12-31 23:59:59     | {"total": "-0.01", "seen": "2000-01-01T00:00:00", "note": "tab\\there"} | hex:',  # noqa: E501
        "(3 rows)",
    ]


def test_tsv_escapes_tabs_and_writes_null_as_backslash_n(
    sample_lake: SampleLake, capsys: pytest.CaptureFixture[str]
) -> None:
    statement = "SELECT id, after.note, after.total, wall_clock FROM binlog_gold.typed_probe ORDER BY id"
    code, out, _ = _sql(capsys, statement, "--format", "tsv", "--config", str(sample_lake.config_file))
    assert code == 0
    assert out == (
        "id\tnote\ttotal\twall_clock\n"
        "1\t\\N\t12.50\t2024-03-01 10:29:00.046\n"
        "2\t\\N\t\\N\t\\N\n"
        "3\ttab\\there\t-0.01\t1999-12-31 23:59:59\n"
    )


def test_csv_quotes_an_empty_string_and_leaves_null_empty(
    sample_lake: SampleLake, capsys: pytest.CaptureFixture[str]
) -> None:
    statement = (
        "SELECT id, CASE id WHEN 1 THEN '' WHEN 3 THEN 'say \"hi\", then go' END AS text, "
        "TIMESTAMP '2024-03-01 10:00:00+02:00' AS at FROM binlog_gold.typed_probe ORDER BY id"
    )
    code, out, _ = _sql(capsys, statement, "--format", "csv", "--config", str(sample_lake.config_file))
    assert code == 0
    assert out == (
        "id,text,at\n"
        '1,"",2024-03-01 08:00:00+00:00\n'
        "2,,2024-03-01 08:00:00+00:00\n"
        '3,"say ""hi"", then go",2024-03-01 08:00:00+00:00\n'
    )


def test_jsonl_writes_one_object_per_row_with_exact_decimals(
    sample_lake: SampleLake, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _sql(capsys, PROBE, "--format", "jsonl", "--config", str(sample_lake.config_file))
    assert code == 0
    rows = [json.loads(line) for line in out.splitlines()]
    assert rows == [
        {
            "id": 1,
            "part": "a",
            "wall_clock": "2024-03-01T10:29:00.046",
            "after": {"total": "12.50", "seen": "2024-03-01T23:59:59.999999", "note": None},
            "raw": "hex:00ff",
        },
        {"id": 2, "part": "b", "wall_clock": None, "after": {"total": None, "seen": None, "note": None}, "raw": None},
        {
            "id": 3,
            "part": "a",
            "wall_clock": "1999-12-31T23:59:59",
            "after": {"total": "-0.01", "seen": "2000-01-01T00:00:00", "note": "tab\there"},
            "raw": "hex:",
        },
    ]


def test_parquet_goes_to_the_output_file_with_its_types(
    sample_lake: SampleLake, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "orders.parquet"
    code, out, _ = _sql(capsys, OPS, "--format", "parquet", "-o", str(target), "--config", str(sample_lake.config_file))
    table = pq.read_table(target)
    assert (code, out) == (0, "")
    assert table.schema.field("total").type == pa.decimal128(38, 2)
    assert table.to_pylist() == [
        {"op": "insert", "n": 34, "total": Decimal("0.00")},
        {"op": "update", "n": 64, "total": Decimal("100725.51")},
    ]


def test_parquet_refuses_a_terminal_and_more_than_one_statement(
    sample_lake: SampleLake, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    config = str(sample_lake.config_file)
    assert _sql(capsys, f"{OPS}; {OPS}", "--format", "parquet", "-o", "x.parquet", "--config", config) == (
        2,
        "",
        "binlog-lakehouse: --format parquet writes one result: give one statement\n",
    )
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    code, _, err = _sql(capsys, OPS, "--format", "parquet", "--config", config)
    assert code == 2
    assert err.startswith("binlog-lakehouse: --format parquet needs --output FILE")


def test_a_missing_table_fails_with_one_line_and_exit_code_1(
    sample_lake: SampleLake, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _sql(capsys, "SELECT * FROM binlog_gold.shop__refunds", "--config", str(sample_lake.config_file))
    assert (code, out) == (1, "")
    assert err == (
        "binlog-lakehouse: binlog_gold.shop__refunds: no such table (binlog_gold has changes, shop__carts, "
        "shop__customers, shop__order_items, shop__orders, shop__products, typed_probe)\n"
    )


def test_the_failing_statement_of_a_file_is_named_and_the_ones_before_it_printed(
    sample_lake: SampleLake, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    script = tmp_path / "two.sql"
    script.write_text(f"{OPS}; SELECT nope FROM binlog_gold.changes", encoding="utf-8")
    code, out, err = _sql(capsys, "--file", str(script), "--config", str(sample_lake.config_file))
    assert (code, out) == (1, OPS_TABLE)
    assert err.startswith('binlog-lakehouse: statement 2 of 2: Binder Error: Referenced column "nope" not found')
    assert err.count("\n") == 1


def test_show_lists_the_lake_s_databases_and_tables_as_spark_does(
    sample_lake: SampleLake, capsys: pytest.CaptureFixture[str]
) -> None:
    config = str(sample_lake.config_file)
    assert _sql(capsys, "SHOW DATABASES", "--format", "tsv", "--config", config) == (
        0,
        "namespace\nbinlog_bronze\nbinlog_gold\nbinlog_quality\nbinlog_silver\n",
        "",
    )
    assert _sql(capsys, "show tables from `binlog_silver`", "--format", "csv", "--config", config) == (
        0,
        "namespace,tableName,isTemporary\n"
        "binlog_silver,ddl_events,false\n"
        "binlog_silver,schema_history,false\n"
        "binlog_silver,table_id_lifecycle,false\n"
        "binlog_silver,table_maps,false\n",
        "",
    )


def test_describe_gives_every_column_of_a_table(sample_lake: SampleLake, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _sql(
        capsys, "DESCRIBE binlog_gold.typed_probe", "--format", "tsv", "--config", str(sample_lake.config_file)
    )
    assert code == 0
    assert [line.split("\t")[:2] for line in out.splitlines()] == [
        ["column_name", "column_type"],
        ["id", "INTEGER"],
        ["part", "VARCHAR"],
        ["wall_clock", "TIMESTAMP"],
        ["after", "STRUCT(total DECIMAL(4,2), seen TIMESTAMP, note VARCHAR)"],
        ["raw", "BLOB"],
        ["day", "DATE"],
    ]


def test_bookkeeping_folders_are_not_tables(sample_lake: SampleLake, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _sql(capsys, "SELECT * FROM binlog_gold._progress", "--config", str(sample_lake.config_file))
    assert (code, err) == (1, "binlog-lakehouse: binlog_gold._progress: no such table\n")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["sql", "--config", "/nonexistent/lake.yaml", "SELECT 1"], "cannot read config file"),
        (["sql", "SELECT 1", "--config", "{bad}"], "unknown"),
        (["sql", "--config", "{cfg}"], "sql takes a statement or --file FILE.sql (one of them)"),
        (["sql", "SELECT 1", "--file", "x.sql", "--config", "{cfg}"], "(one of them)"),
        (["sql", "SELECT 1", "--format", "xml"], "invalid choice: 'xml'"),
        (["sql", "SELECT 1", "SELECT 2"], "unrecognized arguments: SELECT 2"),
        (["sql", "--file", "/nonexistent.sql", "--config", "{cfg}"], "/nonexistent.sql: cannot read"),
        (["run", "SELECT 1"], "unrecognized arguments: SELECT 1"),
    ],
    ids=["missing-config", "unknown-key", "no-statement", "statement-and-file", "format", "two", "file", "run"],
)
def test_a_usage_or_config_error_exits_2(
    sample_lake: SampleLake,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    message: str,
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(sample_lake.config_file.read_text(encoding="utf-8") + "storage_root: /x\n", encoding="utf-8")
    args = [{"{cfg}": str(sample_lake.config_file), "{bad}": str(bad)}.get(arg, arg) for arg in argv]
    assert cli.main(args) == 2
    assert message in capsys.readouterr().err


def test_the_spark_engine_prints_the_same_result(
    spark: SparkSession, sample_lake: SampleLake, capsys: pytest.CaptureFixture[str]
) -> None:
    sample_lake.register(spark)
    statement = (
        "SELECT after.id, after.note, commit_timestamp FROM binlog_gold.shop__orders ORDER BY file, offset, row_index"
    )
    config = str(sample_lake.config_file)
    embedded = _sql(capsys, statement, "--format", "tsv", "--config", config)
    through_spark = _sql(capsys, "--engine", "spark", statement, "--format", "tsv", "--config", config, spark=spark)

    assert embedded[0] == through_spark[0] == 0
    assert through_spark[1] == embedded[1]
    assert through_spark[1].splitlines()[1] == "1\tLeave at the door\t2023-11-14 22:13:36+00:00"


def test_the_spark_engine_fails_a_statement_with_one_line(
    spark: SparkSession, sample_lake: SampleLake, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _sql(
        capsys,
        "--engine",
        "spark",
        "SELECT * FROM binlog_gold.nope",
        "--config",
        str(sample_lake.config_file),
        spark=spark,
    )
    assert code == 1
    assert err.startswith("binlog-lakehouse: [TABLE_OR_VIEW_NOT_FOUND]")
    assert err.count("\n") == 1


def test_a_fresh_process_answers_without_importing_spark(sample_lake: SampleLake) -> None:
    probe = (
        "import sys; from jobs.cli import main; code = main(sys.argv[1:]); "
        "print('pyspark' in sys.modules, file=sys.stderr); sys.exit(code)"
    )
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            probe,
            "sql",
            "--config",
            str(sample_lake.config_file),
            "SELECT count(*) FROM binlog_gold.changes",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, "False\n")
    assert done.stdout == "count_star()\n------------\n         366\n(1 row)\n"


def test_a_fresh_process_answers_from_a_config_validated_before_without_pydantic_or_yaml(tmp_path: Path) -> None:
    config = tmp_path / "lake.yaml"
    config.write_text(f"input:\n  path: {tmp_path}\nstorage:\n  root: {tmp_path / 'lake'}\n", encoding="utf-8")
    probe = (
        "import sys; from jobs.cli import main; code = main(sys.argv[1:]); "
        "print(sorted({'pydantic', 'yaml', 'pyspark'} & set(sys.modules)), file=sys.stderr); sys.exit(code)"
    )
    runs = [
        subprocess.run(
            [sys.executable, "-c", probe, "sql", "--config", str(config), "SELECT 1 AS one", "--format", "tsv"],
            cwd=ROOT,
            env={**os.environ, CACHE_VARIABLE: str(tmp_path / "cache")},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        for _ in range(2)
    ]
    assert [(done.returncode, done.stdout, done.stderr) for done in runs] == [
        (0, "one\n1\n", "['pydantic', 'yaml']\n"),
        (0, "one\n1\n", "[]\n"),
    ]


def test_a_misspelt_key_in_a_config_answered_from_before_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "lake.yaml"
    text = f"input:\n  path: {tmp_path}\nstorage:\n  root: {tmp_path / 'lake'}\n"
    config.write_text(text, encoding="utf-8")
    assert _sql(capsys, "--config", str(config), "SELECT 1 AS one") == (0, "one\n---\n  1\n(1 row)\n", "")

    config.write_text(text + "  gold_databse: analytics\n", encoding="utf-8")

    assert _sql(capsys, "--config", str(config), "SELECT 1 AS one") == (
        2,
        "",
        f"binlog-lakehouse: {config}: storage.gold_databse: unknown key\n",
    )


def test_parquet_on_a_pipe_is_the_file(sample_lake: SampleLake) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "jobs.cli", "sql", OPS, "--format", "parquet", "--config", str(sample_lake.config_file)],
        cwd=ROOT,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0
    assert pq.read_table(io.BytesIO(done.stdout)).column("n").to_pylist() == [34, 64]


def test_the_command_line_keeps_the_pipeline_s_stages_and_progress_interval() -> None:
    assert cli.STAGES == pipeline_run.STAGES
    assert cli.PROGRESS_EVERY == pipeline_run.PROGRESS_EVERY
