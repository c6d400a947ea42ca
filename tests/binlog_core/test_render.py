"""Values rendered the way MySQL's ``SELECT`` shows them: FLOAT and VECTOR as float32 text, damaged
non-finite floats as strings with a warning, partially updated JSON as an object of diffs."""

from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from binlog_core.constants import ColumnType
from binlog_core.decoder import RowChange, decode_file
from binlog_core.errors import BinlogError
from binlog_core.json_binary import JsonDiff
from binlog_core.render import (
    ImageJson,
    NonFiniteFloatWarning,
    float32_text,
    json_diffs_value,
    render_change,
    render_image,
    render_value,
    to_jsonable,
)
from binlog_core.rows import JsonPartialUpdate
from binlog_core.table_map import Column
from tests.fixtures.truth import FIXTURES
from tests.harness.corpus import corpus_files, corpus_path

F32 = struct.Struct("<f")


def changes(path: Path) -> list[RowChange]:
    return [change for item in decode_file(path) for change in item.rows]


@pytest.mark.parametrize(
    ("stored", "text"),
    [
        # FLOAT values at the limits, as the full fixture's expected.jsonl holds them (widened)
        (0.10000000149011612, 0.1),
        (3.4028234663852886e38, 3.4028235e38),
        (-3.4028234663852886e38, -3.4028235e38),
        (1.1754943508222875e-38, 1.1754944e-38),  # smallest normal
        (1.401298464324817e-45, 1e-45),  # smallest subnormal: one digit is enough
        (3.1415927410125732, 3.1415927),
        (16777216.0, 16777216.0),
        (0.0, 0.0),
        (-1.5, -1.5),
    ],
)
def test_float_prints_the_shortest_decimal_that_reads_back_as_the_same_float32(stored: float, text: float) -> None:
    assert float32_text(stored) == text
    assert repr(float32_text(stored)) == repr(text)


@given(st.integers(0, 0xFFFFFFFF))
def test_no_shorter_decimal_reads_back_as_the_same_float32(bits: int) -> None:
    (value,) = F32.unpack(struct.pack("<I", bits))
    if not math.isfinite(value):
        return
    text = float32_text(value)
    assert F32.unpack(F32.pack(text))[0] == value
    digits = len(f"{text:.9e}".split("e")[0].replace("-", "").replace(".", "").rstrip("0"))
    if digits > 1:
        shorter = float(f"{value:.{digits - 1}g}")
        assert F32.unpack(F32.pack(shorter))[0] != value, f"{shorter!r} is shorter than {text!r}"


def test_float_column_keeps_negative_zero() -> None:
    assert repr(float32_text(-0.0)) == "-0.0"


@pytest.mark.corpus
def test_vector_elements_print_as_float32_text_like_float_columns() -> None:
    # MariaDB 11.7 / MySQL 9 VECTOR columns of rust_mysql_common/vector.binlog
    rendered = [render_change(c) for c in changes(corpus_path("rust_mysql_common/vector.binlog"))]
    assert [(r["table"], r["op"], r["before"] or r["after"]) for r in rendered[:4]] == [
        ("foo", "insert", {"id": 1, "vector_column": [1.1, 2.2, 3.3]}),
        ("foo", "insert", {"id": 2, "vector_column": [1.0, -1.0, 0.0]}),
        ("bar", "insert", {"id": 1, "vector_column": [1.1, 2.2], "foo": None, "vector_column2": [1.1, 2.2, 3.3, 4.4]}),
        (
            "bar",
            "insert",
            {"id": 2, "vector_column": [1.01, -1.01], "foo": "bar", "vector_column2": [42.0, 43.0, 44.0, 45.0]},
        ),
    ]


def test_double_prints_as_the_shortest_decimal_of_the_double() -> None:
    assert render_value(0.1) == 0.1
    assert render_value(123456789.12345679) == 123456789.12345679


@pytest.mark.parametrize(("value", "text"), [(math.nan, "NaN"), (math.inf, "Infinity"), (-math.inf, "-Infinity")])
def test_non_finite_values_render_as_strings(value: float, text: str) -> None:
    assert render_value(value) == text
    assert render_value((1.5, value)) == [1.5, text]


