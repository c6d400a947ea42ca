"""The rules run as great-expectations objects: the batch each stage's checkpoint validates, the
results it gives back (failing files with their first offending offsets), one suite per gate
saved in the project and reused while the rules stay the same, and the project's place."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd

from conf import AppConfig, InputSettings, SparkSettings, StorageSettings
from pipelines.quality.gx import QualityProject, fact_batch, project_folder, rules_digest, sentence
from pipelines.quality.rules import KEYS, RULES

RULE = {r.name: r for r in RULES}
PROJECT_ROOT = Path(__file__).resolve().parents[3]


def gold_files(*rows: tuple[str, int, list[int]]) -> pd.DataFrame:
    """Gold per-file facts with ``op_image_mismatches`` as given and every other fact clean."""
    return pd.DataFrame(
        [
            {
                "file": file,
                "unreconciled_rows_events": 0,
                "op_image_mismatches": wrong,
                "unknown_table_events": 0,
                "commits_before_event": 0,
                "unreconciled_rows_events_at": [],
                "op_image_mismatches_at": at,
                "unknown_table_events_at": [],
                "commits_before_event_at": [],
            }
            for file, wrong, at in rows
        ]
    )


def gold_tables(*rows: tuple[str, str, int | None, list[int]]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "file": [r[0] for r in rows],
            "gold_table": [r[1] for r in rows],
            "null_key_inserts": pd.array([r[2] for r in rows], dtype="Int64"),
            "null_key_inserts_at": [r[3] for r in rows],
        }
    )


GOLD = [r for r in RULES if r.gate == "gold"]
ACTIONS = {r.name: r.action for r in RULES}


def test_the_batch_gives_each_rule_its_own_rows_naming_file_table_and_first_offsets() -> None:
    frames = {
        "files": gold_files(("f1", 0, []), ("f2", 2, [4410, 5120])),
        "tables": gold_tables(("f2", "shop__orders", 1, [8728]), ("f2", "shop__carts", None, [])),
    }

    batch = fact_batch(frames, [RULE["op_matches_images"], RULE["insert_keys_not_null"]])

    assert list(batch.columns) == ["check", *KEYS, "first_offsets", "op_image_mismatches", "null_key_inserts"]
    assert [
        (r["check"], r["file"], r["gold_table"], r["first_offsets"], r["op_image_mismatches"], r["null_key_inserts"])
        for r in batch.astype(object).where(batch.notna(), None).to_dict("records")
    ] == [
        ("op_matches_images", "f1", None, [], 0, None),
        ("op_matches_images", "f2", None, [4410, 5120], 2, None),
        ("insert_keys_not_null", "f2", "shop__orders", [8728], None, 1),
        ("insert_keys_not_null", "f2", "shop__carts", [], None, None),
    ]
    assert (str(batch["op_image_mismatches"].dtype), str(batch["null_key_inserts"].dtype)) == ("Int64", "Int64")


def test_a_failing_check_names_each_failing_file_with_its_value_table_and_first_offsets() -> None:
    frames = {
        "files": gold_files(("f1", 0, []), ("f2", 2, [4410, 5120])),
        "tables": gold_tables(("f1", "shop__orders", 0, []), ("f2", "shop__orders", 1, [8728])),
    }

    results = QualityProject(None).validate("gold", frames, GOLD, ACTIONS, "run-1")

    by_name = {r.rule.name: r for r in results}
    assert [r.rule.name for r in results] == [r.name for r in GOLD]
    wrong, keys = by_name["op_matches_images"], by_name["insert_keys_not_null"]
    assert (wrong.success, wrong.observed, wrong.failing) == (
        False,
        "1 of 2 rows fail",
        ({"file": "f2", "op_image_mismatches": 2, "first_offsets": [4410, 5120]},),
    )
    assert (keys.success, keys.observed, keys.failing) == (
        False,
        "1 of 2 rows fail",
        ({"file": "f2", "gold_table": "shop__orders", "null_key_inserts": 1, "first_offsets": [8728]},),
    )
    assert json.loads(keys.details) == [
        {"file": "f2", "gold_table": "shop__orders", "null_key_inserts": 1, "first_offsets": [8728]}
    ]
    assert [(by_name[n].success, by_name[n].observed) for n in ("rows_reconcile", "commit_not_before_event")] == [
        (True, "2 rows pass"),
        (True, "2 rows pass"),
    ]


def test_rows_without_a_value_are_not_checked_and_a_frame_without_rows_passes_with_no_rows() -> None:
    frames = {
        "files": gold_files(("f1", 0, [])).iloc[0:0],
        "tables": gold_tables(("f1", "shop__orders", 0, []), ("f1", "shop__carts", None, [])),
    }

    results = QualityProject(None).validate("gold", frames, GOLD, ACTIONS, "run-1")

    assert [(r.rule.name, r.success, r.observed) for r in results] == [
        ("rows_reconcile", True, "no rows"),
        ("op_matches_images", True, "no rows"),
        ("no_unknown_table", True, "no rows"),
        ("commit_not_before_event", True, "no rows"),
        ("insert_keys_not_null", True, "1 rows pass (1 not checked)"),
    ]


def test_a_fact_of_the_run_fails_naming_the_positions_it_lists() -> None:
    run = pd.DataFrame(
        {
            "ddl_parsed_share": [0.5],
            "ddl_statements": [2],
            "ddl_parsed_share_at": [["mysql-bin.000002@4410"]],
        }
    )

    [result] = QualityProject(None).validate("silver", {"run": run}, [RULE["ddl_parse_coverage"]], ACTIONS, "r")

    assert (result.success, result.failing) == (
        False,
        ({"ddl_parsed_share": 0.5, "first_offsets": ["mysql-bin.000002@4410"]},),
    )


def read_suite(folder: Path, name: str) -> dict[str, object]:
    data: dict[str, object] = json.loads((folder / "gx" / "expectations" / f"{name}.json").read_text())
    return data


def test_each_gate_has_one_saved_suite_reused_while_its_rules_and_actions_stay_the_same(tmp_path: Path) -> None:
    frames = {"files": gold_files(("f1", 0, [])), "tables": gold_tables(("f1", "shop__orders", 0, []))}
    project = QualityProject(str(tmp_path))
    project.validate("gold", frames, GOLD, ACTIONS, "run-1")
    first = read_suite(tmp_path, "gold_gate")
    written = (tmp_path / "gx" / "expectations" / "gold_gate.json").stat().st_mtime_ns

    project.validate("gold", frames, GOLD, ACTIONS, "run-2")
    again = (tmp_path / "gx" / "expectations" / "gold_gate.json").stat().st_mtime_ns
    changed = {**ACTIONS, "op_matches_images": "warn"}
    project.validate("gold", frames, GOLD[1:3], changed, "run-3")
    project.close()

    assert again == written
    expectations = first["expectations"]
    assert isinstance(expectations, list)
    assert [(e["type"], e["kwargs"]["column"], e["meta"]["rule"], e["meta"]["action"]) for e in expectations] == [
        ("expect_column_values_to_be_between", r.column, r.name, r.action) for r in GOLD
    ]
    assert expectations[1]["description"] == sentence(RULE["op_matches_images"], "fail")
    assert first["meta"]["rules_digest"] == rules_digest(GOLD, ACTIONS)  # type: ignore[index]
    rewritten = read_suite(tmp_path, "gold_gate")
    assert [(e["meta"]["rule"], e["meta"]["action"]) for e in rewritten["expectations"]] == [  # type: ignore[attr-defined]
        ("op_matches_images", "warn"),
        ("no_unknown_table", "quarantine"),
    ]
    runs = sorted(p.name for p in (tmp_path / "gx" / "uncommitted" / "validations" / "gold_gate").iterdir())
    assert runs == ["run-1", "run-2", "run-3"]
    assert sorted(p.name for p in (tmp_path / "gx" / "checkpoints").iterdir()) == ["gold_gate.json"]


def test_what_an_expectation_says_names_the_rule_its_action_and_bounds() -> None:
    assert sentence(RULE["ddl_parse_coverage"], "warn") == (
        "ddl_parse_coverage (warn): ddl_parsed_share must be between 0.9 and 1.0 for the run. "
        + RULE["ddl_parse_coverage"].description
    )
    assert sentence(RULE["insert_keys_not_null"], "quarantine").startswith(
        "insert_keys_not_null (quarantine): null_key_inserts must be 0 for each file and gold table. Per gold table:"
    )


def test_the_project_lives_under_the_state_folder_of_a_local_root_and_beside_the_logs_otherwise(
    tmp_path: Path,
) -> None:
    local = AppConfig(input=InputSettings(path=str(tmp_path)), storage=StorageSettings(root=str(tmp_path / "lake")))
    remote = AppConfig(
        input=InputSettings(path=str(tmp_path)),
        storage=StorageSettings(root="s3a://bucket/lake"),
        spark=SparkSettings(scratch_dir=str(tmp_path / "scratch")),
    )
    assert project_folder(local) == str(tmp_path / "lake" / "_state" / "quality")
    assert project_folder(remote) == str(tmp_path / "scratch" / "logs" / "quality")


def test_nothing_imports_great_expectations_until_a_gate_is_due() -> None:
    # if it were imported, the process would end early (pyspark's connect check under -c) or print True
    code = "import sys, pipelines.run, pipelines.quality.gate; print('great_expectations' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], cwd=PROJECT_ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_every_rule_checks_its_own_fact_column_and_names_where_it_fails() -> None:
    columns = [(r.gate, r.column) for r in RULES]
    assert len(set(columns)) == len(columns)
    assert all(r.at == f"{r.column}_at" for r in RULES)
    assert {r.facts for r in RULES} == {"files", "tables", "run"}
