"""``binlog-lakehouse run`` as an operator meets it, in real processes: errors before any work, one
writer per lakehouse, interruptions, and what the terminal shows.

Each test copies the bundled sample binlogs to a temporary input folder and points a config file
at a temporary lakehouse; the command runs as a separate process (``python -m jobs.cli``), as an
orchestrator would start it.
"""

from __future__ import annotations

import fcntl
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO

import pytest
import yaml
from pyspark.sql import SparkSession

from conf import load_config
from jobs.cli import main
from pipelines.exits import Exit
from pipelines.run import run
from tests.harness.sample_lake import lake_rows

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "tests" / "fixtures" / "mariadb" / "sample"
PREFIX = "[binlog-lakehouse] "


def write_config(tmp_path: Path, binlogs: Path, root: Path, **sections: dict[str, object]) -> Path:
    """A config for a local run: ``local[2]``, no UI, no catalog registration, the given sections merged."""
    data: dict[str, dict[str, object]] = {
        "spark": {"master": "local[2]", "ui_enabled": False, "catalog": "in-memory", "driver_memory": "1g"},
        "input": {"path": str(binlogs)},
        "storage": {"root": str(root), "register_tables": False},
    }
    for name, values in sections.items():
        data.setdefault(name, {}).update(values)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def sample_copy(tmp_path: Path, *numbers: int) -> Path:
    folder = tmp_path / "binlogs"
    folder.mkdir(exist_ok=True)
    for n in numbers or (1, 2, 3, 4, 5):
        name = f"mysql-bin.{n:06d}"
        shutil.copy2(SAMPLE / name, folder / name)
    return folder


def command(config: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "jobs.cli", "run", "--config", str(config), "--progress-every", "0", *extra]


def start(args: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(process: subprocess.Popen[str], timeout: float = 600) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=timeout)
    return process.returncode, out, err


