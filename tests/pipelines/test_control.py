"""The lakehouse lock, the scratch sweep and signal handling, without Spark."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conf import AppConfig, InputSettings, StorageSettings
from pipelines.control import (
    LOCK_NAME,
    OWNER_FILE,
    Interrupted,
    Interrupts,
    LocalFiles,
    Lock,
    Locked,
    check_storage,
    lock_for,
    scratch_folder,
    sweep_scratch,
)


def _dead_pid() -> int:
    """The pid of a process that has ended (and been reaped)."""
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, check=True)
    return int(done.stdout)


def _write_holder(folder: Path, **fields: object) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / LOCK_NAME).write_text(json.dumps(fields), encoding="utf-8")


def test_a_second_lock_on_the_same_lakehouse_is_refused_naming_the_first_holder(tmp_path: Path) -> None:
    first = Lock(LocalFiles(str(tmp_path)), "run-one", "binlog-lakehouse run")
    second = Lock(LocalFiles(str(tmp_path)), "run-two", "binlog-lakehouse gold")
    with first, pytest.raises(Locked, match=r"in use by run run-one \(pid \d+ on host .+: binlog-lakehouse run\)"):
        second.acquire()
    with second:  # released: the next run takes it
        assert second.holder() is not None and second.holder()["run_id"] == "run-two"  # type: ignore[index]
    assert not (tmp_path / LOCK_NAME).exists()


def test_a_lock_left_by_a_process_that_is_gone_is_taken_over(tmp_path: Path) -> None:
    _write_holder(tmp_path, run_id="killed", host=socket.gethostname(), pid=_dead_pid(), started_at_epoch=time.time())
    with Lock(LocalFiles(str(tmp_path)), "next", "binlog-lakehouse run") as lock:
        assert lock.holder()["run_id"] == "next"  # type: ignore[index]


def test_a_lock_of_another_host_is_respected_until_it_is_older_than_the_limit(tmp_path: Path) -> None:
    _write_holder(tmp_path, run_id="remote", host="elsewhere", pid=1, started_at_epoch=time.time() - 60)
    with pytest.raises(Locked, match="run remote"):
        Lock(LocalFiles(str(tmp_path)), "here", "run", max_age=3600).acquire()
    with Lock(LocalFiles(str(tmp_path)), "here", "run", max_age=30) as lock:
        assert lock.holder()["run_id"] == "here"  # type: ignore[index]


def test_an_unreadable_lock_file_is_taken_over(tmp_path: Path) -> None:
    (tmp_path / LOCK_NAME).write_text("{not json", encoding="utf-8")
    with Lock(LocalFiles(str(tmp_path)), "next", "run") as lock:
        assert lock.held


def test_releasing_leaves_a_lock_that_another_run_took_over_in_place(tmp_path: Path) -> None:
    lock = Lock(LocalFiles(str(tmp_path)), "old", "run")
    lock.acquire()
    _write_holder(tmp_path, run_id="new", host=socket.gethostname(), pid=os.getpid())
    lock.release()
    assert json.loads((tmp_path / LOCK_NAME).read_text(encoding="utf-8"))["run_id"] == "new"


def test_a_local_lakehouse_locks_in_its_state_folder_without_spark(tmp_path: Path) -> None:
    cfg = AppConfig(input=InputSettings(path=str(tmp_path)), storage=StorageSettings(root=str(tmp_path / "lake")))
    with lock_for(cfg, "r1", "run"):
        assert (tmp_path / "lake" / "_state" / LOCK_NAME).is_file()


def test_a_storage_root_under_a_file_is_unusable_and_named(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x", encoding="utf-8")
    cfg = AppConfig(
        input=InputSettings(path=str(tmp_path)), storage=StorageSettings(root=str(tmp_path / "file" / "lake"))
    )
    with pytest.raises(ValueError, match=r"^storage.root: .*/file/lake cannot be written"):
        check_storage(cfg)


def test_the_sweep_removes_only_the_scratch_of_runs_whose_process_is_gone(tmp_path: Path) -> None:
    host = socket.gethostname()
    for name, pid in (("dead", _dead_pid()), ("alive", os.getpid())):
        (tmp_path / name).mkdir()
        (tmp_path / name / OWNER_FILE).write_text(json.dumps({"pid": pid, "host": host}), encoding="utf-8")
    (tmp_path / "foreign").mkdir()  # no owner record, recent: left alone

    assert sweep_scratch(str(tmp_path)) == [str(tmp_path / "dead")]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["alive", "foreign"]


def test_a_run_s_scratch_folder_is_gone_after_the_run_even_when_it_fails(tmp_path: Path) -> None:
    cfg = AppConfig(
        input=InputSettings(path=str(tmp_path)),
        storage=StorageSettings(root=str(tmp_path / "lake")),
        spark={"scratch_dir": str(tmp_path / "scratch")},
    )
    with pytest.raises(RuntimeError), scratch_folder(cfg, "r1") as folder:
        assert Path(folder, OWNER_FILE).is_file()
        raise RuntimeError("boom")
    assert list((tmp_path / "scratch").iterdir()) == []


def test_a_signal_raises_interrupted_once_and_tells_the_callback_from_another_thread() -> None:
    told: list[tuple[int, str]] = []
    done = threading.Event()

    def on_signal(signum: int) -> None:
        told.append((signum, threading.current_thread().name))
        done.set()

    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(Interrupted) as caught, Interrupts(on_signal) as interrupts:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the handler raises in this thread before the sleep ends
    assert done.wait(5)
    assert (caught.value.exit_code, interrupts.received) == (143, signal.SIGTERM)
    assert told == [(signal.SIGTERM, "on-signal")]
    assert not isinstance(caught.value, Exception)  # passes through ``except Exception`` (Py4J's too)
    assert signal.getsignal(signal.SIGTERM) == before


def test_handlers_taken_over_meanwhile_are_taken_back() -> None:
    with pytest.raises(Interrupted) as caught, Interrupts() as interrupts:
        signal.signal(signal.SIGINT, signal.default_int_handler)  # as a new SparkContext does
        interrupts.reclaim()
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)
    assert caught.value.exit_code == 130
