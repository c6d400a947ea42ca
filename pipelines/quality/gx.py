"""great-expectations behind one function: validate pandas fact frames against rules.

Its API has changed often between releases; nothing else in the project imports it.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from typing import Any

import pandas as pd

from pipelines.quality.rules import Rule

logging.getLogger("great_expectations").setLevel(logging.ERROR)


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one rule over one fact frame."""

    rule: Rule
    success: bool
    observed: str
    details: str  # JSON: failing rows (file and value), at most 20
    failing: tuple[dict[str, Any], ...] = ()
    """Every failing row: ``file`` (when the fact frame has one) and the rule's column."""


def validate(frames: dict[str, pd.DataFrame], rules: list[Rule]) -> list[CheckResult]:
    """Run every rule on its fact frame with great-expectations (an ephemeral context)."""
    os.environ.setdefault("TQDM_DISABLE", "1")  # no metric progress bars in job logs
    import great_expectations as gx  # noqa: PLC0415 (imported on first use: it takes seconds)
    from great_expectations.data_context.types.base import ProgressBarsConfig  # noqa: PLC0415

    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    source = context.data_sources.add_pandas("facts")
    results = []
    for rule in rules:
        frame = frames[rule.facts]
        if frame.empty:
            results.append(CheckResult(rule, True, "no rows", "[]"))
            continue
        asset = source.add_dataframe_asset(f"{rule.gate}_{rule.name}")
        batch = asset.add_batch_definition_whole_dataframe("all").get_batch(batch_parameters={"dataframe": frame})
        expectation = getattr(gx.expectations, rule.expectation)(column=rule.column, **rule.kwargs)
        outcome = batch.validate(expectation)
        failing = _failing(frame, rule)
        observed = f"{len(failing)} of {len(frame)} rows fail" if not outcome.success else f"{len(frame)} rows pass"
        details = json.dumps(failing[:20], default=str)
        results.append(CheckResult(rule, bool(outcome.success), observed, details, tuple(failing)))
    return results


def _failing(frame: pd.DataFrame, rule: Rule) -> list[dict[str, Any]]:
    low, high = rule.kwargs.get("min_value"), rule.kwargs.get("max_value")
    values = frame[rule.column]
    bad = pd.Series(False, index=frame.index)
    if low is not None:
        bad |= values < low
    if high is not None:
        bad |= values > high
    keep = [c for c in ("file", rule.column) if c in frame.columns]
    records: list[dict[str, Any]] = frame.loc[bad, keep].to_dict("records")
    return records
