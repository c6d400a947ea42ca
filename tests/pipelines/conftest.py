"""Fixtures shared by the pipeline tests."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import pytest
from pyarrow import fs as pafs

from pipelines import filesystems
from tests.fixtures.truth import FIXTURES

SAMPLE = FIXTURES / "sample"


class RecordingS3:
    """Stands in for ``pyarrow.fs.S3FileSystem`` (no object store is reachable from the tests):
    records its arguments, serves the sample binlogs of bucket ``binlogs`` by key."""

    built: list[dict[str, Any]] = []  # noqa: RUF012 - shared record of the test

    def __init__(self, **kwargs: Any) -> None:
        RecordingS3.built.append(kwargs)

    def open_input_stream(self, path: str) -> io.BufferedReader:
        bucket, _, key = path.partition("/")
        assert bucket == "binlogs"
        return open(SAMPLE / key, "rb")


@pytest.fixture
def recording_s3(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[dict[str, Any]]]:
    """``S3FileSystem`` replaced by ``RecordingS3``; yields the arguments of every one built."""
    filesystems._arrow_filesystem.cache_clear()
    filesystems._bucket_region.cache_clear()
    RecordingS3.built = []
    monkeypatch.setattr(pafs, "S3FileSystem", RecordingS3)
    yield RecordingS3.built
    filesystems._arrow_filesystem.cache_clear()
    filesystems._bucket_region.cache_clear()
