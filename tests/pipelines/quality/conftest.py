"""Fixtures of the quality tests."""

from __future__ import annotations

import pytest

from tests.pipelines.quality.browser import find_chromium


@pytest.fixture(scope="session")
def chromium() -> str:
    """The path of Debian's headless-capable ``chromium`` (see :mod:`tests.pipelines.quality.browser`)."""
    return find_chromium()
