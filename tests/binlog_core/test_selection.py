"""``binlog-dump``'s selection options select what ``mariadb-binlog`` selects with the same options.

For each option the tool runs on the same files (``--base64-output=decode-rows -vv``); two things
are compared with :class:`binlog_core.selection.Selector` over the decoded files:

* the events it prints: each printed event has a header line (``#231114 22:13:28 server id 1
  end_log_pos 2638 ...``), identified here by its file and end position; a filtered event prints
  at most its ``# at`` line.  ANNOTATE_ROWS events are left out of the comparison: the tool holds
  one back and prints it under the next table map it keeps;
* the row changes it prints, value by value (ours printed by
  :func:`tests.harness.mariadb_binlog.print_column`).

Inputs: the bundled ``sample`` binlogs (5 files, DDL, FULL then NO_LOG metadata) and, for
``--start-datetime``/``--stop-datetime``, a binlog written by a private server with event times
an hour after the server's own first events (the sample's events carry times from 2023 while its
file headers carry the generation day, so a time window over it is all or nothing).  The tool
reads times in the local zone: it runs with ``TZ=UTC``.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from binlog_core.columns import ABSENT
from binlog_core.constants import EventType
from binlog_core.decoder import decode_file
from binlog_core.rows import Row
from binlog_core.selection import (
    GtidSyntaxError,
    Selection,
    Selector,
    Verdict,
    parse_datetime,
    parse_gtid_set,
)
from binlog_core.table_map import Column
from tests.fixtures.truth import FIXTURES
from tests.harness.mariadb import MariaDBServer
from tests.harness.mariadb_binlog import (
    DUMP_ARGS,
    PRINT_OPTIONS,
    LoggedValue,
    parse_rows,
    print_column,
    require_mariadb_binlog,
)

SAMPLE = [FIXTURES / "sample" / f"mysql-bin.00000{n}" for n in range(1, 6)]

_HEADER = re.compile(r"^#\d{6} [ \d]\d:\d\d:\d\d server id \d+\s+end_log_pos (\d+)\s[^\t]*\t(.*)$")
_CONTROL_HEADERS = ("Start:", "Gtid list", "Binlog checkpoint", "Rotate to", "Stop")
_CONTROL_TYPES = frozenset(
    {
        EventType.FORMAT_DESCRIPTION,
        EventType.GTID_LIST,
        EventType.BINLOG_CHECKPOINT,
        EventType.ROTATE,
        EventType.STOP,
    }
)

Printed = tuple[int, int]
"""``(file number in the run, end position)`` of one event."""
RowLine = tuple[str, str, str, dict[int, LoggedValue] | None, dict[int, LoggedValue] | None]


def tool(paths: Sequence[Path], *options: str) -> str:
    """``mariadb-binlog --base64-output=decode-rows -vv OPTIONS FILES`` in UTC."""
    result = subprocess.run(
        [require_mariadb_binlog(), *DUMP_ARGS, *options, *map(str, paths)],
        capture_output=True,
        check=False,
        timeout=60,
        env={**os.environ, "TZ": "UTC"},
    )
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    return result.stdout.decode("latin-1")


def tool_events(dump: str, *, transactions_only: bool = False) -> list[Printed]:
    """The events the tool printed (a header line each), ANNOTATE_ROWS left out."""
    printed: list[Printed] = []
    file_number, last = 0, 0
    for line in dump.split("\n"):
        header = _HEADER.match(line)
        if header is None:
            continue
        end, text = int(header.group(1)), header.group(2)
        if end <= last:
            file_number += 1
        last = end
        if text.startswith("Annotate_rows") or (transactions_only and text.startswith(_CONTROL_HEADERS)):
            continue
        printed.append((file_number, end))
    return printed


def printed_image(columns: tuple[Column, ...], image: Row | None) -> dict[int, LoggedValue] | None:
    if image is None:
        return None
    return {c.index + 1: print_column(c, v) for c, v in zip(columns, image, strict=False) if v is not ABSENT}


def selected(
    paths: Sequence[Path], selection: Selection, *, transactions_only: bool = False
) -> tuple[list[Printed], list[RowLine]]:
    """Our selection: the events (as :func:`tool_events` names them) and the printed rows."""
    selector = Selector(selection, len(paths))
    events: list[Printed] = []
    rows: list[RowLine] = []
    for number, path in enumerate(paths):
        selector.begin_file(number)
        for item in decode_file(path, options=PRINT_OPTIONS):
            verdict = selector.verdict(item)
            if verdict is Verdict.STOP:
                return _renumbered(events), rows
            if verdict is Verdict.SKIP or item.event.type_code == EventType.ANNOTATE_ROWS:
                continue
            if transactions_only and item.event.type_code in _CONTROL_TYPES:
                continue
            events.append((number, item.event.header.log_pos))
            for change in item.rows:
                columns = change.table_map.columns
                rows.append(
                    (
                        change.op,
                        change.schema,
                        change.table,
                        printed_image(columns, change.before),
                        printed_image(columns, change.after),
                    )
                )
    return _renumbered(events), rows


def _renumbered(events: list[Printed]) -> list[Printed]:
    """File numbers counted from the first file with a printed event, as :func:`tool_events` counts."""
    if not events:
        return events
    first = events[0][0]
    return [(number - first, end) for number, end in events]


def tool_rows(dump: str) -> list[RowLine]:
    return [(r.op, r.schema, r.table, r.before, r.after) for r in parse_rows(dump)]


def assert_same_selection(paths: Sequence[Path], selection: Selection, *options: str) -> tuple[int, int]:
    """Our selection equals the tool's; returns (events, rows) selected, so a test can pin them."""
    dump = tool(paths, *options)
    events, rows = selected(paths, selection)
    assert events == tool_events(dump)
    assert rows == tool_rows(dump)
    return len(events), len(rows)


