"""Which binlog files bronze has to (re)frame, and from where.

Listing reads no file's bytes: local folders with ``os.scandir`` (so a dangling symbolic link is
seen and accounted for), other URIs with the Hadoop file system of the session.  The file-name
pattern is Hadoop's glob (Spark's ``pathGlobFilter``: ``*``, ``?``, ``[a-z]``, ``[^a]``,
``{a,b}``); names starting with ``.`` or ``_`` are hidden, as Spark hides them.  Each listed
file is then compared with its ``binlog_files`` row:

=========  ====================================================================================
new        no row yet: frame from the start
unchanged  same length and modification time: nothing to do
grown      the previous walk ended cleanly (``complete``) or at a cut event (``truncated``, the
           server's active binlog) and the file is at least ``framed_until`` long: continue at
           ``resume_offset`` (the start of the transaction left open, else ``framed_until``)
           with the state the row recorded there.  The framing task checks that bytes
           ``[0, resume_offset)`` still hash to ``prefix_sha256`` and frames the whole file
           again when they do not (a file rewritten in place).
changed    anything else (shorter than what was framed, or an earlier walk that ended in
           corruption, encryption, not a binlog, empty, unreadable or duplicate): frame from the
           start, replacing its rows
=========  ====================================================================================

Files that disappear from the listing keep their rows: bronze is the history of what was read.

Every file belongs to a **server** (:func:`server_of`) and has a **sequence** number
(:func:`sequence_of`): schema history is kept per server, and a server's files are ordered by
their sequence, not by the path string (``.999999`` before ``.1000000``).
"""

from __future__ import annotations

import os
import posixpath
import re
import stat
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from functools import lru_cache
from typing import Any

from py4j.java_gateway import is_instance_of
from py4j.protocol import Py4JJavaError
from pyspark.sql import SparkSession

from conf import InputSettings
from conf.paths import is_uri, local_path_of
from pipelines.bronze.framing import MAGIC_LEN, RESUMABLE_STATUSES, Part, ResumePoint
from pipelines.bronze.transforms import part_json, resume_json
from pipelines.storage import Lakehouse
from pipelines.tables import BINLOG_FILES


class InputError(ValueError):
    """The input folder cannot be listed: it does not exist, cannot be read, or matches nothing."""


class Decision(StrEnum):
    """What bronze does with a listed file."""

    NEW = "new"
    GROWN = "grown"
    CHANGED = "changed"
    UNCHANGED = "unchanged"


@dataclass(frozen=True, slots=True)
class ListedFile:
    """A file as the listing saw it; ``problem`` when it cannot be read at all (a dangling link)."""

    file: str
    size: int
    modification_time: datetime
    problem: str | None = None

    @property
    def file_name(self) -> str:
        """The base name (``mysql-bin.000042``)."""
        return posixpath.basename(self.file.rstrip("/"))


@dataclass(frozen=True, slots=True)
class WorkItem:
    """One file to frame: the ``WORK_ITEMS`` columns, plus the decision that led to it."""

    file: str
    file_name: str
    size: int
    modification_time: datetime
    resume: ResumePoint | None
    decision: Decision
    part: Part | None = None
    """One piece of a file framed in pieces by several tasks (``resume`` is then None)."""

    def row(self) -> tuple[Any, ...]:
        """The ``WORK_ITEMS`` columns, in order."""
        resume = None if self.resume is None else resume_json(self.resume)
        return (self.file, self.file_name, self.size, self.modification_time, resume, part_json(self.part))

    @property
    def start_offset(self) -> int:
        """Where framing starts (0: the start)."""
        if self.part is not None:
            return self.part.start
        return 0 if self.resume is None else self.resume.offset

    @property
    def to_read(self) -> int:
        """Bytes this item frames."""
        end = self.size if self.part is None or self.part.end is None else self.part.end
        return end - self.start_offset


@dataclass
class Discovery:
    """What listing found: every listed file, the work to do, and ``binlog_files`` as it was."""

    listed: list[ListedFile]
    work: list[WorkItem]
    known: dict[str, dict[str, Any]] = field(default_factory=dict)
    """``binlog_files`` rows (as dicts) of every file bronze has ingested, listed now or not."""


# -- names ---------------------------------------------------------------------------------------

_SEQUENCE = re.compile(r"\.(\d+)$")


def sequence_of(file_name: str) -> int | None:
    """The number at the end of a binlog name: ``mysql-bin.000042`` -> 42 (None without one)."""
    match = _SEQUENCE.search(file_name)
    return int(match.group(1)) if match else None


def server_of(file: str, pattern: str | None = None) -> str:
    """The server a file belongs to: ``pattern``'s group ``server`` (or first group) when it
    matches the path, else the folder holding the file and the binlog base name.

    >>> server_of("s3a://b/db1/mysql-bin.000042")
    's3a://b/db1/mysql-bin'
    >>> server_of("s3a://b/2024-05-01/db1/mysql-bin.000042", r"/(?P<server>db\\d+)/")
    'db1'
    """
    if pattern is not None:
        match = _compiled(pattern).search(file)
        if match is not None:
            named = match.groupdict().get("server")
            return named if named is not None else match.group(1)
    folder, name = posixpath.split(file.rstrip("/"))
    return f"{folder}/{_SEQUENCE.sub('', name)}"


