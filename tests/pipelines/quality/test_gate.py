"""A gate applies each check's action to the pandas fact frames a stage built: configured overrides,
disabled checks, quarantine rows for failing files naming the first offending offsets (no Spark
session; great-expectations in memory)."""

from __future__ import annotations

from typing import get_args

import pandas as pd

from conf.models import CheckName, QualitySettings
from pipelines.quality.gate import GateOutcome, gate_code, run_gate
from pipelines.quality.gx import CheckResult
from pipelines.quality.rules import RULES
from pipelines.tables import GATE_RESULTS, QUARANTINE

F1, F2 = "file:/in/mysql-bin.000001", "file:/in/mysql-bin.000002"
RULE = {r.name: r for r in RULES}


BRONZE = ["offset_gaps", "unexplained_tail", "checksum_failures", "unreadable", "unknown_events"]


def bronze_facts(*rows: tuple[str, int, int, int, int, int]) -> pd.DataFrame:
    """Bronze facts with the given values, each failing one at offset 100 times its value."""
    frame = pd.DataFrame(rows, columns=["file", *BRONZE])
    for name in BRONZE:
        frame[f"{name}_at"] = [[100 * n] if n else [] for n in frame[name]]
    return frame


def test_a_failed_quarantine_check_gives_each_failing_file_a_quarantine_row() -> None:
    rule = RULE["checksums_verified"]
    failing = (
        {"file": F1, "checksum_failures": 2, "first_offsets": [4410, 9120]},
        {"file": F2, "checksum_failures": 1, "first_offsets": [120]},
    )
    outcome = GateOutcome(
        "bronze",
        [
            (CheckResult(rule, False, "2 of 3 rows fail", "[]", failing), "quarantine"),
            (CheckResult(RULE["known_event_types"], False, "1 of 3 rows fail", "[]", failing[:1]), "warn"),
            (CheckResult(RULE["offset_contiguity"], True, "3 rows pass", "[]"), "quarantine"),
        ],
    )

    rows = outcome.quarantine_rows("run-7")

    assert outcome.quarantined == ["checksums_verified"]
    assert [
        (r["stage"], r["file"], r["file_name"], r["code"], r["severity"], r["offset"], r["run_id"]) for r in rows
    ] == [
        ("bronze", F1, "mysql-bin.000001", "GATE_CHECKSUMS_VERIFIED", "error", None, "run-7"),
        ("bronze", F2, "mysql-bin.000002", "GATE_CHECKSUMS_VERIFIED", "error", None, "run-7"),
    ]
    assert [r["message"] for r in rows] == [
        "quality gate bronze/checksums_verified failed: checksum_failures = 2 at offsets 4410, 9120; "
        + rule.description,
        "quality gate bronze/checksums_verified failed: checksum_failures = 1 at offset 120; " + rule.description,
    ]
    assert list(rows[0]) == QUARANTINE.names


def test_a_failed_check_of_a_gold_table_names_the_table_in_its_quarantine_row() -> None:
    rule = RULE["insert_keys_not_null"]
    failing = ({"file": F2, "gold_table": "shop__orders", "null_key_inserts": 3, "first_offsets": [8728]},)
    outcome = GateOutcome("gold", [(CheckResult(rule, False, "1 of 4 rows fail", "[]", failing), "quarantine")])

    [row] = outcome.quarantine_rows("run-2")

    assert (row["file"], row["code"], row["message"]) == (
        F2,
        "GATE_INSERT_KEYS_NOT_NULL",
        "quality gate gold/insert_keys_not_null failed: null_key_inserts = 3 in shop__orders at offset 8728; "
        + rule.description,
    )


def test_a_failed_check_of_the_whole_run_quarantines_no_file() -> None:
    rule = RULE["ddl_parse_coverage"]
    outcome = GateOutcome("silver", [(CheckResult(rule, False, "1 of 1 rows fail", "[]", ({"x": 0.5},)), "quarantine")])
    assert (outcome.quarantined, outcome.quarantine_rows("run-1")) == (["ddl_parse_coverage"], [])