def wait_for_line(stream: IO[str], wanted: str, seen: list[str], timeout: float = 300) -> None:
    """Read ``stream`` line by line (kept in ``seen``) until one contains ``wanted``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = stream.readline()
        if not line:
            raise AssertionError(f"the process ended before {wanted!r}: {seen}")
        seen.append(line)
        if wanted in line:
            return
    raise AssertionError(f"no {wanted!r} within {timeout}s: {seen}")


def timed(args: list[str]) -> tuple[int, str, str, float]:
    started = time.monotonic()
    done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    return done.returncode, done.stdout, done.stderr, time.monotonic() - started


# -- errors before any work ------------------------------------------------------------------------


def one_line_usage_error(args: list[str]) -> str:
    code, out, err, seconds = timed(args)
    assert code == Exit.USAGE, (code, out, err)
    assert seconds < 10
    assert out == ""
    assert "Traceback" not in err
    assert len(err.splitlines()) == 1, err
    return err.strip()


def test_a_missing_input_folder_is_one_line_and_exit_code_2_before_spark_starts(tmp_path: Path) -> None:
    config = write_config(tmp_path, tmp_path / "nowhere", tmp_path / "lake")
    assert (
        one_line_usage_error(command(config)) == f"binlog-lakehouse: input.path: {tmp_path / 'nowhere'} does not exist"
    )


def test_an_input_folder_without_binlogs_is_one_line_and_exit_code_2(tmp_path: Path) -> None:
    (tmp_path / "binlogs").mkdir()
    (tmp_path / "binlogs" / "mysql-bin.index").write_text("./mysql-bin.000001\n")
    config = write_config(tmp_path, tmp_path / "binlogs", tmp_path / "lake")
    line = one_line_usage_error(command(config))
    assert line.startswith(f"binlog-lakehouse: input.path: no file in {tmp_path / 'binlogs'} matches input.glob ")


def test_a_storage_root_that_cannot_be_written_is_one_line_and_exit_code_2(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    config = write_config(tmp_path, sample_copy(tmp_path, 4), blocker / "lake")
    line = one_line_usage_error(command(config))
    assert line.startswith(f"binlog-lakehouse: storage.root: {blocker / 'lake'} cannot be written (")


def test_a_metastore_open_in_another_process_is_one_line_and_exit_code_2(tmp_path: Path) -> None:
    metastore = tmp_path / "metastore"
    (metastore / "metastore_db").mkdir(parents=True)
    lock = metastore / "metastore_db" / "dbex.lck"
    lock.write_bytes(b"")
    config = write_config(
        tmp_path,
        sample_copy(tmp_path, 4),
        tmp_path / "lake",
        spark={"catalog": "hive", "metastore_dir": str(metastore)},
    )
    # what Derby does while a JVM has the database open: an fcntl lock on dbex.lck, from another process
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR); "
            "fcntl.lockf(fd, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)",
            str(lock),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        line = one_line_usage_error(command(config))
    finally:
        holder.kill()
        holder.wait()
    assert line.startswith(f"binlog-lakehouse: spark.metastore_dir: the Derby metastore in {metastore} is open in ")
    fd = os.open(lock, os.O_RDWR)  # free again once the holder is gone
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    os.close(fd)


def test_a_misspelled_setting_is_one_line_naming_it_and_exit_code_2(tmp_path: Path) -> None:
    config = write_config(tmp_path, sample_copy(tmp_path, 4), tmp_path / "lake", input={"recursve": True})
    line = one_line_usage_error(command(config))
    assert "input.recursve" in line and "binlog-lakehouse: " in line


# -- one writer, what the terminal shows, a machine-readable summary ------------------------------


@pytest.mark.slow
def test_a_second_run_on_a_locked_lakehouse_exits_5_naming_the_holder_and_a_run_prints_only_progress_and_summary(
    tmp_path: Path,
) -> None:
    config = write_config(tmp_path, sample_copy(tmp_path, 4), tmp_path / "lake")
    summary_json = tmp_path / "summary.json"
    first = start(command(config, "--run-id", "orchestrated-1", "--summary-json", str(summary_json)))
    assert first.stderr is not None
    seen: list[str] = []
    wait_for_line(first.stderr, "bronze: started", seen)

    code, out, err, seconds = timed(command(config))

    rest_code, out_first, err_rest = finish(first)
    assert code == Exit.LOCKED
    assert seconds < 10 and out == ""
    assert err.strip().startswith("binlog-lakehouse: the lakehouse is in use by run orchestrated-1 (pid ")
    assert len(err.splitlines()) == 1
    assert rest_code == Exit.OK
    progress = seen + err_rest.splitlines(keepends=True)
    assert all(line.startswith(PREFIX) for line in progress), [line for line in progress if not line.startswith(PREFIX)]
    lines = out_first.splitlines()
    assert lines[0].startswith("binlog-lakehouse run orchestrated-1: stages bronze, silver, gold in ")
    assert all(line.startswith("  ") for line in lines[1:])
    data = json.loads(summary_json.read_text(encoding="utf-8"))
    assert (data["run_id"], data["exit_code"], data["stages"]) == ("orchestrated-1", 0, ["bronze", "silver", "gold"])
    assert data["lakehouse"]["files"] == {"complete": 1}
    assert sum(data["lakehouse"]["row_changes"].values()) == data["this_run"]["row_changes"] > 0
    assert {g["gate"] for g in data["gates"]} == {"bronze", "silver", "gold"}
    assert not (tmp_path / "lake" / "_state" / "lock").exists()
    log = tmp_path / "lake" / "_state" / "logs" / "orchestrated-1.log"
    assert log.is_file() and "log4j" in log.read_text(encoding="utf-8", errors="replace")  # the JVM's console


# -- interruptions ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def uninterrupted(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """The tables of one run of a copy of a sample file that nothing interrupted (built in this process)."""
    folder = tmp_path_factory.mktemp("uninterrupted")
    config = load_config(str(write_config(folder, sample_copy(folder, 4), folder / "lake")))
    assert run(spark, config, err=io.StringIO(), progress_every=None).exit_code == Exit.OK
    return lake_rows(folder / "lake", folder / "binlogs")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("signum", "name", "expected"), [(signal.SIGINT, "SIGINT", 130), (signal.SIGTERM, "SIGTERM", 143)]
)
def test_a_signal_stops_the_run_quietly_with_its_exit_code_leaves_no_scratch_and_a_rerun_completes(
    spark: SparkSession,
    tmp_path: Path,
    signum: int,
    name: str,
    expected: int,
    uninterrupted: dict[str, list[str]],
) -> None:
    binlogs = sample_copy(tmp_path, 4)
    config = write_config(tmp_path, binlogs, tmp_path / "lake")
    process = start(command(config))
    assert process.stderr is not None
    seen: list[str] = []
    wait_for_line(process.stderr, "silver: started", seen)
    process.send_signal(signum)
    code, out, err = finish(process, timeout=120)

    assert code == expected
    assert f"binlog-lakehouse: interrupted ({name}) during silver, re-run to complete" in err
    assert "Traceback" not in err and "py4j" not in err and "at org.apache" not in err
    assert out.startswith("binlog-lakehouse run ") and "interrupted during silver" in out
    assert not (tmp_path / "lake" / "_state" / "lock").exists()
    assert [p.name for p in (tmp_path / "lake" / "_scratch").iterdir()] == []

    # the re-run (in this process: what it converges to depends on the lakehouse alone)
    again = run(spark, load_config(str(config)), err=io.StringIO(), progress_every=None)
    assert again.exit_code == Exit.OK
    assert again.files_built["silver"] == 1  # silver had written nothing it could keep
    assert lake_rows(tmp_path / "lake", binlogs) == uninterrupted


@pytest.mark.slow
def test_the_scratch_a_killed_run_left_behind_is_removed_by_the_next_run(spark: SparkSession, tmp_path: Path) -> None:
    config = write_config(tmp_path, sample_copy(tmp_path, 4), tmp_path / "lake")
    process = start(command(config, "--run-id", "killed"))
    assert process.stderr is not None
    seen: list[str] = []
    wait_for_line(process.stderr, "bronze: framed", seen)
    process.kill()
    process.wait()
    left = tmp_path / "lake" / "_scratch" / "killed"
    assert (left / "owner.json").is_file()  # the killed run could not clean up

    # the next run (in this process: the command's own code around the session it is given)
    again = main(command(config)[3:], spark=spark)

    assert again == Exit.OK
    assert list((tmp_path / "lake" / "_scratch").iterdir()) == []
