"""Rules validated with great-expectations: a failing rule yields success=False with the failing rows."""

from __future__ import annotations

import json

import pandas as pd

from pipelines.quality.gx import validate
from pipelines.quality.rules import RULES, Rule

RULE = Rule(
    "offset_contiguity",
    "bronze",
    "files",
    "offset_gaps",
    "ExpectColumnValuesToBeBetween",
    {"min_value": 0, "max_value": 0},
    "fail",
    "no gaps",
)


def test_a_rule_fails_on_a_file_with_gaps_and_names_it() -> None:
    frame = pd.DataFrame({"file": ["a", "b"], "offset_gaps": [0, 2]})

    [result] = validate({"files": frame}, [RULE])

    assert result.success is False
    assert result.observed == "1 of 2 rows fail"
    assert json.loads(result.details) == [{"file": "b", "offset_gaps": 2}]


def test_a_rule_passes_when_every_file_is_clean_and_on_no_rows() -> None:
    clean = pd.DataFrame({"file": ["a", "b"], "offset_gaps": [0, 0]})

    [passed] = validate({"files": clean}, [RULE])
    [empty] = validate({"files": clean.iloc[0:0]}, [RULE])

    assert (passed.success, passed.observed, passed.details) == (True, "2 rows pass", "[]")
    assert (empty.success, empty.observed) == (True, "no rows")


def test_every_declared_rule_names_a_gate_an_expectation_and_a_description() -> None:
    assert {r.gate for r in RULES} == {"bronze", "silver", "gold"}
    assert all(r.expectation and r.description for r in RULES)
    assert len({r.name for r in RULES}) == len(RULES)
