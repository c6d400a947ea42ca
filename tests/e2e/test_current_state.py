"""Current state, row history and undo against real servers: every ``binlog_current`` table equals
the server's own ``SELECT *`` after the workload, for FULL, MINIMAL and NOBLOB row images, and the
lake's flashback of the last transactions, applied to the server, brings every table back.

Three private MariaDB servers (one per ``binlog_row_image``) run the same workload over five
binlog files each: inserts, updates, deletes, REPLACE, INSERT ... ON DUPLICATE KEY UPDATE, a
table without a primary key (a multiset: a duplicate row inserted twice, one of them deleted),
TRUNCATE, DROP TABLE and a CREATE of the same name with other columns, DROP DATABASE, RENAME
TABLE (in one database and across two, one of them to a name no row change names later), ALTER
TABLE ... ADD COLUMN with a constant default and with the statement's time (a TIMESTAMP, and a
DATETIME(6) in the session's time zone), columns added to a table no row change names afterwards
(a file ending in that DDL statement: as-of its GTID), an update that MINIMAL and NOBLOB images log partially, and
two last transactions of plain DML to undo. Their binlogs go into one input, a folder per
server, so the same schema and table names of three servers share one lakehouse and must never
mix. The lake is built one file at a time (one run per file of every server), so every check below
also checks the incremental replay each run merges into the tables, across the DDL of the files
before it; one run over all the files must give the same tables.
"""

from __future__ import annotations

import io
import json
import shutil
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from conf import AppConfig, InputSettings, SparkSettings, StorageSettings
from conf.models import CurrentSettings
from jobs.cli import main as cli_main
from pipelines.run import RunReport, as_json, run, summary
from pipelines.storage import Lakehouse, Layer, Table
from pipelines.tables import PROGRESS
from tests.binlog_core.sql_servers import Tables, apply_script, dump_script, table_contents
from tests.harness.mariadb import DEFAULT_BINLOG_OPTIONS, MariaDBServer, ServerFactory

IMAGES = ("FULL", "MINIMAL", "NOBLOB")
TABLES = ("app.items", "app.tags", "app.tmp", "app.gone", "app.renamed", "arch.moved")
"""The workload's tables that live on: their current state must equal the server's."""
DROPPED = ("scratch.t",)
"""Tables the workload drops (with their database): their current state must be empty."""
RENAMED_AWAY = ("app.old", "app.moved")
"""Tables the workload renames: their rows live on under the new names."""

