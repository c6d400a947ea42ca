"""Helpers shared by the benchmark scripts: a bare event walk, binlog names, a cut at an event boundary,
a measurement in a fresh process.

Everything here reads the binlog with nothing but ``struct``: it must not import ``binlog_core``,
so that it can serve as an independent floor and cross-check for the decoder.

Event header (binlog v4)::

    0       4       5          9            13          17      19
    | when  | type  | server_id| event_size | log_pos   | flags | body ... [CRC32]
"""

from __future__ import annotations

import json
import os
import re
import struct
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
"""The project root (the folder holding ``pyproject.toml``)."""

BINLOG_MAGIC = b"\xfebin"
HEADER_LEN = 19
CHUNK = 16 << 20
"""Bytes read at a time by the walks: big enough that reads cost next to nothing."""

XID_EVENT = 16
"""The event that commits an InnoDB transaction: a cut after it leaves whole transactions."""

EVENT_NAMES = {
    2: "QUERY",
    4: "ROTATE",
    3: "STOP",
    15: "FORMAT_DESCRIPTION",
    16: "XID",
    19: "TABLE_MAP",
    23: "WRITE_ROWS_V1",
    24: "UPDATE_ROWS_V1",
    25: "DELETE_ROWS_V1",
    160: "ANNOTATE_ROWS",
    161: "BINLOG_CHECKPOINT",
    162: "GTID",
    163: "GTID_LIST",
}

_SIZE_ONLY = struct.Struct("<9xI")
"""``event_size`` at byte 9 of the header, skipping when/type/server_id."""

_TYPE_AND_SIZE = struct.Struct("<4xB4xI")
"""``type`` (byte 4) and ``event_size`` (byte 9) in one read."""

_NUMBERED_NAME = re.compile(r"^(?P<base>.+)\.(?P<num>\d{6,})$")


class WalkError(ValueError):
    """The file is not a binlog, or an event size is impossible or runs past the end of the file."""


def ensure_project_importable() -> None:
    """Put the project root on ``sys.path`` so scripts run as ``python bench/x.py`` find ``tests.harness``."""
    root = str(ROOT)
    if root not in sys.path:
        sys.path.insert(0, root)


def split_binlog_name(name: str) -> tuple[str, int]:
    """``"mysql-bin.000001"`` -> ``("mysql-bin", 1)``; anything else is a ``ValueError``."""
    match = _NUMBERED_NAME.match(name)
    if match is None:
        raise ValueError(f"{name!r} is not a numbered binlog file name such as mysql-bin.000001")
    return match["base"], int(match["num"])


def count_events(path: str | os.PathLike[str]) -> int:
    """Count the events of a binlog file by hopping from header to header: the pure-Python floor.

    One ``unpack_from`` per event; no decoding and no objects.  Raises :class:`WalkError` when the
    file is not a binlog, an event size is below the header size, or the last event is cut short.
    """
    unpack = _SIZE_ONLY.unpack_from
    events = 0
    with open(path, "rb", buffering=0) as stream:
        file_size = os.fstat(stream.fileno()).st_size
        if stream.read(4) != BINLOG_MAGIC:
            raise WalkError(f"{path}: not a binlog (bad magic)")
        base = 4  # file offset of buf[0]
        buf = stream.read(CHUNK)
        pos = 0
        while True:
            end = len(buf) - HEADER_LEN
            while pos <= end:
                (size,) = unpack(buf, pos)
                if size < HEADER_LEN:
                    raise WalkError(f"{path}: impossible event size {size} at {base + pos}")
                pos += size
                events += 1
            if pos >= len(buf):  # the next header starts in a later chunk: skip to it unread
                base, pos = base + pos, 0
                if base >= file_size:
                    break
                stream.seek(base)
                buf = stream.read(CHUNK)
            else:  # a partial header is left at the end of the chunk
                more = stream.read(CHUNK)
                if not more:
                    break
                base, buf, pos = base + pos, buf[pos:] + more, 0
        if base + pos != file_size:
            raise WalkError(f"{path}: the file ends inside an event")
    return events


def iter_event_spans(path: str | os.PathLike[str]) -> Iterator[tuple[int, int, int]]:
    """Yield ``(offset, type_code, event_size)`` for every event of a binlog file, in file order."""
    unpack = _TYPE_AND_SIZE.unpack_from
    with open(path, "rb") as stream:
        if stream.read(4) != BINLOG_MAGIC:
            raise WalkError(f"{path}: not a binlog (bad magic)")
        offset = 4
        while True:
            header = stream.read(HEADER_LEN)
            if not header:
                return
            if len(header) < HEADER_LEN:
                raise WalkError(f"{path}: the file ends inside the event header at {offset}")
            type_code, size = unpack(header)
            if size < HEADER_LEN:
                raise WalkError(f"{path}: impossible event size {size} at {offset}")
            yield offset, type_code, size
            stream.seek(offset + size)
            offset += size


def event_type_counts(path: str | os.PathLike[str]) -> Counter[str]:
    """How many events of each type the file holds, by name (``TYPE_<n>`` for types not named here)."""
    counts: Counter[str] = Counter()
    end = 4
    for offset, type_code, size in iter_event_spans(path):
        counts[EVENT_NAMES.get(type_code, f"TYPE_{type_code}")] += 1
        end = offset + size
    if end != os.path.getsize(path):
        raise WalkError(f"{path}: the file ends inside an event")
    return counts


def cut_at_transaction(src: Path, dst: Path, fraction: float) -> int:
    """Copy the head of ``src`` to ``dst``, ending after the first XID event at or past ``fraction`` of it.

    The copy is a valid binlog holding whole transactions (it just lacks the closing ROTATE/STOP
    event); returns its size in bytes.
    """
    target = int(os.path.getsize(src) * fraction)
    cut = None
    for offset, type_code, size in iter_event_spans(src):
        if type_code == XID_EVENT and offset + size >= target:
            cut = offset + size
            break
    if cut is None:
        raise WalkError(f"{src}: no XID event at or past {fraction:.0%} of the file")
    with open(src, "rb") as inp, open(dst, "wb") as out:
        remaining = cut
        while remaining:
            block = inp.read(min(CHUNK, remaining))
            if not block:
                raise WalkError(f"{src}: shrank while being copied")
            out.write(block)
            remaining -= len(block)
    return cut


def mib(num_bytes: float) -> float:
    """Bytes to MiB."""
    return num_bytes / (1 << 20)


def json_child(cmd: list[str], what: str) -> dict[str, Any]:
    """Run ``cmd`` (a benchmark's own child, in the project root) and read the JSON object its last
    line prints; a failure ends the benchmark with the child's error output, naming ``what``."""
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"{what} failed:\n{done.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result
