"""``binlog-dump FILE...``: print every row change (or every event) of binlog files as JSON lines.

Row changes go to stdout, one JSON object per line, in file order.  Problems go to stderr,
one line each: ``file<TAB>offset[#inner]<TAB>CODE<TAB>message``.  Everything decodable is
decoded; the exit status says what happened:

* 0 -- every event of every file decoded;
* 1 -- something could not be decoded (the lines on stderr say what and where);
* 2 -- bad command line;
* 3 -- everything decoded, with warnings (unknown event types kept raw, text kept as bytes).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from binlog_core.columns import DecodeOptions
from binlog_core.decoder import DecodedEvent, decode_file
from binlog_core.errors import BinlogError
from binlog_core.render import render_change, render_image, to_jsonable
from binlog_core.rows import RowsEvent

EXIT_OK, EXIT_ERRORS, EXIT_USAGE, EXIT_WARNINGS = 0, 1, 2, 3


def _event_record(item: DecodedEvent) -> dict[str, Any]:
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
    if isinstance(item.body, RowsEvent):
        body = item.body
        record["body"] = {
            "table_id": body.table_id,
            "flags": body.flags,
            "extra": to_jsonable(body.extra),
            "num_columns": body.num_columns,
        }
        record["rows"] = [
            {
                "before": render_image(change.before, change.table_map.columns),
                "after": render_image(change.after, change.table_map.columns),
            }
            for change in item.rows
        ]
    else:
        record["body"] = to_jsonable(item.body)
    return record


def _report(problem: BinlogError, err: TextIO) -> None:
    place = "" if problem.offset is None else str(problem.offset)
    if problem.inner_index is not None:
        place += f"#{problem.inner_index}"
    trail = " -> ".join(([problem.event_type] if problem.event_type else []) + list(problem.path))
    message = f"{trail}: {problem.message}" if trail else problem.message
    print(f"{problem.file}\t{place}\t{problem.code}\t{message}", file=err)


def dump(paths: Sequence[str], *, events: bool, options: DecodeOptions, out: TextIO, err: TextIO) -> int:
    """Decode each file and print its records; return the exit status."""
    severities: set[str] = set()

    def report(problem: BinlogError) -> None:
        severities.add(problem.severity)
        _report(problem, err)

    for path in paths:
        try:
            for item in decode_file(path, options=options):
                if events:
                    out.write(json.dumps(_event_record(item), ensure_ascii=False) + "\n")
                else:
                    for change in item.rows:
                        out.write(json.dumps(render_change(change), ensure_ascii=False) + "\n")
                for problem in item.problems:
                    report(problem)
        except BinlogError as exc:
            report(exc)
        except OSError as exc:
            severities.add("error")
            print(f"{path}\t\tIO_ERROR\t{exc}", file=err)
    if "error" in severities:
        return EXIT_ERRORS
    return EXIT_WARNINGS if severities else EXIT_OK


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
        help="codec for text columns when the file carries no charset (default: utf-8; 'none' keeps bytes)",
    )
    args = parser.parse_args(argv)
    charset = None if args.default_charset.lower() == "none" else args.default_charset
    options = DecodeOptions(default_charset=charset)
    try:
        return dump(args.files, events=args.events, options=options, out=sys.stdout, err=sys.stderr)
    except BrokenPipeError:
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
