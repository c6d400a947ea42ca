"""Progress in both senses: which files a layer still has to (re)build, and what a running stage is doing.

**Incremental state.**  Bronze's ``binlog_files`` row of a file carries the ``run_id`` of the run
that last (re)wrote the file's events.  Silver and gold record in the bookkeeping table
``_state/progress`` (one row per layer and file) the upstream state they built the file from:
silver the bronze ``run_id``, gold the silver build's ``run_id``.  A file is pending for a layer
when its upstream state differs from what the layer recorded (or the layer must rebuild it:
silver's schema history changed under it).  A layer rebuilds a pending file's rows completely
(``replace`` on ``file``) and records its progress afterwards, so a run killed anywhere leaves
the file pending and the re-run writes the same rows again: nothing is lost, nothing doubles.

**Fresh files are appended.**  Replacing rows is the dear way to write Delta (the table's files
are searched for rows to delete first); appending is one cheap commit.  A stage appends the rows
of files that no table of its layer can hold rows of yet: files the layer has never recorded
(:meth:`LakeState.fresh`) and that no unfinished write names.  Before a stage writes, it names
its files in ``_state/unfinished.json`` (:meth:`LakeState.begin`); once its progress is recorded
it takes them out again (:meth:`LakeState.finish`).  A run killed between the two leaves them
named, so the next run replaces their rows instead of appending them a second time.

:class:`LakeState` holds ``binlog_files`` and the progress rows for one run: read once, kept up
to date by the stages as they write (one run owns the lakehouse at a time).

**Progress lines.** :class:`SparkProgress` is a context manager that, while a stage runs, polls
Spark's status tracker every few seconds on a background thread and reports the active jobs and
stages with their tasks done and total (Spark's own console progress bar is off: see
``pipelines/session.py``)::

    with SparkProgress(spark.sparkContext.statusTracker(), say, every=10.0):
        ...
    # say("Spark job 12: stage 31 (mapInArrow at stage.py:98) 3/8 tasks, 2 running")

It says nothing when the status has not changed since its last line, nor when the block ends
before the first interval.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Protocol

from pipelines.control import Files, state_files
from pipelines.storage import Lakehouse, Write
from pipelines.tables import BINLOG_FILES, PROGRESS, Layer

UNFINISHED = "unfinished.json"
"""``_state`` file naming, per layer, the files a stage is writing (see the module doc)."""


def quote_literal(value: str) -> str:
    """A SQL string literal."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def file_predicate(files: Iterable[str], column: str = "file") -> str:
    """A SQL predicate selecting rows of ``files`` (for replacing their rows)."""
    quoted = ", ".join(quote_literal(f) for f in sorted(files))
    return f"`{column}` IN ({quoted})" if quoted else "false"


@dataclass
class LakeState:
    """``binlog_files`` and ``_state/progress`` as of now, for one run (read once, updated on write)."""

    lake: Lakehouse
    _files: dict[str, dict[str, Any]] | None = None
    _progress: dict[tuple[str, str], dict[str, Any]] | None = None
    counts: dict[str, int] = field(default_factory=dict)
    listed: list[str] | None = None
    """The input files bronze listed in this run (None: bronze did not run)."""
    _unfinished: dict[str, set[str]] | None = None
    """What ``_state/unfinished.json`` named when first read: earlier runs' unfinished writes."""
    _begun: dict[str, set[str]] = field(default_factory=dict)
    """The files this run's stages named before writing (and have not finished)."""
    _state_files: Files | None = None

    def files(self) -> dict[str, dict[str, Any]]:
        """Every ``binlog_files`` row, by file."""
        if self._files is None:
            self._files = {row["file"]: row for row in self.lake.rows(BINLOG_FILES)}
        return self._files

    def know_files(self, rows: dict[str, dict[str, Any]]) -> None:
        """``binlog_files`` as bronze just read it (saves reading it again)."""
        self._files = dict(rows)

    def update_files(self, rows: Iterable[dict[str, Any]]) -> None:
        """Bronze wrote these ``binlog_files`` rows."""
        files = self.files()
        for row in rows:
            files[row["file"]] = dict(row)

    def progress(self, layer: Layer) -> dict[str, dict[str, Any]]:
        """The progress rows of ``layer``, by file."""
        if self._progress is None:
            self._progress = {(row["layer"], row["file"]): row for row in self.lake.rows(PROGRESS)}
        return {file: row for (name, file), row in self._progress.items() if name == layer.value}

    def record(self, layer: Layer, rows: Sequence[dict[str, Any]]) -> None:
        """Write progress rows of ``layer`` (``file, built_from, run_id, quarantined, counts``): last of its writes."""
        if not rows:
            return
        lake = self.lake
        full = [{"layer": layer.value, **row} for row in rows]
        predicate = f"`layer` = {quote_literal(layer.value)} AND {file_predicate(row['file'] for row in rows)}"
        recorded = self.progress(layer)
        fresh = not any(row["file"] in recorded for row in rows)
        lake.write(Write(PROGRESS, lake.spark.createDataFrame(full, PROGRESS.schema), predicate, fresh=fresh))
        assert self._progress is not None
        for row in full:
            self._progress[(layer.value, row["file"])] = row

    def built(self, layer: Layer) -> set[str]:
        """The files ``layer`` has recorded as built (bronze: every ``binlog_files`` row)."""
        return set(self.files()) if layer == Layer.BRONZE else set(self.progress(layer))

    def fresh(self, layer: Layer, files: Iterable[str]) -> bool:
        """Whether no table of ``layer`` can hold rows of ``files``: none was recorded as built by the
        layer and no unfinished write of the layer names one (their rows can be appended)."""
        held = self.built(layer) | self.unfinished(layer)
        return not any(f in held for f in files)

    def _files_api(self) -> Files:
        if self._state_files is None:
            self._state_files = state_files(self.lake.root, self.lake.spark)
        return self._state_files

    def unfinished(self, layer: Layer) -> set[str]:
        """The files an unfinished write of ``layer`` named (a run killed while writing them; the
        stages of this run, which name their files before writing them, are not counted)."""
        if self._unfinished is None:
            text = self._files_api().read(UNFINISHED)
            data = json.loads(text) if text else {}
            self._unfinished = {name: set(files) for name, files in data.items()}
        return set(self._unfinished.get(layer.value, set()))

    def _save_unfinished(self) -> None:
        assert self._unfinished is not None
        names = set(self._unfinished) | set(self._begun)
        data = {
            name: sorted(self._unfinished.get(name, set()) | self._begun.get(name, set()))
            for name in sorted(names)
            if self._unfinished.get(name) or self._begun.get(name)
        }
        if data:
            self._files_api().put(UNFINISHED, json.dumps(data, indent=1))
        else:
            self._files_api().delete(UNFINISHED)

    def begin(self, layer: Layer, files: Iterable[str]) -> None:
        """Name ``files`` as being written by ``layer`` (before its first write)."""
        names = set(files)
        if not names:
            return
        self.unfinished(layer)
        self._begun.setdefault(layer.value, set()).update(names)
        self._save_unfinished()

    def finish(self, layer: Layer, files: Iterable[str]) -> None:
        """``layer`` has written ``files`` and recorded them (after its last write)."""
        names = set(files)
        begun = self._begun.get(layer.value, set())
        if not names or not ((self.unfinished(layer) | begun) & names):
            return
        assert self._unfinished is not None
        self._unfinished[layer.value] = self.unfinished(layer) - names
        self._begun[layer.value] = begun - names
        self._save_unfinished()

    def pending(self, layer: Layer, upstream: dict[str, str]) -> list[str]:
        """Files whose upstream state (file -> upstream run id) differs from what ``layer`` built from."""
        done = self.progress(layer)
        return sorted(file for file, built in upstream.items() if done.get(file, {}).get("built_from") != built)


