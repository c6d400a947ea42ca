"""A Spark standalone cluster on loopback for tests: one master and its workers, each a separate
JVM started from the installed pyspark (``bin/spark-class``), stopped again with its process group.

    with StandaloneCluster(tmp_path, workers=2) as cluster:
        subprocess.run([".venv/bin/spark-submit", "--master", cluster.master_url, ...])

Every daemon works below the folder it is given (work, local and log folders), listens on
127.0.0.1 only with ports the operating system chooses, and runs with an environment stripped of
the Python settings of the process that starts it (``PYTHONPATH``, ``PYSPARK_*``, ``VIRTUAL_ENV``):
its executors see only what an application ships them, as on a real cluster.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
from pathlib import Path
from types import TracebackType

import pyspark

STRIPPED_ENV = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "SPARK_HOME", "SPARK_CONF_DIR")
"""Variables the daemons do not inherit (with every ``PYSPARK_*`` and ``BINLOG_*`` one)."""

_MASTER_URL = re.compile(r"Starting Spark master at (spark://[0-9.]+:[0-9]+)")
_REGISTERED = "Successfully registered with master"


class ClusterError(RuntimeError):
    """A daemon of the cluster did not come up."""


class StandaloneCluster:
    """A master and ``workers`` workers (``cores`` cores and ``memory`` each) below ``folder``."""

    def __init__(
        self, folder: Path, *, workers: int = 2, cores: int = 1, memory: str = "1g", timeout: float = 120
    ) -> None:
        self.folder = folder
        self.workers = workers
        self.cores = cores
        self.memory = memory
        self.timeout = timeout
        self.master_url = ""
        self.processes: list[subprocess.Popen[bytes]] = []
        self.spark_class = str(Path(pyspark.__file__).parent / "bin" / "spark-class")

    def daemon_env(self, name: str) -> dict[str, str]:
        """The environment of daemon ``name``: loopback, small daemon heaps, its own local folder."""
        env = {
            key: value
            for key, value in os.environ.items()
            if key not in STRIPPED_ENV and not key.startswith(("PYSPARK_", "BINLOG_"))
        }
        local = self.folder / name / "local"
        local.mkdir(parents=True, exist_ok=True)
        env.update(
            SPARK_LOCAL_IP="127.0.0.1",
            SPARK_LOCAL_DIRS=str(local),
            SPARK_DAEMON_MEMORY="256m",
            SPARK_LOG_DIR=str(self.folder / name),
            MALLOC_ARENA_MAX="2",
        )
        return env

    def _start(self, name: str, args: list[str]) -> Path:
        log = self.folder / name / "daemon.log"
        env = self.daemon_env(name)
        with log.open("wb") as out:
            process = subprocess.Popen(
                [self.spark_class, *args],
                cwd=self.folder / name,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: stopped with its executors
            )
        self.processes.append(process)
        return log

    def _wait_for(self, log: Path, pattern: re.Pattern[str] | str) -> str:
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            text = log.read_text(encoding="utf-8", errors="replace")
            if isinstance(pattern, str):
                if pattern in text:
                    return pattern
            else:
                match = pattern.search(text)
                if match is not None:
                    return match.group(1)
            if any(process.poll() is not None for process in self.processes):
                break
            time.sleep(0.2)
        raise ClusterError(f"{log.parent.name} did not come up within {self.timeout:.0f}s:\n{text[-4000:]}")

    def start(self, *, wait: bool = True) -> StandaloneCluster:
        """Start the master, then the workers; with ``wait``, return once every worker has registered
        (else at once: an application submitted meanwhile gets its executors as workers register)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        try:
            master_log = self._start(
                "master",
                ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", "0", "--webui-port", "0"],
            )
            self.master_url = self._wait_for(master_log, _MASTER_URL)
            logs = []
            for number in range(1, self.workers + 1):
                name = f"worker-{number}"
                work = self.folder / name / "work"
                work.mkdir(parents=True, exist_ok=True)
                args = ["org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--port", "0"]
                args += ["--webui-port", "0", "--cores", str(self.cores), "--memory", self.memory]
                args += ["--work-dir", str(work), self.master_url]
                logs.append(self._start(name, args))
            for log in logs if wait else []:
                self._wait_for(log, _REGISTERED)
        except BaseException:
            self.stop()
            raise
        return self

    def registered_workers(self) -> int:
        """Workers that have registered with the master so far."""
        logs = self.folder.glob("worker-*/daemon.log")
        return sum(_REGISTERED in log.read_text(encoding="utf-8", errors="replace") for log in logs)

    def executor_logs(self) -> dict[str, str]:
        """The stderr of every executor the workers ran, by ``worker/app/executor`` path."""
        logs: dict[str, str] = {}
        for path in sorted(self.folder.glob("worker-*/work/*/*/stderr")):
            logs[str(path.relative_to(self.folder).parent)] = path.read_text(encoding="utf-8", errors="replace")
        return logs

    def stop(self) -> None:
        """Stop every daemon with its process group (TERM, then KILL after ten seconds)."""
        for process in reversed(self.processes):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        for process in reversed(self.processes):
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
            with contextlib.suppress(ProcessLookupError):  # executors left in the group
                os.killpg(process.pid, signal.SIGKILL)
        self.processes.clear()

    def __enter__(self) -> StandaloneCluster:
        return self if self.processes else self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
