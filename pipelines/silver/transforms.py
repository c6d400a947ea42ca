"""Silver transforms: pure ``DataFrame -> DataFrame`` functions (no reads, writes or collects).

Nothing here sorts a file's events: which events a TABLE_MAP was in force for, and where its
force ended, bronze recorded while it walked the file (``binlog_core.sequence``).  The silver
tasks (:mod:`pipelines.silver.write`) decode and name the maps of the files built; what is left
here is what silver does to rows already stored.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from pipelines.silver.write import Resolver, resolved
from pipelines.staging import arrow_schema, conformed
from pipelines.tables import TABLE_MAPS
from pipelines.workers import rarely_collected

STORED_PLAN = "stored_plan_key"
"""The plan key a stored map had before :func:`resolved_again` named it again."""


def trusted(events: DataFrame) -> DataFrame:
    """Events whose checksum did not fail (the decoder reads nothing from the others)."""
    return events.where(F.col("checksum_ok").isNull() | F.col("checksum_ok"))


def resolved_again(
    history: Sequence[Mapping[str, Any]], sequences: Mapping[str, int | None]
) -> Callable[[DataFrame], DataFrame]:
    """``table_maps -> table_maps`` named again with ``history`` (schema-history rows of their servers,
    :class:`pipelines.silver.write.Resolver`), the plan key they had beside (:data:`STORED_PLAN`)."""
    schema = StructType([*TABLE_MAPS.schema.fields, StructField(STORED_PLAN, StringType(), True)])
    out_schema = arrow_schema(TABLE_MAPS).append(pa.field(STORED_PLAN, pa.string()))

    @rarely_collected
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        resolver = Resolver(history)
        for batch in batches:
            maps = pa.Table.from_batches([batch])
            again = resolved(maps, resolver, sequences).append_column(STORED_PLAN, maps.column("plan_key"))
            yield from conformed(again, out_schema).to_batches()

    def transform(table_maps: DataFrame) -> DataFrame:
        return table_maps.select(*TABLE_MAPS.names).mapInArrow(run, schema)

    return transform


__all__ = ["STORED_PLAN", "resolved_again", "trusted"]
