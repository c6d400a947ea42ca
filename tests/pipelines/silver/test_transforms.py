"""Silver transforms on small frames: trusted events, and stored maps named again with a new history."""

from __future__ import annotations

from pyspark.sql import SparkSession
from pyspark.sql.types import BooleanType, LongType, StringType, StructField, StructType

from pipelines.silver.transforms import trusted

A = "/l/mysql-bin.999999"

EVENTS = StructType(
    [
        StructField("file", StringType()),
        StructField("offset", LongType()),
        StructField("checksum_ok", BooleanType()),
    ]
)


def test_trusted_events_are_those_whose_checksum_did_not_fail(spark: SparkSession) -> None:
    events = spark.createDataFrame([(A, 4, True), (A, 100, None), (A, 200, False)], EVENTS)
    assert [r.offset for r in trusted(events).orderBy("offset").collect()] == [4, 100]
