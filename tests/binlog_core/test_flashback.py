"""``binlog-dump --flashback``: the script undoes the selected transactions on the server that ran them,
and what row images cannot undo is refused with the statement or the rows and columns named.

On a private server (FULL row image and metadata): every table's contents are recorded, more
transactions run (inserts, updates -- one changing a primary key --, deletes, NULLs, a table
without primary key holding duplicate rows, decimals, floats, temporal values, ENUM/SET, JSON,
binary, BIT, geometry, latin1 text), the flashback of their binlog is applied with the ``mariadb``
client, and every table must equal the recording.  Each test has a server of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from binlog_core.cli import EXIT_ERRORS, EXIT_OK
from binlog_core.decoder import decode_file
from binlog_core.events.gtid import MariaDBGtidEvent
from tests.binlog_core.sql_servers import Tables, apply_script, dump_script, table_contents
from tests.fixtures.truth import FIXTURES
from tests.harness.mariadb import DEFAULT_BINLOG_OPTIONS, MariaDBServer, ServerFactory

SETUP = (
    "CREATE DATABASE fb",
    """CREATE TABLE fb.accounts (
         id INT UNSIGNED NOT NULL PRIMARY KEY, owner VARCHAR(40) NOT NULL, balance DECIMAL(12,2),
         opened DATE, flags SET('a','b','c'), kind ENUM('x','y') NOT NULL DEFAULT 'x',
         touched TIMESTAMP(3) NULL DEFAULT NULL ON UPDATE CURRENT_TIMESTAMP(3)
       ) DEFAULT CHARSET=utf8mb4""",
    """CREATE TABLE fb.events (
         kind VARCHAR(10), payload VARBINARY(16), at DATETIME(6), score DOUBLE, ratio FLOAT
       ) DEFAULT CHARSET=utf8mb4""",
    """CREATE TABLE fb.docs (
         id BIGINT NOT NULL PRIMARY KEY, body JSON, spot POINT, latin VARCHAR(20) CHARACTER SET latin1,
         bits BIT(10), yr YEAR, span TIME(3)
       ) DEFAULT CHARSET=utf8mb4""",
    "INSERT INTO fb.accounts VALUES (1, 'Zoë', 10.50, '2024-01-31', 'a,c', 'y', '2024-02-01 10:00:00.125'),"
    " (2, 'O''Brien', NULL, '0000-00-00', '', 'x', NULL), (3, '李', -0.01, NULL, NULL, 'x', NULL)",
    "INSERT INTO fb.events VALUES ('dup', X'00FF', '2024-01-01 00:00:00.000001', 1.5, 0.1),"
    " ('dup', X'00FF', '2024-01-01 00:00:00.000001', 1.5, 0.1), ('Case', NULL, NULL, NULL, NULL),"
    " ('case', X'', '1999-12-31 23:59:59.999999', -2.5e-300, 3.4e38)",
    "INSERT INTO fb.docs VALUES (1, '{\"a\": [1, 2.5, \"ü\"]}', POINT(1.5, -2), _latin1 X'E9', b'1010101010', 2155,"
    " '-838:59:59.000'), (2, NULL, NULL, NULL, NULL, NULL, NULL)",
)

TRANSACTIONS: tuple[tuple[str, ...], ...] = (
    ("INSERT INTO fb.accounts (id, owner, balance) VALUES (4, 'new', 0.00)",),
    (
        "UPDATE fb.accounts SET balance = balance + 100, flags = 'b' WHERE id IN (1, 3)",
        "DELETE FROM fb.accounts WHERE id = 2",
    ),
    ("DELETE FROM fb.events WHERE kind = 'dup' LIMIT 1",),
    ("UPDATE fb.events SET kind = 'CASE', score = NULL WHERE kind = 'case'",),
    (
        "UPDATE fb.accounts SET id = 30, owner = 'moved' WHERE id = 3",
        "INSERT INTO fb.events VALUES ('new', X'0102', NOW(6), 0, -0)",
        "UPDATE fb.docs SET body = JSON_SET(body, '$.b', 'x'), spot = POINT(0, 0), latin = _latin1 X'FF',"
        " bits = b'1', yr = 1901, span = '00:00:00.001' WHERE id = 1",
    ),
    ("DELETE FROM fb.docs WHERE id = 2", "INSERT INTO fb.docs (id, body) VALUES (3, '[]')"),
    ("UPDATE fb.accounts SET kind = 'y', opened = '2020-02-29', balance = NULL WHERE id = 4",),
)


def run(server: MariaDBServer, statements: Sequence[str]) -> None:
    with server.connect() as conn, conn.cursor() as cur:
        for statement in statements:
            cur.execute(statement)


def run_transaction(server: MariaDBServer, statements: Sequence[str]) -> None:
    run(server, ["BEGIN", *statements, "COMMIT"] if len(statements) > 1 else statements)


History = tuple[MariaDBServer, Path, list[Tables], list[MariaDBGtidEvent], list[int]]


@pytest.fixture
def history(mariadb_factory: ServerFactory) -> History:
    """The server, the binlog file holding :data:`TRANSACTIONS`, the tables before each of them
    (and after the last), and each transaction's GTID event and its offset."""
    server = mariadb_factory(dict(DEFAULT_BINLOG_OPTIONS))
    run(server, SETUP)
    server.flush_binary_logs()
    name = server.current_binlog()
    states = [table_contents(server)]
    for statements in TRANSACTIONS:
        run_transaction(server, statements)
        states.append(table_contents(server))
    server.flush_binary_logs()
    path = server.binlog_dir / name
    found = [(item.body, item.event.offset) for item in decode_file(path) if isinstance(item.body, MariaDBGtidEvent)]
    return server, path, states, [g for g, _ in found], [offset for _, offset in found]


