"""``binlog-dump [OPTIONS] FILE...``: the row changes (or events) of binlog files, as JSON lines or SQL.

Output (stdout, or the ``--result-file``):

* default: one JSON object per row change, in file order (values as :mod:`binlog_core.render`
  renders them); always strict JSON (``allow_nan=False``);
* ``--events``: one JSON object per event;
* ``--rows-as sql``: an executable MySQL-dialect script (:class:`binlog_core.script.SqlScript`):
  the statements the files hold with their session settings, the transaction boundaries, and
  each row change as INSERT/UPDATE/DELETE (literals: :mod:`binlog_core.sql`);
* ``--flashback``: a script that undoes the selected transactions, newest first
  (:class:`binlog_core.script.Flashback`).

Selection, with ``mysqlbinlog``'s meanings (:mod:`binlog_core.selection`): ``--start-position``
(first file), ``--stop-position`` (last file), ``--start-datetime``/``--stop-datetime`` (event
header time, read as UTC), ``--database``/``-d``, ``--table``/``-T``, ``--include-gtids``/
``--exclude-gtids``.  Several files are read in the order given; column names seen in one file
stay known in the next (:mod:`binlog_core.names`).

``-v`` adds context, never other rows: JSON row lines get ``"statement"`` (the statement that
made the row, from ANNOTATE_ROWS/ROWS_QUERY, or ``null``); scripts get ``-- at file:offset``
comments and the original statements as comments.  ``-vv`` also gives JSON row lines
``"columns"`` (per column: name, type, metadata, nullable, unsigned, as ``mysqlbinlog -vv``
comments them) and scripts a comment for every selected event.

Problems go to stderr, one line each::

    file<TAB>offset[#inner]<TAB>CODE<TAB>[EVENT_TYPE -> path: ]message

``file`` is the base name and ``offset`` the event's byte offset, empty when unknown (a file
that cannot be opened: ``IO_ERROR``).  Only problems of selected events (and of whole files) are
reported.  In JSON modes everything decodable is printed; a script stops at the first change it
cannot write exactly (the open transaction rolled back, a ``-- INCOMPLETE`` comment last), and a
flashback script is written only when every selected transaction can be undone.  The exit status:

* 0 -- every selected event decoded (and, for scripts, was written);
* 1 -- something could not be decoded, or a script could not be written exactly (stderr says
  what and where: e.g. ``COLUMN_NAMES_UNKNOWN``, ``PARTIAL_IMAGE``, ``IRREVERSIBLE_STATEMENT``);
* 2 -- bad command line (including an unknown ``--default-charset``, a malformed GTID set or time);
* 3 -- everything decoded, with warnings (unknown event types kept raw, TABLE_MAP optional
  metadata of an unknown type kept raw: ``UNKNOWN_OPTIONAL_METADATA``, text kept as bytes, a
  NaN or infinity in a float column printed as a string: ``NON_FINITE_FLOAT``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TextIO

from binlog_core.charsets import CHARSET_CODECS
from binlog_core.columns import DecodeOptions
from binlog_core.decoder import DecodedEvent, decode_file
from binlog_core.errors import BinlogError, SqlError
from binlog_core.events.control import RowsQueryEvent
from binlog_core.names import ColumnNames
from binlog_core.render import render_change, render_image, to_jsonable
from binlog_core.rows import RowsEvent
from binlog_core.script import Flashback, SqlScript
from binlog_core.selection import GtidSyntaxError, Selection, Selector, Verdict, parse_datetime, parse_gtid_set
from binlog_core.sql import ChangeLike
from binlog_core.table_map import Column

EXIT_OK, EXIT_ERRORS, EXIT_USAGE, EXIT_WARNINGS = 0, 1, 2, 3


def _event_record(item: DecodedEvent, problems: list[BinlogError]) -> dict[str, Any]:
    event = item.event
    h = event.header
    record: dict[str, Any] = {
        "file": event.file,
        "offset": event.offset,
        "inner_index": event.inner_index,
        "event_type": event.type_name,
        "type_code": h.type_code,
        "timestamp": h.timestamp,
        "server_id": h.server_id,
        "event_size": h.event_size,
        "log_pos": h.log_pos,
        "flags": h.flags,
        "checksum_ok": event.checksum_ok,
    }
    found: list[BinlogError] = []
    if isinstance(item.body, RowsEvent):
        body = item.body
        record["body"] = {
            "table_id": body.table_id,
            "flags": body.flags,
            "extra": to_jsonable(body.extra, found, ("extra",)),
            "num_columns": body.num_columns,
        }
        rows = []
        for change in item.rows:
            columns = change.table_map.columns
            row: list[BinlogError] = []
            rows.append(
                {
                    "before": render_image(change.before, columns, row, side="before"),
                    "after": render_image(change.after, columns, row, side="after"),
                }
            )
            found.extend(problem.within(f"row {change.row_index}") for problem in row)
        record["rows"] = rows
    else:
        record["body"] = to_jsonable(item.body, found)
    problems.extend(event.locate(problem) for problem in found)
    return record


_ONE_LINE = str.maketrans("\t\n\r", "   ")


def _line(file: str | None, place: str, code: str, message: str) -> str:
    """One stderr line: ``file<TAB>offset[#inner]<TAB>CODE<TAB>message`` (the message kept on one line)."""
    return f"{file or ''}\t{place}\t{code}\t{message.translate(_ONE_LINE)}"


def _report(problem: BinlogError, err: TextIO) -> None:
    place = "" if problem.offset is None else str(problem.offset)
    if problem.inner_index is not None:
        place += f"#{problem.inner_index}"
    trail = " -> ".join(([problem.event_type] if problem.event_type else []) + list(problem.path))
    message = f"{trail}: {problem.message}" if trail else problem.message
    print(_line(problem.file, place, problem.code, message), file=err)


def _dumps(record: dict[str, Any]) -> str:
    # allow_nan=False: a NaN or infinity that reached here would be invalid JSON (render turns them into strings)
    return json.dumps(record, ensure_ascii=False, allow_nan=False)


def _column_record(column: Column) -> dict[str, Any]:
    """One column as ``-vv`` describes it (``mysqlbinlog -vv``'s per-value comment)."""
    return {
        "name": column.display_name,
        "type": column.type_name,
        "meta": column.meta,
        "nullable": column.nullable,
        "unsigned": column.unsigned,
    }


class _Stop(Exception):
    """A script cannot go on (a refusal was reported)."""


class _Run:
    """One ``binlog-dump`` run: reads the files through the selector and writes one output mode."""

    def __init__(
        self, *, mode: str, selection: Selection, options: DecodeOptions, verbose: int, out: TextIO, err: TextIO
    ) -> None:
        self.mode = mode
        self.scripted = mode in ("sql", "flashback")
        self.selection = selection
        self.options = options
        self.verbose = verbose
        self.out = out
        self.err = err
        self.severities: set[str] = set()
        self.names = ColumnNames(options)
        self.statement: str | None = None  # the statement behind the rows events being read (-v)
        self.script = SqlScript(out, text_codec=options.default_charset, verbose=verbose) if mode == "sql" else None
        self.flashback = Flashback(text_codec=options.default_charset) if mode == "flashback" else None

    def report(self, problem: BinlogError) -> None:
        """One stderr line; its severity counts for the exit status."""
        self.severities.add(problem.severity)
        _report(problem, self.err)

    def refuse(self, problem: BinlogError) -> None:
        """A script cannot be written exactly past this point: report, close the script, stop."""
        self.report(problem)
        self.stop()

    def items(self, paths: Sequence[str]) -> Iterator[tuple[DecodedEvent, bool]]:
        """Every decoded event of the run with whether it is selected (file errors reported here)."""
        selector = Selector(self.selection, len(paths))
        for index, path in enumerate(paths):
            selector.begin_file(index)
            self.names.begin_file(os.path.basename(os.fspath(path)))
            try:
                for item in decode_file(path, options=self.options):
                    verdict = selector.verdict(item)
                    if verdict is Verdict.STOP:
                        return
                    yield item, verdict is Verdict.KEEP
            except BinlogError as exc:
                self.file_problem(exc)
            except BrokenPipeError:
                raise  # the reader of stdout went away: not a problem of this file
            except OSError as exc:
                self.severities.add("error")
                message = exc.strerror or str(exc)
                print(_line(os.path.basename(os.fspath(path)), "", "IO_ERROR", message), file=self.err)
                if self.scripted:
                    self.stop()

    def file_problem(self, exc: BinlogError) -> None:
        """A problem that ends a file: reported; it ends a script."""
        if self.scripted and exc.severity == "error":
            self.refuse(exc)
        self.report(exc)

    def stop(self) -> None:
        """End a script here (the problem is reported already)."""
        if self.script is not None:
            self.script.abandon()
        raise _Stop

    def run(self, paths: Sequence[str]) -> int:
        """Read, select and write; the exit status."""
        try:
            for item, selected in self.items(paths):
                changes = self.names.observe(item) if self.scripted else item.rows
                if isinstance(item.body, RowsQueryEvent):
                    self.statement = item.body.statement if isinstance(item.body.statement, str) else None
                if selected:
                    self.selected(item, changes)
                if isinstance(item.body, RowsEvent) and item.body.statement_end:
                    self.statement = None
            if self.flashback is not None:
                self.flashback.write(self.out)
            elif self.script is not None:
                self.script.finish()
        except _Stop:
            pass
        except SqlError as exc:  # a flashback's undo that cannot be written: nothing was
            self.report(exc)
        if "error" in self.severities:
            return EXIT_ERRORS
        return EXIT_WARNINGS if self.severities else EXIT_OK

    def selected(self, item: DecodedEvent, changes: Sequence[ChangeLike] | BinlogError) -> None:
        """Write one selected event in the run's mode (``changes``: its row changes, names resolved)."""
        for problem in item.problems:
            if self.scripted and problem.severity == "error":
                self.refuse(problem)
            self.report(problem)
        WRITERS[self.mode](self, item, changes)

    def _event(self, item: DecodedEvent, _changes: Sequence[ChangeLike] | BinlogError) -> None:
        found: list[BinlogError] = []
        self.out.write(_dumps(_event_record(item, found)) + "\n")
        for problem in found:
            self.report(problem)

    def _rows(self, item: DecodedEvent, _changes: Sequence[ChangeLike] | BinlogError) -> None:
        for change in item.rows:
            found: list[BinlogError] = []
            record = render_change(change, found)
            if self.verbose:
                record["statement"] = self.statement
            if self.verbose > 1:
                record["columns"] = [_column_record(c) for c in change.table_map.columns]
            self.out.write(_dumps(record) + "\n")
            for problem in found:
                self.report(problem)

    def _script(self, item: DecodedEvent, changes: Sequence[ChangeLike] | BinlogError) -> None:
        if isinstance(changes, BinlogError):  # the rows did not decode again with the completed map
            self.refuse(changes)
            return
        try:
            if self.script is not None:
                self.script.write(item, changes)
            elif self.flashback is not None:
                self.flashback.add(item, changes)
        except BinlogError as exc:
            self.refuse(exc)


WRITERS: dict[str, Callable[[_Run, DecodedEvent, Sequence[ChangeLike] | BinlogError], None]] = {
    "events": _Run._event,
    "json": _Run._rows,
    "sql": _Run._script,
    "flashback": _Run._script,
}
"""Output mode -> what a selected event becomes."""


def dump(
    paths: Sequence[str],
    *,
    events: bool = False,
    options: DecodeOptions,
    out: TextIO,
    err: TextIO,
    rows_as: str = "json",
    flashback: bool = False,
    selection: Selection | None = None,
    verbose: int = 0,
) -> int:
    """Decode the files, select, and write one output mode; return the exit status."""
    mode = "flashback" if flashback else "events" if events else rows_as
    run = _Run(mode=mode, selection=selection or Selection(), options=options, verbose=verbose, out=out, err=err)
    return run.run(paths)


def _default_codec(name: str) -> str | None:
    """``--default-charset``: a MySQL charset name or a Python text codec, as the codec to decode with.

    MySQL names are looked up in :data:`binlog_core.charsets.CHARSET_CODECS` first (``latin1``
    is MySQL's latin1, i.e. cp1252 plus five C1 controls, not ISO-8859-1); ``none`` and
    ``binary`` keep text as bytes.
    """
    lowered = name.lower()
    if lowered in ("none", "binary"):
        return None
    if lowered in CHARSET_CODECS:
        codec = CHARSET_CODECS[lowered]
        if codec is None:
            raise argparse.ArgumentTypeError(
                f"MySQL charset {name!r} has no Python codec; use 'none' to keep text as bytes"
            )
        return codec
    try:
        b"0".decode(name)
    except UnicodeDecodeError:
        pass  # a real text codec that does not take a lone byte (utf-16, utf-32)
    except LookupError:
        raise argparse.ArgumentTypeError(
            f"unknown charset {name!r}: give a MySQL charset (utf8mb4, latin1, cp1251, ...), "
            "a Python text codec, or 'none'"
        ) from None
    return name


def _position(text: str) -> int:
    """``--start-position``/``--stop-position``: a byte offset."""
    if not text.isdigit():
        hint = " (GTIDs select with --include-gtids/--exclude-gtids)" if "-" in text else ""
        raise argparse.ArgumentTypeError(f"{text!r} is not a byte offset{hint}")
    return int(text)


def _datetime(text: str) -> int:
    try:
        return parse_datetime(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _gtid_set(text: str) -> Any:
    try:
        return parse_gtid_set(text)
    except GtidSyntaxError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="binlog-dump",
        description="Decode MySQL/MariaDB binlog files into JSON lines (one per row change, or per event) "
        "or into SQL; select with mysqlbinlog's options.",
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="binlog files, read in the order given")
    output = parser.add_argument_group("output")
    output.add_argument("--events", action="store_true", help="print one JSON object per event instead")
    output.add_argument(
        "--rows-as",
        choices=("json", "sql"),
        default="json",
        help="json (default): one JSON line per row change; sql: an executable SQL script of the events",
    )
    output.add_argument(
        "-B",
        "--flashback",
        action="store_true",
        help="print SQL that undoes the selected transactions, newest first",
    )
    output.add_argument("-r", "--result-file", metavar="FILE", help="write the output to FILE instead of stdout")
    output.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="-v: the original statement of each row (JSON) / position and statement comments (SQL); "
        "-vv: also the column types (JSON) / a comment for every event (SQL)",
    )
    output.add_argument(
        "--default-charset",
        default="utf-8",
        type=_default_codec,
        metavar="CHARSET",
        help="charset of text columns when the file names none: a MySQL charset (utf8mb4, latin1, ...) or a "
        "Python text codec (default: utf-8; 'none' keeps bytes); text that does not decode in it is printed as "
        "hex with an UNDECODABLE_TEXT warning",
    )
    select = parser.add_argument_group("selection (as mysqlbinlog / mariadb-binlog)")
    select.add_argument(
        "-j",
        "--start-position",
        type=_position,
        metavar="N",
        help="start at the first event at or after byte offset N of the first file",
    )
    select.add_argument(
        "--stop-position",
        type=_position,
        metavar="N",
        help="stop at the first event at or after byte offset N of the last file",
    )
    select.add_argument(
        "--start-datetime",
        type=_datetime,
        metavar="TIME",
        help="start at the first event whose header time is >= TIME ('YYYY-MM-DD HH:MM:SS', UTC unless it "
        "ends in +hh:mm)",
    )
    select.add_argument(
        "--stop-datetime", type=_datetime, metavar="TIME", help="stop at the first event whose time is >= TIME"
    )
    select.add_argument("-d", "--database", metavar="DB", help="only rows and statements of database DB")
    select.add_argument("-T", "--table", metavar="TABLE", help="only rows of tables named TABLE")
    select.add_argument(
        "--include-gtids",
        type=_gtid_set,
        metavar="SET",
        help="only the transactions in SET: uuid:1-5,uuid2:7 (MySQL) and/or domain-server-seq[-last] (MariaDB)",
    )
    select.add_argument("--exclude-gtids", type=_gtid_set, metavar="SET", help="every transaction except those in SET")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``binlog-dump`` and ``python -m binlog_core``."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.flashback and (args.events or args.rows_as != "json"):
        parser.error("--flashback writes SQL of its own; it takes neither --events nor --rows-as")
    if args.events and args.rows_as != "json":
        parser.error("--events prints events as JSON; --rows-as applies to row changes")
    selection = Selection(
        start_position=args.start_position,
        stop_position=args.stop_position,
        start_datetime=args.start_datetime,
        stop_datetime=args.stop_datetime,
        database=args.database,
        table=args.table,
        include_gtids=args.include_gtids,
        exclude_gtids=args.exclude_gtids,
    )
    options = DecodeOptions(default_charset=args.default_charset)
    with contextlib.ExitStack() as stack:
        out: TextIO = sys.stdout
        if args.result_file is not None:
            try:
                out = stack.enter_context(open(args.result_file, "w", encoding="utf-8", newline="\n"))
            except OSError as exc:
                parser.error(f"cannot write --result-file {args.result_file}: {exc.strerror or exc}")
        try:
            return dump(
                args.files,
                events=args.events,
                options=options,
                out=out,
                err=sys.stderr,
                rows_as=args.rows_as,
                flashback=args.flashback,
                selection=selection,
                verbose=args.verbose,
            )
        except BrokenPipeError:
            # the reader went away (``binlog-dump FILE | head``): stop quietly, and point stdout at
            # /dev/null so that the interpreter's last flush does not fail again
            with contextlib.suppress(OSError, ValueError, AttributeError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
