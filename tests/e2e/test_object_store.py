"""A run against a server that speaks S3: binlogs read from ``s3a://``, Delta tables written there.

The server is moto's S3-API server on 127.0.0.1 (``tests/harness/s3.py``); the run is
``binlog-lakehouse run`` in a process of its own, with Hadoop's S3A connector (``hadoop-aws`` and
the AWS SDK bundle, from the project's Ivy cache) and the ``fs.s3a.*`` settings an operator writes
for an S3-compatible store. Spark lists the input through S3A, the framing tasks read it with
pyarrow's ``S3FileSystem`` configured from the same settings, Delta writes every table through S3A,
and ``binlog-lakehouse sql`` reads them back with delta-rs. The tables are compared row by row with
those of the same sample binlogs run from a local folder into a local lakehouse (``sample_lake``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from deltalake import DeltaTable
from pyarrow import fs as pafs

from pipelines.exits import Exit
from pipelines.query.lake import delta_storage_options
from pipelines.storage import Table
from tests.harness.s3 import S3Server
from tests.harness.sample_lake import SAMPLE, SampleLake

ROOT = Path(__file__).resolve().parents[2]
PREFIX = "[binlog-lakehouse] "
LAYERS = ("bronze", "silver", "gold")
NOT_RUN_OUTPUT = {Table.gold("typed_probe").name}  # written by the sample_lake fixture, not by a run


def write_config(path: Path, spark: dict[str, object], server: S3Server, input_path: str, root: str) -> Path:
    data = {
        "spark": {**spark, "conf": server.spark_conf()},
        "input": {"path": input_path},
        "storage": {"root": root, "register_tables": False},
    }
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "jobs.cli", *args], cwd=ROOT, capture_output=True, text=True, timeout=900, check=False
    )


def table_rows(table: DeltaTable, replace: dict[str, str]) -> list[str]:
    """The rows of ``table`` as sorted text, without run ids and listing times, ``replace`` applied."""
    data = table.to_pyarrow_table()
    keep = [c for c in data.column_names if c not in ("run_id", "modification_time")]
    rows = []
    for row in data.select(keep).to_pylist():
        text = repr(sorted(row.items()))
        for old, new in replace.items():
            text = text.replace(old, new)
        rows.append(text)
    return sorted(rows)


def local_lake(lake: SampleLake) -> dict[str, list[str]]:
    replace = {f"file:{SAMPLE}": "IN", str(lake.root): "ROOT"}
    return {
        f"{layer}.{folder.name}": table_rows(DeltaTable(str(folder)), replace)
        for layer in LAYERS
        for folder in sorted((lake.root / layer).iterdir())
        if (folder / "_delta_log").is_dir() and folder.name not in NOT_RUN_OUTPUT
    }


def s3_lake(server: S3Server, root: str, input_uri: str) -> dict[str, list[str]]:
    client, options = server.client(), delta_storage_options(root, server.hadoop())
    replace = {input_uri.rstrip("/"): "IN", root.rstrip("/"): "ROOT"}
    tables: dict[str, list[str]] = {}
    for layer in LAYERS:
        for info in client.get_file_info(pafs.FileSelector(f"{root.removeprefix('s3a://')}/{layer}")):
            if info.type == pafs.FileType.Directory:
                uri = f"{root}/{layer}/{info.base_name}"
                tables[f"{layer}.{info.base_name}"] = table_rows(DeltaTable(uri, storage_options=options), replace)
    return tables


@pytest.mark.slow
def test_a_run_reading_s3a_binlogs_into_s3a_tables_builds_the_lake_a_local_run_builds(
    s3_server: S3Server, s3a_spark: dict[str, object], sample_lake: SampleLake, tmp_path: Path
) -> None:
    input_uri, root = "s3a://object-store-run/binlogs/", "s3a://object-store-run/lake"
    uploaded = s3_server.upload(SAMPLE, "object-store-run/binlogs")  # the .jsonl and .json beside them too
    config = write_config(tmp_path / "s3.yaml", s3a_spark, s3_server, input_uri, root)
    summary_json = tmp_path / "summary.json"

    done = cli("run", "--config", str(config), "--progress-every", "0", "--summary-json", str(summary_json))

    assert done.returncode == Exit.OK, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    summary = json.loads(summary_json.read_text(encoding="utf-8"))
    binlogs = [uri for uri in uploaded if "/mysql-bin." in uri]
    assert summary["lakehouse"]["files"] == {"complete": len(binlogs)} and len(binlogs) == 5
    remote, local = s3_lake(s3_server, root, input_uri), local_lake(sample_lake)
    assert sorted(remote) == sorted(local)
    for name, rows in local.items():
        assert remote[name] == rows, name
    files = DeltaTable(f"{root}/bronze/binlog_files", storage_options=delta_storage_options(root, s3_server.hadoop()))
    assert sorted(files.to_pyarrow_table().column("file").to_pylist()) == binlogs

    # run again with nothing new: the bookkeeping is read from S3 on the driver, not by Spark jobs
    again = cli("run", "--config", str(config), "--progress-every", "0", "--summary-json", str(summary_json))
    assert again.returncode == Exit.OK, (again.stdout, again.stderr)
    rerun = json.loads(summary_json.read_text(encoding="utf-8"))
    assert not any(rerun["this_run"]["files_built"].values()) and rerun["lakehouse"] == summary["lakehouse"]
    assert not any(rerun["spark_jobs"].values()), rerun["spark_jobs"]

    statement = "SELECT count(*) AS n FROM binlog_gold.shop__orders"
    queried = cli("sql", "--config", str(config), "--format", "jsonl", statement)
    assert queried.returncode == Exit.OK, queried.stderr
    assert json.loads(queried.stdout) == {"n": len(local["gold.shop__orders"])} and local["gold.shop__orders"]


def test_a_bucket_that_does_not_exist_is_one_line_naming_input_path_and_exit_code_2(
    s3_server: S3Server, s3a_spark: dict[str, object], tmp_path: Path
) -> None:
    input_uri = "s3a://no-such-bucket/binlogs/"
    config = write_config(tmp_path / "s3.yaml", s3a_spark, s3_server, input_uri, str(tmp_path / "lake"))

    done = cli("run", "--config", str(config), "--progress-every", "0")

    assert done.returncode == Exit.USAGE, (done.stdout, done.stderr)
    assert done.stdout == ""
    *progress, last = done.stderr.splitlines()
    assert all(line.startswith(PREFIX) for line in progress), progress
    assert last.startswith(f"binlog-lakehouse: input.path: {input_uri} cannot be listed (UnknownStoreException: ")
    assert "The specified bucket does not exist" in last
    assert not (tmp_path / "lake" / "bronze").exists()