class StatusTracker(Protocol):
    """The part of ``pyspark.StatusTracker`` the progress lines read."""

    def getActiveJobsIds(self) -> Sequence[int]: ...  # Spark's names

    def getActiveStageIds(self) -> Sequence[int]: ...

    def getStageInfo(self, stageId: int) -> Any: ...


MAX_STAGES_SHOWN = 4
"""Stages named in one progress line; more are counted (``+2 more stages``)."""


def _stage_name(name: str) -> str:
    """``collect at /a/b/stage.py:147`` -> ``collect at stage.py:147``."""
    action, sep, where = name.partition(" at ")
    return f"{action}{sep}{os.path.basename(where)}" if sep else name


def spark_status(tracker: StatusTracker) -> str | None:
    """One line on the active Spark jobs and stages, or None when nothing runs.

    >>> spark_status(spark.sparkContext.statusTracker())
    'Spark job 4: stage 7 (collect at stage.py:147) 3/8 tasks, 2 running'
    """
    jobs = sorted(tracker.getActiveJobsIds())
    stages = sorted(tracker.getActiveStageIds())
    if not jobs and not stages:
        return None
    parts = []
    for stage_id in stages[:MAX_STAGES_SHOWN]:
        info = tracker.getStageInfo(stage_id)
        if info is None:  # finished between the two calls
            continue
        part = f"stage {stage_id} ({_stage_name(info.name)}) {info.numCompletedTasks}/{info.numTasks} tasks"
        if info.numActiveTasks:
            part += f", {info.numActiveTasks} running"
        if info.numFailedTasks:
            part += f", {info.numFailedTasks} failed"
        parts.append(part)
    if len(stages) > MAX_STAGES_SHOWN:
        parts.append(f"+{len(stages) - MAX_STAGES_SHOWN} more stages")
    label = "Spark job" if len(jobs) == 1 else "Spark jobs"
    return f"{label} {', '.join(map(str, jobs)) or '-'}: {'; '.join(parts) or 'starting'}"


class SparkProgress:
    """Report :func:`spark_status` through ``say`` every ``every`` seconds while the block runs.

    ``every`` None or not positive: silent. A line is said only when it differs from the last one
    said; the tracker failing (the session stopping) ends the reporting quietly.
    """

    def __init__(self, tracker: StatusTracker | None, say: Callable[[str], None], every: float | None) -> None:
        self.tracker = tracker
        self.say = say
        self.every = every
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last: str | None = None

    def poll(self) -> None:
        """Say the current status if it changed since the last line said."""
        if self.tracker is None:
            return
        line = spark_status(self.tracker)
        if line is not None and line != self._last:
            self.say(line)
        self._last = line

    def _loop(self) -> None:
        assert self.every is not None
        while not self._stop.wait(self.every):
            try:
                self.poll()
            except Exception:  # progress is best effort: it never breaks the run
                return

    def __enter__(self) -> SparkProgress:
        if self.tracker is not None and self.every is not None and self.every > 0:
            self._thread = threading.Thread(target=self._loop, name="binlog-lakehouse-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None


__all__ = [
    "LakeState",
    "SparkProgress",
    "StatusTracker",
    "file_predicate",
    "quote_literal",
    "spark_status",
]