@lru_cache(maxsize=16)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def hadoop_glob(pattern: str) -> re.Pattern[str]:
    """A regular expression matching file names as Hadoop's ``GlobFilter`` does.

    >>> bool(hadoop_glob("*.[0-9][0-9]").fullmatch("mysql-bin.42")), bool(hadoop_glob("{a,b}.log").fullmatch("b.log"))
    (True, True)
    """
    out: list[str] = []
    i, depth = 0, 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        if char == "*":
            out.append(".*")
        elif char == "?":
            out.append(".")
        elif char == "[":
            end = pattern.find("]", i + 1)
            if end < 0:
                raise InputError(f"input.glob {pattern!r}: '[' without ']'")
            body = pattern[i + 1 : end]
            out.append("[" + ("^" + body[1:] if body[:1] in ("^", "!") else body).replace("\\", "\\\\") + "]")
            i = end
        elif char == "{":
            depth += 1
            out.append("(?:")
        elif char == "}" and depth:
            depth -= 1
            out.append(")")
        elif char == "," and depth:
            out.append("|")
        else:
            out.append(re.escape(char))
        i += 1
    if depth:
        raise InputError(f"input.glob {pattern!r}: '{{' without '}}'")
    return re.compile("".join(out), re.DOTALL)


def _hidden(name: str) -> bool:
    return name.startswith((".", "_"))


