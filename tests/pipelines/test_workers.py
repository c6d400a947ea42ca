"""The Python tasks walk their partitions with the cyclic collector's first generation raised, and
leave the worker's thresholds as they found them."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator

import pyarrow as pa
import pytest

from binlog_core.columns import DecodeOptions
from pipelines.bronze.transforms import frame_batches
from pipelines.gold.write import GoldTargets, staged_decode
from pipelines.silver.decode import query_rows, table_map_rows
from pipelines.staging import TableTarget
from pipelines.tables import CHANGES, QUARANTINE
from pipelines.workers import FIRST_GENERATION, rarely_collected

WORKER = (700, 10, 10)
"""A worker's thresholds before a task (CPython's defaults)."""


@pytest.fixture(autouse=True)
def worker_thresholds() -> Iterator[None]:
    kept = gc.get_threshold()
    gc.set_threshold(*WORKER)
    yield
    gc.set_threshold(*kept)


def seen_while_read(seen: list[tuple[int, ...]]) -> Iterator[pa.RecordBatch]:
    """An empty partition that records the thresholds in force when the walk reads it."""
    seen.append(gc.get_threshold())
    yield from ()


WALKS: dict[str, Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]] = {
    "bronze framing": frame_batches,
    "silver table maps": lambda batches: table_map_rows(batches, pa.schema([]), {}),
    "silver queries": lambda batches: query_rows(batches, pa.schema([]), {}),
    "gold rows events": staged_decode(
        {},
        [],
        [],
        {},
        DecodeOptions(),
        GoldTargets({}, TableTarget.of(CHANGES, "/nowhere/c", {}), TableTarget.of(QUARANTINE, "/nowhere/q", {}), "r"),
    ),
}


@pytest.mark.parametrize("stage", sorted(WALKS))
def test_each_python_task_walks_its_partition_with_the_first_generation_raised(stage: str) -> None:
    seen: list[tuple[int, ...]] = []
    assert list(WALKS[stage](seen_while_read(seen))) == []
    assert seen == [(FIRST_GENERATION, *WORKER[1:])]
    assert gc.get_threshold() == WORKER


def test_the_workers_thresholds_come_back_when_the_output_is_closed_early_or_the_walk_fails() -> None:
    @rarely_collected
    def walk(n: int) -> Iterator[int]:
        for i in range(n):
            if i == 3:
                raise ValueError("damaged")
            yield i

    out = walk(10)
    assert next(out) == 0 and gc.get_threshold()[0] == FIRST_GENERATION
    out.close()
    assert gc.get_threshold() == WORKER
    with pytest.raises(ValueError, match="damaged"):
        list(walk(10))
    assert gc.get_threshold() == WORKER


def test_a_worker_already_collecting_more_rarely_keeps_its_threshold() -> None:
    gc.set_threshold(FIRST_GENERATION * 2, 5, 5)
    seen: list[tuple[int, ...]] = []
    list(rarely_collected(lambda batches: iter(list(batches)))(seen_while_read(seen)))
    assert seen == [(FIRST_GENERATION * 2, 5, 5)]