def test_non_finite_values_in_an_image_are_reported_with_their_column() -> None:
    # the real t_decimal table map of the full fixture; the image's values replaced by damage
    change = next(c for c in changes(FIXTURES / "full" / "mysql-bin.000001") if c.table == "t_decimal")
    columns = change.table_map.columns
    assert change.after is not None
    damage = {"f": math.inf, "dbl": math.nan}
    image = tuple(damage.get(c.display_name, v) for c, v in zip(columns, change.after, strict=True))
    problems: list[BinlogError] = []
    rendered = render_image(image, columns, problems, side="after")
    assert rendered is not None
    assert (rendered["f"], rendered["dbl"], rendered["id"]) == ("Infinity", "NaN", 1)
    assert [(type(p), p.code, p.severity, p.path) for p in problems] == [
        (NonFiniteFloatWarning, "NON_FINITE_FLOAT", "warning", ("col 11 f",)),
        (NonFiniteFloatWarning, "NON_FINITE_FLOAT", "warning", ("col 12 dbl",)),
    ]
    assert render_image(change.after, columns, problems) is not None and len(problems) == 2  # finite: no warning


@dataclass(frozen=True)
class _Body:
    name: str
    value: float


def test_non_finite_floats_in_event_bodies_render_as_strings_with_their_field_path() -> None:
    problems: list[BinlogError] = []
    assert to_jsonable(_Body("r", -math.inf), problems) == {"name": "r", "value": "-Infinity"}
    assert [(p.code, p.path) for p in problems] == [("NON_FINITE_FLOAT", ("value",))]
    assert to_jsonable(_Body("r", 0.0025)) == {"name": "r", "value": 0.0025}


def test_json_diffs_render_as_an_object_with_operation_path_and_mysql_value_text() -> None:
    update = JsonPartialUpdate(
        (
            JsonDiff("REPLACE", "$.a", "1"),
            JsonDiff("INSERT", "$.b", '"x"'),
            JsonDiff("INSERT", "$.c[0]", "[1, 2]"),
            JsonDiff("REMOVE", "$.d", None),
        )
    )
    assert (
        render_value(update)
        == json_diffs_value(update)
        == {
            "json_diffs": [
                {"op": "REPLACE", "path": "$.a", "value": "1"},
                {"op": "INSERT", "path": "$.b", "value": '"x"'},
                {"op": "INSERT", "path": "$.c[0]", "value": "[1, 2]"},
                {"op": "REMOVE", "path": "$.d", "value": None},
            ]
        }
    )


@pytest.mark.corpus
def test_partially_updated_json_column_renders_as_diffs_and_whole_documents_as_strings() -> None:
    rendered = [render_change(c) for c in changes(corpus_path("rust_mysql_common/json.binlog.000001"))]
    partial = [r for r in rendered if r["event_type"] == "PARTIAL_UPDATE_ROWS"]
    assert partial[0]["after"] == {
        "@2": {"json_diffs": [{"op": "REPLACE", "path": "$.age", "value": "26"}]},
        "@3": "Joe",
        "@4": 26,
    }
    full = [r for r in rendered if r["event_type"] != "PARTIAL_UPDATE_ROWS" and r["after"] is not None]
    assert all(not isinstance(v, dict) for r in full for v in r["after"].values())


def _image_texts_agree(paths: list[Path]) -> int:
    """Every image of every row change in ``paths``: :class:`ImageJson`'s text equals the rendered dict dumped."""
    compared = 0
    for path in paths:
        try:
            found = changes(path)
        except BinlogError:  # a deliberately damaged file: the changes before the damage are enough elsewhere
            continue
        for change in found:
            columns = change.table_map.columns
            writer = ImageJson(columns)
            for image in (change.before, change.after):
                expected = None if image is None else json.dumps(render_image(image, columns), ensure_ascii=False)
                assert writer.text(image) == expected, (path, change.offset, change.row_index)
                compared += image is not None
    return compared


def test_image_json_text_equals_the_rendered_image_dumped_for_every_fixture_row() -> None:
    paths = sorted(p for p in FIXTURES.rglob("*") if p.is_file() and p.suffix[1:].isdigit())
    assert _image_texts_agree(paths) > 1000


@pytest.mark.corpus
def test_image_json_text_equals_the_rendered_image_dumped_for_every_corpus_row() -> None:
    assert _image_texts_agree([corpus_path(f) for f in corpus_files()]) > 50_000


_VALUES = st.one_of(st.none(), st.booleans(), st.integers(), st.text(), st.floats(width=32), st.binary())


@given(st.lists(_VALUES, max_size=8))
def test_image_json_text_equals_the_rendered_image_dumped_for_any_values(values: list[object]) -> None:
    columns = tuple(
        Column(i, ColumnType.FLOAT if i % 3 == 0 else ColumnType.DOUBLE, ColumnType.DOUBLE, 0, True, name=f'c"{i}é')
        for i in range(len(values))
    )
    assert ImageJson(columns).text(values) == json.dumps(render_image(values, columns), ensure_ascii=False)
