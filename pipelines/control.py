"""What a run owns while it works: the lakehouse lock, a scratch folder, and how it stops when told to.

**One writer per storage root.**  A run holds ``<storage.root>/_state/lock`` for its whole
length: a file created atomically (``O_CREAT | O_EXCL`` on a local root, a non-overwriting
create of the Hadoop file system otherwise) holding the run id, host, process id, start time and
command.  A second run finds it and stops at once (:class:`Locked`, exit code 5) with one line
naming the holder.  A lock is stale -- and taken over -- when its process is gone (same host) or
it is older than ``max_age`` (another host: the process cannot be asked).

**Scratch.**  Spark's local folders (shuffle and cached blocks, ``blockmgr-*``, ``spark-*``) of
a run live in ``<scratch>/<run id>`` (:func:`scratch_root`), with an ``owner.json``; a run
removes the folders of runs whose process is gone (a run killed with SIGKILL leaves its scratch
behind, the next run cleans it).

**Interrupts.**  :class:`Interrupts` turns SIGINT and SIGTERM into :class:`Interrupted` in the
main thread: Spark's running jobs are cancelled (its logging silenced first, so no Java traces
reach the terminal) and the run stops where it is; every write is one Delta commit, so a stopped
run leaves whole versions, and the next run completes what it did not.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any

from conf.models import AppConfig
from conf.paths import local_path_of

LOCK_NAME = "lock"
STATE_FOLDER = "_state"
SCRATCH_FOLDER = "_scratch"
OWNER_FILE = "owner.json"
MAX_LOCK_AGE = 7 * 24 * 3600.0
"""Seconds after which a lock held from another host is taken as stale."""
UNREADABLE_GRACE = 1.0
"""Seconds a lock file that does not parse is given to become readable before it is taken over."""


class Locked(RuntimeError):
    """Another run holds the lakehouse."""


class Interrupted(BaseException):
    """The run was told to stop (SIGINT or SIGTERM).

    Like ``KeyboardInterrupt`` it is no error: ``except Exception`` (in Py4J's socket code too)
    lets it through, so a call into the JVM it lands in is abandoned, not retried."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        """128 + the signal number, as shells report it (130 for SIGINT, 143 for SIGTERM)."""
        return 128 + self.signum


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _stale(holder: dict[str, Any], max_age: float) -> bool:
    """Whether a lock's holder is gone (same host: its process; elsewhere: only its age tells)."""
    started = holder.get("started_at_epoch")
    too_old = isinstance(started, (int, float)) and time.time() - started > max_age
    if holder.get("host") == socket.gethostname() and isinstance(holder.get("pid"), int):
        return not _alive(holder["pid"]) or too_old
    return too_old


def describe(holder: dict[str, Any]) -> str:
    """``run 3f2a... (pid 4711 on host db-etl, started 2026-11-25T10:00:00+00:00: binlog-lakehouse run)``."""
    return (
        f"run {holder.get('run_id', '?')} (pid {holder.get('pid', '?')} on host {holder.get('host', '?')}, "
        f"started {holder.get('started_at', '?')}: {holder.get('command', '?')})"
    )


class LocalFiles:
    """The lock's file operations on a local folder."""

    def __init__(self, folder: str) -> None:
        self.folder = folder

    def create(self, name: str, text: str) -> bool:
        """Create ``name`` with ``text`` unless it exists (atomically); False when it exists."""
        os.makedirs(self.folder, exist_ok=True)
        try:
            fd = os.open(os.path.join(self.folder, name), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        return True

    def put(self, name: str, text: str) -> None:
        """Write ``name`` with ``text``, replacing it whole (a reader sees the old or the new text)."""
        os.makedirs(self.folder, exist_ok=True)
        target = os.path.join(self.folder, name)
        partial = f"{target}.{os.getpid()}.partial"
        Path(partial).write_text(text, encoding="utf-8")
        os.replace(partial, target)

    def read(self, name: str) -> str | None:
        try:
            return Path(self.folder, name).read_text(encoding="utf-8")
        except FileNotFoundError:
            return None

    def delete(self, name: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(self.folder, name))


class HadoopFiles:
    """The lock's file operations through the session's Hadoop file system (object stores, HDFS)."""

    def __init__(self, spark: Any, folder: str) -> None:
        self.jvm = spark.sparkContext._jvm
        self.conf = spark.sparkContext._jsc.hadoopConfiguration()
        self.folder = folder.rstrip("/")

    def _path(self, name: str) -> tuple[Any, Any]:
        path = self.jvm.org.apache.hadoop.fs.Path(f"{self.folder}/{name}")
        return path, path.getFileSystem(self.conf)

    def create(self, name: str, text: str) -> bool:
        path, fs = self._path(name)
        try:
            out = fs.create(path, False)
        except Exception as exc:
            if "FileAlreadyExists" in str(exc) or fs.exists(path):
                return False
            raise
        try:
            out.write(bytearray(text.encode("utf-8")))
        finally:
            out.close()
        return True

    def put(self, name: str, text: str) -> None:
        """Write ``name`` with ``text``, replacing it (one object written whole on object stores)."""
        path, fs = self._path(name)
        out = fs.create(path, True)
        try:
            out.write(bytearray(text.encode("utf-8")))
        finally:
            out.close()

    def read(self, name: str) -> str | None:
        path, fs = self._path(name)
        if not fs.exists(path):
            return None
        stream = fs.open(path)
        try:
            return str(self.jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8"))
        finally:
            stream.close()

    def delete(self, name: str) -> None:
        path, fs = self._path(name)
        fs.delete(path, False)


Files = LocalFiles | HadoopFiles


@dataclass
class Lock:
    """The lakehouse lock (see the module doc); a context manager."""

    files: Files
    run_id: str
    command: str
    max_age: float = MAX_LOCK_AGE
    held: bool = False

    def acquire(self) -> None:
        """Take the lock, or raise :class:`Locked` naming its holder."""
        now = datetime.now(UTC)
        record = {
            "run_id": self.run_id,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "started_at": now.isoformat(timespec="seconds"),
            "started_at_epoch": now.timestamp(),
            "command": self.command,
        }
        text = json.dumps(record)
        for _ in range(2):
            if self.files.create(LOCK_NAME, text):
                self.held = True
                return
            holder = self.holder()
            if holder == {}:  # being written this instant, or left half-written by a killed run
                time.sleep(UNREADABLE_GRACE)
                holder = self.holder() or None
            if holder is not None and not _stale(holder, self.max_age):
                raise Locked(f"the lakehouse is in use by {describe(holder)}")
            self.files.delete(LOCK_NAME)  # stale (or unreadable): take it over
        raise Locked("the lakehouse lock could not be taken (another run took it at the same moment)")

    def holder(self) -> dict[str, Any] | None:
        """What the lock file says of its holder (None: no lock, or unreadable)."""
        text = self.files.read(LOCK_NAME)
        if text is None:
            return None
        try:
            data = json.loads(text)
        except ValueError:
            return {}
        return data if isinstance(data, dict) else {}

    def release(self) -> None:
        """Give the lock back, if this run still holds it."""
        if self.held:
            holder = self.holder()
            if holder is not None and holder.get("run_id") == self.run_id:
                self.files.delete(LOCK_NAME)
            self.held = False

    def __enter__(self) -> Lock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def local_state_folder(cfg: AppConfig) -> str | None:
    """``<storage.root>/_state`` when the root is a local folder, else None."""
    root = local_path_of(cfg.storage.root)
    return None if root is None else os.path.join(root, STATE_FOLDER)


def state_files(root: str, spark: Any = None) -> Files:
    """The small files of ``<root>/_state`` (lock, unfinished writes): local ones directly, others
    through the session's Hadoop file system."""
    local = local_path_of(root)
    if local is not None:
        return LocalFiles(os.path.join(local, STATE_FOLDER))
    if spark is None:
        raise ValueError(f"{root} is on a Hadoop file system: its state files need a Spark session")
    return HadoopFiles(spark, f"{root.rstrip('/')}/{STATE_FOLDER}")


def lock_for(cfg: AppConfig, run_id: str, command: str, spark: Any = None) -> Lock:
    """The lock of the lakehouse of ``cfg`` (a local root needs no Spark session)."""
    return Lock(state_files(cfg.storage.root, spark), run_id, command)


# -- before any work -------------------------------------------------------------------------


class Unusable(ValueError):
    """A setting names something the run cannot use (one line: the setting and the problem)."""


def check_storage(cfg: AppConfig) -> None:
    """A local ``storage.root`` can be created and written (a file written and removed in ``_state``)."""
    folder = local_state_folder(cfg)
    if folder is None:
        return
    try:
        os.makedirs(folder, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=folder, prefix=".probe-", delete=True)  # noqa: SIM115
        probe.close()
    except OSError as exc:
        raise Unusable(f"storage.root: {cfg.storage.root} cannot be written ({exc.strerror or exc})") from exc


DERBY_LOCK = os.path.join("metastore_db", "dbex.lck")
"""The file an embedded Derby database holds a lock on while a JVM has it open."""


def check_metastore(cfg: AppConfig) -> None:
    """The embedded Derby metastore (``spark.catalog: hive``) is not open in another process.

    Derby locks ``metastore_db/dbex.lck`` (an fcntl lock) while a JVM has the database open; a
    lock that cannot be taken here means another session (a run, spark-sql, a notebook) holds it.
    Only asked before this process starts its own JVM (a process cannot see its own locks).
    """
    if cfg.spark.catalog != "hive" or cfg.spark.metastore_dir is None:
        return
    import fcntl  # noqa: PLC0415 (POSIX only)

    path = os.path.join(cfg.spark.metastore_dir, DERBY_LOCK)
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError:
        return  # no database yet, or not readable: Derby will say
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        raise Unusable(
            f"spark.metastore_dir: the Derby metastore in {cfg.spark.metastore_dir} is open in another process "
            "(a run, spark-sql or a notebook): stop it, or use spark.catalog: in-memory"
        ) from exc
    finally:
        os.close(fd)


def preflight(cfg: AppConfig) -> None:
    """What can be checked before Spark starts: the input lists files, the storage root can be
    written, the metastore is free; raises :class:`Unusable` (or the input's ``InputError``)."""
    from pipelines.bronze.discover import check_input  # noqa: PLC0415 (pulls in pyspark)

    check_input(cfg.input)
    check_storage(cfg)
    check_metastore(cfg)


# -- scratch ---------------------------------------------------------------------------------


def scratch_root(cfg: AppConfig) -> str:
    """Where runs keep Spark's local folders: ``spark.scratch_dir``, else ``<storage.root>/_scratch``
    for a local root, else ``<system temp>/binlog-lakehouse``."""
    if cfg.spark.scratch_dir is not None:
        return cfg.spark.scratch_dir
    root = local_path_of(cfg.storage.root)
    if root is not None:
        return os.path.join(root, SCRATCH_FOLDER)
    return os.path.join(tempfile.gettempdir(), "binlog-lakehouse")


def sweep_scratch(root: str) -> list[str]:
    """Remove the scratch folders of runs whose process is gone (on this host); return them."""
    removed: list[str] = []
    if not os.path.isdir(root):
        return removed
    for entry in os.scandir(root):
        if not entry.is_dir(follow_symlinks=False):
            continue
        owner = Path(entry.path, OWNER_FILE)
        try:
            data = json.loads(owner.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = None
        if isinstance(data, dict):
            pid = data.get("pid")
            gone = data.get("host") == socket.gethostname() and isinstance(pid, int) and not _alive(pid)
        else:  # no owner record: a folder of another tool, or a run killed while creating it
            gone = time.time() - entry.stat(follow_symlinks=False).st_mtime > 3600
        if gone:
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(entry.path)
    return removed


@contextlib.contextmanager
def scratch_folder(cfg: AppConfig, run_id: str) -> Iterator[str]:
    """This run's scratch folder (created with its owner record, removed at the end), after
    sweeping what runs killed before left behind."""
    root = scratch_root(cfg)
    sweep_scratch(root)
    folder = os.path.join(root, run_id)
    os.makedirs(folder, exist_ok=True)
    Path(folder, OWNER_FILE).write_text(
        json.dumps({"run_id": run_id, "pid": os.getpid(), "host": socket.gethostname()}), encoding="utf-8"
    )
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# -- interrupts ------------------------------------------------------------------------------


class Interrupts:
    """SIGINT and SIGTERM raise :class:`Interrupted` in the main thread while the block runs,
    after ``on_signal`` (cancel Spark's jobs) had its say; a second signal is not handled twice."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self, on_signal: Callable[[int], None] | None = None) -> None:
        self.on_signal = on_signal
        self.received: int | None = None
        self._previous: dict[int, Any] = {}

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.received is not None:
            return
        self.received = signum
        if self.on_signal is not None:
            # The main thread may be inside a call into the JVM: ``on_signal`` talks to Spark from a
            # thread of its own (its own Py4J connection), never re-entering the interrupted one.
            threading.Thread(target=self._notify, args=(signum,), name="on-signal", daemon=True).start()
        raise Interrupted(signum)

    def _notify(self, signum: int) -> None:
        assert self.on_signal is not None
        with contextlib.suppress(Exception):
            self.on_signal(signum)

    def __enter__(self) -> Interrupts:
        for signum in self.SIGNALS:
            with contextlib.suppress(ValueError):  # not the main thread: signals stay as they are
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def reclaim(self) -> None:
        """Handle the signals again after something took them over meanwhile (a new
        SparkContext installs its own SIGINT handler); what ``__exit__`` restores is unchanged."""
        for signum in self._previous:
            with contextlib.suppress(ValueError):
                signal.signal(signum, self._handle)

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        for signum, previous in self._previous.items():
            with contextlib.suppress(ValueError):
                signal.signal(signum, previous)
        self._previous.clear()


__all__ = [
    "Interrupted",
    "Interrupts",
    "Lock",
    "Locked",
    "Unusable",
    "check_metastore",
    "check_storage",
    "describe",
    "local_state_folder",
    "lock_for",
    "preflight",
    "scratch_folder",
    "scratch_root",
    "state_files",
    "sweep_scratch",
]