# -- the options, on the bundled sample ----------------------------------------------------


def test_start_position_applies_to_the_first_file_only() -> None:
    counts = assert_same_selection(SAMPLE[:2], Selection(start_position=6064), "--start-position=6064")
    assert counts == (330, 211)


def test_stop_position_applies_to_the_last_file_only() -> None:
    counts = assert_same_selection(SAMPLE[:3], Selection(stop_position=2060), "--stop-position=2060")
    assert counts == (363, 248)


def test_start_and_stop_position_in_one_file_select_the_events_between() -> None:
    counts = assert_same_selection(
        SAMPLE[:1],
        Selection(start_position=2596, stop_position=11434),
        "--start-position=2596",
        "--stop-position=11434",
    )
    assert counts == (9, 50)


def test_stop_position_inside_an_event_keeps_that_event() -> None:
    counts = assert_same_selection(SAMPLE[:1], Selection(stop_position=4300), "--stop-position=4300")
    assert counts == (17, 0)


def test_database_keeps_rows_of_its_tables_and_statements_whose_default_database_it_is() -> None:
    counts = assert_same_selection(SAMPLE, Selection(database="shop"), "--database=shop")
    assert counts == (550, 366)


def test_database_of_no_table_keeps_only_events_outside_statements_and_rows() -> None:
    counts = assert_same_selection(SAMPLE, Selection(database="other"), "--database=other")
    assert counts == (139, 0)


def test_table_keeps_rows_of_tables_of_that_name_and_every_statement() -> None:
    counts = assert_same_selection(SAMPLE, Selection(table="orders"), "--table=orders")
    assert counts == (299, 98)


def test_database_and_table_together_keep_the_rows_of_that_one_table() -> None:
    counts = assert_same_selection(
        SAMPLE, Selection(database="shop", table="products"), "--database=shop", "--table=products"
    )
    assert counts == (310, 114)


def test_start_datetime_on_the_sample_starts_at_its_first_later_event_and_keeps_everything_after() -> None:
    # the files' own first events carry the generation time, later than every transaction: the
    # window opens at the second event of the first file, as the tool opens it
    counts = assert_same_selection(
        SAMPLE[:2],
        Selection(start_datetime=parse_datetime("2023-11-14 22:14:00")),
        "--start-datetime=2023-11-14 22:14:00",
    )
    assert counts == (349, 241)


def test_include_gtids_selects_the_transactions_mariadb_binlog_prints_between_two_gtid_positions() -> None:
    dump = tool(SAMPLE[:2], "--start-position=0-1-10", "--stop-position=0-1-14")
    events, rows = selected(SAMPLE[:2], Selection(include_gtids=parse_gtid_set("0-1-11-14")), transactions_only=True)
    assert events == tool_events(dump, transactions_only=True)
    assert rows == tool_rows(dump)
    assert (len(events), len(rows)) == (48, 24)


def test_exclude_gtids_selects_what_mariadb_binlog_prints_before_and_after_the_excluded_range() -> None:
    before = tool(SAMPLE[:2], "--stop-position=0-1-10")
    after = tool(SAMPLE[:2], "--start-position=0-1-14")
    events, rows = selected(SAMPLE[:2], Selection(exclude_gtids=parse_gtid_set("0-1-11-14")), transactions_only=True)
    assert events == tool_events(before, transactions_only=True) + tool_events(after, transactions_only=True)
    assert rows == tool_rows(before) + tool_rows(after)
    assert (len(events), len(rows)) == (292, 217)