def test_gate_codes_are_the_rule_names_in_upper_case() -> None:
    assert [gate_code(r.name) for r in RULES if r.gate == "gold"] == [
        "GATE_ROWS_RECONCILE",
        "GATE_OP_MATCHES_IMAGES",
        "GATE_NO_UNKNOWN_TABLE",
        "GATE_COMMIT_NOT_BEFORE_EVENT",
        "GATE_INSERT_KEYS_NOT_NULL",
    ]


def test_configured_actions_override_the_defaults_and_disabled_checks_are_not_run() -> None:
    facts = bronze_facts((F1, 2, 0, 1, 0, 1), (F2, 0, 0, 0, 1, 0))
    settings = QualitySettings(
        actions={"offset_contiguity": "warn", "known_event_types": "fail"}, disabled=["file_fully_framed"]
    )

    outcome = run_gate("bronze", {"files": facts}, settings)

    assert [(r.rule.name, r.success, action) for r, action in outcome.results] == [
        ("offset_contiguity", False, "warn"),
        ("checksums_verified", False, "quarantine"),
        ("bad_files", False, "quarantine"),
        ("known_event_types", False, "fail"),
    ]
    assert outcome.failed == ["known_event_types"]
    assert outcome.quarantined == ["checksums_verified", "bad_files"]
    assert [(r["file"], r["code"], str(r["message"]).split(";")[0]) for r in outcome.quarantine_rows("run-1")] == [
        (
            F1,
            "GATE_CHECKSUMS_VERIFIED",
            "quality gate bronze/checksums_verified failed: checksum_failures = 1 at offset 100",
        ),
        (F2, "GATE_BAD_FILES", "quality gate bronze/bad_files failed: unreadable = 1 at offset 100"),
    ]
    results = outcome.rows("run-1")
    assert [row["check"] for row in results] == [
        "offset_contiguity",
        "checksums_verified",
        "bad_files",
        "known_event_types",
    ]
    assert list(results[0]) == GATE_RESULTS.names


def test_clean_facts_pass_every_check_of_each_gate_with_its_default_action() -> None:
    facts = {
        "bronze": {"files": bronze_facts((F1, 0, 0, 0, 0, 0), (F2, 0, 0, 0, 0, 0))},
        "silver": {
            "files": pd.DataFrame(
                [(F1, 0, 0, [], [])],
                columns=[
                    "file",
                    "unmapped_rows_events",
                    "ids_reused_for_other_table",
                    "unmapped_rows_events_at",
                    "ids_reused_for_other_table_at",
                ],
            ),
            "run": pd.DataFrame([{"ddl_parsed_share": 1.0, "ddl_statements": 0, "ddl_parsed_share_at": []}]),
        },
        "gold": {
            "files": pd.DataFrame(
                [(F1, 0, 0, 0, 0, [], [], [], [])],
                columns=[
                    "file",
                    "unreconciled_rows_events",
                    "op_image_mismatches",
                    "unknown_table_events",
                    "commits_before_event",
                    "unreconciled_rows_events_at",
                    "op_image_mismatches_at",
                    "unknown_table_events_at",
                    "commits_before_event_at",
                ],
            ),
            "tables": pd.DataFrame(
                [(F1, "shop__orders", 0, [])], columns=["file", "gold_table", "null_key_inserts", "null_key_inserts_at"]
            ),
        },
    }
    for gate, frames in facts.items():
        outcome = run_gate(gate, frames, QualitySettings())
        assert [(r.rule.name, r.success, a) for r, a in outcome.results] == [
            (rule.name, True, rule.action) for rule in RULES if rule.gate == gate
        ]
        assert (outcome.failed, outcome.quarantined) == ([], [])


def test_the_configuration_names_exactly_the_rules_there_are() -> None:
    assert list(get_args(CheckName)) == [rule.name for rule in RULES]