@pytest.mark.mariadb
def test_flashback_of_every_transaction_of_a_binlog_restores_every_table(history: History, tmp_path: Path) -> None:
    server, path, states, gtids, offsets = history
    assert len(gtids) == len(TRANSACTIONS)
    assert table_contents(server) == states[-1] != states[0]
    status, script = dump_script(tmp_path / "undo.sql", "--flashback", path)
    assert status == EXIT_OK
    labels = [line for line in script.splitlines() if line.startswith("-- undo ")]
    assert labels == [
        f"-- undo GTID {gtid.gtid} at {path.name}:{offset}"
        for gtid, offset in reversed(list(zip(gtids, offsets, strict=True)))
    ]
    assert script.count("\nBEGIN;\n") == len(TRANSACTIONS)
    apply_script(server, tmp_path / "undo.sql")
    assert table_contents(server) == states[0]


@pytest.mark.mariadb
def test_flashback_from_a_start_position_undoes_the_transactions_after_it(history: History, tmp_path: Path) -> None:
    server, path, states, _gtids, offsets = history
    status, script = dump_script(tmp_path / "undo.sql", "--flashback", f"--start-position={offsets[4]}", path)
    assert status == EXIT_OK
    assert script.count("\nBEGIN;\n") == 3
    apply_script(server, tmp_path / "undo.sql")
    assert table_contents(server) == states[4]


@pytest.mark.mariadb
def test_flashback_of_gtids_undoes_exactly_those_transactions(history: History, tmp_path: Path) -> None:
    server, path, states, gtids, _offsets = history
    last = gtids[-1]
    selected = f"{last.domain_id}-{last.server_id}-{last.seq_no - 1}-{last.seq_no}"
    status, script = dump_script(tmp_path / "undo.sql", "--flashback", f"--include-gtids={selected}", path)
    assert status == EXIT_OK
    assert script.count("\nBEGIN;\n") == 2
    apply_script(server, tmp_path / "undo.sql")
    assert table_contents(server) == states[-3]


def test_flashback_of_a_minimal_image_binlog_is_refused_naming_the_row_and_the_missing_columns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, script = dump_script(tmp_path / "undo.sql", "--flashback", FIXTURES / "minimal_image" / "mysql-bin.000002")
    assert (status, script) == (EXIT_ERRORS, "")
    assert capsys.readouterr().err.splitlines() == [
        "mysql-bin.000002\t56883\tPARTIAL_IMAGE\tUPDATE_ROWS_V1 -> row 1: before image: ti, ti_u, si, si_u, mi, mi_u, "
        "i, i_u, bi, bi_u, nn_i, nn_bi_u are not in the image; the row cannot be set back to what it was before the "
        "update"
    ]


def test_flashback_over_ddl_is_refused_naming_the_statement(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, script = dump_script(tmp_path / "undo.sql", "--flashback", FIXTURES / "full" / "mysql-bin.000003")
    assert (status, script) == (EXIT_ERRORS, "")
    assert capsys.readouterr().err.splitlines() == [
        "mysql-bin.000003\t427\tIRREVERSIBLE_STATEMENT\tQUERY: DDL 'CREATE TABLE fixture.t_evolve (id INT NOT NULL "
        "PRIMARY KEY, a INT, b VARCHAR(10)) ENGINE=InnoDB' is in the selection; a flashback from row images cannot "
        "undo it (narrow the selection to the transactions after it)"
    ]


def test_flashback_of_the_transactions_after_the_ddl_is_the_whole_undo_script(tmp_path: Path) -> None:
    # full file 3 ends with TRUNCATE TABLE t_evolved (GTID 0-1-89), an INSERT (90), FLUSH TABLES (91), an UPDATE (92)
    path = FIXTURES / "full" / "mysql-bin.000003"
    status, script = dump_script(tmp_path / "undo.sql", "--flashback", "--start-position=6903", path)
    assert status == EXIT_OK
    assert script.splitlines() == [
        "SET NAMES utf8mb4;",
        "SET @@session.time_zone='+00:00', @@session.sql_mode='NO_AUTO_VALUE_ON_ZERO', "
        "@@session.collation_connection='utf8mb4_general_ci', @@session.sql_auto_is_null=0;",
        "-- undo GTID 0-1-92 at mysql-bin.000003:7316",
        "BEGIN;",
        "UPDATE `fixture`.`t_evolved` SET `k` = 'gamma', `val` = NULL, `n` = 3.00, `at` = NULL WHERE `k` = 'gamma';",
        "COMMIT;",
        "-- undo GTID 0-1-90 at mysql-bin.000003:6903",
        "BEGIN;",
        "DELETE FROM `fixture`.`t_evolved` WHERE `k` = 'gamma';",
        "COMMIT;",
    ]
