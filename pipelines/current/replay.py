"""One server's changes to one table, replayed in binlog order into row versions (no Spark here).

A binlog is a sequence: the state of a table after a change is the state before it with the
change applied. :func:`replay` walks the steps of one server's table in order -- row changes
(``insert``, ``update``, ``delete``) and the DDL that acts on the rows (``truncate``, ``drop``,
``create``, ``drop_database``, ``rename_from``) -- and returns every **version** of every row:
the values it held, the change that opened it and, once closed, the step that closed it::

    versions = replay(steps, key_at)
    live = [v for v in versions if v.closed is None]

Rules, each one a line of a dispatch table below:

* an insert opens a version;
* an update finds the row its before image names, closes that version and opens one holding the
  old values overlaid with the after image's *present* columns: a column absent from the after
  image (``binlog_row_image`` MINIMAL or NOBLOB) keeps its value, never becomes NULL;
* a delete closes the version its before image names;
* TRUNCATE, DROP TABLE, DROP DATABASE, a CREATE of the name and a RENAME of it away close every
  open version (the table starts empty, with the columns of what follows).

A before image names its row by the table's primary key where it is known at that position
(``key_at``; from the TABLE_MAP's primary-key metadata as silver's schema history records it), so a
before image holding only the key finds its row. A table without a known key is a multiset of
whole rows: the before image names one open row equal to it in every column it holds (an
identical row inserted twice is there twice; a delete removes one). An update or delete whose row
is not open (its insert lies in a file that is not in the input) opens its version from the
images themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Position = tuple[int, str, int, int, int]
"""``(file sequence, file, offset, inner index or -1, row index or -1)``: the order of a server's steps."""

RESETS = frozenset({"truncate", "drop", "create", "drop_database", "rename_from"})
"""DDL actions after which the table holds no rows."""

ROW_OPS = frozenset({"insert", "update", "delete"})


@dataclass(frozen=True)
class Step:
    """One step of a table's sequence: a row change or a DDL statement acting on the table."""

    position: Position
    action: str
    """insert, update, delete, or one of :data:`RESETS`."""
    gtid: str | None = None
    commit_timestamp: Any = None
    before: Mapping[str, Any] | None = None
    after: Mapping[str, Any] | None = None
    absent_before: frozenset[str] = frozenset()
    absent_after: frozenset[str] = frozenset()


@dataclass
class Version:
    """A row as one change left it, until the step that changed it again (``closed``)."""

    values: dict[str, Any]
    opened: Step
    closed: Step | None = None
    _slot: tuple[Any, ...] = field(default=(), repr=False)


def hashable(value: Any) -> Any:
    """A value usable in a dict key (arrays as tuples, structs as sorted item tuples)."""
    if isinstance(value, list):
        return tuple(hashable(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, hashable(v)) for k, v in value.items()))
    if isinstance(value, bytearray):
        return bytes(value)
    return value


class _Table:
    """The open versions of one table, found by key (or by whole row when no key is known)."""

    def __init__(self, columns: Sequence[str]) -> None:
        self.columns = list(columns)
        self.open: dict[tuple[Any, ...], list[Version]] = {}

    def _slot(self, values: Mapping[str, Any], key: Sequence[str]) -> tuple[Any, ...]:
        names = key or self.columns
        return (bool(key), *(hashable(values.get(c)) for c in names))

    def add(self, version: Version, key: Sequence[str]) -> None:
        version._slot = self._slot(version.values, key)
        self.open.setdefault(version._slot, []).append(version)

    def take(self, image: Mapping[str, Any], absent: frozenset[str], key: Sequence[str]) -> Version | None:
        """Remove and return the open version ``image`` names (None: no such row is open)."""
        if key and not absent.intersection(key):
            return self._pop(self._slot(image, key))
        if not absent and not key:
            return self._pop(self._slot(image, key))
        held = [c for c in (key or self.columns) if c not in absent]
        for slot, versions in self.open.items():
            for version in versions:
                if all(hashable(version.values.get(c)) == hashable(image.get(c)) for c in held):
                    versions.remove(version)
                    if not versions:
                        del self.open[slot]
                    return version
        return None

    def _pop(self, slot: tuple[Any, ...]) -> Version | None:
        versions = self.open.get(slot)
        if not versions:
            return None
        version = versions.pop(0)
        if not versions:
            del self.open[slot]
        return version

    def clear(self) -> list[Version]:
        """Every open version, the table left empty."""
        versions = [v for vs in self.open.values() for v in vs]
        self.open.clear()
        return versions


def _present(image: Mapping[str, Any] | None, absent: frozenset[str]) -> dict[str, Any]:
    return {c: v for c, v in (image or {}).items() if c not in absent}


def _open(table: _Table, values: dict[str, Any], step: Step, key: Sequence[str], out: list[Version]) -> None:
    """A new open version of the row: the values under it, with the after image's present columns."""
    values.update(_present(step.after, step.absent_after))
    version = Version(values, step)
    table.add(version, key)
    out.append(version)


def _insert(table: _Table, step: Step, key: Sequence[str], out: list[Version]) -> None:
    _open(table, dict.fromkeys(table.columns), step, key, out)


def _update(table: _Table, step: Step, key: Sequence[str], out: list[Version]) -> None:
    old = table.take(step.before or {}, step.absent_before, key)
    if old is not None:
        old.closed = step
        values = dict(old.values)
    else:
        values = dict.fromkeys(table.columns) | _present(step.before, step.absent_before)
    _open(table, values, step, key, out)


def _delete(table: _Table, step: Step, key: Sequence[str], out: list[Version]) -> None:
    old = table.take(step.before or {}, step.absent_before, key)
    if old is not None:
        old.closed = step


def _reset(table: _Table, step: Step, key: Sequence[str], out: list[Version]) -> None:
    for version in table.clear():
        version.closed = step


_APPLY: dict[str, Callable[[_Table, Step, Sequence[str], list[Version]], None]] = {
    "insert": _insert,
    "update": _update,
    "delete": _delete,
    **dict.fromkeys(RESETS, _reset),
}
"""Step action -> how it changes the table."""


def replay(steps: Iterable[Step], columns: Sequence[str], key_at: Callable[[Position], Sequence[str]]) -> list[Version]:
    """Every version the steps make, in the order they were opened (see the module doc).

    ``columns``: the table's columns (a version holds each, NULL until a change sets it);
    ``key_at``: the primary key's columns in force at a position (empty: none known).
    """
    table = _Table(columns)
    versions: list[Version] = []
    for step in sorted(steps, key=lambda s: s.position):
        _APPLY[step.action](table, step, key_at(step.position), versions)
    return versions


class KeyHistory:
    """The primary key of one table at each position: ``(start position, key columns)`` in order."""

    def __init__(self, starts: Iterable[tuple[Position, Sequence[str]]]) -> None:
        self.starts = sorted((position, tuple(key)) for position, key in starts)

    def __call__(self, position: Position) -> Sequence[str]:
        key: Sequence[str] = ()
        for start, columns in self.starts:
            if start > position:
                break
            key = columns
        return key


__all__ = ["RESETS", "ROW_OPS", "KeyHistory", "Position", "Step", "Version", "hashable", "replay"]
