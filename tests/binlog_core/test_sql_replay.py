"""``binlog-dump --rows-as sql`` scripts, applied to a fresh private MariaDB server, rebuild the tables
the binlogs were written from -- and the files a script cannot be written from exactly are refused.

The workloads are the fixture generator's (``tests/fixtures/workload_types.py``: every column type
the fixtures use at its limits and random values, NULLs, zero dates, binary, JSON, geometry,
INET/UUID, DDL mid-stream, REPLACE, upserts, rollbacks, MyISAM, a table without primary key, a
second schema; ``tests/fixtures/workload_sample.py``: the shop, FULL metadata then NO_LOG).
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from binlog_core.cli import EXIT_ERRORS, EXIT_OK
from tests.binlog_core.sql_servers import apply_script, column_lists, dump_script, table_contents
from tests.fixtures import workload_sample, workload_types
from tests.fixtures.recorder import Recorder
from tests.fixtures.truth import FIXTURES
from tests.harness.mariadb import DEFAULT_BINLOG_OPTIONS, MariaDBServer, ServerFactory

SEED = 20261122
"""The seed the bundled fixtures were generated with (``manifest.json``)."""


def run_workload(server: MariaDBServer, workload: str) -> list[Path]:
    """Run a fixture workload on ``server``; return the binlog files it wrote."""
    rec = Recorder(server.connect(), server.current_binlog())
    rec.start_session()
    first = server.current_binlog()
    if workload == "types":
        workload_types.run(rec, SEED, workload_types.TypesOptions(big_blob=False))
    else:
        workload_sample.run(rec, SEED, server.connect)
    rec.flush_binary_logs()
    rec.conn.close()
    names = server.binlog_files()
    return [server.binlog_dir / name for name in names[names.index(first) :]]


@pytest.mark.mariadb
@pytest.mark.slow
def test_the_type_workload_replayed_from_its_binlogs_rebuilds_every_table_value_for_value(
    mariadb_factory: ServerFactory, tmp_path: Path
) -> None:
    source = mariadb_factory(dict(DEFAULT_BINLOG_OPTIONS))
    files = run_workload(source, "types")
    status, script = dump_script(tmp_path / "types.sql", "--rows-as", "sql", *files)
    assert status == EXIT_OK
    assert script.count("\nCOMMIT;") > 50
    target = mariadb_factory(dict(DEFAULT_BINLOG_OPTIONS))
    apply_script(target, tmp_path / "types.sql")
    expected = table_contents(source)
    assert sorted(expected) == [
        ("fixture", name)
        for name in (
            "t_big",
            "t_binary",
            "t_bityear",
            "t_bulk",
            "t_counter",
            "t_decimal",
            "t_enumset",
            "t_evolved",
            "t_inet_uuid",
            "t_int",
            "t_json_geo",
            "t_myisam",
            "t_nopk",
            "t_replace",
            "t_string",
            "t_temporal",
        )
    ] + [("fixture_extra", "t_int")]
    assert sum(len(rows) for rows in expected.values()) == 161
    assert table_contents(target) == expected
    assert column_lists(target) == column_lists(source)


@pytest.mark.mariadb
@pytest.mark.slow
def test_the_bundled_sample_replayed_rebuilds_the_tables_its_workload_left_no_log_files_included(
    mariadb_factory: ServerFactory, tmp_path: Path
) -> None:
    # files 3 and 4 carry no column names (NO_LOG): they come from the FULL maps of files 1 and 2,
    # carried through the ALTER TABLE ... MODIFY of file 3
    files = sorted((FIXTURES / "sample").glob("mysql-bin.*"))
    status, _script = dump_script(tmp_path / "sample.sql", "--rows-as", "sql", *files)
    assert status == EXIT_OK
    target = mariadb_factory(dict(DEFAULT_BINLOG_OPTIONS))
    apply_script(target, tmp_path / "sample.sql")
    source = mariadb_factory(dict(DEFAULT_BINLOG_OPTIONS))
    run_workload(source, "sample")
    expected = table_contents(source)
    assert {key: len(rows) for key, rows in expected.items()} == {
        ("shop", "carts"): 3,
        ("shop", "customers"): 35,
        ("shop", "order_items"): 70,
        ("shop", "orders"): 34,
        ("shop", "products"): 24,
    }
    assert table_contents(target) == expected


def test_a_minimal_image_binlog_is_refused_at_its_first_insert_and_the_script_ends_there(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = sorted((FIXTURES / "minimal_image").glob("mysql-bin.*"))
    status, script = dump_script(tmp_path / "minimal.sql", "--rows-as", "sql", *files)
    assert status == EXIT_ERRORS
    assert capsys.readouterr().err.splitlines() == [
        "mysql-bin.000001\t10347\tPARTIAL_IMAGE\tWRITE_ROWS_V1 -> row 0: after image: ti, ti_u, si, si_u, mi, mi_u, "
        "i, i_u, bi, bi_u, nn_i, nn_bi_u are not in the image; the server gave them values (their defaults) that "
        "the binlog does not hold"
    ]
    # the t_int rows before it set every column; the NULL row (only its id given) is the first partial image
    assert script.endswith(
        "COMMIT; -- xid=91\n-- GTID 0-1-18\nBEGIN;\nROLLBACK;\n-- INCOMPLETE: binlog-dump stopped here (see its error "
        "output)\n"
    )
    assert script.count("INSERT INTO `fixture`.`t_int`") == 3


def test_a_binlog_without_column_names_is_refused_at_its_first_rows_event(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = sorted((FIXTURES / "metadata_nolog").glob("mysql-bin.*"))
    status, script = dump_script(tmp_path / "nolog.sql", "--rows-as", "sql", *files)
    assert status == EXIT_ERRORS
    assert capsys.readouterr().err.splitlines() == [
        "mysql-bin.000001\t9817\tCOLUMN_NAMES_UNKNOWN\tWRITE_ROWS_V1 -> row 0 -> col 1 @1: after image: the "
        "TABLE_MAP carries no column names (the server wrote binlog_row_metadata=MINIMAL or NO_LOG; FULL writes "
        "them) and none are known for the table from earlier in the files"
    ]
    assert script.count("CREATE TABLE") == 15


def test_names_are_not_carried_across_a_gap_in_the_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # file 1's ROTATE names file 2; given files 1 and 3, what file 1's FULL maps said does not reach file 3
    sample = FIXTURES / "sample"
    status, _script = dump_script(
        tmp_path / "gap.sql", "--rows-as", "sql", sample / "mysql-bin.000001", sample / "mysql-bin.000003"
    )
    assert status == EXIT_ERRORS
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("mysql-bin.000003\t")
    assert "\tCOLUMN_NAMES_UNKNOWN\t" in line


@pytest.mark.mariadb
def test_statements_of_a_statement_based_binlog_replay_with_their_user_variables(
    mariadb_factory: ServerFactory, tmp_path: Path
) -> None:
    # the script stops at the LOAD DATA it cannot replay; what it wrote before applies as logged
    misc = Path(__file__).resolve().parent / "events" / "data" / "mariadb-10.11-misc.binlog"
    status, _script = dump_script(tmp_path / "misc.sql", "--rows-as", "sql", misc)
    assert status == EXIT_ERRORS
    target = mariadb_factory(dict(DEFAULT_BINLOG_OPTIONS))
    apply_script(target, tmp_path / "misc.sql")
    assert target.query("SELECT id, s, d, r, u FROM fx.t ORDER BY id") == [
        (1, "héllo😀", Decimal("-1234.567"), 0.0025, 18446744073709551615),
        (2, "é", Decimal("-42.000"), None, None),
    ]
