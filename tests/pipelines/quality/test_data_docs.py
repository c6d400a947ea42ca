"""The quality Data Docs as a person reads them.

``binlog-lakehouse run`` runs on the bundled sample (in this process, with the tests' Spark
session); its summary and its summary JSON name the Data Docs index, and headless Chromium
(Debian's ``chromium``, no network: every host name fails to resolve) renders that index: each
stage's suite and each stage's result of the run are rows of the rendered page, and the gold
result's page says what every gold check checks.  A screenshot of the index goes to the test's
folder.  A second run with nothing new rebuilds nothing, and does not even import
great-expectations (any import of it fails while it runs).

Chromium missing fails these tests with the advice to install it, unless ``BINLOG_SKIP_CHROMIUM=1``
asks for them to be skipped.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import io
import json
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
import yaml
from pyspark.sql import SparkSession

from conf import AppConfig, InputSettings, StorageSettings
from jobs.cli import main
from pipelines.quality.gx import sentence
from pipelines.quality.rules import RULES
from tests.fixtures.truth import FIXTURES
from tests.pipelines.quality.browser import browse, rendered

SAMPLE = FIXTURES / "sample"
SUITES = ["bronze_gate", "silver_gate", "gold_gate"]


@dataclass
class Ran:
    code: int
    out: str
    summary: dict[str, Any]


def cli_run(spark: SparkSession, cfg: AppConfig, config_file: Path, run_id: str, work: Path) -> Ran:
    """``binlog-lakehouse run`` with the test session: exit code, stdout (the summary), the summary JSON."""
    summary_json = work / f"{run_id}.json"
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(
            ["run", "--config", str(config_file), "--run-id", run_id, "--summary-json", str(summary_json)],
            config=cfg,
            spark=spark,
        )
    return Ran(code, out.getvalue(), json.loads(summary_json.read_text(encoding="utf-8")))


@dataclass
class Docs:
    cfg: AppConfig
    config_file: Path
    work: Path
    first: Ran

    @property
    def index(self) -> Path:
        return Path(self.cfg.storage.root) / "_state/quality/gx/uncommitted/data_docs/local_site/index.html"


@pytest.fixture(scope="module")
def docs(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Docs]:
    work = tmp_path_factory.mktemp("data_docs")
    cfg = AppConfig(
        input=InputSettings(path=str(SAMPLE)),
        storage=StorageSettings(root=str(work / "lake"), register_tables=False),
    )
    config_file = work / "lake.yaml"
    config_file.write_text(yaml.safe_dump(cfg.model_dump(mode="json")), encoding="utf-8")
    yield Docs(cfg, config_file, work, cli_run(spark, cfg, config_file, "docs-run-1", work))


def test_the_run_summary_and_its_json_name_the_data_docs_index(docs: Docs) -> None:
    assert docs.first.code == 0, docs.first.out
    assert f"    quality Data Docs: {docs.index}" in docs.first.out.splitlines()
    assert docs.first.summary["quality"]["data_docs"] == str(docs.index)
    assert docs.index.is_file()


def test_the_rendered_index_lists_every_suite_and_each_stage_result_of_the_run(
    docs: Docs, chromium: str, tmp_path: Path
) -> None:
    screenshot = tmp_path / "data-docs-index.png"

    page = rendered(browse(chromium, docs.index, tmp_path, "--dump-dom"))
    browse(chromium, docs.index, tmp_path, f"--screenshot={screenshot}", "--window-size=1280,900")

    assert docs.first.code == 0
    assert sorted(page.table("Expectation Suites")[1:]) == [[suite] for suite in sorted(SUITES)]
    results = page.table("Status")
    assert results[0] == ["Status", "Run Time", "Run Name", "Asset Name", "Batch ID", "Expectation Suite"]
    assert sorted((r[0], r[2], r[3], r[5]) for r in results[1:]) == [
        ("Success", "docs-run-1", "bronze", "bronze_gate"),
        ("Success", "docs-run-1", "gold", "gold_gate"),
        ("Success", "docs-run-1", "silver", "silver_gate"),
    ]
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and screenshot.stat().st_size > 10_000


def test_the_rendered_gold_result_says_what_each_gold_check_checks(docs: Docs, chromium: str, tmp_path: Path) -> None:
    index = rendered(docs.index.read_text(encoding="utf-8"))
    [link] = [href for href in index.links if href.startswith("validations/gold_gate/docs-run-1/")]
    page = rendered(browse(chromium, docs.index.parent / unquote(link), tmp_path, "--dump-dom"))

    gold = [r for r in RULES if r.gate == "gold"]
    assert all(sentence(rule, rule.action) in page.words for rule in gold), page.words[:2000]
    assert "Expectation Suite: gold_gate Data asset: None Status: Succeeded" in page.words


class _NoGreatExpectations(importlib.abc.MetaPathFinder):
    """Fails every import of great-expectations."""

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: object = None) -> None:
        if fullname.split(".", maxsplit=1)[0] == "great_expectations":
            raise ImportError(f"great-expectations imported while nothing was to gate: {fullname}")


def test_a_run_with_nothing_new_rebuilds_no_data_docs_and_never_imports_great_expectations(
    docs: Docs, spark: SparkSession
) -> None:
    built = docs.index.stat().st_mtime_ns
    with pytest.MonkeyPatch.context() as patch:
        for name in [m for m in sys.modules if m.split(".")[0] == "great_expectations"]:
            patch.delitem(sys.modules, name)
        patch.setattr(sys, "meta_path", [_NoGreatExpectations(), *sys.meta_path])
        again = cli_run(spark, docs.cfg, docs.config_file, "docs-run-2", docs.work)

    assert again.code == 0, again.out
    assert (again.summary["gates"], again.summary["quality"]) == ([], {"data_docs": None, "seconds": 0.0})
    assert "quality Data Docs" not in again.out
    assert docs.index.stat().st_mtime_ns == built