# -- times: a binlog with a spread of event times ------------------------------------------


@pytest.fixture(scope="module")
def timed_binlog(mariadb_factory: object) -> tuple[list[Path], int]:
    """A file whose transactions carry the times ``base + 60 * k`` (k = 0..9), one hour after the
    server started; returns the file and ``base``."""
    server: MariaDBServer = mariadb_factory({"binlog_row_metadata": "FULL"})  # type: ignore[operator]
    base = int(time.time()) // 60 * 60 + 3600
    server.flush_binary_logs()
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("CREATE DATABASE IF NOT EXISTS timed")
        cur.execute("CREATE TABLE timed.t (id INT PRIMARY KEY, v VARCHAR(10))")
        for k in range(10):
            cur.execute(f"SET TIMESTAMP = {base + 60 * k}")
            cur.execute(f"INSERT INTO timed.t VALUES ({k}, 'v{k}')")
        cur.execute("SET TIMESTAMP = DEFAULT")
    name = server.current_binlog()
    server.flush_binary_logs()
    return [server.binlog_dir / name], base


def _utc(seconds: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(seconds))


@pytest.mark.mariadb
def test_start_datetime_selects_from_the_first_event_at_or_after_the_time(timed_binlog: tuple[list[Path], int]) -> None:
    paths, base = timed_binlog
    at = _utc(base + 60 * 6)
    counts = assert_same_selection(paths, Selection(start_datetime=parse_datetime(at)), f"--start-datetime={at}")
    assert counts[1] == 4


@pytest.mark.mariadb
def test_stop_datetime_stops_at_the_first_event_at_or_after_the_time(timed_binlog: tuple[list[Path], int]) -> None:
    paths, base = timed_binlog
    at = _utc(base + 60 * 3 + 30)
    counts = assert_same_selection(paths, Selection(stop_datetime=parse_datetime(at)), f"--stop-datetime={at}")
    assert counts[1] == 4


@pytest.mark.mariadb
def test_start_and_stop_datetime_select_the_transactions_between(timed_binlog: tuple[list[Path], int]) -> None:
    paths, base = timed_binlog
    start, stop = _utc(base + 60 * 2), _utc(base + 60 * 5)
    counts = assert_same_selection(
        paths,
        Selection(start_datetime=parse_datetime(start), stop_datetime=parse_datetime(stop)),
        f"--start-datetime={start}",
        f"--stop-datetime={stop}",
    )
    assert counts[1] == 3


# -- parsing -------------------------------------------------------------------------------


def test_mysql_gtid_set_holds_its_intervals_per_uuid_and_tag() -> None:
    gtids = parse_gtid_set("3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5:7,\n3e11fa4771ca11e19e33c80aa9429563:tag_a:3-4")
    assert gtids.mysql == {
        ("3e11fa47-71ca-11e1-9e33-c80aa9429562", ""): ((1, 5), (7, 7)),
        ("3e11fa47-71ca-11e1-9e33-c80aa9429563", "tag_a"): ((3, 4),),
    }
    members = [
        "3e11fa47-71ca-11e1-9e33-c80aa9429562:5",
        "3e11fa47-71ca-11e1-9e33-c80aa9429562:6",
        "3e11fa47-71ca-11e1-9e33-c80aa9429563:tag_a:4",
        "3e11fa47-71ca-11e1-9e33-c80aa9429563:4",
        None,
    ]
    assert [m in gtids for m in members] == [True, False, True, False, False]


def test_mariadb_gtids_are_single_transactions_or_ranges_of_one_domain_and_server() -> None:
    gtids = parse_gtid_set("0-1-5,0-1-10-12,1-2-7")
    assert gtids.mariadb == {(0, 1): ((5, 5), (10, 12)), (1, 2): ((7, 7),)}
    assert [g in gtids for g in ("0-1-5", "0-1-6", "0-1-11", "0-2-11", "1-2-7")] == [True, False, True, False, True]


@pytest.mark.parametrize("text", ["", "abc", "3e11fa47-71ca-11e1-9e33-c80aa9429562", "3e11fa47:1-5", "0-1", "0-1-9-3"])
def test_malformed_gtid_sets_are_refused(text: str) -> None:
    with pytest.raises(GtidSyntaxError):
        parse_gtid_set(text)


def test_datetimes_without_an_offset_are_utc() -> None:
    assert [parse_datetime(t) for t in ("2023-11-14 22:13:20", "2023-11-14T23:13:20+01:00", "2023-11-15")] == [
        1700000000,
        1700000000,
        1700006400,
    ]
