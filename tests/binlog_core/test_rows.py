"""Row images whose framing contradicts itself: the decoder reports them, it never loops or indexes past the end."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from binlog_core.decoder import BinlogDecoder
from binlog_core.errors import MalformedError
from binlog_core.framing import open_events
from binlog_core.rows import RowsEvent, TablePlan, decode_rows
from tests.binlog_core.real_events import time_limit
from tests.fixtures.truth import FIXTURES
from tests.harness.corpus import corpus_path

FULL_IMAGES = sorted((FIXTURES / "full").glob("mysql-bin.[0-9]*"))
WRITE_ROWS_V0 = "mariadb-test-data/suite/binlog/std_data/bug32407.001"
"""MySQL 5.1.15: pre-GA WRITE_ROWS_V0 events."""


def first_rows_event(paths: list[Path], type_name: str) -> tuple[RowsEvent, TablePlan]:
    """The first rows event of ``type_name`` in ``paths`` that holds rows, with the plan of its TABLE_MAP."""
    for path in paths:
        decoder = BinlogDecoder()
        for event in open_events(path):
            in_force = dict(decoder.in_force)
            decoded = decoder.decode(event)
            body = decoded.body
            if event.type_name == type_name and isinstance(body, RowsEvent) and decoded.rows:
                return body, in_force[body.table_id].plan
    raise AssertionError(f"no {type_name} event with rows in {paths}")


@pytest.mark.parametrize("type_name", ["WRITE_ROWS_V1", "UPDATE_ROWS_V1", "DELETE_ROWS_V1"])
def test_row_bytes_behind_present_bitmaps_that_name_no_column_are_malformed(type_name: str) -> None:
    event, plan = first_rows_event(FULL_IMAGES, type_name)
    none = bytes(len(event.present_before))
    nothing_present = dataclasses.replace(event, present_before=none, present_after=none)
    with time_limit(5), pytest.raises(MalformedError, match="bitmaps name no column"):
        decode_rows(nothing_present, plan, [])


@pytest.mark.corpus
def test_a_pre_ga_rows_event_naming_more_columns_than_its_table_map_is_malformed() -> None:
    event, plan = first_rows_event([corpus_path(WRITE_ROWS_V0)], "WRITE_ROWS_V0")
    too_many = dataclasses.replace(event, num_columns=len(plan.table_map.columns) + 9)
    with pytest.raises(MalformedError, match="columns, its TABLE_MAP"):
        decode_rows(too_many, plan, [])