WORKLOAD: tuple[tuple[str, ...], ...] = (
    (
        "CREATE DATABASE app",
        "CREATE TABLE app.items (id INT PRIMARY KEY, name VARCHAR(40) NOT NULL, price DECIMAL(8,2), note TEXT)",
        "CREATE TABLE app.tags (label VARCHAR(20), n INT)",
        "CREATE TABLE app.tmp (id INT PRIMARY KEY, v INT)",
        "INSERT INTO app.items VALUES (1,'one',1.50,'n1'),(2,'two',2.50,'n2'),(3,'three',3.50,NULL),"
        "(4,'four',4.50,'n4'),(5,'five',5.50,'n5'),(6,'six',6.50,'n6')",
        "INSERT INTO app.tags VALUES ('a',1),('a',1),('b',2),('c',NULL)",
        "INSERT INTO app.tmp VALUES (1,1),(2,2)",
    ),
    (
        "UPDATE app.items SET price = price + 1 WHERE id <= 3",
        "DELETE FROM app.items WHERE id = 4",
        "REPLACE INTO app.items VALUES (2,'two-b',9.99,'r2')",
        "INSERT INTO app.items VALUES (5,'x',1.00,'y') ON DUPLICATE KEY UPDATE name = 'five-b'",
        "DELETE FROM app.tags WHERE label = 'a' LIMIT 1",
        "UPDATE app.tags SET n = 3 WHERE label = 'b'",
        "TRUNCATE TABLE app.tmp",
        "INSERT INTO app.tmp VALUES (3,3)",
    ),
    (
        "CREATE TABLE app.gone (id INT PRIMARY KEY, v INT)",
        "INSERT INTO app.gone VALUES (1,1),(2,2)",
        "DROP TABLE app.gone",
        "CREATE TABLE app.gone (k VARCHAR(5) PRIMARY KEY, w INT)",
        "INSERT INTO app.gone VALUES ('a',5),('b',6)",
        "UPDATE app.gone SET w = 7 WHERE k = 'b'",
        "CREATE DATABASE scratch",
        "CREATE TABLE scratch.t (id INT PRIMARY KEY, v INT)",
        "INSERT INTO scratch.t VALUES (1,1),(2,2)",
        "DROP DATABASE scratch",
        "UPDATE app.items SET name = 'six-b' WHERE id = 6",
        "CREATE TABLE app.old (id INT PRIMARY KEY, v INT)",
        "INSERT INTO app.old VALUES (1,10),(2,20)",
        "RENAME TABLE app.old TO app.renamed",
        "UPDATE app.renamed SET v = 21 WHERE id = 2",
        "CREATE DATABASE arch",
        "CREATE TABLE app.moved (id INT PRIMARY KEY, v VARCHAR(5))",
        "INSERT INTO app.moved VALUES (1,'m1'),(2,'m2')",
        "ALTER TABLE app.moved RENAME TO arch.moved",
        "ALTER TABLE app.items ADD COLUMN qty INT NOT NULL DEFAULT 7",
        "UPDATE app.items SET qty = 8 WHERE id = 1",
        "ALTER TABLE app.tmp ADD COLUMN label VARCHAR(10) DEFAULT 'x''y'",
        "ALTER TABLE app.tags ADD COLUMN seen TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP",
        "ALTER TABLE app.tags ADD COLUMN seen_at DATETIME(6) DEFAULT CURRENT_TIMESTAMP(6)",
        "INSERT INTO app.tmp (id, v) VALUES (4, 4)",
        # no row change of arch.moved follows: only this DDL tells the column; and the file's last
        # transaction (its recorded GTID, as-of --gtid) is a DDL statement's
        "ALTER TABLE arch.moved ADD COLUMN shelf VARCHAR(8) NOT NULL DEFAULT 'z', ADD COLUMN bin INT UNSIGNED",
    ),
    (
        "BEGIN",
        "UPDATE app.items SET price = price * 2, note = 'x' WHERE id >= 5",
        "DELETE FROM app.items WHERE id = 1",
        "INSERT INTO app.items (id, name, price, note) VALUES (9, 'nine', 9.00, NULL)",
        "DELETE FROM app.tags WHERE label = 'c'",
        "COMMIT",
    ),
    (
        "BEGIN",
        "INSERT INTO app.tags (label, n) VALUES ('d', 4)",
        "UPDATE app.renamed SET v = v + 100",
        "UPDATE app.tmp SET v = 5 WHERE id = 3",
        "COMMIT",
    ),
)
"""Statements per binlog file (the logs are flushed between them); each statement is a transaction
of its own unless BEGIN ... COMMIT group them."""
UNDONE = 2
"""The last groups, one transaction each, that the flashback tests undo."""


ASOF_TABLES = ("app.items", "app.tmp")
"""Tables read back after each file's statements, to check as-of queries against."""


@dataclass(frozen=True)
class Recorded:
    """A point of a server's history, and its tables as the server read them back right then."""

    file: str
    offset: int
    gtid: str
    at: str
    rows: dict[str, tuple[list[str], Counter[tuple[Any, ...]]]]
    """table -> its column names and rows"""
    tables: Tables
    """every table's rows"""


@dataclass
class Built:
    lake: Lakehouse
    cfg: AppConfig
    servers: dict[str, MariaDBServer]
    """row image -> its server"""
    folders: dict[str, str]
    """row image -> the input folder of its binlogs"""
    points: dict[str, list[Recorded]]
    """row image -> the points recorded after each file's statements"""
    final: dict[str, dict[str, tuple[list[str], Counter[tuple[Any, ...]]]]]
    """row image -> table -> its columns and rows as the server read them back after the workload"""
    reports: list[RunReport]
    """The runs that built the lake, in order"""


