"""The one shape every stage has: read -> transform -> gate -> write.

A stage is an object with a ``name`` and three steps::

    out = stage.build(ctx)      # read its inputs and transform them (frames persisted or checkpointed)
    out.facts                   # small pandas frames its gate checks, from what the build holds
    stage.write(ctx, out)       # write its tables, its progress last

:func:`pipelines.run.run` runs each stage's gate between ``build`` and ``write`` (a failed
``fail`` check means nothing is written), adds the quarantine rows the gate asks for, and
releases what the build persisted.  A stage never rescans what it wrote to compute its gate
facts: they come from the frames it already holds.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

import pandas as pd
import pyarrow as pa
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql.types import StructType

from conf.models import AppConfig
from pipelines.execution import ArrowFunction, apply_grouped, collect_mapped
from pipelines.progress import LakeState
from pipelines.staging import Staged
from pipelines.storage import Lakehouse, Persisted
from pipelines.tables import QUARANTINE, TableSpec

Say = Callable[[str], None]


@dataclass
class Context:
    """What every stage works with during one run."""

    spark: SparkSession
    cfg: AppConfig
    lake: Lakehouse
    run_id: str
    say: Say = field(default=lambda message: None)
    expect_work: Callable[[int], None] = field(default=lambda size: None)
    """Called by a build as soon as it knows it has files to build, with their size in bytes: the run
    fits Spark's execution to that size (:mod:`pipelines.execution`) and may prepare what its gate
    and writes need (great-expectations, the catalog) meanwhile."""
    state: LakeState = field(init=False)
    """``binlog_files`` and progress for this run (read once)."""
    handed: dict[str, Built] = field(default_factory=dict)
    """Stage name -> what it built and wrote in this run (kept until the run ends), for the stages after
    it: they read its files (:meth:`pipelines.storage.Lakehouse.written_frame`) and facts instead of
    the tables just written."""

    def __post_init__(self) -> None:
        self.state = LakeState(self.lake)

    def mapped(self, source: DataFrame | pa.Table, function: ArrowFunction, schema: StructType) -> list[Row]:
        """``source.mapInArrow(function, schema).collect()``, run in this process when the stage at
        hand is small work (:func:`pipelines.execution.collect_mapped`)."""
        return collect_mapped(source, function, schema, here=self.lake.small_work())

    def grouped(
        self, frame: DataFrame, key: str, function: Callable[[pa.Table], pa.Table], schema: StructType
    ) -> DataFrame:
        """``frame.groupBy(key).applyInArrow(function, schema)``, run in this process when the stage at
        hand is small work (:func:`pipelines.execution.apply_grouped`)."""
        return apply_grouped(frame, key, function, schema, here=self.lake.small_work())

    def size_of(self, files: list[str]) -> int:
        """The bytes of ``files`` as ``binlog_files`` lists them."""
        known = self.state.files()
        return sum(int(known[f]["size"] or 0) for f in files if f in known)


@dataclass
class Built:
    """What a stage's build produced, for its gate and its write.

    ``files``: the files it (re)built; ``quarantine``: its quarantine rows (``QUARANTINE``
    columns); ``facts``: fact frames by name for the gate; ``counts``: figures for the run's
    summary (events framed, row changes, ...).
    """

    files: list[str]
    quarantine: DataFrame | Staged | None = None
    """Its quarantine rows: a frame, or the files its tasks wrote them into."""
    facts: dict[str, pd.DataFrame] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    reasons: Counter[tuple[str, str, str]] | None = None
    """Quarantine rows by ``(stage, code, severity)`` when the build knows them without a Spark job."""
    extra_quarantine: int = 0
    """Quarantine rows the gate added (the stage must write its quarantine)."""
    kept: Persisted = field(default_factory=Persisted)

    def release(self) -> None:
        """Release what the build persisted (once written)."""
        self.kept.release()

    def staged(self) -> list[tuple[TableSpec, Staged]]:
        """The files the build's tasks wrote, by table: deleted when its gate stops the run (they are in
        no table until written)."""
        return [(QUARANTINE, self.quarantine)] if isinstance(self.quarantine, Staged) else []

    def add_quarantine(self, rows: DataFrame) -> None:
        """Add quarantine rows (the gate's) to those of the build."""
        if self.quarantine is None:
            self.quarantine = rows
        elif isinstance(self.quarantine, Staged):
            self.quarantine = self.quarantine.with_extra(rows)
        else:
            self.quarantine = self.quarantine.unionByName(rows)

    def written(self) -> list[str]:
        """The files whose rows the stage's write replaces (named as unfinished while it writes)."""
        return list(self.files)


Out = TypeVar("Out", bound=Built)


class Stage(Protocol[Out]):
    """A stage of the pipeline (see the module doc)."""

    name: str

    def build(self, ctx: Context) -> Out: ...

    def write(self, ctx: Context, out: Out) -> None: ...


class StageUnavailable(RuntimeError):
    """A stage cannot run at all (its upstream is missing): the run fails loudly with this."""


__all__ = ["Built", "Context", "Say", "Stage", "StageUnavailable"]
