"""A private MariaDB server for tests and fixture generation, and the pytest fixtures around it.

``MariaDBServer`` initialises its own data directory, starts ``mariadbd`` on 127.0.0.1 with a free
port, its own socket, pid file and binary-log directory, and stops it again by pid::

    with MariaDBServer({"binlog_row_image": "MINIMAL"}) as server:
        with server.connect() as conn, conn.cursor() as cur:
            cur.execute("CREATE DATABASE d")
        server.flush_binary_logs()
        print(server.binlog_paths())

Pytest side: tests that need a server carry ``@pytest.mark.mariadb`` and use the session-scoped
``mariadb_factory`` (start a server with given binlog options) or ``mariadb_server`` (one shared
server with FULL row image, FULL metadata and CRC32 checksums). They are skipped only when
``BINLOG_SKIP_MARIADB=1`` is set; without that variable a missing ``mariadbd`` is a test failure.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, TypeAlias

import pymysql
import pytest

#: A PyMySQL connection (the package ships no type information, so this is ``Any`` to mypy).
Connection: TypeAlias = Any

SKIP_ENV_VAR = "BINLOG_SKIP_MARIADB"
MARIADB_MARKER = "mariadb"
SERVER_FIXTURES = frozenset({"mariadb_factory", "mariadb_server"})

#: Options of the shared ``mariadb_server`` fixture.
DEFAULT_BINLOG_OPTIONS: dict[str, str] = {
    "binlog_row_image": "FULL",
    "binlog_row_metadata": "FULL",
    "binlog_checksum": "CRC32",
}

#: Server settings that keep a throw-away server small and quick; callers may override any of them.
BASE_SERVER_OPTIONS: dict[str, str] = {
    "character_set_server": "utf8mb4",
    "collation_server": "utf8mb4_general_ci",
    "innodb_buffer_pool_size": "32M",
    "innodb_log_file_size": "16M",
    "innodb_flush_log_at_trx_commit": "2",
    "innodb_doublewrite": "0",
    "sync_binlog": "0",
    "performance_schema": "OFF",
    "skip_name_resolve": "ON",
    "max_connections": "50",
}

#: Settings the server object owns; passing them as options is an error.
RESERVED_OPTIONS = frozenset(
    {
        "datadir",
        "port",
        "socket",
        "bind_address",
        "pid_file",
        "log_bin",
        "log_error",
        "server_id",
        "binlog_format",
        "user",
        "tmpdir",
        "log_bin_index",
    }
)

_MAX_SOCKET_PATH = 100  # sun_path holds 108 bytes on Linux; keep a margin
_PORT_IN_USE_MARKERS = ("Do you already have another server running", "Address already in use")


class MariaDBServerError(RuntimeError):
    """The private server could not be installed, started or stopped; the message carries its log."""


def find_program(name: str, *fallback_dirs: str) -> str | None:
    """Return the path of ``name`` on ``PATH`` or in one of ``fallback_dirs``, else ``None``."""
    found = shutil.which(name)
    if found:
        return found
    for directory in fallback_dirs:
        candidate = Path(directory) / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def find_mariadbd() -> str | None:
    """Return the path of the ``mariadbd`` server binary, if installed."""
    return find_program("mariadbd", "/usr/sbin", "/usr/libexec", "/usr/local/mysql/bin")


def find_install_db() -> str | None:
    """Return the path of ``mariadb-install-db``, if installed."""
    return find_program("mariadb-install-db", "/usr/bin", "/usr/local/mysql/scripts")


def find_mariadb_binlog() -> str | None:
    """Return the path of the ``mariadb-binlog`` dump tool, if installed."""
    return find_program("mariadb-binlog", "/usr/bin", "/usr/local/mysql/bin")


def missing_server_message() -> str:
    """Explain how to get a MariaDB server for the ``mariadb`` tests."""
    return (
        "MariaDB server binaries not found (need mariadbd and mariadb-install-db). "
        "Install Debian's `mariadb-server` and `mariadb-client` packages "
        "(apt-get install mariadb-server mariadb-client), "
        f"or set {SKIP_ENV_VAR}=1 to skip the tests marked `{MARIADB_MARKER}`."
    )


def skip_requested() -> bool:
    """True when the environment asks to skip every MariaDB-backed test."""
    return os.environ.get(SKIP_ENV_VAR, "").strip().lower() in {"1", "true", "yes"}


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that is free right now (never 3306)."""
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
        if port != 3306:
            return port


