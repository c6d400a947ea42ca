"""The Airflow DAG ``binlog_lakehouse`` (``jobs/dags``) in real Apache Airflow: it imports without
errors, its tasks and their order are the README's, and ``airflow dags test`` over the bundled
sample, each stage through ``spark-submit`` on local Spark, builds the tables a run of the whole
pipeline builds, with the DAG run's id on every row and its logical date in every stage's summary.

Airflow lives in its own environment, ``.cache/airflow-venv`` (made by ``.ci/setup --dev`` from the
``airflow`` extra), with the project on ``PYTHONPATH``; the tasks run the job files with this
environment's ``spark-submit`` and ``binlog-lakehouse``. Without that environment these tests fail
with that advice, unless ``BINLOG_SKIP_AIRFLOW=1`` is set. Airflow's metadata database is SQLite in a
temporary ``AIRFLOW_HOME``.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from deltalake import DeltaTable

from conf import load_config
from jobs.orchestration import DAG_ID, PARAMS, REPORT, STAGES, TASKS, readme_params, readme_table
from pipelines.session import one_run_java_options, submit_jars
from tests.harness.sample_lake import SampleLake, lake_rows

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "tests" / "fixtures" / "mariadb" / "sample"
AIRFLOW_VENV = ROOT / ".cache" / "airflow-venv"
LOGICAL_DATE = "2024-03-01"
README = (ROOT / "README.md").read_text(encoding="utf-8")
SMALL = {"spark.sql.shuffle.partitions": 2, "spark.databricks.delta.snapshotPartitions": 2}
"""Spark settings for the sample's few kilobytes (as the ``spark`` fixture's): fewer, larger tasks."""

pytestmark = [
    pytest.mark.airflow,
    pytest.mark.skipif(
        os.environ.get("BINLOG_SKIP_AIRFLOW") == "1", reason="BINLOG_SKIP_AIRFLOW=1: the Airflow tests are skipped"
    ),
]

INSPECT = """
import json, sys
from airflow.dag_processing.dagbag import DagBag
bag = DagBag(dag_folder=sys.argv[1])
dag = bag.dags.get(sys.argv[2])
print(json.dumps({
    "errors": {str(k): str(v) for k, v in bag.import_errors.items()},
    "dags": sorted(bag.dags),
    "tasks": [] if dag is None else [
        {"id": t.task_id, "upstream": sorted(t.upstream_task_ids), "command": t.bash_command,
         "operator": type(t).__name__}
        for t in dag.tasks
    ],
    "params": {} if dag is None else {k: dag.params[k] for k in dag.params},
    "max_active_runs": None if dag is None else dag.max_active_runs,
}))
"""
"""Loads the DAG folder as Airflow's DAG processor does and prints what it found, as JSON."""


