"""The private MariaDB server harness: options, binlog files, stopping, and the skip rule."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.harness import mariadb
from tests.harness.mariadb import (
    MariaDBServer,
    MariaDBServerError,
    ServerFactory,
    pid_is_alive,
    port_is_open,
)

BINLOG_MAGIC = b"\xfebin"


@pytest.mark.mariadb
def test_server_runs_with_the_requested_binlog_options(mariadb_factory: ServerFactory) -> None:
    server = mariadb_factory(
        {"binlog_row_image": "MINIMAL", "binlog_row_metadata": "NO_LOG", "binlog_checksum": "NONE"}
    )
    rows = server.query(
        "SELECT @@binlog_row_image, @@binlog_row_metadata, @@binlog_checksum, @@binlog_format,"
        " @@log_bin, @@port, @@bind_address, @@global.time_zone, @@session.time_zone"
    )
    assert rows == [("MINIMAL", "NO_LOG", "NONE", "ROW", 1, server.port, "127.0.0.1", "SYSTEM", "+00:00")]
    assert server.port != 3306


@pytest.mark.mariadb
def test_shared_server_uses_full_image_full_metadata_and_crc32(mariadb_server: MariaDBServer) -> None:
    assert server_settings(mariadb_server) == ("FULL", "FULL", "CRC32", "ROW")


def server_settings(server: MariaDBServer) -> tuple[Any, ...]:
    """The four binlog settings the fixtures depend on."""
    rows = server.query("SELECT @@binlog_row_image, @@binlog_row_metadata, @@binlog_checksum, @@binlog_format")
    return tuple(rows[0])


@pytest.mark.mariadb
def test_binlog_files_are_written_into_the_servers_own_directory(mariadb_server: MariaDBServer) -> None:
    first = mariadb_server.current_binlog()
    with mariadb_server.connect() as conn, conn.cursor() as cur:
        cur.execute("CREATE DATABASE IF NOT EXISTS harness_check")
        cur.execute("CREATE TABLE harness_check.t (id INT PRIMARY KEY)")
        cur.execute("INSERT INTO harness_check.t VALUES (1), (2)")
        cur.execute("DROP DATABASE harness_check")
    second = mariadb_server.flush_binary_logs()

    files = mariadb_server.binlog_files()
    assert second != first
    assert files[-2:] == [first, second]
    assert all(not name.endswith(".index") for name in files)
    for path in mariadb_server.binlog_paths():
        assert path.parent == mariadb_server.binlog_dir
        assert path.read_bytes()[:4] == BINLOG_MAGIC
    assert mariadb_server.variable("log_bin_basename") == str(mariadb_server.binlog_dir / "mysql-bin")
    assert b"harness_check" in (mariadb_server.binlog_dir / first).read_bytes()


@pytest.mark.mariadb
def test_stopped_server_leaves_no_process_and_no_listening_port() -> None:
    with MariaDBServer({"binlog_checksum": "NONE"}) as server:
        pid, port = server.pid, server.port
        assert pid is not None and pid_is_alive(pid)
        assert port_is_open(port)
        server.stop()
        assert not pid_is_alive(pid)
        assert not port_is_open(port)
        assert server.pid is None and not server.running
        server.stop()  # stopping twice is harmless
    assert not server.base_dir.exists()


@pytest.mark.mariadb
def test_server_that_cannot_start_raises_with_its_error_log() -> None:
    server = MariaDBServer({"binlog_row_image": "NOT_AN_IMAGE"}, startup_timeout=30)
    try:
        with pytest.raises(MariaDBServerError, match=r"(?s)exited with code .*binlog.row.image"):
            server.start()
        assert not server.running
    finally:
        server.cleanup()


def test_harness_refuses_options_it_manages_itself() -> None:
    with pytest.raises(ValueError, match="port"):
        MariaDBServer({"port": "3306"})


# ------------------------------------------------------------------------------ the skip rule


@dataclass
class FakeItem:
    """Just enough of a pytest item for ``pytest_collection_modifyitems``."""

    marked: bool
    fixturenames: list[str] = field(default_factory=list)
    added: list[Any] = field(default_factory=list)

    def get_closest_marker(self, name: str) -> object | None:
        return object() if self.marked and name == "mariadb" else None

    def add_marker(self, marker: Any) -> None:
        self.added.append(marker)


def modify(items: list[FakeItem]) -> None:
    """Run the plugin's collection hook on fake items."""
    mariadb.pytest_collection_modifyitems(config=None, items=items)  # type: ignore[arg-type]


def test_marked_tests_are_skipped_when_the_skip_variable_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BINLOG_SKIP_MARIADB", "1")
    marked, uses_fixture, plain = FakeItem(True), FakeItem(False, ["mariadb_server"]), FakeItem(False, ["tmp_path"])
    modify([marked, uses_fixture, plain])
    assert [len(item.added) for item in (marked, uses_fixture, plain)] == [1, 1, 0]
    assert marked.added[0].name == "skip"


@pytest.mark.parametrize("value", [None, "", "0", "no"])
def test_marked_tests_run_unless_the_skip_variable_is_one(monkeypatch: pytest.MonkeyPatch, value: str | None) -> None:
    if value is None:
        monkeypatch.delenv("BINLOG_SKIP_MARIADB", raising=False)
    else:
        monkeypatch.setenv("BINLOG_SKIP_MARIADB", value)
    marked = FakeItem(True)
    modify([marked])
    assert marked.added == []


def test_missing_server_binaries_fail_with_install_advice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BINLOG_SKIP_MARIADB", raising=False)
    monkeypatch.setattr(mariadb, "find_mariadbd", lambda: None)
    with pytest.raises(pytest.fail.Exception, match="mariadb-server"):
        mariadb.require_mariadb()


def test_missing_server_binaries_are_skipped_only_with_the_skip_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BINLOG_SKIP_MARIADB", "1")
    monkeypatch.setattr(mariadb, "find_mariadbd", lambda: None)
    with pytest.raises(pytest.skip.Exception):
        mariadb.require_mariadb()
