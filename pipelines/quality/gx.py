"""great-expectations behind one module: each gate's rules as an Expectation Suite, each stage run
validated by a Checkpoint, results and Data Docs kept in a file-backed project.

Its API has changed often between releases; nothing else in the project imports it.

A :class:`QualityProject` is the great-expectations project of one lakehouse
(:func:`project_folder`: ``<storage.root>/_state/quality`` for a local root; for an object-store
root, ``quality`` beside the runs' log files on the machine running the driver, as the context
needs a local folder)::

    gx/great_expectations.yml               the context: data source "binlog-lakehouse facts", the Data Docs site
    gx/expectations/<stage>_gate.json       one Expectation Suite per stage, made from pipelines/quality/rules.py
    gx/validation_definitions/, checkpoints/    "<stage>_facts" (the stage's facts, its suite), "<stage>_gate"
    gx/uncommitted/validations/             every stage run's results (run name: the run id)
    gx/uncommitted/data_docs/local_site/index.html    the Data Docs

A suite is saved once and used again by later runs; it is written again only when the rules,
their configured actions or the disabled checks change (its ``meta.rules_digest``).  Each
expectation carries its rule's name, action and fact frame in ``meta``, and a sentence saying
what it checks and what failing does.

**The batch a checkpoint validates** is the stage's fact frames stacked so that each rule has its
own rows: one row per rule and fact row, with ``file`` / ``gold_table`` (what the row is about),
``first_offsets`` (where that rule's check fails: :attr:`pipelines.quality.rules.Rule.at`) and
the rule's column, null in the other rules' rows (a column expectation skips nulls).  A failed
expectation lists every failing row with its file, table and first offsets -- in the gate's
results, in the quarantine rows, and in the Data Docs.

**Latency.** Importing great-expectations takes seconds.  Nothing here imports it until a gate is
due: :meth:`QualityProject.prepare` (called as soon as a stage knows it has files to gate) imports
it and opens the context in a background thread, while Spark works; gates wait for it;
:meth:`QualityProject.build_docs` renders the Data Docs of the run's results once, at the end of
the run, in that thread too.  A process started for one run imports it sooner still, while its
Spark session starts (:func:`import_ahead`): on small input the stages finish their first work before
the import would.  Otherwise a run that gates nothing never imports great-expectations.

**Data Docs without a network.** great-expectations' index page draws its tables with JavaScript
loaded from CDNs; the site here draws them in HTML (:data:`STATIC_TABLE`), so the index reads the
same offline, and a small style sheet of our own stands in for the CDN's when it does not load.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import json
import logging
import math
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

import pandas as pd

from pipelines.quality.rules import KEYS, Action, Rule

logging.getLogger("great_expectations").setLevel(logging.ERROR)

SOURCE = "binlog-lakehouse facts"
"""The pandas data source of the fact frames (one dataframe asset per stage)."""

SITE = "local_site"
"""The Data Docs site."""

INDEX_LIMIT = 90
"""Validation results the Data Docs index lists (the newest; 30 runs of three stages). Older
results keep their pages under ``validations/``."""

OFFSETS = "first_offsets"
"""The batch column naming where a fact row fails its rule."""

SEVERITY: dict[Action, str] = {"fail": "critical", "quarantine": "warning", "warn": "info"}
"""great-expectations' severity of an expectation, by the rule's action."""

INDEX_VIEW = "StaticIndexPageView"
"""The index page view of the Data Docs site (made on first use, see :func:`__getattr__`)."""

STATIC_TABLE = """\
{% include 'content_block_header.j2' %}
{% set table_id = content_block_id ~ "-body-table" %}
{% set rows = content_block["table_data"] | render_bootstrap_table_data %}
{% set fields = content_block["table_columns"] | map(attribute="field") | list %}
{% set linked = "run_name" if "run_name" in fields else fields[0] %}
{% set plain = ["run_name", "run_time", "asset_name", "expectation_suite_name"] %}
<table id="{{ table_id }}" class="table table-sm binlog-static-table">
  <thead><tr>{% for column in content_block["table_columns"] %}<th>{{ column["title"] }}</th>{% endfor %}</tr></thead>
  <tbody>
  {% for row in rows %}
    {% set status = row.get("_validation_success_text") %}
    <tr{% if status %} class="binlog-{{ status | lower }}"{% endif %}>
    {% for column in content_block["table_columns"] %}
      {% set value = row.get(column["field"]) %}
      {% set value = "" if value is none else value %}
      <td>
      {%- if column["field"] == linked and row.get("_table_row_link_path") and column["field"] in plain -%}
        <a href="{{ row["_table_row_link_path"] }}">{{ value }}</a>
      {%- elif column["field"] in plain and value is string and "<" not in value %}{{ value }}
      {%- else %}{{ value | safe }}{% endif %}
      {%- if column["field"] == "validation_success" and status %} {{ status }}{% endif -%}
      </td>
    {% endfor %}
    </tr>
  {% endfor %}
  </tbody>
