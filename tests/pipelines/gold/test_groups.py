"""Gold decodes the rows events of many tables in groups of tables (``DECODE_GROUP``): the sample's
five tables decoded two at a time give the lake that one decode of all five gives, row for row.

The reference is the ``sample_lake`` fixture (the sample in one run); the other lake is the same
input in one run with groups of two tables, so three decodes: every rows event is decoded in
exactly one of them, and each typed table is written from its group's decode.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

import pipelines.gold.stage as gold_stage
from conf import InputSettings, StorageSettings
from pipelines.run import run
from tests.harness.sample_lake import PROBE, SAMPLE, SampleLake, lake_rows


def test_a_run_decoding_its_tables_two_at_a_time_writes_the_lake_one_decode_of_all_tables_writes(
    spark: SparkSession, sample_lake: SampleLake, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    groups: list[list[str]] = []
    decode = gold_stage.decode_rows_events

    def counted(plans: Any, images: Any, tables: Any, *args: Any) -> Any:
        groups.append(list(tables))
        return decode(plans, images, tables, *args)

    monkeypatch.setattr(gold_stage, "DECODE_GROUP", 2)
    monkeypatch.setattr(gold_stage, "decode_rows_events", counted)
    cfg = sample_lake.cfg.model_copy(
        update={
            "input": InputSettings(path=str(SAMPLE)),
            "storage": StorageSettings(root=str(tmp_path / "lake"), register_tables=False),
        }
    )
    assert run(spark, cfg, err=io.StringIO(), progress_every=None).exit_code == 0

    want = lake_rows(sample_lake.root, SAMPLE)
    want.pop(f"{PROBE.layer.value}.{PROBE.name}")
    got = lake_rows(tmp_path / "lake", SAMPLE)
    assert [len(group) for group in groups] == [2, 2, 1]
    assert sorted(name for group in groups for name in group) == sorted(
        name.split(".", 1)[1] for name in want if name.startswith("gold.") and "__" in name
    )
    assert sorted(got) == sorted(want)
    for table in sorted(want):
        assert got[table] == want[table], table
