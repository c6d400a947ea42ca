"""A run killed in the middle of a stage's writes, then started again, ends with the same tables as
a run that was never interrupted."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from conf import AppConfig, InputSettings, StorageSettings
from pipelines.exits import Exit
from pipelines.run import run
from pipelines.storage import Lakehouse, Table, Write
from tests.harness.sample_lake import lake_rows

SAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "mariadb" / "sample"


class Killed(RuntimeError):
    """Stands for the process dying."""


def config(root: Path) -> AppConfig:
    return AppConfig(
        input=InputSettings(path=str(SAMPLE)),
        storage=StorageSettings(root=str(root), register_tables=False),
    )


def contents(lake: Lakehouse) -> dict[str, list[str]]:
    """Every row of every bronze, silver and gold table, sorted (run ids left out), read by delta-rs."""
    return lake_rows(Path(lake.settings.root), SAMPLE)


@pytest.fixture(scope="module")
def uninterrupted(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """The tables of one run of the sample that nothing interrupted."""
    clean = config(tmp_path_factory.mktemp("clean"))
    assert run(spark, clean).exit_code == Exit.OK
    return contents(Lakehouse(spark, clean.storage))


@pytest.mark.parametrize("stage", ["bronze", "silver", "gold"])
def test_a_run_killed_while_a_stage_writes_converges_to_the_uninterrupted_tables(
    spark: SparkSession,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    stage: str,
    uninterrupted: dict[str, list[str]],
) -> None:
    # bronze writes binlog_events and its quarantine rows, then binlog_files: killed at the second
    # write, its events are written and binlog_files does not know the files yet
    killed = config(tmp_path / "killed")
    real = Lakehouse.write
    writes = {"n": 0}

    def dying(self: Lakehouse, write: Write) -> None:
        if write.spec.layer.value == stage:
            writes["n"] += 1
            if writes["n"] == 2:  # the first table of the stage is written, the second is not
                raise Killed(f"killed while writing {write.spec.name}")
        real(self, write)

    monkeypatch.setattr(Lakehouse, "write", dying)
    monkeypatch.setattr(Lakehouse, "write_all", lambda self, writes, parallel=4: [self.write(w) for w in writes])
    with pytest.raises(Killed):
        run(spark, killed)
    monkeypatch.undo()
    killed_lake = Lakehouse(spark, killed.storage)
    if stage == "bronze":
        assert killed_lake.exists(Table.bronze("binlog_events"))
        assert not killed_lake.exists(Table.bronze("binlog_files"))
    again = run(spark, killed)
    assert (again.exit_code, again.stages) == (Exit.OK, ["bronze", "silver", "gold"])
    assert again.files_built[stage] == 5  # every file was still pending for the killed stage

    want = uninterrupted
    got = contents(Lakehouse(spark, killed.storage))
    assert sorted(got) == sorted(want)
    for name in want:
        assert got[name] == want[name], name