def _server_rows(server: MariaDBServer, table: str) -> tuple[list[str], Counter[tuple[Any, ...]]]:
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute(f"SELECT * FROM {table}")
        names = [d[0] for d in cur.description]
        return names, Counter(tuple(row) for row in cur.fetchall())


def _of_server(frame: DataFrame, folder: str) -> DataFrame:
    return frame.where(F.col("_server").startswith(f"file:{folder}/"))


def _run_workload(server: MariaDBServer) -> tuple[list[Recorded], list[Path]]:
    """The workload on ``server``, one binlog file per step: what it read back after each step, and
    the files written."""
    server.flush_binary_logs()
    first = server.current_binlog()
    points: list[Recorded] = []
    for statements in WORKLOAD:
        with server.connect() as conn, conn.cursor() as cur:
            for statement in statements:
                cur.execute(statement)
            conn.commit()
            cur.execute("SELECT @@last_gtid, UTC_TIMESTAMP()")
            gtid, now = cur.fetchone()
        file, offset = server.query("SHOW MASTER STATUS")[0][:2]
        rows = {table: _server_rows(server, table) for table in ASOF_TABLES}
        points.append(Recorded(str(file), int(offset), str(gtid), str(now), rows, table_contents(server)))
        time.sleep(1.1)  # commit times have whole seconds: the next file's commits come later
        server.flush_binary_logs()
    return points, [p for p in server.binlog_paths() if p.name >= first and p.name != server.current_binlog()]


@pytest.fixture(scope="module")
def built(
    spark: SparkSession, mariadb_factory: ServerFactory, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Built]:
    inputs = tmp_path_factory.mktemp("current_input")
    servers = {image: mariadb_factory({**DEFAULT_BINLOG_OPTIONS, "binlog_row_image": image}) for image in IMAGES}
    folders: dict[str, str] = {}
    for image in IMAGES:
        folder = inputs / image.lower()
        folder.mkdir()
        folders[image] = str(folder)
    with ThreadPoolExecutor(len(IMAGES)) as pool:  # the servers run the workload side by side
        done = dict(zip(IMAGES, pool.map(_run_workload, [servers[image] for image in IMAGES]), strict=True))
    points = {image: recorded for image, (recorded, _) in done.items()}
    written = {image: paths for image, (_, paths) in done.items()}
    cfg = AppConfig(
        input=InputSettings(path=str(inputs), recursive=True),
        storage=StorageSettings(root=str(tmp_path_factory.mktemp("current_lake")), register_tables=False),
        current=CurrentSettings(enabled=True),
        spark=SparkSettings(conf={"spark.sql.session.timeZone": "UTC"}),
    )
    reports = []
    for index in range(len(WORKLOAD)):  # the files arrive one at a time
        for image, paths in written.items():
            shutil.copy(paths[index], Path(folders[image]) / paths[index].name)
        report = run(spark, cfg, err=io.StringIO(), progress_every=None)
        assert report.exit_code == 0, report
        reports.append(report)
    final = {image: {table: _server_rows(server, table) for table in TABLES} for image, server in servers.items()}
    yield Built(Lakehouse(spark, cfg.storage), cfg, servers, folders, points, final, reports)


@pytest.mark.parametrize("image", IMAGES)
@pytest.mark.parametrize("table", TABLES)
def test_the_current_state_of_each_table_equals_the_servers_rows_for_each_row_image(
    built: Built, image: str, table: str
) -> None:
    names, expected = built.final[image][table]
    current = _of_server(built.lake.read(Table(Layer.CURRENT, table.replace(".", "__"))), built.folders[image])
    got = Counter(tuple(row) for row in current.select(*names).collect())
    assert got == expected


@pytest.mark.parametrize("table", DROPPED)
def test_a_table_of_a_dropped_database_has_no_current_rows(built: Built, table: str) -> None:
    assert built.lake.read(Table(Layer.CURRENT, table.replace(".", "__"))).count() == 0
    history = built.lake.read(Table(Layer.HISTORY, table.replace(".", "__")))
    closed = {row._closed_by for row in history.collect()}
    assert history.count() == 2 * len(IMAGES)
    assert closed == {"drop_database"}


