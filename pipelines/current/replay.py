"""One server's changes to one table, replayed in binlog order into row versions (no Spark here).

A binlog is a sequence: the state of a table after a change is the state before it with the
change applied. :func:`replay` walks the steps of one server's table in order -- row changes
(``insert``, ``update``, ``delete``) and the DDL that acts on the rows (``truncate``, ``drop``,
``create``, ``drop_database``, ``rename``, ``fill``) -- and returns every **version** of every row:
the values it held, the change that opened it and, once closed, the step that closed it::

    versions = replay(steps, columns, facts, "app__items")
    live = [v for v in versions if v.closed is None]

Rules, each one a line of a dispatch table below:

* an insert opens a version: the after image's present columns, and for the columns it leaves
  out (MINIMAL images leave out what the server filled in) their defaults where known;
* an update finds the row its before image names, closes that version and opens one holding the
  old values overlaid with the after image's *present* columns: a column absent from the after
  image (``binlog_row_image`` MINIMAL or NOBLOB) keeps its value, never becomes NULL;
* a delete closes the version its before image names;
* TRUNCATE, DROP TABLE, DROP DATABASE and a CREATE of the name close every open version (the
  table starts empty, with the columns of what follows);
* RENAME TABLE closes every open version of the table it renames and opens the same rows in the
  table it names (``target``);
* ``fill``: ALTER TABLE ... ADD COLUMN with a default closes every open version and opens it again
  with the default in the new column (the server wrote it into every existing row, unlogged).

A version is identified by where it was opened: the change's position and row, or for the rows a
DDL statement reopens (RENAME, ``fill``) the statement's position and their rank in the order they
were opened. Of several open rows an image names equally, the oldest is taken. So a replay can
start at any point from the versions open there (``seeds``) and give the versions a replay from the
start gives, whichever order those were kept in.

Steps name the table they act on (``table``; gold table names), so that the rows a RENAME carries
into the table replayed come with them: the steps of every table renamed into it, directly or by
a chain of renames, are replayed beside its own, and only the versions of the table asked for are
returned.

A before image names its row by the table's primary key where it is known at that position
(``facts.key``; from the TABLE_MAP's primary-key metadata as silver's schema history records it), so a
before image holding only the key finds its row. A table without a known key is a multiset of
whole rows: the before image names one open row equal to it in every column it holds (an
identical row inserted twice is there twice; a delete removes one). An update or delete whose row
is not open (its insert lies in a file that is not in the input) opens its version from the
images themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

Position = tuple[int, str, int, int, int]
"""``(file sequence, file, offset, inner index or -1, row index or -1)``: the order of a server's steps."""

RESETS = frozenset({"truncate", "drop", "create", "drop_database"})
"""DDL actions after which the table holds no rows."""

RENAME = "rename"
"""A RENAME TABLE: the rows of ``table`` move to ``target``."""

FILL = "fill"
"""Columns added with a default: ``after`` holds the value every existing row takes."""

ROW_OPS = frozenset({"insert", "update", "delete"})


@dataclass(frozen=True)
class Step:
    """One step of a table's sequence: a row change or a DDL statement acting on the table."""

    position: Position
    action: str
    """insert, update, delete, :data:`RENAME`, :data:`FILL` or one of :data:`RESETS`."""
    table: str = ""
    """The table it acts on (a gold table name)."""
    target: str | None = None
    """:data:`RENAME`: the table's new name."""
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
    row: int | None = None
    """Its row at ``opened``: the row index inside a rows event, or for the rows a DDL statement
    reopens (RENAME, ``fill``) their rank there, in the order of the versions it closed."""
    seed: bool = False
    """Open before the steps replayed (given to :func:`replay`, not opened by a step)."""
    _slot: tuple[Any, ...] = field(default=(), repr=False)

    @property
    def identity(self) -> tuple[Any, ...]:
        """Where it was opened: unique among one server's versions of one table, and in their order."""
        return (*self.opened.position[:4], -1 if self.row is None else self.row)


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
        """Remove and return the open version ``image`` names (None: no such row is open).

        Found by its slot when the image holds what the slot is made of; else (or when the key
        known now is not the one the row was opened under) by the columns the image holds."""
        if (key and not absent.intersection(key)) or (not absent and not key):
            found = self._pop(self._slot(image, key))
            if found is not None:
                return found
        held = [c for c in (key or self.columns) if c not in absent]
        matches = [
            (version.identity, slot, version)
            for slot, versions in self.open.items()
            for version in versions
            if all(hashable(version.values.get(c)) == hashable(image.get(c)) for c in held)
        ]
        if not matches:
            return None
        _, slot, version = min(matches, key=lambda m: m[0])  # the oldest of equal rows, as a slot gives it
        self.open[slot].remove(version)
        if not self.open[slot]:
            del self.open[slot]
        return version

    def _pop(self, slot: tuple[Any, ...]) -> Version | None:
        versions = self.open.get(slot)
        if not versions:
            return None
        version = versions.pop(0)
        if not versions:
            del self.open[slot]
        return version

    def clear(self) -> list[Version]:
        """Every open version in the order they were opened, the table left empty."""
        versions = sorted((v for vs in self.open.values() for v in vs), key=lambda v: v.identity)
        self.open.clear()
        return versions


def _present(image: Mapping[str, Any] | None, absent: frozenset[str]) -> dict[str, Any]:
    return {c: v for c, v in (image or {}).items() if c not in absent}


