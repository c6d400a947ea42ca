"""A gate applies each check's action: configured overrides, disabled checks, quarantine rows for failing files."""

from __future__ import annotations

from typing import get_args

from pyspark.sql import SparkSession

from conf.models import CheckName, QualitySettings
from pipelines.quality.gate import GateOutcome, gate_code, run_gate
from pipelines.quality.gx import CheckResult
from pipelines.quality.rules import RULES

F1, F2 = "file:/in/mysql-bin.000001", "file:/in/mysql-bin.000002"
RULE = {r.name: r for r in RULES}
BRONZE_FACTS = (
    "file string, offset_gaps int, unexplained_tail int, checksum_failures int, unreadable int, unknown_events int"
)


def test_a_failed_quarantine_check_gives_each_failing_file_a_quarantine_row() -> None:
    rule = RULE["checksums_verified"]
    failing = ({"file": F1, "checksum_failures": 2}, {"file": F2, "checksum_failures": 1})
    outcome = GateOutcome(
        "bronze",
        [
            (CheckResult(rule, False, "2 of 3 rows fail", "[]", failing), "quarantine"),
            (CheckResult(RULE["known_event_types"], False, "1 of 3 rows fail", "[]", failing[:1]), "warn"),
            (CheckResult(RULE["offset_contiguity"], True, "3 rows pass", "[]"), "quarantine"),
        ],
    )

    rows = outcome.quarantine_rows()

    assert outcome.quarantined == ["checksums_verified"]
    assert [(r["stage"], r["file"], r["file_name"], r["code"], r["severity"], r["offset"]) for r in rows] == [
        ("bronze", F1, "mysql-bin.000001", "GATE_CHECKSUMS_VERIFIED", "error", None),
        ("bronze", F2, "mysql-bin.000002", "GATE_CHECKSUMS_VERIFIED", "error", None),
    ]
    assert rows[0]["message"] == (
        "quality gate bronze/checksums_verified failed: checksum_failures = 2; " + rule.description
    )


def test_a_failed_check_of_the_whole_run_quarantines_no_file() -> None:
    rule = RULE["ddl_parse_coverage"]
    outcome = GateOutcome("silver", [(CheckResult(rule, False, "1 of 1 rows fail", "[]", ({"x": 0.5},)), "quarantine")])
    assert (outcome.quarantined, outcome.quarantine_rows()) == (["ddl_parse_coverage"], [])


def test_gate_codes_are_the_rule_names_in_upper_case() -> None:
    assert [gate_code(r.name) for r in RULES if r.gate == "gold"] == [
        "GATE_ROWS_RECONCILE",
        "GATE_OP_MATCHES_IMAGES",
        "GATE_NO_UNKNOWN_TABLE",
    ]


def test_configured_actions_override_the_defaults_and_disabled_checks_are_not_run(spark: SparkSession) -> None:
    facts = spark.createDataFrame([(F1, 2, 0, 1, 0, 1), (F2, 0, 0, 0, 1, 0)], BRONZE_FACTS)
    settings = QualitySettings(
        actions={"offset_contiguity": "warn", "known_event_types": "fail"}, disabled=["file_fully_framed"]
    )

    outcome = run_gate(spark, "bronze", {"files": facts}, settings)

    assert [(r.rule.name, r.success, action) for r, action in outcome.results] == [
        ("offset_contiguity", False, "warn"),
        ("checksums_verified", False, "quarantine"),
        ("bad_files", False, "quarantine"),
        ("known_event_types", False, "fail"),
    ]
    assert outcome.failed == ["known_event_types"]
    assert outcome.quarantined == ["checksums_verified", "bad_files"]
    assert [(r["file"], r["code"]) for r in outcome.quarantine_rows()] == [
        (F1, "GATE_CHECKSUMS_VERIFIED"),
        (F2, "GATE_BAD_FILES"),
    ]
    assert [row["check"] for row in outcome.rows("run-1")] == [
        "offset_contiguity",
        "checksums_verified",
        "bad_files",
        "known_event_types",
    ]


def test_the_configuration_names_exactly_the_rules_there_are() -> None:
    assert list(get_args(CheckName)) == [rule.name for rule in RULES]