@pytest.mark.parametrize("table", RENAMED_AWAY)
def test_a_table_renamed_away_has_no_current_rows_and_its_versions_closed_by_the_rename(
    built: Built, table: str
) -> None:
    assert built.lake.read(Table(Layer.CURRENT, table.replace(".", "__"))).count() == 0
    history = built.lake.read(Table(Layer.HISTORY, table.replace(".", "__"))).collect()
    assert {row._closed_by for row in history} == {"rename"}
    assert len(history) == 2 * len(IMAGES)


def test_rows_a_rename_carries_open_their_versions_at_it_under_the_new_name(built: Built) -> None:
    for image, folder in built.folders.items():
        history = _of_server(built.lake.read(Table(Layer.HISTORY, "app__renamed")), folder)
        versions = history.orderBy("id", "_valid_from_sequence", "_valid_from_offset").collect()
        assert [(v.id, v.v, v._op, v._closed_by) for v in versions] == [
            (1, 10, "rename", "update"),
            (1, 110, "update", None),
            (2, 20, "rename", "update"),
            (2, 21, "update", "update"),
            (2, 121, "update", None),
        ], image
        renamed = _of_server(built.lake.read(Table(Layer.HISTORY, "app__old")), folder).collect()
        assert {v._valid_to_offset for v in renamed} == {versions[0]._valid_from_offset}, image


def test_the_history_of_a_row_chains_its_versions_from_insert_to_now(built: Built) -> None:
    history = _of_server(built.lake.read(Table(Layer.HISTORY, "app__items")), built.folders["MINIMAL"])
    versions = history.where(F.col("id") == 2).orderBy("_valid_from_sequence", "_valid_from_offset").collect()
    assert [(v.name, v.price, v.note, v.qty, v._op, v._is_current) for v in versions] == [
        ("two", Decimal("2.50"), "n2", None, "insert", False),
        ("two", Decimal("3.50"), "n2", None, "update", False),
        ("two-b", Decimal("9.99"), "r2", None, "update", False),
        ("two-b", Decimal("9.99"), "r2", 7, "fill", True),  # ALTER TABLE ... ADD COLUMN qty ... DEFAULT 7
    ]
    for older, newer in pairwise(versions):
        assert older._valid_to == newer._valid_from
        assert (older._valid_to_file, older._valid_to_offset) == (newer._valid_from_file, newer._valid_from_offset)
        assert older._closed_by == newer._op


def test_columns_an_alter_added_with_no_row_change_since_are_in_the_tables_with_their_defaults(
    built: Built,
) -> None:
    ddl_gtid = built.points["FULL"][2].gtid
    assert built.lake.read(Table(Layer.GOLD, "changes")).where(F.col("gtid") == ddl_gtid).count() == 0
    assert "arch__moved" not in built.lake.tables(Layer.GOLD)  # its rows came by RENAME: no row event names it
    current = built.lake.read(Table(Layer.CURRENT, "arch__moved"))
    assert dict(current.dtypes)["shelf"] == "string" and dict(current.dtypes)["bin"] == "bigint"
    assert sorted(tuple(r) for r in current.select("id", "shelf", "bin").collect()) == [
        (i, "z", None) for i in (1, 1, 1, 2, 2, 2)
    ]
    history = built.lake.read(Table(Layer.HISTORY, "arch__moved"))
    assert Counter((r.shelf, r._op, r._closed_by) for r in history.collect()) == Counter(
        {(None, "rename", "fill"): 6, ("z", "fill", None): 6}
    )


def test_a_column_a_partial_image_leaves_out_keeps_its_value(built: Built) -> None:
    for image in IMAGES:
        rows = (
            _of_server(built.lake.read(Table(Layer.CURRENT, "app__items")), built.folders[image])
            .where(F.col("id") == 6)
            .collect()
        )
        assert [(r.name, r.price, r.note) for r in rows] == [("six-b", Decimal("13.00"), "x")], image