</table>
"""
"""The index's tables in HTML: the rows great-expectations hands its JavaScript table, the run name
(or the suite name) a link to its page, the status in words too (its icon font is on a CDN).
Plain values are escaped; cells great-expectations rendered stay as rendered."""

STYLES = """\
/* binlog-lakehouse: readable without the CDN style sheets (offline) */
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; font-size: 14px; }
table { border-collapse: collapse; margin: 0.5rem 0 1.5rem; }
th, td { border: 1px solid #d0d0d0; padding: 0.25rem 0.5rem; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
tr.binlog-failed td:first-child { color: #b00020; font-weight: 600; }
tr.binlog-success td:first-child { color: #1b7f3b; }
"""
"""``data_docs_custom_styles.css`` of the site (great-expectations includes it in every page)."""


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one rule over one stage's facts."""

    rule: Rule
    success: bool
    observed: str
    details: str  # JSON: failing rows (file, table, value, first offsets), at most 20
    failing: tuple[dict[str, Any], ...] = ()
    """Every failing row: ``file`` and ``gold_table`` (when the row is about one), the rule's
    column and ``first_offsets``."""


def project_folder(cfg: Any) -> str:
    """Where the great-expectations project of ``cfg``'s lakehouse lives (see the module doc).

    >>> project_folder(cfg)  # storage.root: /data/lake
    '/data/lake/_state/quality'
    """
    from pipelines.control import local_state_folder, scratch_root  # noqa: PLC0415 (no cycle at import)

    state = local_state_folder(cfg)
    if state is not None:
        return os.path.join(state, "quality")
    return os.path.join(scratch_root(cfg), "logs", "quality")


def fact_batch(frames: dict[str, pd.DataFrame], rules: list[Rule]) -> pd.DataFrame:
    """The batch a stage's checkpoint validates: one row per rule and fact row (see the module doc).

    >>> fact_batch({"files": pd.DataFrame({"file": ["a"], "offset_gaps": [2], "offset_gaps_at": [[120]]})},
    ...            [rule_offset_contiguity]).to_dict("records")
    [{'check': 'offset_contiguity', 'file': 'a', 'gold_table': None, 'first_offsets': [120], 'offset_gaps': 2}]
    """
    records: list[dict[str, Any]] = []
    integral: dict[str, bool] = {}
    for rule in rules:
        frame = frames[rule.facts]
        values = frame[rule.column]
        integral[rule.column] = integral.get(rule.column, True) and (
            pd.api.types.is_integer_dtype(values.dtype)
            or (values.dtype == object and all(isinstance(_plain(v), int | None) for v in values))
        )
        for row in frame.to_dict("records"):
            record: dict[str, Any] = {"check": rule.name}
            for key in KEYS:
                record[key] = _plain(row.get(key))
            record[OFFSETS] = _offsets(row.get(rule.at) if rule.at else None)
            record[rule.column] = _plain(row[rule.column])
            records.append(record)
    columns = list(dict.fromkeys(r.column for r in rules))
    batch = pd.DataFrame(
        {
            "check": [r["check"] for r in records],
            **{key: pd.Series([r[key] for r in records], dtype=object) for key in KEYS},
            OFFSETS: pd.Series([r[OFFSETS] for r in records], dtype=object),
            **{
                column: pd.array([r.get(column) for r in records], dtype="Int64" if integral[column] else "float64")
                for column in columns
            },
        }
    )
    return batch


def _plain(value: Any) -> Any:
    """A fact value as plain Python (numpy scalars unwrapped; NaN, NA and None as None)."""
    if value is None or value is pd.NA:
        return None
    if hasattr(value, "item") and not isinstance(value, (list, tuple)):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _offsets(value: Any) -> list[Any]:
    """A fact's offsets as a plain list (ints, or ``file_name@offset`` texts for a run's facts)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return []
    return [_plain(v) for v in list(value)]


def rules_digest(rules: list[Rule], actions: dict[str, Action]) -> str:
    """A digest of what a suite is made from: the rules and the actions in force."""
    text = json.dumps(
        [[r.name, r.facts, r.column, r.expectation, r.kwargs, actions[r.name], r.description, r.at] for r in rules],
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def sentence(rule: Rule, action: Action) -> str:
    """What an expectation says in the Data Docs.

    >>> sentence(rule_offset_contiguity, "fail")
    'offset_contiguity (fail): offset_gaps must be 0 for each file. Each event of a file starts where ...'
    """
    low, high = rule.kwargs.get("min_value"), rule.kwargs.get("max_value")
    bounds = f"must be {low}" if low == high else f"must be between {low} and {high}"
    per = {"files": "for each file", "tables": "for each file and gold table", "run": "for the run"}
    return f"{rule.name} ({action}): {rule.column} {bounds} {per.get(rule.facts, '')}. {rule.description}"


T = TypeVar("T")

_AHEAD: list[threading.Thread] = []


def _import_gx() -> Any:
    """great-expectations, imported (the first call takes seconds)."""
    os.environ.setdefault("TQDM_DISABLE", "1")  # no metric progress bars in job logs
    try:
        import great_expectations as gx  # noqa: PLC0415 (imported on first use: it takes seconds)
    except SystemExit as exc:  # pyspark's Spark Connect check, when __main__ has no file (python -c)
        raise RuntimeError(
            "importing great-expectations stopped: it imports pyspark.sql.connect, whose dependency check "
            "exits when the main module has no file (python -c); run from a script or binlog-lakehouse"
        ) from exc
    return gx


def _import_quietly() -> None:
    try:
        _import_gx()
    except BaseException:  # the import a gate makes raises it again, where it is reported
        return


def import_ahead() -> None:
    """Start importing great-expectations in a background thread (once per process), for a process
    that will gate a run's stages: while its Spark session starts, the thread mostly has the
    interpreter to itself (the session waits on the JVM)."""
    if not _AHEAD:
        _AHEAD.append(threading.Thread(target=_import_quietly, name="great-expectations-import", daemon=True))
        _AHEAD[0].start()


class QualityProject:
    """The great-expectations project of a lakehouse; ``folder`` None: kept in memory (no Data Docs).

    >>> project = QualityProject(project_folder(cfg))
    >>> project.prepare()                       # imports great-expectations in the background
    >>> results = project.validate("bronze", facts, rules, actions, run_id)
    >>> project.build_docs(); project.finish()  # the Data Docs index, once the run's gates ran
    '/data/lake/_state/quality/gx/uncommitted/data_docs/local_site/index.html'
    """

    def __init__(self, folder: str | None) -> None:
        self.folder = folder
        self.seconds = 0.0
        """Seconds callers waited for great-expectations (importing it, validating, Data Docs)."""
        self.docs_error: str | None = None
        """Why the Data Docs were not built, when they were not."""
        self._lock = threading.Lock()
        self._worker: concurrent.futures.ThreadPoolExecutor | None = None
        self._context: concurrent.futures.Future[Any] | None = None
        self._docs: concurrent.futures.Future[str | None] | None = None
        self._validated: list[Any] = []
        self._suites: set[str] = set()

    @property
    def started(self) -> bool:
        """Whether great-expectations was asked for (imported, or being imported) by this project."""
        return self._worker is not None

    def prepare(self) -> None:
        """Start importing great-expectations and opening the context in the background (once)."""
        with self._lock:
            if self._worker is None:
                self._worker = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="great-expectations")
                self._context = self._worker.submit(self._open)

    def validate(
        self, gate: str, frames: dict[str, pd.DataFrame], rules: list[Rule], actions: dict[str, Action], run_id: str
    ) -> list[CheckResult]:
        """Run the gate's checkpoint over ``frames`` (the suite made from ``rules`` with ``actions``);
        one result per rule, in the order of ``rules``."""
        if not rules:
            return []
        self.prepare()
        return self._wait(self._submit(lambda: self._validate(gate, frames, rules, actions, run_id)))

    def build_docs(self) -> None:
        """Start rendering the Data Docs of what this project validated (nothing when it validated nothing)."""
        if self._validated and self.folder is not None and self._docs is None:
            self._docs = self._submit(self._build_docs)

    def finish(self) -> str | None:
        """The Data Docs index once rendered (None: nothing validated, in memory, or the build failed:
        :attr:`docs_error`); the background thread ends."""
        try:
            if self._docs is None:
                return None
            try:
                return self._wait(self._docs)
            except Exception as exc:  # the run's outcome stands without its Data Docs
                self.docs_error = f"{type(exc).__name__}: {exc}"
                return None
        finally:
            self.close()

    def close(self) -> None:
        """End the background thread without waiting for what it has not started."""
        if self._worker is not None:
            self._worker.shutdown(wait=False, cancel_futures=True)

    # -- in the background thread -----------------------------------------------------------

    def _submit(self, task: Callable[[], T]) -> concurrent.futures.Future[T]:
        assert self._worker is not None
        return self._worker.submit(task)

    def _wait(self, future: concurrent.futures.Future[T]) -> T:
        started = time.monotonic()
        try:
            return future.result()
        finally:
            self.seconds += time.monotonic() - started

    def _gx(self) -> Any:
        assert self._context is not None
        return self._context.result()

    def _open(self) -> Any:
        """Import great-expectations; open (or create) the project's context and its data source."""
        gx = _import_gx()
        from great_expectations.data_context.types.base import ProgressBarsConfig  # noqa: PLC0415

        context: Any
        if self.folder is None:
            context = gx.get_context(mode="ephemeral")
        else:
            os.makedirs(self.folder, exist_ok=True)
            context = gx.get_context(mode="file", project_root_dir=self.folder)
        changed = False
        if context.variables.progress_bars != ProgressBarsConfig(globally=False):
            context.variables.progress_bars = ProgressBarsConfig(globally=False)
            changed = True
        if self.folder is not None:
            site = _site_config()
            if (context.variables.data_docs_sites or {}) != {SITE: site}:
                context.variables.data_docs_sites = {SITE: site}
                changed = True
            _write_if_changed(
                os.path.join(
                    context.root_directory, "plugins", "custom_data_docs", "styles", "data_docs_custom_styles.css"
                ),
                STYLES,
            )
        if changed and self.folder is not None:
            context.variables.save()
        try:
            context.data_sources.get(SOURCE)
        except (KeyError, ValueError, LookupError):
            context.data_sources.add_pandas(SOURCE)
        return context

    def _validate(
        self, gate: str, frames: dict[str, pd.DataFrame], rules: list[Rule], actions: dict[str, Action], run_id: str
    ) -> list[CheckResult]:
        from great_expectations.core.run_identifier import RunIdentifier  # noqa: PLC0415

        context = self._gx()
        suite, saved = self._suite(context, gate, rules, actions)
        checkpoint = self._checkpoint(context, gate, suite, saved)
        batch = fact_batch(frames, rules)
        outcome = checkpoint.run(
            batch_parameters={"dataframe": batch},
            run_id=RunIdentifier(run_name=run_id, run_time=datetime.now(UTC)),
        )
        self._validated += list(outcome.run_results)
        self._suites.add(suite.name)
        (validation,) = outcome.run_results.values()
        by_rule = {r.expectation_config.meta.get("rule"): r for r in validation.results}
        return [_check_result(rule, by_rule[rule.name], batch) for rule in rules]

    def _suite(self, context: Any, gate: str, rules: list[Rule], actions: dict[str, Action]) -> tuple[Any, bool]:
        """The gate's saved suite, written again only when what it is made from changed (then True)."""
        import great_expectations as gx  # noqa: PLC0415

        name = f"{gate}_gate"
        digest = rules_digest(rules, actions)
        try:
            saved = context.suites.get(name)
        except Exception:  # not saved yet: the store's error differs between releases
            saved = None
        if saved is not None and (saved.meta or {}).get("rules_digest") == digest:
            return saved, False
        suite = gx.ExpectationSuite(
            name=name,
            meta={
                "rules_digest": digest,
                "notes": f"The {gate} quality gate of binlog-lakehouse: pipelines/quality/rules.py, with the "
                "configured actions (quality.actions) and without the disabled checks (quality.disabled).",
            },
        )
        for rule in rules:
            expectation = getattr(gx.expectations, rule.expectation)(
                column=rule.column,
                **rule.kwargs,
                meta={"rule": rule.name, "action": actions[rule.name], "facts": rule.facts, "at": rule.at},
                description=sentence(rule, actions[rule.name]),
                severity=SEVERITY[actions[rule.name]],
            )
            suite.add_expectation(expectation)
        return context.suites.add_or_update(suite), True

    def _checkpoint(self, context: Any, gate: str, suite: Any, changed: bool) -> Any:
        """The gate's checkpoint over its validation definition (the stage's facts with its suite):
        the saved one while the suite did not change (saving a definition saves its suite again)."""
        import great_expectations as gx  # noqa: PLC0415

        if not changed:
            try:
                checkpoint = context.checkpoints.get(f"{gate}_gate")
            except Exception:  # not saved yet: the store's error differs between releases
                checkpoint = None
            if checkpoint is not None and [d.suite.name for d in checkpoint.validation_definitions] == [suite.name]:
                return checkpoint

        source = context.data_sources.get(SOURCE)
        try:
            asset = source.get_asset(gate)
        except LookupError:
            asset = source.add_dataframe_asset(gate)
        try:
            batch = asset.get_batch_definition("facts")
        except (KeyError, LookupError, ValueError):
            batch = asset.add_batch_definition_whole_dataframe("facts")
        definition = context.validation_definitions.add_or_update(
            gx.ValidationDefinition(name=f"{gate}_facts", data=batch, suite=suite)
        )
        return context.checkpoints.add_or_update(
            gx.Checkpoint(
                name=f"{gate}_gate",
                validation_definitions=[definition],
                actions=[],
                result_format={"result_format": "COMPLETE", "unexpected_index_column_names": [*KEYS, OFFSETS]},
            )
        )

    def _build_docs(self) -> str | None:
        from great_expectations.data_context.types.resource_identifiers import (  # noqa: PLC0415
            ExpectationSuiteIdentifier,
        )

        context = self._gx()
        resources = [*self._validated, *(ExpectationSuiteIdentifier(name) for name in sorted(self._suites))]
        sites = context.build_data_docs(site_names=[SITE], resource_identifiers=resources)
        url = sites.get(SITE)
        if not url:
            return None
        return str(url).removeprefix("file://")


def _site_config() -> dict[str, Any]:
    """The Data Docs site: local files, no tutorial buttons, an index of the newest results in HTML."""
    return {
        "class_name": "SiteBuilder",
        "show_how_to_buttons": False,
        "store_backend": {
            "class_name": "TupleFilesystemStoreBackend",
            "base_directory": f"uncommitted/data_docs/{SITE}/",
        },
        "site_index_builder": {
            "class_name": "DefaultSiteIndexBuilder",
            "validation_results_limit": INDEX_LIMIT,
            "view": {"module_name": __name__, "class_name": INDEX_VIEW},
        },
    }


def _write_if_changed(path: str, text: str) -> None:
    try:
        with open(path, encoding="utf-8") as existing:
            if existing.read() == text:
                return
    except OSError:
        pass
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as out:
        out.write(text)


def _check_result(rule: Rule, result: Any, batch: pd.DataFrame) -> CheckResult:
    """A rule's outcome from its expectation's result (``COMPLETE`` format)."""
    own = batch.loc[batch["check"] == rule.name, rule.column]
    checked = int(own.notna().sum())
    unchecked = len(own) - checked
    info = result.exception_info or {}
    if info.get("raised_exception"):
        message = str(info.get("exception_message") or "great-expectations could not run the check")
        return CheckResult(rule, False, f"error: {message}", json.dumps([]))
    failing = tuple(_failing_row(rule, row) for row in (result.result or {}).get("unexpected_index_list") or [])
    success = bool(result.success)
    if not checked:
        observed = "no rows"
    elif success:
        observed = f"{checked} rows pass"
    else:
        observed = f"{len(failing)} of {checked} rows fail"
    if unchecked:
        observed += f" ({unchecked} not checked)"
    return CheckResult(rule, success, observed, json.dumps(list(failing[:20]), default=str), failing)


def _failing_row(rule: Rule, row: dict[str, Any]) -> dict[str, Any]:
    """A failing row as the gate reports it: what it is about, the value, the first offsets."""
    out: dict[str, Any] = {key: _plain(row.get(key)) for key in KEYS if _plain(row.get(key)) is not None}
    out[rule.column] = _plain(row.get(rule.column))
    out[OFFSETS] = _offsets(row.get(OFFSETS))
    return out


def _static_index_view() -> type:
    """great-expectations' index page view with :data:`STATIC_TABLE` in place of its JavaScript table."""
    from great_expectations.render.view.view import DefaultJinjaIndexPageView  # noqa: PLC0415
    from jinja2 import BaseLoader, ChoiceLoader, DictLoader  # noqa: PLC0415

    class StaticIndexPageView(DefaultJinjaIndexPageView):
        def __init__(self, custom_styles_directory: str | None = None, custom_views_directory: str | None = None):
            # named: great-expectations passes a class only the runtime arguments its __init__ names
            super().__init__(custom_styles_directory, custom_views_directory)
            loaders: list[BaseLoader] = [DictLoader({"bootstrap_table.j2": STATIC_TABLE})]
            if self.env.loader is not None:
                loaders.append(self.env.loader)
            self.env.loader = ChoiceLoader(loaders)

    return StaticIndexPageView


def __getattr__(name: str) -> Any:
    """:data:`INDEX_VIEW`, the class great-expectations instantiates from the site's configuration:
    made on first use, so that importing this module does not import great-expectations."""
    if name == INDEX_VIEW:
        view = _static_index_view()
        globals()[name] = view
        return view
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "INDEX_LIMIT",
    "OFFSETS",
    "SOURCE",
    "CheckResult",
    "QualityProject",
    "fact_batch",
    "import_ahead",
    "project_folder",
    "rules_digest",
    "sentence",
]