def port_is_open(port: int, host: str = "127.0.0.1") -> bool:
    """True when something accepts TCP connections on ``host:port``."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


def pid_is_alive(pid: int) -> bool:
    """True when a process with this pid exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    stat = Path(f"/proc/{pid}/stat")
    with contextlib.suppress(OSError):
        # field 3 is the state; a zombie has exited already
        return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
    return True


def _option_flag(name: str, value: str) -> str:
    """Turn ``binlog_row_image``/``MINIMAL`` into ``--binlog-row-image=MINIMAL``."""
    return f"--{name.replace('_', '-')}={value}"


def _tail(path: Path, lines: int = 40) -> str:
    """The last ``lines`` lines of a text file, or a note that it does not exist."""
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        return f"<cannot read {path}: {exc}>"
    return "\n".join(text.splitlines()[-lines:])


class MariaDBServer:
    """A private ``mariadbd`` with row-based binary logging, started and stopped by this object.

    ``options`` are extra server settings such as ``{"binlog_row_image": "MINIMAL",
    "binlog_checksum": "NONE", "log_bin_compress": "ON"}``; they are passed as ``--name=value``
    after the harness defaults (``BASE_SERVER_OPTIONS``), so they override them. The data
    directory, binlog directory, socket, pid file and error log live under ``base_dir`` (a new
    temporary directory when not given, removed by ``cleanup()``).
    """

    def __init__(
        self,
        options: Mapping[str, str] | None = None,
        *,
        base_dir: Path | None = None,
        server_id: int = 1,
        binlog_basename: str = "mysql-bin",
        startup_timeout: float = 30.0,
        stop_timeout: float = 30.0,
    ) -> None:
        self.options: dict[str, str] = {name.replace("-", "_"): str(value) for name, value in (options or {}).items()}
        reserved = sorted(RESERVED_OPTIONS.intersection(self.options))
        if reserved:
            raise ValueError(f"options managed by the harness cannot be passed: {reserved}")
        self.server_id = server_id
        self.binlog_basename = binlog_basename
        self.startup_timeout = startup_timeout
        self.stop_timeout = stop_timeout
        self._owns_base_dir = base_dir is None
        self.base_dir = Path(base_dir) if base_dir is not None else Path(tempfile.mkdtemp(prefix="mariadb-"))
        self.datadir = self.base_dir / "data"
        self.binlog_dir = self.base_dir / "binlog"
        self.tmpdir = self.base_dir / "tmp"
        self.error_log = self.base_dir / "mariadbd.err"
        self.console_log = self.base_dir / "mariadbd.out"  # what the server prints before its error log opens
        self.pid_file = self.base_dir / "mariadbd.pid"
        self.socket_path = self._choose_socket_path()
        self.port = 0
        self._process: subprocess.Popen[bytes] | None = None

    # ----------------------------------------------------------------------------- lifecycle

    def _choose_socket_path(self) -> Path:
        """A socket path short enough for ``sun_path``: under ``base_dir`` if it fits."""
        path = self.base_dir / "mariadbd.sock"
        if len(str(path)) <= _MAX_SOCKET_PATH:
            return path
        return Path(tempfile.mkdtemp(prefix="mdb-")) / "mariadbd.sock"

    @property
    def pid(self) -> int | None:
        """The server's process id while it has been started and not yet stopped."""
        return self._process.pid if self._process is not None else None

    @property
    def running(self) -> bool:
        """True while the server process is alive."""
        return self._process is not None and self._process.poll() is None

    def server_args(self) -> list[str]:
        """The full ``mariadbd`` command line for the current port."""
        mariadbd = find_mariadbd()
        if mariadbd is None:
            raise MariaDBServerError(missing_server_message())
        settings = dict(BASE_SERVER_OPTIONS)
        settings.update(self.options)
        args = [
            mariadbd,
            "--no-defaults",
            "--user=root",
            f"--datadir={self.datadir}",
            f"--tmpdir={self.tmpdir}",
            "--bind-address=127.0.0.1",
            f"--port={self.port}",
            f"--socket={self.socket_path}",
            f"--pid-file={self.pid_file}",
            f"--log-error={self.error_log}",
            f"--log-bin={self.binlog_dir / self.binlog_basename}",
            f"--log-bin-index={self.binlog_dir / (self.binlog_basename + '.index')}",
            f"--server-id={self.server_id}",
            "--binlog-format=ROW",
        ]
        args.extend(_option_flag(name, value) for name, value in settings.items())
        return args

    def _install(self) -> None:
        """Create the data directory with ``mariadb-install-db`` (root over TCP, no password)."""
        install_db = find_install_db()
        if install_db is None:
            raise MariaDBServerError(missing_server_message())
        for directory in (self.datadir, self.binlog_dir, self.tmpdir):
            directory.mkdir(parents=True, exist_ok=True)
        cmd = [
            install_db,
            "--no-defaults",
            "--user=root",
            f"--datadir={self.datadir}",
            # the bootstrap server's temporary tables in the server's own folder: a server starting
            # meanwhile removes the leftover '#sql*' files of its tmpdir, /tmp by default
            f"--tmpdir={self.tmpdir}",
            "--auth-root-authentication-method=normal",
            "--skip-test-db",
            "--skip-name-resolve",
            f"--innodb-log-file-size={self.options.get('innodb_log_file_size', '16M')}",
            f"--innodb-buffer-pool-size={self.options.get('innodb_buffer_pool_size', '32M')}",
        ]
        result = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=120)
        if result.returncode != 0:
            raise MariaDBServerError(
                f"mariadb-install-db failed with exit code {result.returncode}:\n"
                f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
            )

    def start(self) -> MariaDBServer:
        """Install the data directory (first time), start the server and wait until it accepts logins."""
        if self.running:
            return self
        if not (self.datadir / "mysql").is_dir():
            self._install()
        last_error = ""
        for _attempt in range(3):
            self.port = free_port()
            self.error_log.unlink(missing_ok=True)
            with self.console_log.open("wb") as console:
                self._process = subprocess.Popen(
                    self.server_args(),
                    stdin=subprocess.DEVNULL,
                    stdout=console,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            try:
                self._wait_until_ready()
                return self
            except MariaDBServerError as exc:
                last_error = str(exc)
                self._terminate()
                if not any(marker in last_error for marker in _PORT_IN_USE_MARKERS):
                    raise
        raise MariaDBServerError(f"could not find a free port for mariadbd:\n{last_error}")

    def _wait_until_ready(self) -> None:
        """Poll logins until the server answers, it exits, or ``startup_timeout`` passes."""
        deadline = time.monotonic() + self.startup_timeout
        last_exc: Exception | None = None
        while time.monotonic() < deadline:
            assert self._process is not None
            code = self._process.poll()
            if code is not None:
                raise MariaDBServerError(f"mariadbd exited with code {code} during startup;\n{self._logs()}")
            try:
                conn = self._raw_connect(connect_timeout=1)
            except pymysql.err.Error as exc:
                last_exc = exc
                time.sleep(0.1)
                continue
            conn.close()
            return
        raise MariaDBServerError(
            f"mariadbd did not accept connections on port {self.port} within {self.startup_timeout:.0f}s "
            f"(last error: {last_exc});\n{self._logs()}"
        )

    def _logs(self) -> str:
        """The tails of the server's console output and error log, for error messages."""
        parts = []
        for path in (self.console_log, self.error_log):
            if path.exists() and path.stat().st_size:
                parts.append(f"--- {path}:\n{_tail(path)}")
        return "\n".join(parts) or f"(no output in {self.console_log} or {self.error_log})"

    def _terminate(self) -> None:
        """SIGTERM the server, wait ``stop_timeout``, then SIGKILL; safe to call twice."""
        process = self._process
        if process is None:
            return
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=self.stop_timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(process.pid, signal.SIGKILL)
                process.wait(timeout=30)
        self._process = None

    def stop(self) -> None:
        """Stop the server by its pid (SIGTERM, then SIGKILL after ``stop_timeout``); idempotent.

        The data and binlog directories stay in place so that the files can be copied afterwards.
        """
        self._terminate()

    def cleanup(self) -> None:
        """Stop the server and remove the base directory if this object created it."""
        self.stop()
        if self._owns_base_dir:
            shutil.rmtree(self.base_dir, ignore_errors=True)
        if self.socket_path.parent != self.base_dir:
            shutil.rmtree(self.socket_path.parent, ignore_errors=True)

    def __enter__(self) -> MariaDBServer:
        try:
            return self.start()
        except BaseException:
            self.cleanup()
            raise

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.cleanup()

    def __repr__(self) -> str:
        return f"MariaDBServer(port={self.port}, pid={self.pid}, options={self.options!r})"

    # ----------------------------------------------------------------------------- clients

    def _raw_connect(self, **kwargs: Any) -> Connection:
        """A root connection over TCP with the given PyMySQL arguments."""
        params: dict[str, Any] = {
            "host": "127.0.0.1",
            "port": self.port,
            "user": "root",
            "password": "",
            "charset": "utf8mb4",
            "autocommit": True,
        }
        params.update(kwargs)
        return pymysql.connect(**params)

    def connect(self, database: str | None = None, **kwargs: Any) -> Connection:
        """A new PyMySQL connection as root: utf8mb4, autocommit on, session ``time_zone='+00:00'``.

        Keyword arguments override PyMySQL's connection parameters.
        """
        if not self.running:
            raise MariaDBServerError("the server is not running")
        kwargs.setdefault("init_command", "SET time_zone='+00:00'")
        if database is not None:
            kwargs["database"] = database
        return self._raw_connect(**kwargs)

    def query(self, sql: str, args: Any = None) -> list[tuple[Any, ...]]:
        """Run one statement on a short-lived connection and return its rows."""
        with self.connect() as conn, conn.cursor() as cur:
            cur.execute(sql, args)
            return list(cur.fetchall())

    def variable(self, name: str) -> str | None:
        """The global value of a server variable, e.g. ``variable("binlog_row_image")``."""
        rows = self.query("SELECT @@GLOBAL." + name)
        value = rows[0][0]
        return None if value is None else str(value)

    # ----------------------------------------------------------------------------- binlogs

    def binlog_files(self) -> list[str]:
        """Names of the binlog files, oldest first, as ``SHOW BINARY LOGS`` lists them."""
        return [str(row[0]) for row in self.query("SHOW BINARY LOGS")]

    def binlog_paths(self) -> list[Path]:
        """Paths of the binlog files in ``binlog_dir``, oldest first."""
        return [self.binlog_dir / name for name in self.binlog_files()]

    def current_binlog(self) -> str:
        """The binlog file the server is writing to now."""
        return str(self.query("SHOW MASTER STATUS")[0][0])

    def flush_binary_logs(self) -> str:
        """Close the current binlog file, open the next one and return the new file's name."""
        self.query("FLUSH BINARY LOGS")
        return self.current_binlog()


# --------------------------------------------------------------------------------- pytest plugin

ServerFactory = Callable[..., MariaDBServer]


def _needs_server(item: pytest.Item) -> bool:
    """True for a test that is marked ``mariadb`` or requests a server fixture."""
    if item.get_closest_marker(MARIADB_MARKER) is not None:
        return True
    fixturenames = getattr(item, "fixturenames", ())
    return any(name in SERVER_FIXTURES for name in fixturenames)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip the server-backed tests when, and only when, ``BINLOG_SKIP_MARIADB=1`` is set."""
    if not skip_requested():
        return
    marker = pytest.mark.skip(reason=f"{SKIP_ENV_VAR}=1: MariaDB-backed tests are skipped")
    for item in items:
        if _needs_server(item):
            item.add_marker(marker)


def require_mariadb() -> None:
    """Skip if ``BINLOG_SKIP_MARIADB=1``; fail with install advice if the binaries are missing."""
    if skip_requested():
        pytest.skip(f"{SKIP_ENV_VAR}=1: MariaDB-backed tests are skipped")
    if find_mariadbd() is None or find_install_db() is None:
        pytest.fail(missing_server_message(), pytrace=False)


@pytest.fixture(scope="session")
def mariadb_factory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerFactory]:
    """Start private MariaDB servers on demand: ``mariadb_factory({"binlog_row_image": "MINIMAL"})``.

    Every server gets its own directory under pytest's temporary directory and is stopped at the
    end of the test session.
    """
    require_mariadb()
    servers: list[MariaDBServer] = []

    def start(options: Mapping[str, str] | None = None, **kwargs: Any) -> MariaDBServer:
        base_dir = tmp_path_factory.mktemp("mariadb")
        kwargs.setdefault("server_id", len(servers) + 1)
        server = MariaDBServer(options, base_dir=base_dir, **kwargs)
        servers.append(server)
        server.start()
        return server

    yield start

    errors: list[str] = []
    for server in servers:
        try:
            server.cleanup()
        except Exception as exc:
            errors.append(f"{server!r}: {exc}")
    if errors:
        raise MariaDBServerError("could not stop every MariaDB server:\n" + "\n".join(errors))


@pytest.fixture(scope="session")
def mariadb_server(mariadb_factory: ServerFactory) -> MariaDBServer:
    """One server shared by the session: ROW format, FULL row image, FULL metadata, CRC32 checksums.

    Tests share its binlog: call ``flush_binary_logs()`` before and after the statements under test
    and read only the file(s) written in between. Tests that change global settings start their
    own server with ``mariadb_factory`` instead.
    """
    return mariadb_factory(dict(DEFAULT_BINLOG_OPTIONS))
