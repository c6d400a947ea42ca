"""Peak resident memory of a Spark job: this Python driver, its JVM and the Python workers the JVM forks.

``Sampler`` is a thread that walks ``/proc`` every ``interval`` seconds from this process down
and keeps the largest resident set size seen per group (Linux only), and the largest sum of the
processes' proportional set sizes (PSS: a page shared by N processes counts 1/N in each, so the
sum is the memory the job holds, where the RSS sum counts a shared page once per process).

A process the JVM has just forked to start a Python worker carries the JVM's command line and
shares all of its pages until it execs: it is not counted (its RSS would count the JVM twice).
Usage::

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


def _kib_field(path: str, name: str) -> int:
    """Bytes of the ``name: N kB`` line of a ``/proc`` file (0 when the process is gone)."""
    try:
        with open(path) as lines:
            for line in lines:
                if line.startswith(name):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _rss(pid: int) -> int:
    return _kib_field(f"/proc/{pid}/status", "VmRSS:")


def _pss(pid: int) -> int:
    return _kib_field(f"/proc/{pid}/smaps_rollup", "Pss:")


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
    total_pss: int = 0
    """Largest sum of the processes' proportional set sizes (driver, JVM, workers)."""
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
            pss = _pss(me)
            stack = [(child, "") for child in tree.get(me, [])]
            while stack:
                pid, parent_command = stack.pop()
                command = _cmdline(pid)
                java = "java" in command.split(" ", 1)[0]
                if java and command == parent_command:  # the JVM forked, not yet exec'd: its pages
                    continue
                if java:
                    jvm += _rss(pid)
                    pss += _pss(pid)
                elif "python" in command:
                    workers += _rss(pid)
                    pss += _pss(pid)
                    self.peaks.worker_pids.add(pid)
                stack.extend((child, command) for child in tree.get(pid, []))
            driver = _rss(me)
            p = self.peaks
            p.jvm, p.workers, p.driver_python = max(p.jvm, jvm), max(p.workers, workers), max(p.driver_python, driver)
            p.total = max(p.total, jvm + workers + driver)
            p.total_pss = max(p.total_pss, pss)
            p.samples += 1
            self._stop_event.wait(self.interval)

    def stop(self) -> Peaks:
        self._stop_event.set()
        self.join()
        return self.peaks