TOUCHED = (
    {"app__items", "app__tags", "app__tmp"},
    {"app__items", "app__tags", "app__tmp"},
    {
        "app__gone",
        "scratch__t",
        "app__items",
        "app__old",
        "app__renamed",
        "app__moved",
        "arch__moved",
        "app__tmp",
        "app__tags",
    },
    {"app__items", "app__tags"},
    {"app__tags", "app__renamed", "app__tmp"},
)
"""The tables each file of the workload changes, by row changes or DDL."""


def test_each_run_replays_only_the_tables_its_files_change_and_its_summary_counts_them(
    spark: SparkSession, built: Built
) -> None:
    assert built.lake.tables(Layer.CURRENT) == built.lake.tables(Layer.HISTORY) == sorted(set().union(*TOUCHED))
    assert len(built.reports) == len(TOUCHED)
    for report, touched in zip(built.reports, TOUCHED, strict=True):
        assert report.current_tables == len(touched)
        lines = summary(spark, built.cfg, report).splitlines()
        assert f"    current and history tables replayed: {len(touched)}" in lines
        assert as_json(report)["this_run"]["current_tables_replayed"] == len(touched)


def test_a_run_with_nothing_new_leaves_the_current_and_history_tables_as_they_are(
    spark: SparkSession, built: Built
) -> None:
    paths = [
        built.lake.path(Table(layer, name))
        for layer in (Layer.CURRENT, Layer.HISTORY)
        for name in built.lake.tables(layer)
    ]
    before = {p: DeltaTable(p).version() for p in paths}
    report = run(spark, built.cfg, err=io.StringIO(), progress_every=None)
    assert report.exit_code == 0
    assert report.files_built["current"] == report.current_tables == 0
    assert "current and history tables replayed" not in summary(spark, built.cfg, report)
    assert {p: DeltaTable(p).version() for p in paths} == before


def test_a_run_killed_between_its_history_and_current_merges_is_redone_to_the_same_tables(
    spark: SparkSession, built: Built
) -> None:
    tables = [Table(layer, name) for layer in (Layer.CURRENT, Layer.HISTORY) for name in built.lake.tables(layer)]
    expected = {t: _relative(built.lake, t) for t in tables}
    for name in TOUCHED[-1]:  # the last run's current-state merges undone, its history merges kept
        path = built.lake.path(Table(Layer.CURRENT, name))
        version = DeltaTable(path).version()
        spark.sql(f"RESTORE TABLE delta.`{path}` TO VERSION AS OF {version - 1}")
    last = ", ".join(f"'{points[-1].file}'" for points in built.points.values())
    spark.sql(
        f"DELETE FROM delta.`{built.lake.path(PROGRESS)}` "
        f"WHERE layer = 'current' AND element_at(split(file, '/'), -1) IN ({last})"
    )
    assert {t: _relative(built.lake, t) for t in tables} != expected
    report = run(spark, built.cfg, ["current"], err=io.StringIO(), progress_every=None)  # the others have no work
    assert report.exit_code == 0
    assert report.files_built["current"] == len(built.points)
    assert report.current_tables == len(TOUCHED[-1])
    assert {t: _relative(built.lake, t) for t in tables} == expected


def _relative(lake: Lakehouse, table: Table, folder: str | None = None) -> list[tuple[Any, ...]]:
    """A current or history table's rows (those of the server whose binlogs are in ``folder``, else
    all), read by delta-rs, sorted, with paths cut to their file names (two lakes compare)."""
    rows = DeltaTable(lake.path(table)).to_pyarrow_table().to_pylist()
    if folder is not None:
        rows = [row for row in rows if row["_server"].startswith(f"file:{folder}/")]
    return sorted(
        (
            tuple(
                value.rsplit("/", 1)[-1]
                if value is not None and (key in ("_server", "_file") or key.endswith("_file"))
                else value
                for key, value in row.items()
            )
            for row in rows
        ),
        key=repr,
    )


