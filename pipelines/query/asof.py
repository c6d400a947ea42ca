"""As-of queries: a table as it was right after a point of its binlogs, as SQL over its history table.

A point is a commit time (``--at``), a binlog position (``--position FILE:OFFSET``: right after
the event at that offset of that file), or a transaction (``--gtid``: right after the last event
of that transaction). Each is one ``WHERE`` over ``binlog_history.<table>`` -- the SQL an analyst
can type, which the README shows::

    asof_statement("binlog_history", "shop__orders", Point.position("mysql-bin.000003", 1201))

No Spark here: the statement runs in either query engine.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from conf.models import StorageSettings

_SEQUENCE = re.compile(r"\.(\d+)$")
_POSITION = re.compile(r"^(?P<file>.+):(?P<offset>\d+)$")
_TABLE = re.compile(r"^(?P<schema>[^.]+)\.(?P<table>[^.]+)$")


class AsOfError(ValueError):
    """A point or a table name that cannot be read (a usage error: one line)."""


@dataclass(frozen=True)
class Point:
    """Where to look: a commit time, or a position ``(sequence, offset)`` in one server's files."""

    at: str | None = None
    """A commit time (then ``server`` may still narrow the servers)."""
    sequence: int | None = None
    offset: int | None = None
    server: str | None = None

    @classmethod
    def position(cls, file_name: str, offset: int, server: str | None = None) -> Point:
        """Right after the event at ``offset`` of ``file_name`` (``mysql-bin.000042``)."""
        match = _SEQUENCE.search(file_name)
        if match is None:
            raise AsOfError(f"{file_name}: not a binlog file name with a sequence number (mysql-bin.000042)")
        return cls(sequence=int(match.group(1)), offset=offset, server=server)

    @classmethod
    def parse_position(cls, text: str, server: str | None = None) -> Point:
        """``FILE:OFFSET`` (the file by its name, as ``binlog_files.file_name`` holds it)."""
        match = _POSITION.match(text)
        if match is None:
            raise AsOfError(f"--position {text!r}: expected FILE:OFFSET, e.g. mysql-bin.000003:1201")
        return cls.position(match["file"].rsplit("/", 1)[-1], int(match["offset"]), server)


def _literal(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def gold_name(table: str) -> str:
    """``schema.table`` -> the gold table name (``schema__table``), as the change tables are named."""
    from pipelines.gold.names import gold_table_name  # noqa: PLC0415 (no Spark)

    match = _TABLE.match(table)
    if match is None:
        raise AsOfError(f"--table {table!r}: expected SCHEMA.TABLE, e.g. shop.orders")
    return gold_table_name(match["schema"], match["table"])


def asof_statement(storage: StorageSettings, table: str, point: Point) -> str:
    """The SQL that answers ``table`` (``schema.table``) as of ``point``: its columns, one row per live row."""
    history = f"{storage.history_database}.{gold_name(table)}"
    if point.at is not None:
        at = f"TIMESTAMP {_literal(point.at)}"
        where = f"_valid_from <= {at} AND (_valid_to IS NULL OR _valid_to > {at})"
    else:
        seq, off = point.sequence, point.offset
        opened = f"(_valid_from_sequence < {seq} OR (_valid_from_sequence = {seq} AND _valid_from_offset <= {off}))"
        still = (
            f"(_valid_to_sequence IS NULL OR _valid_to_sequence > {seq} "
            f"OR (_valid_to_sequence = {seq} AND _valid_to_offset > {off}))"
        )
        where = f"{opened} AND {still}"
    if point.server is not None:
        where += f" AND (_server = {_literal(point.server)} OR _server LIKE {_literal('%/' + point.server)})"
    return f"SELECT * FROM {history} WHERE {where}"


def gtid_statement(storage: StorageSettings, gtid: str, server: str | None = None) -> str:
    """The SQL that finds where transaction ``gtid`` ends: its servers, files and last offsets.

    The transaction's row changes (gold ``changes``) and its DDL statements (silver
    ``ddl_events``) tell: a DDL statement is a transaction of its own, with no row change.
    """
    where = f"gtid = {_literal(gtid)}"
    if server is not None:
        where += f" AND (server = {_literal(server)} OR server LIKE {_literal('%/' + server)})"
    return (
        "SELECT server, file_name, max(offset) AS last_offset FROM ("
        f"SELECT server, file_name, offset FROM {storage.gold_database}.changes WHERE {where} UNION ALL "
        f"SELECT server, file_name, offset FROM {storage.silver_database}.ddl_events WHERE {where} AND kind = 'DDL'"
        ") GROUP BY server, file_name"
    )


def gtid_point(rows: list[tuple[str, str, int]], gtid: str) -> Point:
    """The point right after transaction ``gtid`` from :func:`gtid_statement`'s rows."""
    if not rows:
        raise AsOfError(f"--gtid {gtid}: no row change or DDL statement of that transaction in the lakehouse")
    servers = {server for server, _, _ in rows}
    if len(servers) > 1:
        raise AsOfError(f"--gtid {gtid}: found in the files of {len(servers)} servers; the GTID is ambiguous")
    points = [Point.position(file_name, int(offset), server) for server, file_name, offset in rows]
    return max(points, key=lambda p: (p.sequence or 0, p.offset or 0))


__all__ = ["AsOfError", "Point", "asof_statement", "gold_name", "gtid_point", "gtid_statement"]
