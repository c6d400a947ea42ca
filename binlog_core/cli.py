"""``binlog-dump FILE...``: print every row change (or every event) of binlog files as JSON lines.

Row changes go to stdout, one JSON object per line, in file order (values as
:mod:`binlog_core.render` renders them); the output is always strict JSON (``allow_nan=False``).
Problems go to stderr, one line each::

    file<TAB>offset[#inner]<TAB>CODE<TAB>[EVENT_TYPE -> path: ]message

``file`` is the base name and ``offset`` the event's byte offset, empty when unknown (a file
that cannot be opened: ``IO_ERROR``).  Everything decodable is decoded and printed; the exit
status says what happened:

* 0 -- every event of every file decoded;
* 1 -- something could not be decoded (the lines on stderr say what and where);
* 2 -- bad command line (including an unknown ``--default-charset``);
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
from collections.abc import Sequence
from typing import Any, TextIO

from binlog_core.charsets import CHARSET_CODECS
from binlog_core.columns import DecodeOptions
from binlog_core.decoder import DecodedEvent, decode_file
from binlog_core.errors import BinlogError
from binlog_core.render import render_change, render_image, to_jsonable
from binlog_core.rows import RowsEvent

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


def dump(paths: Sequence[str], *, events: bool, options: DecodeOptions, out: TextIO, err: TextIO) -> int:
    """Decode each file and print its records; return the exit status."""
    severities: set[str] = set()

    def report(problem: BinlogError) -> None:
        severities.add(problem.severity)
        _report(problem, err)

    for path in paths:
        try:
            for item in decode_file(path, options=options):
                found: list[BinlogError] = []
                if events:
                    out.write(_dumps(_event_record(item, found)) + "\n")
                else:
                    for change in item.rows:
                        out.write(_dumps(render_change(change, found)) + "\n")
                for problem in (*item.problems, *found):
                    report(problem)
        except BinlogError as exc:
            report(exc)
        except BrokenPipeError:
            raise  # the reader of stdout went away: not a problem of this file
        except OSError as exc:
            severities.add("error")
            message = exc.strerror or str(exc)
            print(_line(os.path.basename(os.fspath(path)), "", "IO_ERROR", message), file=err)
    if "error" in severities:
        return EXIT_ERRORS
    return EXIT_WARNINGS if severities else EXIT_OK


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


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``binlog-dump`` and ``python -m binlog_core``."""
    parser = argparse.ArgumentParser(
        prog="binlog-dump",
        description="Decode MySQL/MariaDB binlog files into JSON lines: one per row change (default) or per event.",
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="binlog files, read in the order given")
    parser.add_argument("--events", action="store_true", help="print one JSON object per event instead")
    parser.add_argument(
        "--default-charset",
        default="utf-8",
        type=_default_codec,
        metavar="CHARSET",
        help="charset of text columns when the file names none: a MySQL charset (utf8mb4, latin1, ...) or a "
        "Python text codec (default: utf-8; 'none' keeps bytes); text that does not decode in it is printed as "
        "hex with an UNDECODABLE_TEXT warning",
    )
    args = parser.parse_args(argv)
    options = DecodeOptions(default_charset=args.default_charset)
    try:
        return dump(args.files, events=args.events, options=options, out=sys.stdout, err=sys.stderr)
    except BrokenPipeError:
        # the reader went away (``binlog-dump FILE | head``): stop quietly, and point stdout at
        # /dev/null so that the interpreter's last flush does not fail again
        with contextlib.suppress(OSError, ValueError, AttributeError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
