"""How the bronze framing tasks open their files: local paths directly, object-store URIs with
``pyarrow.fs`` configured from the Hadoop settings the driver hands over (no Spark here).

No object store is reachable from the test machine: ``S3FileSystem`` is replaced by a stand-in
that records its arguments and serves the fixture files by key.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql.pandas.types import to_arrow_schema

from pipelines.bronze.transforms import WORK_ITEMS, frame_batches, open_binary
from pipelines.storage import UnsupportedSchemeError
from tests.fixtures.truth import FIXTURES

SAMPLE = FIXTURES / "sample"
FILE = SAMPLE / "mysql-bin.000001"


def test_local_paths_and_file_uris_are_opened_directly() -> None:
    for uri in (str(FILE), f"file:{FILE}", f"file://{FILE}"):
        with open_binary(uri)() as stream:
            assert isinstance(stream, io.BufferedReader)
            assert stream.read(4) == b"\xfebin"


def test_other_schemes_are_refused_naming_the_file() -> None:
    with pytest.raises(UnsupportedSchemeError, match=r"^ftp://host/mysql-bin\.000001: cannot read this file: "):
        open_binary("ftp://host/mysql-bin.000001")


def _work(uri: str, path: Path) -> pa.RecordBatch:
    item: dict[str, object] = {field.name: None for field in WORK_ITEMS.fields}
    item.update(
        file=uri,
        file_name=path.name,
        size=path.stat().st_size,
        modification_time=datetime(2024, 5, 1, tzinfo=UTC),
        start_offset=0,
    )
    return pa.RecordBatch.from_pylist([item], schema=to_arrow_schema(WORK_ITEMS, timezone="UTC"))


def _framed(batches: Iterator[pa.RecordBatch]) -> dict[str, list[dict[str, Any]]]:
    rows = pa.Table.from_batches(list(batches)).to_pylist()
    return {kind: [row[kind] for row in rows if row["kind"] == kind] for kind in ("event", "quarantine", "file")}


def test_s3a_files_are_framed_through_s3_filesystem_configured_from_the_hadoop_settings(
    recording_s3: list[dict[str, Any]],
) -> None:
    uri = "s3a://binlogs/mysql-bin.000001"
    hadoop = {
        "fs.s3a.endpoint": "http://minio.internal:9000",
        "fs.s3a.path.style.access": "true",
        "fs.s3a.access.key": "AKIA1",
        "fs.s3a.secret.key": "s3cr3t",
    }
    remote = _framed(frame_batches(iter([_work(uri, FILE)]), filesystem_options=hadoop))
    local = _framed(frame_batches(iter([_work(str(FILE), FILE)])))

    assert recording_s3 == [
        {"endpoint_override": "minio.internal:9000", "scheme": "http", "access_key": "AKIA1", "secret_key": "s3cr3t"}
    ]
    summary = remote["file"][0]
    assert (summary["file"], summary["status"], summary["framed_until"]) == (uri, "complete", FILE.stat().st_size)
    assert remote["quarantine"] == []
    assert [(row["file"], row["offset"], row["body"]) for row in remote["event"]] == [
        (uri, row["offset"], row["body"]) for row in local["event"]
    ]
    assert remote["event"][0]["offset"] == 4