# -- listing -------------------------------------------------------------------------------------


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _utc(nanoseconds: int) -> datetime:
    """A file time, to the microsecond (what a Delta timestamp keeps)."""
    return _EPOCH + timedelta(microseconds=nanoseconds // 1000)


def same_time(a: datetime, b: datetime) -> bool:
    """Whether two listing times are the same instant (a time read back from a table is naive local)."""
    return round(a.timestamp() * 1_000_000) == round(b.timestamp() * 1_000_000)


def _local_entry(path: str, uri: str) -> ListedFile | None:
    """A local directory entry as a listed file (None for folders), following symbolic links."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        link = os.lstat(path)
        target = os.readlink(path) if stat.S_ISLNK(link.st_mode) else "?"
        return ListedFile(uri, 0, _utc(link.st_mtime_ns), f"a dangling symbolic link (to {target})")
    except OSError as exc:
        return ListedFile(uri, 0, _EPOCH, f"cannot be read ({exc.strerror or exc})")
    if stat.S_ISDIR(info.st_mode):
        return None
    return ListedFile(uri, info.st_size, _utc(info.st_mtime_ns))


def _list_local(folder: str, settings: InputSettings, name_matches: re.Pattern[str]) -> list[ListedFile]:
    if not os.path.exists(folder) and not os.path.islink(folder):
        raise InputError(f"input.path: {folder} does not exist")
    if not os.path.isdir(folder):
        single = _local_entry(folder, f"file:{os.path.abspath(folder)}")
        return [single] if single is not None else []
    if not os.access(folder, os.R_OK | os.X_OK):
        raise InputError(f"input.path: {folder} cannot be read (permission denied)")
    found: list[ListedFile] = []
    pending = [os.path.abspath(folder)]
    while pending:
        current = pending.pop()
        try:
            entries = sorted(os.scandir(current), key=lambda e: e.name)
        except OSError as exc:
            raise InputError(f"input.path: {current} cannot be listed ({exc.strerror or exc})") from exc
        for entry in entries:
            if _hidden(entry.name):
                continue
            if entry.is_dir(follow_symlinks=True):
                if settings.recursive:
                    pending.append(entry.path)
                continue
            if name_matches.fullmatch(entry.name):
                listed = _local_entry(entry.path, f"file:{entry.path}")
                if listed is not None:
                    found.append(listed)
    return found


def _hadoop_statuses(spark: SparkSession, uri: str, recursive: bool) -> tuple[str, list[Any]]:
    """The qualified ``uri`` and the Hadoop ``FileStatus`` of every file under it (or of the file itself)."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    path = jvm.org.apache.hadoop.fs.Path(uri)
    fs = path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    if not fs.exists(path):
        raise InputError(f"input.path: {uri} does not exist")
    if fs.getFileStatus(path).isFile():
        statuses = [fs.getFileStatus(path)]
    else:
        iterator = fs.listFiles(path, recursive)
        statuses = []
        while iterator.hasNext():
            statuses.append(iterator.next())
    return str(fs.makeQualified(path).toString()).rstrip("/"), statuses


def _list_hadoop(
    spark: SparkSession, uri: str, settings: InputSettings, name_matches: re.Pattern[str]
) -> list[ListedFile]:
    try:
        base, statuses = _hadoop_statuses(spark, uri, settings.recursive)
    except Py4JJavaError as exc:
        # the store's refusal (a missing bucket, denied access, an unknown host) is the input's problem
        cause = exc.java_exception
        if not is_instance_of(spark.sparkContext._gateway, cause, "java.io.IOException"):
            raise
        message = (str(cause.getMessage() or "").strip().splitlines() or [""])[0]
        problem = f"{cause.getClass().getSimpleName()}: {message}"
        raise InputError(f"input.path: {uri} cannot be listed ({problem})") from None
    found: list[ListedFile] = []
    for status in statuses:
        full = str(status.getPath().toString())
        relative = full[len(base) :].strip("/").split("/") if full.startswith(base) else [status.getPath().getName()]
        if any(_hidden(part) for part in relative if part) or not name_matches.fullmatch(status.getPath().getName()):
            continue
        found.append(ListedFile(full, int(status.getLen()), _utc(int(status.getModificationTime()) * 1_000_000)))
    return found


def list_files(spark: SparkSession | None, settings: InputSettings) -> list[ListedFile]:
    """The input files (their bytes are not read), sorted by path; raises :class:`InputError`
    when the input cannot be listed.  Local inputs need no Spark session (``spark`` may be None).

    >>> [f.file for f in list_files(spark, cfg.input)]
    ['file:/data/binlogs/mysql-bin.000001', ...]
    """
    name_matches = hadoop_glob(settings.glob)
    local = local_path_of(settings.path)
    if local is not None:
        found = _list_local(local, settings, name_matches)
    else:
        if spark is None:
            raise ValueError(f"listing {settings.path} needs a Spark session (its Hadoop file system)")
        found = _list_hadoop(spark, settings.path, settings, name_matches)
    if settings.modified_after is not None:
        found = [f for f in found if f.modification_time > settings.modified_after]
    return sorted(found, key=lambda f: f.file)


def check_input(settings: InputSettings) -> int:
    """Check, before any Spark work, that a local input can be listed and matches files; return
    how many.  Raises :class:`InputError` with one line naming the setting and the problem.
    Object-store inputs are checked when listed."""
    if is_uri(settings.path) and local_path_of(settings.path) is None:
        return -1
    found = list_files(None, settings)
    if not found:
        where = f"{settings.path}{' (and its sub-folders)' if settings.recursive else ''}"
        raise InputError(f"input.path: no file in {where} matches input.glob {settings.glob!r}")
    return len(found)


# -- decisions -----------------------------------------------------------------------------------

FACT_COLUMNS = ("server_id", "server_version", "flavor", "binlog_version", "checksum_alg")
"""What a resumed walk carries over from the summary (first/last timestamps too)."""


def resume_point(previous: dict[str, Any]) -> ResumePoint:
    """Where a grown file continues, from its ``binlog_files`` row."""
    facts = {name: previous[name] for name in FACT_COLUMNS}
    facts["first_timestamp"] = previous["first_timestamp"]
    facts["last_timestamp"] = previous["last_timestamp"]
    return ResumePoint(
        offset=previous["resume_offset"],
        format_descriptions=dict(previous["format_descriptions"] or {}),
        gtid=previous["resume_gtid"],
        prefix_sha256=previous["prefix_sha256"],
        counts=dict(previous["resume_counts"] or {}),
        shapes=dict(previous.get("resume_shapes") or {}),
        facts=facts,
    )


def _may_resume(listed: ListedFile, previous: dict[str, Any]) -> bool:
    """Whether ``listed`` changed since ``previous`` in a way a resume may cover."""
    return (
        previous["status"] in RESUMABLE_STATUSES
        and previous["resume_offset"] > MAGIC_LEN
        and previous["framed_until"] <= listed.size
        and bool(previous["format_descriptions"])
    )


def decide(listed: ListedFile, previous: dict[str, Any] | None) -> WorkItem | None:
    """The work for one listed file, or None when it is unchanged (see the module docstring).

    >>> decide(ListedFile("file:/b/mysql-bin.000001", 120, t), None).decision
    <Decision.NEW: 'new'>
    """

    def item(decision: Decision, resume: ResumePoint | None = None) -> WorkItem:
        return WorkItem(listed.file, listed.file_name, listed.size, listed.modification_time, resume, decision)

    if previous is None:
        return item(Decision.NEW)
    if previous["size"] == listed.size and same_time(previous["modification_time"], listed.modification_time):
        return None
    if _may_resume(listed, previous):
        return item(Decision.GROWN, resume_point(previous))
    return item(Decision.CHANGED)


def known_files(lake: Lakehouse) -> dict[str, dict[str, Any]]:
    """Every ``binlog_files`` row, by file (the table is one small row per file)."""
    return {row["file"]: row for row in lake.rows(BINLOG_FILES)}


def discover(spark: SparkSession, settings: InputSettings, lake: Lakehouse) -> Discovery:
    """The work for this run: one item per new, grown or changed file, most bytes to read first."""
    listed = list_files(spark, settings)
    known = known_files(lake)
    work = [item for f in listed if (item := decide(f, known.get(f.file))) is not None]
    work.sort(key=lambda item: (-item.to_read, item.file))
    return Discovery(listed, work, known)


__all__ = [
    "Decision",
    "Discovery",
    "InputError",
    "ListedFile",
    "WorkItem",
    "check_input",
    "decide",
    "discover",
    "hadoop_glob",
    "known_files",
    "list_files",
    "resume_point",
    "sequence_of",
    "server_of",
]
