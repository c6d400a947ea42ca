"""Typed gold change tables against the recorded truth: every typed value, and its ``__raw``
companion, must be the value the server stored."""

from __future__ import annotations

import struct
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from pyspark.sql import Column, DataFrame, Row
from pyspark.sql import functions as F
from pyspark.sql.types import StructType, TimestampNTZType, TimestampType

from pipelines.gold.types import RAW_SUFFIX, conversion_of, spark_type, type_suffix
from tests.fixtures.recorder import Change


def typed_matches(kind: str, typed: Any, raw: Any, truth: Any) -> bool:
    """Whether a typed gold value (and its ``__raw`` companion) is the recorded MySQL value."""
    conversion = conversion_of(kind)
    if truth is None:
        return typed is None and raw is None
    if conversion in ("timestamp", "datetime", "date"):
        if typed is None:
            return bool(raw == truth)
        text = typed.isoformat() if conversion == "date" else typed
        return bool(raw is None and text[: len(truth)] == truth)
    if conversion == "decimal":
        return bool((format(typed, "f") if isinstance(typed, Decimal) else typed) == truth)
    if conversion == "float":
        return struct.pack("<f", typed) == struct.pack("<f", truth)
    if conversion == "bit":
        return bool(typed & (1 << 64) - 1 == truth)
    if conversion == "binary":
        return bool("hex:" + bytes(typed).hex() == truth)
    if conversion == "int":
        return bool(int(typed) == truth)
    return bool(typed == truth) and raw is None


def timestamps_as_text(frame: DataFrame) -> list[Column]:
    """The frame's columns with timestamps inside ``before``/``after`` as text (Python's datetime
    cannot hold year 1 at UTC midnight, which Spark can)."""
    out: list[Column] = []
    for top in frame.schema.fields:
        if top.name not in ("before", "after"):
            out.append(F.col(top.name))
            continue
        assert isinstance(top.dataType, StructType)
        fields = [
            F.date_format(F.col(top.name)[f.name], "yyyy-MM-dd HH:mm:ss.SSSSSS").alias(f.name)
            if isinstance(f.dataType, (TimestampType, TimestampNTZType))
            else F.col(top.name)[f.name].alias(f.name)
            for f in top.dataType.fields
        ]
        out.append(F.when(F.col(top.name).isNotNull(), F.struct(*fields)).alias(top.name))
    return out


def typed_mismatches(tables: Mapping[str, DataFrame], changes: list[Row], truth: list[Change]) -> tuple[list[str], int]:
    """How the typed tables' rows of ``changes`` (rows of the unified ``changes`` table, in
    binlog order, one per ``truth`` change) differ from the truth; and how many values were checked.

    Each typed value is looked up in the field its kind writes to (the column's name, or the name
    with a type suffix once the column's type changed).
    """
    key_of = {(r.file, r.offset, r.inner_index, r.row_index): i for i, r in enumerate(changes)}
    failures: list[str] = []
    checked = 0
    seen = 0
    for name, frame in tables.items():
        fields = frame.schema["after"].dataType
        assert isinstance(fields, StructType)
        for row in frame.select(*timestamps_as_text(frame)).collect():
            index = key_of.get((row.file, row.offset, row.inner_index, row.row_index))
            if index is None:
                continue
            seen += 1
            change, source = truth[index], changes[index]
            if row.op != change.op:
                failures.append(f"{name} seq {change.seq}: op {row.op} != {change.op}")
            for side, values in (("before", change.before), ("after", change.after)):
                image = row[side]
                if values is None:
                    if image is not None:
                        failures.append(f"{name} seq {change.seq} {side}: an image where none was logged")
                    continue
                absent = set(source["absent_" + side] or [])
                for column, kind in zip(source.column_names, source.column_kinds, strict=True):
                    if column in absent:
                        continue
                    target = column if fields[column].dataType == spark_type(kind) else column + type_suffix(kind)
                    typed = image[target]
                    raw = image.asDict().get(target + RAW_SUFFIX)
                    checked += 1
                    if not typed_matches(kind, typed, raw, values[column]):
                        failures.append(f"{name} seq {change.seq} {side}.{target} ({kind}): {typed!r}, raw {raw!r}")
    if seen != len(changes):
        failures.append(f"{seen} typed rows found for {len(changes)} changes")
    return failures, checked
