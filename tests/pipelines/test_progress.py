"""Progress lines on Spark's running jobs, read from a scripted status tracker (no Spark session)."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from pyspark.status import SparkStageInfo

from pipelines.progress import SparkProgress, spark_status

Status = tuple[list[int], list[SparkStageInfo]]


def stage(stage_id: int, name: str, done: int, total: int, running: int = 0, failed: int = 0) -> SparkStageInfo:
    return SparkStageInfo(stage_id, 0, name, total, running, done, failed)


class FakeTracker:
    """Answers as ``pyspark.StatusTracker`` does, one scripted status per :meth:`advance`."""

    def __init__(self, statuses: list[Status]) -> None:
        self.statuses = statuses
        self.at = 0

    def advance(self) -> None:
        self.at = min(self.at + 1, len(self.statuses) - 1)

    def getActiveJobsIds(self) -> Sequence[int]:  # Spark's names
        return self.statuses[self.at][0]

    def getActiveStageIds(self) -> Sequence[int]:
        return [info.stageId for info in self.statuses[self.at][1]]

    def getStageInfo(self, stageId: int) -> SparkStageInfo | None:
        return next((info for info in self.statuses[self.at][1] if info.stageId == stageId), None)


FRAMING = stage(7, "localCheckpoint at /opt/binlog-lakehouse/pipelines/bronze/stage.py:157", 3, 8, running=2)
IDLE: Status = ([], [])


def test_the_status_names_each_active_stage_with_its_tasks_done_running_and_failed() -> None:
    tracker = FakeTracker(
        [([4, 5], [FRAMING, stage(9, "collect at /opt/binlog-lakehouse/pipelines/run.py:212", 0, 200, failed=1)])]
    )
    assert spark_status(tracker) == (
        "Spark jobs 4, 5: stage 7 (localCheckpoint at stage.py:157) 3/8 tasks, 2 running; "
        "stage 9 (collect at run.py:212) 0/200 tasks, 1 failed"
    )


def test_the_status_is_none_when_spark_runs_nothing() -> None:
    assert spark_status(FakeTracker([IDLE])) is None


def test_stages_beyond_the_first_four_are_counted_not_named() -> None:
    stages = [stage(i, f"save at /x/storage.py:{i}", i, 10) for i in range(1, 7)]
    line = spark_status(FakeTracker([([3], stages)]))
    assert line is not None
    assert line.startswith("Spark job 3: stage 1 (save at storage.py:1) 1/10 tasks; stage 2 ")
    assert line.endswith("stage 4 (save at storage.py:4) 4/10 tasks; +2 more stages")


def test_a_line_is_said_only_when_the_status_changed() -> None:
    second = stage(7, FRAMING.name, 5, 8, running=2)
    tracker = FakeTracker([([4], [FRAMING]), ([4], [FRAMING]), IDLE, ([4], [second]), ([4], [second])])
    said: list[str] = []
    reporter = SparkProgress(tracker, said.append, every=1.0)
    for _ in range(5):
        reporter.poll()
        tracker.advance()
    assert said == [
        "Spark job 4: stage 7 (localCheckpoint at stage.py:157) 3/8 tasks, 2 running",
        "Spark job 4: stage 7 (localCheckpoint at stage.py:157) 5/8 tasks, 2 running",
    ]


def test_a_block_that_ends_before_the_first_interval_says_nothing() -> None:
    said: list[str] = []
    with SparkProgress(FakeTracker([([1], [FRAMING])]), said.append, every=30.0) as reporter:
        pass
    assert said == []
    assert reporter._thread is None  # stopped and joined on exit


def test_while_the_block_runs_the_status_is_said_from_a_background_thread() -> None:
    said: list[str] = []
    heard = threading.Event()

    def say(line: str) -> None:
        said.append(line)
        heard.set()

    with SparkProgress(FakeTracker([([2], [FRAMING])]), say, every=0.01):
        assert heard.wait(5.0)
    assert said == ["Spark job 2: stage 7 (localCheckpoint at stage.py:157) 3/8 tasks, 2 running"]


def test_no_interval_or_no_tracker_means_no_reporting_thread() -> None:
    for reporter in (
        SparkProgress(FakeTracker([IDLE]), print, every=None),
        SparkProgress(FakeTracker([IDLE]), print, every=0),
        SparkProgress(None, print, every=1.0),
    ):
        with reporter:
            assert reporter._thread is None


class BrokenTracker(FakeTracker):
    def getActiveJobsIds(self) -> Sequence[int]:
        raise ConnectionError("the session stopped")


def test_a_tracker_that_fails_ends_the_reporting_quietly() -> None:
    said: list[str] = []
    with SparkProgress(BrokenTracker([IDLE]), said.append, every=0.01) as reporter:
        thread = reporter._thread
        assert thread is not None
        thread.join(5.0)
        assert not thread.is_alive()
    assert said == []
