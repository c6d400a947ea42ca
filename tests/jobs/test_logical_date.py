"""``--logical-date``: an orchestrator's logical date of a run, checked before any work and recorded
in the run's summary, for people and for machines."""

from __future__ import annotations

import pytest

from conf import AppConfig, InputSettings, StorageSettings
from jobs import cli
from pipelines.exits import Exit
from pipelines.run import DdlCoverage, RunReport, as_json, summary


@pytest.mark.parametrize(
    ("given", "recorded"),
    [
        ("2024-03-01", "2024-03-01T00:00:00+00:00"),
        ("2024-03-01T10:29:00", "2024-03-01T10:29:00+00:00"),
        ("2024-03-01T10:29:00.046+02:00", "2024-03-01T10:29:00.046000+02:00"),
        ("2024-03-01T10:29:00Z", "2024-03-01T10:29:00+00:00"),
    ],
)
def test_a_logical_date_is_recorded_with_its_offset_and_utc_when_it_has_none(given: str, recorded: str) -> None:
    args = cli.parser().parse_args(["gold", "--logical-date", given])
    assert args.logical_date == recorded


def test_a_logical_date_that_is_not_iso_8601_is_a_usage_error_before_any_work(
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = AppConfig(input=InputSettings(path="/nowhere"), storage=StorageSettings(root="/nowhere"))
    assert cli.main(["bronze", "--logical-date", "yesterday"], config=config) == Exit.USAGE
    assert "argument --logical-date: not an ISO 8601 date or time: 'yesterday'" in capsys.readouterr().err


def test_the_summary_and_its_json_record_the_logical_date_and_leave_it_out_when_none_was_given() -> None:
    config = AppConfig(input=InputSettings(path="/nowhere"), storage=StorageSettings(root="/nowhere"))
    totals = {"files": {"complete": 5}, "events": 766, "row_changes": {}, "ddl": DdlCoverage(0, 0)}
    given = RunReport(run_id="scheduled__2024-03-01", logical_date="2024-03-01T00:00:00+00:00", totals=totals)
    none = RunReport(run_id="r", totals=totals)

    text = summary(None, config, given).splitlines()  # type: ignore[arg-type]  # no Spark: totals are given

    assert text[1:3] == ["  this run:", "    logical date: 2024-03-01T00:00:00+00:00"]
    assert "logical date" not in summary(None, config, none)  # type: ignore[arg-type]
    assert as_json(given)["logical_date"] == "2024-03-01T00:00:00+00:00"
    assert as_json(none)["logical_date"] is None
