"""SQL scripts from binlog events: the replay script (``binlog-dump --rows-as sql``) and the
flashback script (``binlog-dump --flashback``).

:class:`SqlScript` writes the selected events in file order as a script the ``mysql``/``mariadb``
client runs::

    SET NAMES utf8mb4;                                  -- once, first
    USE `shop`;                                         -- DDL/QUERY statements: their default database,
    SET TIMESTAMP=1700000003;                           -- the time NOW() gives,
    SET @@session.sql_mode=1411383296;                  -- and the session the server logged with them
    CREATE TABLE shop.t (...);
    BEGIN;                                              -- transaction boundaries as logged
    SET time_zone = '+00:00';                           -- before row statements: the session their
    SET sql_mode = 'NO_AUTO_VALUE_ON_ZERO';             -- literals are exact in (binlog_core.sql)
    INSERT INTO `shop`.`t` (`id`, `name`) VALUES (1, 'a');
    COMMIT;

A ``SET`` is written only when the value changes.  Statements holding ``;`` are written between
``DELIMITER`` lines.  INTVAR, RAND and USER_VAR events become ``SET INSERT_ID=``,
``SET @@RAND_SEED1=``, ``SET @`v`:=`` before their statement.  GTIDs are comments (the target
server gives the transactions its own).  An event the script cannot reproduce raises an
:class:`~binlog_core.errors.SqlError` (:class:`~binlog_core.errors.UnreplayableEventError`:
LOAD DATA events, an INCIDENT, an unknown event type, a statement that failed on the source,
a statement in a client charset other than UTF-8 with non-ASCII text); the caller then calls
:meth:`SqlScript.abandon`, which rolls back the open transaction, so the script ends after the
last complete transaction.

:class:`Flashback` collects the selected row changes by transaction and writes the script that
undoes them, newest transaction first (:func:`binlog_core.sql.undo_statements`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final, TextIO

from binlog_core.charsets import codec_for_collation, collation_info
from binlog_core.constants import EventFlags, EventType, Flavor
from binlog_core.decoder import DecodedEvent
from binlog_core.errors import IrreversibleStatementError, SqlError, UnreplayableEventError
from binlog_core.events import QUERY_SHAPED, UnknownEvent
from binlog_core.events.control import IntvarEvent, IntvarType, RandEvent, RowsQueryEvent, UserVarEvent, XidEvent
from binlog_core.events.gtid import GtidEvent, MariaDBGtidEvent, MariaDBGtidFlags, XaPrepareEvent, format_xid
from binlog_core.events.query import QueryEvent, StatementKind
from binlog_core.rows import ROWS_KINDS, RowsEvent, RowsFlag
from binlog_core.selection import ends_group
from binlog_core.sql import ROW_SETTINGS, ChangeLike, change_statement, hex_literal, quote_identifier, quote_string
from binlog_core.sql import undo_statements as undo

_UTF8_CLIENTS: Final = frozenset({"utf8mb4", "utf8mb3", "utf8"})

OPTION_AUTO_IS_NULL: Final = 1 << 14
OPTION_NO_CHECK_CONSTRAINT_CHECKS: Final = 1 << 15  # MariaDB
OPTION_NO_FOREIGN_KEY_CHECKS: Final = 1 << 26
OPTION_RELAXED_UNIQUE_CHECKS: Final = 1 << 27
"""QUERY ``flags2`` bits (``# orig: OPTION_*`` in ``sql_priv.h``) the script turns into session settings."""


def _flag(flags2: int, bit: int, *, set_means_off: bool) -> str:
    on = not (flags2 & bit) if set_means_off else bool(flags2 & bit)
    return "1" if on else "0"


def _query_settings(query: QueryEvent, flavor: Flavor) -> list[tuple[str, str]]:
    """The session variables a QUERY event logged, as ``(variable, literal)`` in the order to set them."""
    status = query.status_vars
    settings: list[tuple[str, str]] = []
    if status.flags2 is not None:
        flags2 = status.flags2
        settings += [
            ("foreign_key_checks", _flag(flags2, OPTION_NO_FOREIGN_KEY_CHECKS, set_means_off=True)),
            ("sql_auto_is_null", _flag(flags2, OPTION_AUTO_IS_NULL, set_means_off=False)),
            ("unique_checks", _flag(flags2, OPTION_RELAXED_UNIQUE_CHECKS, set_means_off=True)),
        ]
        if flavor == Flavor.MARIADB:
            settings.append(
                ("check_constraint_checks", _flag(flags2, OPTION_NO_CHECK_CONSTRAINT_CHECKS, set_means_off=True))
            )
    if status.sql_mode is not None:
        settings.append(("sql_mode", str(status.sql_mode)))
    if status.auto_increment_increment is not None and status.auto_increment_offset is not None:
        settings += [
            ("auto_increment_increment", str(status.auto_increment_increment)),
            ("auto_increment_offset", str(status.auto_increment_offset)),
        ]
    if status.collation_connection is not None and status.collation_server is not None:
        settings += [
            ("collation_connection", str(status.collation_connection)),
            ("collation_server", str(status.collation_server)),
        ]
    if status.time_zone is not None:
        settings.append(("time_zone", quote_string(status.time_zone)))
    if status.lc_time_names is not None:
        settings.append(("lc_time_names", str(status.lc_time_names)))
    settings.append(
        ("collation_database", "DEFAULT" if status.charset_database is None else str(status.charset_database))
    )
    if status.explicit_defaults_for_timestamp is not None:
        settings.append(("explicit_defaults_for_timestamp", "1" if status.explicit_defaults_for_timestamp else "0"))
    if status.default_collation_for_utf8mb4 is not None:
        settings.append(("default_collation_for_utf8mb4", str(status.default_collation_for_utf8mb4)))
    return settings


def _user_var_literal(var: UserVarEvent) -> str:
    """The value of a USER_VAR event as a literal (text with its charset and collation)."""
    value = var.value
    if var.is_null or value is None:
        return "NULL"
    if isinstance(value, float):
        if not math.isfinite(value):
            raise UnreplayableEventError(f"user variable @{var.name} holds {value!r}, which has no SQL literal")
        return repr(value)
    if isinstance(value, int):
        return str(value)
    if var.value_type is not None and var.value_type.name == "DECIMAL":
        return str(value)
    info = None if var.collation_id is None else collation_info(var.collation_id)
    if isinstance(value, str):
        codec = codec_for_collation(var.collation_id)
        if info is None or codec is None:
            raise UnreplayableEventError(f"user variable @{var.name}: text in collation {var.collation_id}")
        raw = value.encode(codec)
    else:
        raw = bytes(value)
    literal = hex_literal(raw, info.charset if info is not None else "binary")
    return f"{literal} COLLATE {quote_identifier(info.name)}" if info is not None else literal


def _comment(text: str) -> str:
    """``-- text`` on every line of ``text``."""
    return "\n".join(f"-- {line}".rstrip() for line in text.splitlines() or [""])


def _delimited(statement: str) -> str:
    """The statement with its terminator: ``;``, or between DELIMITER lines when it holds ``;``."""
    text = statement.rstrip().rstrip(";").rstrip()
    if ";" not in text:
        return text + ";"
    delimiter = "$$"
    while delimiter in text:
        delimiter += "$"
    return f"DELIMITER {delimiter}\n{text}{delimiter}\nDELIMITER ;"


def _place(item: DecodedEvent) -> str:
    event = item.event
    inner = "" if event.inner_index is None else f"#{event.inner_index}"
    return f"{event.file}:{event.offset}{inner}"


_Handler = Callable[["SqlScript", DecodedEvent, Sequence[ChangeLike]], None]
_Step = Callable[["Flashback", DecodedEvent, Sequence[ChangeLike]], None]


class SqlScript:
    """Writes selected events as a replay script (see the module doc).

    ``text_codec`` is the codec the decoder read text of columns without charset with
    (``DecodeOptions.default_charset``); ``verbose`` 1 adds the file position of each event that
    writes SQL and the original statement of row events (ANNOTATE_ROWS / ROWS_QUERY) as comments,
    2 also a comment for every other selected event.
    """

    def __init__(self, out: TextIO, *, text_codec: str | None = "utf-8", verbose: int = 0) -> None:
        self.out = out
        self.text_codec = text_codec
        self.verbose = verbose
        self.session: dict[str, str] = {}
        self.database: str | None = None
        self.in_transaction = False
        self._context: list[str] = []  # SETs of INTVAR/RAND/USER_VAR for the next statement
        self._timestamp: str | None = None
        self._started = False

    # -- output --------------------------------------------------------------------------

    def _line(self, text: str) -> None:
        self.out.write(text + "\n")

    def start(self) -> None:
        """The script's first line (written once, before the first event)."""
        if not self._started:
            self._started = True
            self._line("SET NAMES utf8mb4;")

    def _set(self, settings: Sequence[tuple[str, str]]) -> None:
        changed = [(name, value) for name, value in settings if self.session.get(name) != value]
        if changed:
            self._line("SET " + ", ".join(f"@@session.{name}={value}" for name, value in changed) + ";")
            self.session.update(changed)

    def _position(self, item: DecodedEvent) -> None:
        if self.verbose:
            self._line(f"-- at {_place(item)} {item.event.type_name}")

    def write(self, item: DecodedEvent, changes: Sequence[ChangeLike]) -> None:
        """Write one selected event; ``changes`` are its row changes (with column names resolved)."""
        self.start()
        handler = HANDLERS.get(item.event.type_code)
        if handler is None:
            if isinstance(item.body, UnknownEvent) or item.event.type_code not in KNOWN_SILENT:
                raise item.event.locate(
                    UnreplayableEventError(
                        f"event type {item.event.type_name} has an effect this script cannot reproduce"
                    )
                )
            if self.verbose > 1:
                self._position(item)
            return
        handler(self, item, changes)

    def finish(self) -> None:
        """The end of the selection: a transaction it leaves open is rolled back, as the server would."""
        self.start()
        if self.in_transaction:
            self._line("ROLLBACK; -- the selection ends inside this transaction")
            self.in_transaction = False

    def abandon(self) -> None:
        """Stop after a refusal: roll back the transaction in progress and say so."""
        self.start()
        if self.in_transaction:
            self._line("ROLLBACK;")
            self.in_transaction = False
        self._line("-- INCOMPLETE: binlog-dump stopped here (see its error output)")

    # -- handlers ------------------------------------------------------------------------

    def _query(self, item: DecodedEvent, _changes: Sequence[ChangeLike]) -> None:
        query = item.body
        if not isinstance(query, QueryEvent):
            return
        event = item.event
        if isinstance(query.statement, bytes):
            raise event.locate(UnreplayableEventError("the statement's text does not decode in its client charset"))
        if query.error_code:
            raise event.locate(
                UnreplayableEventError(
                    f"the statement failed on the source with error {query.error_code}: {query.statement[:200]!r}"
                )
            )
        self._position(item)
        kind = query.kind
        if kind in (StatementKind.BEGIN, StatementKind.COMMIT, StatementKind.ROLLBACK, StatementKind.SAVEPOINT):
            self._line(_delimited(query.statement))
            self.in_transaction = kind == StatementKind.BEGIN or (self.in_transaction and not ends_group(query))
            return
        client = query.status_vars.charset_client
        info = None if client is None else collation_info(client)
        if info is not None and info.charset not in _UTF8_CLIENTS and not query.statement.isascii():
            raise event.locate(
                UnreplayableEventError(
                    f"the statement was sent in {info.charset} and holds non-ASCII text; this UTF-8 script "
                    "cannot carry its bytes exactly"
                )
            )
        suppress_use = event.header.flags & EventFlags.SUPPRESS_USE  # CREATE/DROP DATABASE name theirs
        if query.schema and query.schema != self.database and not suppress_use:
            self._line(f"USE {quote_identifier(query.schema)};")
            self.database = query.schema
        micro = query.status_vars.microseconds
        timestamp = str(event.header.timestamp) + ("" if not micro else f".{micro:06d}")
        if timestamp != self._timestamp:
            self._line(f"SET TIMESTAMP={timestamp};")
            self._timestamp = timestamp
        self._set(_query_settings(query, event.fde.flavor))
        for line in self._context:
            self._line(line)
        self._context = []
        self._line(_delimited(query.statement))
        if kind == StatementKind.XA:
            words = query.statement.split(None, 2)
            second = words[1].upper() if len(words) > 1 else ""
            self.in_transaction = second == "START" or (self.in_transaction and second not in ("COMMIT", "ROLLBACK"))

    def _rows(self, item: DecodedEvent, changes: Sequence[ChangeLike]) -> None:
        body = item.body
        if not isinstance(body, RowsEvent):
            return
        self._position(item)
        self._set(
            (
                *ROW_SETTINGS,
                ("foreign_key_checks", "0" if body.flags & RowsFlag.NO_FOREIGN_KEY_CHECKS else "1"),
                ("unique_checks", "0" if body.flags & RowsFlag.RELAXED_UNIQUE_CHECKS else "1"),
            )
        )
        for change in changes:
            self._line(change_statement(change, text_codec=self.text_codec))

    def _xid(self, item: DecodedEvent, _changes: Sequence[ChangeLike]) -> None:
        self._position(item)
        xid = item.body.xid if isinstance(item.body, XidEvent) else None
        self._line("COMMIT;" if xid is None else f"COMMIT; -- xid={xid}")
        self.in_transaction = False

    def _mariadb_gtid(self, item: DecodedEvent, _changes: Sequence[ChangeLike]) -> None:
        body = item.body
        if not isinstance(body, MariaDBGtidEvent):
            return
        self._position(item)
        self._line(f"-- GTID {body.gtid}")
        if body.flags & MariaDBGtidFlags.PREPARED_XA:
            if body.xa_gtrid is None or body.xa_bqual is None or body.xa_format_id is None:
                raise item.event.locate(UnreplayableEventError("an XA transaction's GTID without its XID"))
            self._line(f"XA START {format_xid(body.xa_gtrid, body.xa_bqual, body.xa_format_id)};")
            self.in_transaction = True
        elif not body.flags & (MariaDBGtidFlags.STANDALONE | MariaDBGtidFlags.COMPLETED_XA):
            self._line("BEGIN;")
            self.in_transaction = True

    def _gtid(self, item: DecodedEvent, _changes: Sequence[ChangeLike]) -> None:
        body = item.body
        self._position(item)
        if isinstance(body, GtidEvent):
            self._line(f"-- GTID {body.gtid or 'ANONYMOUS'}")

    def _xa_prepare(self, item: DecodedEvent, _changes: Sequence[ChangeLike]) -> None:
        body = item.body
        if not isinstance(body, XaPrepareEvent):
            return
        self._position(item)
        if body.one_phase:
            self._line(f"XA COMMIT {body.xid} ONE PHASE;")
        else:
            if item.event.fde.flavor == Flavor.MARIADB:  # MySQL logs XA END as a statement of its own
                self._line(f"XA END {body.xid};")
            self._line(f"XA PREPARE {body.xid};")
        self.in_transaction = False

    def _intvar(self, item: DecodedEvent, _changes: Sequence[ChangeLike]) -> None:
        body = item.body
        if isinstance(body, IntvarEvent):
            name = "INSERT_ID" if body.var_type == IntvarType.INSERT_ID else "LAST_INSERT_ID"
            self._context.append(f"SET {name}={body.value};")

    def _rand(self, item: DecodedEvent, _changes: Sequence[ChangeLike]) -> None:
        body = item.body
        if isinstance(body, RandEvent):
            self._context.append(f"SET @@RAND_SEED1={body.seed1}, @@RAND_SEED2={body.seed2};")

    def _user_var(self, item: DecodedEvent, _changes: Sequence[ChangeLike]) -> None:
        body = item.body
        if isinstance(body, UserVarEvent):
            try:
                literal = _user_var_literal(body)
            except SqlError as exc:
                raise item.event.locate(exc) from None
            self._context.append(f"SET @{quote_identifier(body.name)}:={literal};")

    def _annotation(self, item: DecodedEvent, _changes: Sequence[ChangeLike]) -> None:
        body = item.body
        if self.verbose and isinstance(body, RowsQueryEvent) and isinstance(body.statement, str):
            self._position(item)
            self._line(_comment(body.statement))

    def _refuse(self, item: DecodedEvent, _changes: Sequence[ChangeLike]) -> None:
        raise item.event.locate(
            UnreplayableEventError(
                f"{item.event.type_name} cannot be replayed from the binlog alone"
                + (" (LOAD DATA needs the data file)" if item.event.type_code in _LOAD_EVENTS else "")
            )
        )


_LOAD_EVENTS: Final = frozenset(
    int(t)
    for t in (
        EventType.LOAD,
        EventType.CREATE_FILE,
        EventType.APPEND_BLOCK,
        EventType.EXEC_LOAD,
        EventType.DELETE_FILE,
        EventType.NEW_LOAD,
        EventType.BEGIN_LOAD_QUERY,
        EventType.EXECUTE_LOAD_QUERY,
    )
)

HANDLERS: Final[dict[int, _Handler]] = {
    **{int(code): SqlScript._query for code in QUERY_SHAPED if code != EventType.EXECUTE_LOAD_QUERY},
    **{int(code): SqlScript._rows for code in ROWS_KINDS},
    int(EventType.XID): SqlScript._xid,
    int(EventType.MARIADB_GTID): SqlScript._mariadb_gtid,
    int(EventType.GTID): SqlScript._gtid,
    int(EventType.ANONYMOUS_GTID): SqlScript._gtid,
    int(EventType.GTID_TAGGED): SqlScript._gtid,
    int(EventType.XA_PREPARE): SqlScript._xa_prepare,
    int(EventType.INTVAR): SqlScript._intvar,
    int(EventType.RAND): SqlScript._rand,
    int(EventType.USER_VAR): SqlScript._user_var,
    int(EventType.ANNOTATE_ROWS): SqlScript._annotation,
    int(EventType.ROWS_QUERY): SqlScript._annotation,
    int(EventType.INCIDENT): SqlScript._refuse,
    **dict.fromkeys(_LOAD_EVENTS, SqlScript._refuse),
}
"""Event type -> what the replay script writes for it."""

KNOWN_SILENT: Final = frozenset(
    int(t)
    for t in (
        EventType.START_V3,
        EventType.STOP,
        EventType.ROTATE,
        EventType.SLAVE,
        EventType.FORMAT_DESCRIPTION,
        EventType.TABLE_MAP,
        EventType.HEARTBEAT,
        EventType.HEARTBEAT_V2,
        EventType.IGNORABLE,
        EventType.PREVIOUS_GTIDS,
        EventType.TRANSACTION_CONTEXT,
        EventType.VIEW_CHANGE,
        EventType.TRANSACTION_PAYLOAD,
        EventType.BINLOG_CHECKPOINT,
        EventType.GTID_LIST,
        EventType.START_ENCRYPTION,
    )
)
"""Events with no effect of their own on the data (descriptions, positions, containers)."""


# -- flashback ------------------------------------------------------------------------------


@dataclass(slots=True)
class _Transaction:
    label: str
    changes: list[ChangeLike] = field(default_factory=list)
    no_foreign_key_checks: bool = False
    undo: list[str] = field(default_factory=list)


_KEYWORDS: Final = frozenset(
    {StatementKind.BEGIN, StatementKind.COMMIT, StatementKind.ROLLBACK, StatementKind.SAVEPOINT, StatementKind.XA}
)
_HARMLESS: Final = ("FLUSH", "ANALYZE", "OPTIMIZE")
"""Statements that change no data: a flashback selection may hold them."""


class Flashback:
    """Collects the row changes of the selected events by transaction, then writes their undo.

    Feed every selected event to :meth:`add` in file order; each transaction's undo statements
    are made when it ends (so a refusal names the first transaction that cannot be undone), and
    :meth:`write` writes them newest transaction first, each between BEGIN and COMMIT.  A
    statement the row images cannot undo (DDL, statement-based DML, LOAD DATA) raises
    :class:`~binlog_core.errors.IrreversibleStatementError` naming it; an image that leaves a
    needed value unknown, :class:`~binlog_core.errors.PartialImageError`.
    """

    def __init__(self, *, text_codec: str | None = "utf-8") -> None:
        self.text_codec = text_codec
        self.transactions: list[_Transaction] = []
        self._open: _Transaction | None = None

    def _close(self) -> None:
        """The open transaction ends: make its undo statements."""
        if self._open is not None and self._open.changes:
            self._open.undo = undo(self._open.changes, text_codec=self.text_codec)
            self._open.changes = []
            self.transactions.append(self._open)
        self._open = None

    def _begin(self, label: str) -> None:
        self._close()
        self._open = _Transaction(label)

    def transaction(self, label: str, changes: Sequence[ChangeLike], *, no_foreign_key_checks: bool = False) -> None:
        """One whole transaction's row changes, in the order they happened (its undo is made now)."""
        self._close()
        self._open = _Transaction(label, list(changes), no_foreign_key_checks)
        self._close()

    def add(self, item: DecodedEvent, changes: Sequence[ChangeLike]) -> None:
        """One selected event (``changes``: its row changes, names resolved)."""
        if isinstance(item.body, UnknownEvent):
            self._irreversible(item, changes)
        collect = FLASHBACK_STEPS.get(item.event.type_code)
        if collect is not None:
            collect(self, item, changes)

    def _gtid(self, item: DecodedEvent, _changes: Sequence[ChangeLike]) -> None:
        body = item.body
        if isinstance(body, (GtidEvent, MariaDBGtidEvent)):
            self._begin(f"GTID {body.gtid or 'ANONYMOUS'} at {_place(item)}")

    def _rows(self, item: DecodedEvent, changes: Sequence[ChangeLike]) -> None:
        body = item.body
        if not isinstance(body, RowsEvent):
            return
        if self._open is None:
            self._open = _Transaction(f"{_place(item)} (no transaction start selected)")
        self._open.changes.extend(changes)
        self._open.no_foreign_key_checks |= bool(body.flags & RowsFlag.NO_FOREIGN_KEY_CHECKS)

    def _end(self, _item: DecodedEvent, _changes: Sequence[ChangeLike]) -> None:
        self._close()

    def _irreversible(self, item: DecodedEvent, _changes: Sequence[ChangeLike]) -> None:
        raise item.event.locate(IrreversibleStatementError(f"{item.event.type_name} cannot be undone from the binlog"))

    def _statement(self, item: DecodedEvent, _changes: Sequence[ChangeLike]) -> None:
        if isinstance(item.body, QueryEvent):
            self._query(item, item.body)

    def _query(self, item: DecodedEvent, query: QueryEvent) -> None:
        if query.kind in _KEYWORDS:
            if query.kind == StatementKind.BEGIN and (self._open is None or self._open.changes):
                self._begin(f"BEGIN at {_place(item)}")
            elif ends_group(query):
                self._close()
            return
        text = query.statement if isinstance(query.statement, str) else repr(query.statement)
        first = text.lstrip().split(None, 1)[:1]
        if first and first[0].upper() in _HARMLESS:
            return
        what = "DDL" if query.kind == StatementKind.DDL else "the statement"
        raise item.event.locate(
            IrreversibleStatementError(
                f"{what} {' '.join(text.split())[:300]!r} is in the selection; a flashback from row images "
                "cannot undo it (narrow the selection to the transactions after it)"
            )
        )

    def write(self, out: TextIO) -> int:
        """Write the undo script; return the number of transactions undone."""
        self._close()
        out.write("SET NAMES utf8mb4;\n")
        out.write("SET " + ", ".join(f"@@session.{name}={value}" for name, value in ROW_SETTINGS) + ";\n")
        for transaction in reversed(self.transactions):
            out.write(f"-- undo {transaction.label}\n")
            out.write("BEGIN;\n")
            if transaction.no_foreign_key_checks:
                out.write("SET @@session.foreign_key_checks=0;\n")
            for statement in transaction.undo:
                out.write(statement + "\n")
            out.write("COMMIT;\n")
            if transaction.no_foreign_key_checks:
                out.write("SET @@session.foreign_key_checks=1;\n")
        return len(self.transactions)


FLASHBACK_STEPS: Final[dict[int, _Step]] = {
    int(EventType.GTID): Flashback._gtid,
    int(EventType.ANONYMOUS_GTID): Flashback._gtid,
    int(EventType.GTID_TAGGED): Flashback._gtid,
    int(EventType.MARIADB_GTID): Flashback._gtid,
    **{int(code): Flashback._rows for code in ROWS_KINDS},
    **{int(code): Flashback._statement for code in QUERY_SHAPED if code != EventType.EXECUTE_LOAD_QUERY},
    int(EventType.XID): Flashback._end,
    int(EventType.XA_PREPARE): Flashback._end,
    **dict.fromkeys(_LOAD_EVENTS, Flashback._irreversible),
}
"""Event type -> what a flashback collects from it; other events change nothing it undoes."""


__all__ = ["FLASHBACK_STEPS", "HANDLERS", "KNOWN_SILENT", "Flashback", "SqlScript"]
