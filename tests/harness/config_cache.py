"""The cache of validated config files (``conf.query``) in a folder of the test run, never the user's."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from conf.query import CACHE_VARIABLE


@pytest.fixture(autouse=True, scope="session")
def config_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The cache folder every command of the run (and every process it starts) uses."""
    folder = str(tmp_path_factory.mktemp("config-cache"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(CACHE_VARIABLE, folder)
        yield folder