def test_the_lake_built_one_file_at_a_time_has_the_current_and_history_tables_of_one_run_over_all_files(
    spark: SparkSession, built: Built, tmp_path: Path
) -> None:
    image = "MINIMAL"
    cfg = built.cfg.model_copy(
        update={
            "input": built.cfg.input.model_copy(update={"path": built.folders[image]}),
            "storage": built.cfg.storage.model_copy(update={"root": str(tmp_path / "lake")}),
        }
    )
    assert run(spark, cfg, err=io.StringIO(), progress_every=None).exit_code == 0
    at_once = Lakehouse(spark, cfg.storage)
    for layer in (Layer.CURRENT, Layer.HISTORY):
        names = built.lake.tables(layer)
        assert at_once.tables(layer) == names
        for name in names:
            expected = _relative(built.lake, Table(layer, name), built.folders[image])
            assert _relative(at_once, Table(layer, name)) == expected, (layer, name)


def _asof(built: Built, table: str, tmp_path: Path, *point: str) -> tuple[int, list[dict[str, Any]]]:
    out = tmp_path / "asof.jsonl"
    code = cli_main(["asof", "--table", table, *point, "--format", "jsonl", "--output", str(out)], config=built.cfg)
    lines = out.read_text(encoding="utf-8").splitlines() if out.exists() else []
    return code, [json.loads(line) for line in lines]


def _as_server_reads(rows: list[dict[str, Any]], names: list[str]) -> Counter[tuple[Any, ...]]:
    """jsonl rows (decimals as strings) as the server's tuples."""
    return Counter(
        tuple(Decimal(row[n]) if n == "price" and row[n] is not None else row[n] for n in names) for row in rows
    )


@pytest.mark.parametrize("kind", ["position", "gtid", "at"])
@pytest.mark.parametrize("image", IMAGES)
def test_asof_a_position_a_gtid_or_a_commit_time_gives_the_rows_the_server_read_back_then(
    built: Built, image: str, kind: str, tmp_path: Path
) -> None:
    server = f"{Path(built.folders[image]).name}/mysql-bin"
    for recorded in built.points[image]:
        point = {
            "position": ["--position", f"{recorded.file}:{recorded.offset}"],
            "gtid": ["--gtid", recorded.gtid],
            "at": ["--at", recorded.at],
        }[kind]
        for table in ASOF_TABLES:
            names, expected = recorded.rows[table]
            code, rows = _asof(built, table, tmp_path, *point, "--server", server)
            assert code == 0
            assert _as_server_reads(rows, names) == expected, (table, recorded)


