"""The DAG's commands (``jobs.orchestration``) as Airflow renders them: Jinja with undefined names
as errors (Airflow's ``StrictUndefined``) and the DAG's filters; no Airflow needed."""

from __future__ import annotations

import shlex
import subprocess
from datetime import UTC, datetime

import jinja2
import jinja2.sandbox
import pytest

from conf import AppConfig, InputSettings, StorageSettings
from jobs import cli
from jobs.orchestration import FILTERS, REPORT, STAGES, TASKS, gate_results_sql
from pipelines.exits import Exit

PARAMS = {
    "submit": "spark-submit --master yarn",
    "jobs": "/opt/my jobs",
    "config": "/etc/binlog/prod.yaml",
    "cli": "bl",
}


def render(task_id: str, **context: object) -> str:
    environment = jinja2.sandbox.SandboxedEnvironment(undefined=jinja2.StrictUndefined)
    environment.filters.update(FILTERS)
    (task,) = [t for t in TASKS if t.task_id == task_id]
    return environment.from_string(task.command).render(params=PARAMS, **context)


def test_a_stage_command_runs_its_job_file_with_the_run_id_and_the_logical_date_quoted_for_the_shell() -> None:
    command = render(
        "silver", run_id="manual__2024-03-01T00:00:00+00:00", logical_date=datetime(2024, 3, 1, tzinfo=UTC)
    )
    job = command.split(";")[0]
    assert shlex.split(job) == [
        "spark-submit", "--master", "yarn", "/opt/my jobs/silver.py", "--config", "/etc/binlog/prod.yaml",
        "--run-id", "manual__2024-03-01T00:00:00+00:00", "--logical-date", "2024-03-01T00:00:00+00:00",
    ]  # fmt: skip


def test_a_run_without_a_logical_date_runs_the_stage_without_one() -> None:
    command = render("gold", run_id="asset_triggered__1")  # Airflow 3 leaves logical_date out of the context
    assert shlex.split(command.split(";")[0])[-2:] == ["--run-id", "asset_triggered__1"]


@pytest.mark.parametrize(("code", "task_exit"), [(0, 0), (4, 0), (1, 1), (3, 3), (5, 5), (6, 6)])
def test_a_stage_task_passes_on_0_and_4_fails_with_any_other_code_and_prints_the_code_last(
    code: int, task_exit: int
) -> None:
    command = render("bronze", run_id="r1").replace("spark-submit --master yarn", f"sh -c 'exit {code}'", 1)
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=30, check=False)
    assert (done.returncode, done.stdout.splitlines()[-1]) == (task_exit, f"exit code {code}")


def test_the_quality_report_fails_with_4_after_the_report_when_a_stage_exited_4() -> None:
    class TaskInstance:
        def __init__(self, lines: list[str]) -> None:
            self.lines = lines

        def xcom_pull(self, task_ids: list[str]) -> list[str]:
            assert task_ids == list(STAGES)
            return self.lines

    clean = render(REPORT, run_id="r1", ti=TaskInstance(["exit code 0"] * 3))
    bad = render(REPORT, run_id="r1", ti=TaskInstance(["exit code 4", "exit code 0", "exit code 4"]))
    sql = f"bl sql --config /etc/binlog/prod.yaml {shlex.quote(gate_results_sql('r1'))} || exit 1"
    assert clean == sql
    assert bad.startswith(sql + "; echo ") and bad.endswith(" >&2; exit 4")


def test_a_run_id_is_one_sql_string_whatever_it_holds() -> None:
    assert "WHERE run_id = 'it\\'s \\\\ x' ORDER BY" in gate_results_sql("it's \\ x")


def test_the_current_command_with_if_enabled_builds_nothing_and_exits_0_when_current_is_disabled(
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = AppConfig(input=InputSettings(path="/nowhere"), storage=StorageSettings(root="/nowhere"))
    assert not config.current.enabled
    assert cli.main(["current", "--if-enabled", "--run-id", "r1"], config=config) == Exit.OK
    assert capsys.readouterr().out == (
        "binlog-lakehouse current: current.enabled is false in the configuration: nothing to build\n"
    )
    assert (
        cli.main(["current", "--run-id", "r1"], config=config) == Exit.USAGE
    )  # without it, it goes on to build (and finds no input)
