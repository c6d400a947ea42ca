"""The current stage: each gold change table replayed into its current state and its row history.

For every typed gold table ``<schema>__<table>``, ``CurrentStage.build``:

1. collects on the driver what the replay needs besides the rows (all small): the file sequence
   numbers (``binlog_files``), the DDL statements that act on the table's rows (silver
   ``ddl_events``: TRUNCATE, DROP TABLE, DROP DATABASE, CREATE, RENAME away) and the primary key
   in force at each position (silver ``schema_history``);
2. groups the table's changes by server and replays each server's sequence in a Python worker
   (:func:`pipelines.current.replay.replay`), straight from and into typed Arrow: every version
   of every row, with the bounds that opened and closed it;
3. writes ``binlog_history.<table>`` (every version) and ``binlog_current.<table>`` (the versions
   still open) from that one replay.

A table is replayed whole whenever files gold has (re)built since the last build arrive, so the
state is a function of the input set, whatever order files came in; the tables are overwritten,
never appended to, and progress is recorded last (a killed write is redone by the next run).
Delta's change data feed is on for both tables.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from pipelines.current.replay import RESETS, KeyHistory, Position, Step, Version, replay
from pipelines.gold.names import gold_table_name
from pipelines.stage import Built, Context
from pipelines.storage import Table, Write
from pipelines.tables import (
    CHANGES,
    CURRENT_META,
    DDL_EVENTS,
    SCHEMA_HISTORY,
    Layer,
    TableSpec,
    current_table,
    history_table,
)

CHANGE_COLUMNS = [
    "server",
    "schema_name",
    "table_name",
    "file",
    "offset",
    "inner_index",
    "row_index",
    "op",
    "gtid",
    "commit_timestamp",
    "before",
    "after",
    "absent_columns",
]
"""The gold columns the replay reads."""

CHANGE_DATA_FEED = {"delta.enableChangeDataFeed": "true"}


@dataclass
class CurrentOutput(Built):
    """The history frame of each gold table replayed (persisted), with its two specs."""

    tables: dict[str, tuple[TableSpec, TableSpec, DataFrame]] = field(default_factory=dict)
    progress: list[dict[str, Any]] = field(default_factory=list)


def _position(sequence: Any, file: str, offset: int, inner: Any, row: Any) -> Position:
    return (
        -1 if sequence is None else int(sequence),
        file,
        int(offset),
        -1 if inner is None else int(inner),
        -1 if row is None else int(row),
    )


@dataclass(frozen=True)
class _Known:
    """What the replay of one gold table knows beside its rows (collected on the driver)."""

    sequences: dict[str, int | None]
    ddl: dict[str, list[_Ddl]]
    """server -> the DDL statements that empty tables."""
    keys: dict[str, list[tuple[Any, ...]]]
    """server -> (where a schema version starts, its primary-key columns)."""


def _ddl_steps(ctx: Context, sequences: dict[str, int | None]) -> dict[str, list[_Ddl]]:
    """server -> the DDL statements that empty a table, with the tables they act on (few: collected)."""
    if not ctx.lake.exists(DDL_EVENTS):
        return {}
    rows = (
        ctx.lake.read(DDL_EVENTS)
        .where(F.col("objects").isNotNull())
        .select(
            "server",
            "file",
            "offset",
            "inner_index",
            "gtid",
            # a DDL statement commits as it is written: its header time where no end event says more
            F.coalesce("commit_timestamp", F.timestamp_seconds("timestamp")).alias("commit_timestamp"),
            F.explode("objects").alias("o"),
        )
        .where(F.col("o.action").isin(*sorted(RESETS)))
        .collect()
    )
    steps: dict[str, list[_Ddl]] = defaultdict(list)
    for row in rows:
        position = _position(sequences.get(row.file), row.file, row.offset, row.inner_index, None)
        steps[row.server].append(
            _Ddl(position, row.o.action, row.o.schema_name, row.o.object_name, row.gtid, row.commit_timestamp)
        )
    return steps


@dataclass(frozen=True)
class _Ddl:
    """A DDL statement that empties a table (or, for DROP DATABASE, every table of a database)."""

    position: Position
    action: str
    schema: str | None
    name: str
    gtid: str | None
    commit_timestamp: Any

    def acts_on(self, tables: set[tuple[str, str]]) -> bool:
        """Whether it acts on one of ``tables`` (``(schema, table)`` as the rows name them), names
        compared as the gold table names compare them."""
        if self.action == "drop_database":
            return any(gold_table_name(self.name, table) == gold_table_name(schema, table) for schema, table in tables)
        return self.schema is not None and any(
            gold_table_name(self.schema, self.name) == gold_table_name(schema, table) for schema, table in tables
        )


def _key_starts(ctx: Context, sequences: dict[str, int | None]) -> dict[tuple[str, str], list[tuple[Any, ...]]]:
    """gold table -> (server, where a schema version starts, its primary-key columns)."""
    if not ctx.lake.exists(SCHEMA_HISTORY):
        return {}
    rows = ctx.lake.read(SCHEMA_HISTORY).select(
        "server",
        "schema_name",
        "table_name",
        "valid_from_sequence",
        "valid_from_file",
        "valid_from_offset",
        "valid_from_inner_index",
        "columns",
    )
    starts: dict[tuple[str, str], list[tuple[Any, ...]]] = defaultdict(list)
    for row in rows.collect():
        key = [c.name for c in (row.columns or []) if c.primary_key]
        at = (
            (-2, "", -1, -1, -1)
            if row.valid_from_file is None
            else _position(row.valid_from_sequence, row.valid_from_file, row.valid_from_offset or 0, None, None)
        )
        if row.valid_from_inner_index is not None and row.valid_from_file is not None:
            at = (*at[:3], int(row.valid_from_inner_index), -1)
        starts[(row.server, gold_table_name(row.schema_name, row.table_name))].append((at, key))
    return starts


def _steps(table: pa.Table, known: _Known, server: str) -> Iterator[Step]:
    """The table's steps for one server: its row changes and the DDL acting on them."""
    rows = table.to_pylist()
    tables = {(row["schema_name"], row["table_name"]) for row in rows}
    for row in rows:
        absent = row["absent_columns"] or {}
        yield Step(
            _position(
                known.sequences.get(row["file"]), row["file"], row["offset"], row["inner_index"], row["row_index"]
            ),
            row["op"],
            row["gtid"],
            row["commit_timestamp"],
            row["before"],
            row["after"],
            frozenset(absent.get("before") or ()),
            frozenset(absent.get("after") or ()),
        )
    for ddl in known.ddl.get(server, []):
        if ddl.acts_on(tables):
            yield Step(ddl.position, ddl.action, ddl.gtid, ddl.commit_timestamp)