def test_asof_a_transaction_the_lakehouse_does_not_hold_is_one_line_and_exit_code_1(
    built: Built, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, rows = _asof(built, "app.items", tmp_path, "--gtid", "9-9-999999")
    assert (code, rows) == (1, [])
    assert capsys.readouterr().err.strip() == (
        "binlog-lakehouse: --gtid 9-9-999999: no row change or DDL statement of that transaction in the lakehouse"
    )


def _flashback(built: Built, out: Path, *selection: str) -> int:
    return cli_main(["flashback", *selection, "--output", str(out)], config=built.cfg)


@pytest.mark.parametrize(("image", "mode"), [("FULL", "gtid"), ("MINIMAL", "position"), ("NOBLOB", "time")], ids=str)
def test_the_lakes_flashback_of_the_last_transactions_applied_to_the_server_brings_every_table_back(
    built: Built, image: str, mode: str, tmp_path: Path
) -> None:
    before, undone = built.points[image][-UNDONE - 1], built.points[image][-UNDONE:]
    server = f"{Path(built.folders[image]).name}/mysql-bin"
    since = datetime.fromisoformat(before.at) + timedelta(seconds=1)  # commit times have whole seconds
    selection = {
        "gtid": ["--gtid", *(point.gtid for point in undone)],
        "position": ["--from", f"{undone[0].file}:4"],
        "time": ["--since", since.isoformat(sep=" ")],
    }[mode]
    script = tmp_path / "undo.sql"
    assert _flashback(built, script, *selection, "--server", server) == 0
    assert script.read_text(encoding="utf-8").count("\nBEGIN;\n") == UNDONE
    apply_script(built.servers[image], script)
    assert table_contents(built.servers[image]) == before.tables


def _statements(script: str) -> list[str]:
    return [line for line in script.splitlines() if not line.startswith("--")]


def test_binlog_dump_flashback_of_the_same_files_writes_the_same_statements_as_the_lake(
    built: Built, tmp_path: Path
) -> None:
    files = [Path(built.folders["FULL"]) / point.file for point in built.points["FULL"][-UNDONE:]]
    status, from_files = dump_script(tmp_path / "files.sql", "--flashback", *files)
    assert status == 0
    lake = tmp_path / "lake.sql"
    server = f"{Path(built.folders['FULL']).name}/mysql-bin"
    assert _flashback(built, lake, "--from", f"{files[0].name}:4", "--server", server) == 0
    assert _statements(lake.read_text(encoding="utf-8")) == _statements(from_files)


def test_the_flashback_through_spark_writes_the_same_statements_as_through_the_embedded_engine(
    spark: SparkSession, built: Built, tmp_path: Path
) -> None:
    image = "MINIMAL"  # partial images: the history tables complete them, through either engine
    server = f"{Path(built.folders[image]).name}/mysql-bin"
    selection = ["--from", f"{built.points[image][-UNDONE].file}:4", "--server", server]
    embedded, through_spark = tmp_path / "embedded.sql", tmp_path / "spark.sql"
    assert _flashback(built, embedded, *selection) == 0
    assert not built.cfg.storage.register_tables  # Spark reads the tables from their folders
    command = ["flashback", "--engine", "spark", *selection, "--output", str(through_spark)]
    assert cli_main(command, config=built.cfg, spark=spark) == 0
    assert _statements(through_spark.read_text(encoding="utf-8")) == _statements(embedded.read_text(encoding="utf-8"))
    assert through_spark.read_text(encoding="utf-8").count("\nBEGIN;\n") == UNDONE


def test_binlog_dump_refuses_what_only_the_lakes_history_can_complete(
    built: Built, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = [Path(built.folders["MINIMAL"]) / point.file for point in built.points["MINIMAL"][-UNDONE:]]
    status, _ = dump_script(tmp_path / "files.sql", "--flashback", *files)
    assert status == 1
    assert "PARTIAL_IMAGE" in capsys.readouterr().err


def test_a_flashback_selection_that_finds_nothing_or_mixes_servers_is_one_line_and_exit_code_1(
    built: Built, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "undo.sql"
    assert _flashback(built, out, "--gtid", "9-9-999999") == 1
    assert capsys.readouterr().err.strip() == (
        "binlog-lakehouse: no row change of the selected transactions in the lakehouse"
    )
    assert _flashback(built, out, "--since", "2000-01-01 00:00:00") == 1
    assert "give --server to undo one server's" in capsys.readouterr().err
    assert not out.exists()
    assert _flashback(built, out, "--gtid", "0-1-1", "--since", "2000-01-01") == 2


def test_a_flashback_selection_spanning_ddl_is_refused_naming_the_statement(
    built: Built, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = built.points["FULL"][0]
    server = f"{Path(built.folders['FULL']).name}/mysql-bin"
    out = tmp_path / "undo.sql"
    assert _flashback(built, out, "--from", f"{first.file}:4", "--server", server) == 1
    truncate = built.lake.read(Table(Layer.SILVER, "ddl_events")).where(
        F.col("statement").startswith("TRUNCATE") & F.col("file").contains("/full/")
    )
    at = truncate.first()
    assert at is not None
    assert capsys.readouterr().err == (
        f"binlog-lakehouse: {at.file}@{at.offset} QUERY: 'TRUNCATE TABLE app.tmp' lies inside the selection; "
        "a flashback from row images cannot undo it (narrow the selection to the transactions after it) "
        "[IRREVERSIBLE_STATEMENT]\n"
    )
    assert not out.exists()
