"""Peak resident memory of a Spark job: this Python driver, its JVM and the Python workers the JVM forks.

``Sampler`` is a thread that walks ``/proc`` every ``interval`` seconds from this process down
and keeps the largest resident set size seen per group (Linux only)::

    sampler = Sampler()
    sampler.start()
    ...  # the Spark work
    peaks = sampler.stop()
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        tree.setdefault(int(fields[1]), []).append(int(entry))
    return tree


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


@dataclass
class Peaks:
    """Largest resident set sizes seen, in bytes."""

    jvm: int = 0
    workers: int = 0
    driver_python: int = 0
    total: int = 0
    samples: int = 0
    worker_pids: set[int] = field(default_factory=set)


class Sampler(threading.Thread):
    """Samples the RSS of this process, its JVM and the JVM's Python workers until stopped."""

    def __init__(self, interval: float = 0.2) -> None:
        super().__init__(daemon=True)
        self.interval = interval
        self.peaks = Peaks()
        self._stop_event = threading.Event()

    def run(self) -> None:
        me = os.getpid()
        while not self._stop_event.is_set():
            tree = _children()
            jvm = workers = 0
            stack = list(tree.get(me, []))
            while stack:
                pid = stack.pop()
                command = _cmdline(pid)
                if "java" in command.split(" ", 1)[0]:
                    jvm += _rss(pid)
                elif "python" in command:
                    workers += _rss(pid)
                    self.peaks.worker_pids.add(pid)
                stack.extend(tree.get(pid, []))
            driver = _rss(me)
            p = self.peaks
            p.jvm, p.workers, p.driver_python = max(p.jvm, jvm), max(p.workers, workers), max(p.driver_python, driver)
            p.total = max(p.total, jvm + workers + driver)
            p.samples += 1
            self._stop_event.wait(self.interval)

    def stop(self) -> Peaks:
        self._stop_event.set()
        self.join()
        return self.peaks
