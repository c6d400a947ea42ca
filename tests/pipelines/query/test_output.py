"""Each value prints unambiguously in each text format."""

from __future__ import annotations

import datetime as dt
import io
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest

from pipelines.query.output import json_value, text_value, write_delimited, write_jsonl, write_table

PARIS = ZoneInfo("Europe/Paris")


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (Decimal("12.50"), "12.50"),
        (Decimal("0E-10"), "0.0000000000"),
        (Decimal("-12345678901234567890.1"), "-12345678901234567890.1"),
        (0.1, "0.1"),
        (float("nan"), "NaN"),
        (float("-inf"), "-Infinity"),
        (True, "true"),
        (b"\x00\xff", "hex:00ff"),
        (bytearray(b""), "hex:"),
        (dt.datetime(2024, 3, 1, 10, 29, 0, 46000, tzinfo=dt.UTC), "2024-03-01 10:29:00.046+00:00"),
        (dt.datetime(2024, 3, 1, 11, 29, tzinfo=PARIS), "2024-03-01 11:29:00+01:00"),
        (dt.datetime(2024, 3, 1, 10, 29, 0, 5), "2024-03-01 10:29:00.000005"),
        (dt.date(2024, 3, 1), "2024-03-01"),
        ({"id": Decimal("1"), "at": None, "raw": b"\x01"}, '{"id": "1", "at": null, "raw": "hex:01"}'),
        (["a", None], '["a", null]'),
        ([("k", 1), ("l", 2)], '{"k": 1, "l": 2}'),
    ],
)
def test_a_value_prints_as_exactly_one_text(value: object, text: str) -> None:
    assert text_value(value) == text


def test_json_keeps_numbers_that_a_double_holds_and_quotes_the_rest() -> None:
    assert json_value({"n": 7, "f": 2.5, "d": Decimal("0.10"), "inf": float("inf"), "s": "x"}) == {
        "n": 7,
        "f": 2.5,
        "d": "0.10",
        "inf": "Infinity",
        "s": "x",
    }


def test_the_table_right_aligns_numbers_and_measures_wide_characters() -> None:
    out = io.StringIO()
    write_table(
        ["id", "note", "total"],
        ["BIGINT", "VARCHAR", "DECIMAL(12,2)"],
        [(1, "配達", Decimal("5.00")), (10, "a\tb", None)],
        out,
    )
    assert out.getvalue() == ("id | note | total\n---+------+------\n 1 | 配達 |  5.00\n10 | a\\tb |  NULL\n(2 rows)\n")


def test_an_empty_result_still_prints_its_header() -> None:
    out = io.StringIO()
    write_table(["n"], ["BIGINT"], [], out)
    assert out.getvalue() == "n\n-\n(0 rows)\n"


def test_tsv_and_csv_tell_null_from_an_empty_string() -> None:
    rows = [(None, "", "a\tb\\c", 'say "hi", go')]
    tsv, csv = io.StringIO(), io.StringIO()
    write_delimited(["n", "e", "t", "q"], rows, tsv, "tsv")
    write_delimited(["n", "e", "t", "q"], rows, csv, "csv")
    assert tsv.getvalue() == 'n\te\tt\tq\n\\N\t\ta\\tb\\\\c\tsay "hi", go\n'
    assert csv.getvalue() == 'n,e,t,q\n,"",a\tb\\c,"say ""hi"", go"\n'


def test_jsonl_gives_repeated_column_names_their_own_keys() -> None:
    out = io.StringIO()
    write_jsonl(["total", "total"], [(Decimal("1.00"), None)], out)
    assert out.getvalue() == '{"total": "1.00", "total_2": null}\n'
