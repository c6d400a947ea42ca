"""The README's cluster recipe, run as written, on a Spark standalone cluster: the pipeline's tasks
run in executor processes apart from the driver, with the packed environment the recipe builds,
and the tables equal those of a local run.

The cluster (``tests.harness.cluster``) is a master and two workers of one core each, started from
the installed pyspark on 127.0.0.1 with an environment that carries none of this process's Python
settings: an executor imports the project only from the archive the recipe ships. The recipe is the
code block between the ``cluster-recipe`` markers of README.md, run by bash from the project root
with ``MASTER`` and ``CONFIG`` set, exactly as a user runs it. The local run to compare with is the
``sample_lake`` fixture (the same sample, built in process with ``local[2]``).
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.harness.cluster import STRIPPED_ENV, StandaloneCluster
from tests.harness.sample_lake import PROBE, SAMPLE, SampleLake, lake_rows

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
ARCHIVE = ROOT / "dist" / "binlog-lakehouse-env.tar.gz"
SITE = "lib/python3.11/site-packages"

_RECIPE = re.compile(r"<!-- cluster-recipe[^>]*-->\n```sh\n(?P<script>.*?)```\n<!-- /cluster-recipe -->", re.S)


def readme_recipe() -> str:
    """The shell commands of the README's cluster recipe."""
    match = _RECIPE.search(README.read_text(encoding="utf-8"))
    assert match is not None, "README.md has no code block between the cluster-recipe markers"
    return match.group("script")


def cluster_config(folder: Path) -> Path:
    """A config for the cluster: master from spark-submit, the sample in, a lakehouse in ``folder``,
    partitions sized for two one-core executors (Spark's 200 shuffle partitions and Delta's 50 for a
    snapshot would make the small sample thousands of tasks), and the sample run as large work
    (``small_work_mib: 0``): small work runs its Python in the driver, and the executors are to run it."""
    small = {"spark.default.parallelism": 2, "spark.databricks.delta.snapshotPartitions": 2}
    data = {
        "spark": {"master": None, "ui_enabled": False, "shuffle_partitions": 2, "conf": small, "small_work_mib": 0},
        "input": {"path": str(SAMPLE)},
        "storage": {"root": str(folder / "lake")},
    }
    path = folder / "cluster.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def recipe_env(master: str, config: Path) -> dict[str, str]:
    """A user's shell: no Python settings of this test process; the master and config to use."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in STRIPPED_ENV and not key.startswith(("PYSPARK_", "BINLOG_"))
    }
    env.update(MASTER=master, CONFIG=str(config), SPARK_LOCAL_IP="127.0.0.1")
    return env


@pytest.mark.slow
def test_the_readme_recipe_runs_the_pipeline_on_a_standalone_cluster_into_the_tables_of_a_local_run(
    sample_lake: SampleLake, tmp_path: Path
) -> None:
    config = cluster_config(tmp_path)
    with StandaloneCluster(tmp_path / "cluster", workers=2, cores=1, memory="1g").start(wait=False) as cluster:
        done = subprocess.run(
            ["bash", "-e", "-o", "pipefail", "-c", readme_recipe()],
            cwd=ROOT,
            env=recipe_env(cluster.master_url, config),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=1200,
            check=False,
        )
        registered = cluster.registered_workers()
        executors = cluster.executor_logs()

    assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    assert re.search(
        r"^binlog-lakehouse run \S+: stages bronze, silver, gold in .* \(exit code 0: done\)$", done.stdout, re.M
    )
    assert registered == 2
    # one executor per worker, each a process of its own that unpacked the environment and ran tasks
    assert sorted(name.split("/")[0] for name in executors) == ["worker-1", "worker-2"], list(executors)
    for name, log in executors.items():
        assert re.search(r"Unpacking an archive .*binlog-lakehouse-env\.tar\.gz#environment", log), name
        assert "Finished task" in log, name

    # the smallest environment that works, as each executor unpacked it: the wheel and its runtime
    # dependencies, no dev tools, no pip, no jars
    assert ARCHIVE.stat().st_size < 320 * 2**20
    unpacked = sorted(cluster.folder.glob(f"worker-*/work/*/*/environment/{SITE}"))
    assert len(unpacked) == 2, unpacked
    for site in unpacked:
        packages = {path.name for path in site.iterdir()}
        assert {"binlog_core", "pipelines", "conf", "jobs", "pyarrow", "zstandard", "delta"} <= packages
        assert not {"pytest", "ruff", "mypy", "hypothesis", "chispa", "pip"} & packages
        assert not (site / "pyspark" / "jars").exists()

    local = lake_rows(sample_lake.root, SAMPLE)
    del local[f"gold.{PROBE.name}"]  # the fixture's own probe table, not the pipeline's
    assert lake_rows(tmp_path / "lake", SAMPLE) == local