def airflow_env(home: Path, config: Path) -> dict[str, str]:
    """The environment of the Airflow commands: a private ``AIRFLOW_HOME``, the project's DAG folder,
    and the DAG's params pointing at this environment's spark-submit, ``binlog-lakehouse`` and ``config``.
    spark-submit gets the Delta jars ``.ci/setup`` resolved (``--jars``: no Ivy resolution per task)
    and the JVM options the CLI gives a JVM it starts for one run (as ``python -m pipelines.session
    --jars`` and ``--java-options`` print them)."""
    bin_dir = Path(sys.executable).parent
    spark = load_config(str(config)).spark
    submit = (
        f"{bin_dir / 'spark-submit'} --master local[2] --driver-memory 1g --jars {','.join(submit_jars(spark))} "
        f"--driver-java-options {shlex.quote(one_run_java_options(spark))}"
    )
    return {
        **os.environ,
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(ROOT / "jobs" / "dags"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "PYTHONPATH": str(ROOT),
        "PYSPARK_PYTHON": sys.executable,
        "BINLOG_LAKEHOUSE_SUBMIT": submit,
        "BINLOG_LAKEHOUSE_CONFIG": str(config),
        "BINLOG_LAKEHOUSE_CLI": str(bin_dir / "binlog-lakehouse"),
    }


def airflow(env: dict[str, str], *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(AIRFLOW_VENV / "bin" / "airflow"), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, (args, done.stdout[-3000:], done.stderr[-3000:])
    return done


@dataclass(frozen=True)
class DagTest:
    """One ``airflow dags test`` of the DAG over the sample: its exit code, output, DAG run id and lake."""

    code: int
    output: str
    run_id: str
    lake: Path
    reference: SampleLake


@pytest.fixture(scope="module")
def airflow_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict[str, str], Path]]:
    """A migrated SQLite metadata database in a temporary ``AIRFLOW_HOME``, and the environment to use it."""
    if not (AIRFLOW_VENV / "bin" / "airflow").is_file():
        pytest.fail(f"no Airflow in {AIRFLOW_VENV}: run .ci/setup --dev (or set BINLOG_SKIP_AIRFLOW=1)")
    folder = tmp_path_factory.mktemp("airflow")  # AIRFLOW_HOME
    config = folder / "config.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "spark": {"ui_enabled": False, "catalog": "in-memory", "conf": SMALL},
                "input": {"path": str(SAMPLE)},
                "storage": {"root": str(folder / "lake"), "register_tables": False},
            }
        ),
        encoding="utf-8",
    )
    env = airflow_env(folder, config)
    airflow(env, "db", "migrate")
    yield env, folder / "lake"