def _bounds(step: Step | None, prefix: str) -> dict[str, Any]:
    if step is None:
        return dict.fromkeys(
            (f"{prefix}sequence", f"{prefix}file", f"{prefix}offset", f"{prefix}inner_index", f"{prefix}row_index")
        )
    sequence, file, offset, inner, row = step.position
    return {
        f"{prefix}sequence": None if sequence < 0 else sequence,
        f"{prefix}file": file,
        f"{prefix}offset": offset,
        f"{prefix}inner_index": None if inner < 0 else inner,
        f"{prefix}row_index": None if row < 0 else row,
    }


def _history_row(server: str, version: Version) -> dict[str, Any]:
    opened, closed = version.opened, version.closed
    return {
        **version.values,
        "_server": server,
        "_op": opened.action,
        "_gtid": opened.gtid,
        "_valid_from": opened.commit_timestamp,
        "_valid_to": None if closed is None else closed.commit_timestamp,
        "_is_current": closed is None,
        "_closed_by": None if closed is None else closed.action,
        **_bounds(opened, "_valid_from_"),
        **_bounds(closed, "_valid_to_"),
    }


def replay_server(known: _Known, meta: StructType) -> Any:
    """``pa.Table -> pa.Table`` for ``applyInArrow``: one server's changes -> its versions, the
    source columns typed as the gold image arrives, ``meta`` (the history columns) after them."""

    def replay_group(table: pa.Table) -> pa.Table:
        image = table.schema.field("after").type
        out_schema = _out_schema(image, meta, table.schema)
        if table.num_rows == 0:
            return out_schema.empty_table()
        server = table.column("server")[0].as_py()
        columns = [image.field(i).name for i in range(image.num_fields)]
        key_at = KeyHistory((at, key) for at, key in known.keys.get(server, []))
        versions = replay(_steps(table, known, server), columns, key_at)
        return pa.Table.from_pylist([_history_row(server, v) for v in versions], schema=out_schema)

    return replay_group


