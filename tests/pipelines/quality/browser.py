"""Headless Chromium for the quality tests: Debian's ``chromium``, offline, and what a page renders.

The ``chromium`` fixture (``tests/pipelines/quality/conftest.py``) fails with the advice to install
it when it is missing, unless ``BINLOG_SKIP_CHROMIUM=1`` asks for a skip.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from html.parser import HTMLParser
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
SKIP_ENV_VAR = "BINLOG_SKIP_CHROMIUM"


def find_chromium() -> str:
    """Debian's ``chromium``: a failure with advice when missing (a skip only on request)."""
    found = shutil.which("chromium") or (CHROMIUM if os.access(CHROMIUM, os.X_OK) else None)
    if found is None:
        if os.environ.get(SKIP_ENV_VAR) == "1":
            pytest.skip(f"chromium not installed ({SKIP_ENV_VAR}=1)")
        pytest.fail(
            f"Debian's chromium is needed to render the Data Docs: install it with `.ci/setup --dev` "
            f"(apt-get install chromium), or set {SKIP_ENV_VAR}=1 to skip these tests"
        )
    return found


def browse(chromium: str, page: Path, work: Path, *options: str) -> str:
    """Open ``page`` in headless Chromium with a fresh profile, offline; its stdout (``--dump-dom``: the DOM)."""
    profile = tempfile.mkdtemp(prefix="chromium-profile-", dir=work)
    done = subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            "--host-resolver-rules=MAP * ~NOTFOUND",  # no network: the page must read without its CDNs
            *options,
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        check=True,
    )
    return done.stdout


class Rendered(HTMLParser):
    """The text of a rendered DOM outside scripts and styles, and its tables as rows of cell texts."""

    def __init__(self) -> None:
        super().__init__()
        self.text: list[str] = []
        self.tables: list[list[list[str]]] = []
        self.links: list[str] = []
        self._skip = 0
        self._cell: list[str] | None = None
        self._open: list[list[list[str]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self._skip += 1
        elif tag == "table":
            self._open.append([])
        elif tag == "tr" and self._open:
            self._open[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "a":
            self.links += [value for name, value in attrs if name == "href" and value]

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style"):
            self._skip -= 1
        elif tag in ("td", "th") and self._cell is not None and self._open and self._open[-1]:
            self._open[-1][-1].append(" ".join(" ".join(self._cell).split()))
            self._cell = None
        elif tag == "table" and self._open:
            self.tables.append(self._open.pop())

    def handle_data(self, data: str) -> None:
        if self._skip:
            return
        self.text.append(data)
        if self._cell is not None:
            self._cell.append(data)

    def table(self, first_header: str) -> list[list[str]]:
        """The rows (header row first) of the table whose first header cell is ``first_header``."""
        return next(t for t in self.tables if t and t[0] and t[0][0] == first_header)

    @property
    def words(self) -> str:
        return " ".join(" ".join(self.text).split())


def rendered(dom: str) -> Rendered:
    parser = Rendered()
    parser.feed(dom)
    return parser