@pytest.fixture(scope="module")
def dag_test(airflow_home: tuple[dict[str, str], Path], request: pytest.FixtureRequest) -> DagTest:
    """``airflow dags test binlog_lakehouse 2024-03-01``; the sample's reference lake is built meanwhile."""
    env, lake = airflow_home
    log = lake.parent / "dags-test.log"
    with log.open("w", encoding="utf-8") as out:
        process = subprocess.Popen(
            [str(AIRFLOW_VENV / "bin" / "airflow"), "dags", "test", DAG_ID, LOGICAL_DATE],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        try:
            reference = request.getfixturevalue("sample_lake")  # `run` in this process, while Airflow works
            code = process.wait(timeout=900)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    output = log.read_text(encoding="utf-8", errors="replace")
    finished = re.search(rf"DagRun Finished: dag_id={DAG_ID}, logical_date=[^,]+, run_id=([^,]+),", output)
    assert finished is not None, output[-5000:]
    return DagTest(code, output, finished.group(1), lake, reference)


@pytest.fixture(scope="module")
def parsed(airflow_home: tuple[dict[str, str], Path]) -> dict[str, object]:
    """What Airflow's DagBag makes of the DAG folder."""
    env, _lake = airflow_home
    done = subprocess.run(
        [str(AIRFLOW_VENV / "bin" / "python"), "-c", INSPECT, str(ROOT / "jobs" / "dags"), DAG_ID],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return result


def test_the_dag_folder_imports_without_errors_and_holds_the_dag(parsed: dict[str, object]) -> None:
    assert parsed["errors"] == {}
    assert parsed["dags"] == [DAG_ID]
    assert parsed["max_active_runs"] == 1


def test_its_tasks_run_in_the_order_and_with_the_commands_the_readme_lists(
    parsed: dict[str, object], airflow_home: tuple[dict[str, str], Path]
) -> None:
    tasks = parsed["tasks"]
    assert isinstance(tasks, list)
    previous: list[str] = []
    for task, declared in zip(tasks, TASKS, strict=True):
        assert task == {
            "id": declared.task_id,
            "upstream": previous,
            "command": declared.command,
            "operator": "BashOperator",
        }
        previous = [declared.task_id]
    assert [t["id"] for t in tasks] == [*STAGES, REPORT]
    env, _lake = airflow_home
    assert parsed["params"] == {p.name: env.get(p.env, p.default) for p in PARAMS}  # each from its variable
    assert parsed["params"]["jobs"] == str(ROOT / "jobs")  # unset: the job files beside the DAG's folder
    assert readme_block("airflow-tasks") == readme_table()
    assert readme_block("airflow-params") == readme_params()


def readme_block(marker: str) -> str:
    found = re.search(rf"<!-- {marker} -->\n(.*?)\n<!-- /{marker} -->", README, flags=re.S)
    assert found is not None, marker
    return found.group(1)


@pytest.mark.slow
def test_a_dag_test_run_over_the_sample_succeeds_and_builds_the_tables_a_pipeline_run_builds(
    dag_test: DagTest,
) -> None:
    assert dag_test.code == 0, dag_test.output[-5000:]
    assert f"run_id={dag_test.run_id}, " in dag_test.output and ", state=success," in dag_test.output
    for task in (*STAGES, REPORT):
        assert f"[DAG TEST] end task task_id={task} " in dag_test.output
    reference = lake_rows(dag_test.reference.root, SAMPLE)
    del reference["gold.typed_probe"]  # the reference lake's extra table, not the pipeline's
    assert lake_rows(dag_test.lake, SAMPLE) == reference


@pytest.mark.slow
def test_the_dag_run_id_reaches_every_row_and_its_logical_date_every_stage_summary(dag_test: DagTest) -> None:
    run_ids: set[str] = set()
    for layer in ("bronze", "silver", "gold", "quality"):
        for folder in sorted((dag_test.lake / layer).iterdir()):
            if not (folder / "_delta_log").is_dir():
                continue
            data = DeltaTable(str(folder)).to_pyarrow_table()
            assert "run_id" in data.column_names, folder
            run_ids.update(data.column("run_id").unique().to_pylist())
    assert run_ids == {dag_test.run_id}
    # the configuration leaves current.enabled false: the current task builds nothing and prints no summary
    assert "binlog-lakehouse current: current.enabled is false in the configuration: nothing to build" in (
        dag_test.output
    )
    assert dag_test.output.count(f"logical date: {LOGICAL_DATE}T00:00:00+00:00") == len(STAGES) - 1
    assert re.findall(r"\] exit code (\d+) ", dag_test.output) == ["0"] * len(STAGES)  # what each stage task echoes
    gate_rows = DeltaTable(str(dag_test.lake / "quality" / "gate_results")).to_pyarrow_table().num_rows
    assert gate_rows > 0 and f"({gate_rows} rows)" in dag_test.output  # the quality report printed them all


@pytest.mark.slow
def test_a_stage_exiting_4_lets_the_next_stages_run_and_fails_the_dag_run_at_the_quality_report(
    dag_test: DagTest, airflow_home: tuple[dict[str, str], Path]
) -> None:
    """Every job replaced, through the ``submit`` param, by a process ending as a job with bad input
    does (exit code 4); the report reads the lake the first DAG run built."""
    env, _lake = airflow_home
    conf = json.dumps({"submit": "sh -c 'exit 4'"})
    done = subprocess.run(
        [str(AIRFLOW_VENV / "bin" / "airflow"), "dags", "test", DAG_ID, "2024-03-02", "--conf", conf],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    output = done.stdout + done.stderr

    assert done.returncode != 0
    assert re.findall(r"\] exit code (\d+) ", output) == ["4"] * len(STAGES)  # each stage ran, and succeeded
    for task in STAGES:
        assert f"[DAG TEST] end task task_id={task} " in output
    assert "(0 rows)" in output  # the report printed the (no) gate results of this run, then failed
    assert "bad input: files of the input carry error-severity quarantine rows (exit code 4)" in output
    assert "Command exited with return code 4" in output
    assert re.search(rf"DagRun Finished: dag_id={DAG_ID}, logical_date=2024-03-02[^\n]*, state=failed,", output)