def _out_schema(image: pa.StructType, meta: StructType, given: pa.Schema) -> pa.Schema:
    """The Arrow schema of history rows: the image's fields, then ``meta`` in the time zone and
    string type Spark hands the input in."""
    from pyspark.sql.pandas.types import to_arrow_schema  # noqa: PLC0415

    zone = given.field("commit_timestamp").type.tz or "UTC"
    text = given.field("file").type
    fields = [
        field.with_type(text) if pa.types.is_string(field.type) or pa.types.is_large_string(field.type) else field
        for field in to_arrow_schema(meta, timezone=zone)
    ]
    return pa.schema([*(image.field(i) for i in range(image.num_fields)), *fields])


class CurrentStage:
    """Current state and history (see the module doc)."""

    name = "current"

    def build(self, ctx: Context) -> CurrentOutput:
        """Replay every gold table when gold has (re)built files since the last replay."""
        state = ctx.state
        files = state.files()
        gold = state.progress(Layer.GOLD)
        upstream = {f: gold[f]["run_id"] for f in files if f in gold}
        pending = state.pending(Layer.CURRENT, upstream)
        waiting = [f for f in files if f not in gold]
        ctx.say(f"{len(pending)} file(s) pending" + (f", {len(waiting)} waiting for gold" if waiting else ""))
        out = CurrentOutput(files=pending)
        if not pending:
            return out
        sequences = {f: row["sequence"] for f, row in files.items()}
        keys = _key_starts(ctx, sequences)
        ddl = _ddl_steps(ctx, sequences)
        names = [t for t in ctx.lake.tables(Layer.GOLD) if t != CHANGES.name]
        for name in names:
            frame = ctx.lake.read(Table(Layer.GOLD, name))
            image = frame.schema["after"].dataType
            assert isinstance(image, StructType)
            history = history_table(name, image)
            known = _Known(
                sequences, ddl, {server: starts for (server, table), starts in keys.items() if table == name}
            )
            meta = StructType([c.field() for c in history.columns[len(image.fields) :]])
            versions = (
                frame.select(*CHANGE_COLUMNS).groupBy("server").applyInArrow(replay_server(known, meta), history.schema)
            )
            out.tables[name] = (current_table(name, image), history, out.kept.keep(versions))
        out.counts["current_tables"] = len(names)
        out.progress = [{"file": f, "built_from": upstream[f], "run_id": ctx.run_id} for f in pending]
        return out

    def write(self, ctx: Context, out: CurrentOutput) -> None:
        """Overwrite each table's history, then its current state from the same (cached) replay; progress last."""
        ctx.lake.write_all(
            [
                Write(history, versions, mode="overwrite", properties=CHANGE_DATA_FEED)
                for _, history, versions in out.tables.values()
            ]
        )
        ctx.lake.write_all(
            [
                Write(current, _live(current, versions), mode="overwrite", properties=CHANGE_DATA_FEED)
                for current, _, versions in out.tables.values()
            ]
        )
        ctx.state.record(Layer.CURRENT, [{**row, "quarantined": 0, "counts": {}} for row in out.progress])


def _live(current: TableSpec, versions: DataFrame) -> DataFrame:
    """The current-state rows of a history frame: its open versions, their metadata renamed."""
    source = current.columns[: -len(CURRENT_META)]
    return versions.where(F.col("_is_current")).select(
        *[c.name for c in source],
        *[F.col(_CURRENT_FROM.get(c.name, c.name)).alias(c.name) for c in current.columns[len(source) :]],
    )


_CURRENT_FROM = {
    "_committed_at": "_valid_from",
    "_sequence": "_valid_from_sequence",
    "_file": "_valid_from_file",
    "_offset": "_valid_from_offset",
    "_inner_index": "_valid_from_inner_index",
    "_row_index": "_valid_from_row_index",
}
"""Current-state metadata column -> the history column it is."""

__all__ = ["CHANGE_DATA_FEED", "CurrentOutput", "CurrentStage", "replay_server"]