class Facts(Protocol):
    """What the schema history tells of a table at a position."""

    def key(self, table: str, position: Position) -> Sequence[str]:
        """The primary key's columns in force (empty: none known)."""

    def defaults(self, table: str, position: Position) -> Mapping[str, Any]:
        """The known (constant) defaults of its columns."""


class _Replay:
    """The open rows of every table the steps act on; the versions of the one asked for."""

    def __init__(self, columns: Sequence[str], facts: Facts, name: str) -> None:
        self.columns = columns
        self.facts = facts
        self.name = name
        self.tables: dict[str, _Table] = {}
        self.versions: list[Version] = []
        self.ranks: dict[tuple[str, tuple[Any, ...]], int] = {}
        """(table, statement position) -> the rows a DDL statement reopened there so far."""

    def table(self, name: str) -> _Table:
        if name not in self.tables:
            self.tables[name] = _Table(self.columns)
        return self.tables[name]

    def open(self, name: str, values: dict[str, Any], step: Step) -> None:
        """A new open version of a row of ``name``: ``values`` with the after image's present columns."""
        values.update(_present(step.after, step.absent_after))
        if step.action in ROW_OPS:
            row = None if step.position[4] < 0 else step.position[4]
        else:
            at = (name, step.position[:4])
            row = self.ranks.get(at, 0)
            self.ranks[at] = row + 1
        self.add(name, Version(values, step, row=row))

    def add(self, name: str, version: Version) -> None:
        """An open version of a row of ``name`` (opened by a step or given as a seed)."""
        self.table(name).add(version, self.facts.key(name, version.opened.position))
        if name == self.name:
            self.versions.append(version)

    def take(self, step: Step) -> Version | None:
        """Remove and return the open version the step's before image names (None: no such row)."""
        key = self.facts.key(step.table, step.position)
        return self.table(step.table).take(step.before or {}, step.absent_before, key)

    def insert(self, step: Step) -> None:
        self.open(step.table, {**dict.fromkeys(self.columns), **self.facts.defaults(step.table, step.position)}, step)

    def update(self, step: Step) -> None:
        old = self.take(step)
        if old is not None:
            old.closed = step
            values = dict(old.values)
        else:
            values = dict.fromkeys(self.columns) | _present(step.before, step.absent_before)
        self.open(step.table, values, step)

    def delete(self, step: Step) -> None:
        old = self.take(step)
        if old is not None:
            old.closed = step

    def reset(self, step: Step) -> None:
        for version in self.table(step.table).clear():
            version.closed = step

    def rename(self, step: Step) -> None:
        for version in self.table(step.table).clear():
            version.closed = step
            self.open(step.target or "", dict(version.values), step)

    def fill(self, step: Step) -> None:
        for version in self.table(step.table).clear():
            version.closed = step
            self.open(step.table, dict(version.values), step)


_APPLY: dict[str, Callable[[_Replay, Step], None]] = {
    "insert": _Replay.insert,
    "update": _Replay.update,
    "delete": _Replay.delete,
    RENAME: _Replay.rename,
    FILL: _Replay.fill,
    **dict.fromkeys(RESETS, _Replay.reset),
}
"""Step action -> how it changes the tables."""


def replay(
    steps: Iterable[Step],
    columns: Sequence[str],
    facts: Facts,
    name: str = "",
    seeds: Iterable[tuple[str, Version]] = (),
) -> list[Version]:
    """Every version of table ``name`` the steps make, in the order they were opened (see the module doc).

    ``columns``: the columns a version holds (each NULL until a change sets it);
    ``facts``: each table's primary key and column defaults at a position;
    ``seeds``: (table, version) open before the first step, as an earlier replay left them (marked
    :attr:`Version.seed`; those of ``name`` are returned too, closed or not). Replaying the steps
    after a point from the versions open there gives the versions a replay from the start gives.
    """
    state = _Replay(columns, facts, name)
    for table, version in sorted(seeds, key=lambda s: s[1].identity):
        version.seed = True
        state.add(table, version)
    for step in sorted(steps, key=lambda s: s.position):
        _APPLY[step.action](state, step)
    return state.versions


@dataclass(frozen=True)
class Schema:
    """A table's schema version as the replay needs it: where it starts, its key, its defaults."""

    start: Position
    key: tuple[str, ...] = ()
    defaults: Mapping[str, Any] = field(default_factory=dict)


class SchemaHistory:
    """Each table's schema versions in binlog order (:class:`Facts` from them)."""

    def __init__(self, versions: Mapping[str, Iterable[Schema]]) -> None:
        self.versions = {table: sorted(found, key=lambda v: v.start) for table, found in versions.items()}

    def at(self, table: str, position: Position) -> Schema | None:
        """The version of ``table`` in force at ``position`` (None: none known)."""
        found = None
        for version in self.versions.get(table, ()):
            if version.start > position:
                break
            found = version
        return found

    def key(self, table: str, position: Position) -> Sequence[str]:
        version = self.at(table, position)
        return () if version is None else version.key

    def defaults(self, table: str, position: Position) -> Mapping[str, Any]:
        version = self.at(table, position)
        return {} if version is None else version.defaults


__all__ = [
    "FILL",
    "RENAME",
    "RESETS",
    "ROW_OPS",
    "Facts",
    "Position",
    "Schema",
    "SchemaHistory",
    "Step",
    "Version",
    "hashable",
    "replay",
]
