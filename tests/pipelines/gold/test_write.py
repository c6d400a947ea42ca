"""The gold task over real binlogs, without Spark: each rows event decoded once and projected into its
typed change table, ``changes`` and the quarantine with exactly their tables' columns; the gate's
counts of what it decoded; and the files it writes, whose rows are those projections.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from binlog_core.columns import DecodeOptions
from pipelines.gold.decode import Decoded
from pipelines.gold.names import gold_table_name
from pipelines.gold.write import (
    OUTPUT,
    Facts,
    GoldTargets,
    changes_rows,
    problem_rows,
    staged_decode,
    typed_rows,
    wrong_op,
)
from pipelines.staging import StagedFile, TableTarget, arrow_schema, conformed, file_uri
from pipelines.tables import CHANGES, QUARANTINE, typed_change_table
from tests.fixtures.truth import FIXTURES, load_variant
from tests.pipelines.gold.inputs import SERVER, GoldInputs, gold_inputs

SAMPLE_2 = FIXTURES / "sample" / "mysql-bin.000002"


@pytest.fixture(scope="module")
def inputs() -> GoldInputs:
    """The rows events of sample file 2; the first one without a map in force."""
    inputs = gold_inputs([SAMPLE_2])
    inputs.rows = [{**inputs.rows[0], "plan_key": None}, *inputs.rows[1:]]
    return inputs


def decoded(inputs: GoldInputs) -> tuple[list[Decoded], pa.Array, pa.Array]:
    decoder = inputs.decoder()
    out = list(decoder.decode_tables(inputs.batch()))
    return out, *decoder.plan_columns()


def _unchanged(rows: pa.Table, schema: pa.Schema) -> None:
    """``rows`` are the table's rows as they are: conforming them changes nothing but nullability."""
    assert rows.column_names == schema.names
    assert conformed(rows, schema).to_pylist() == rows.to_pylist()


def test_changes_hold_every_decoded_row_change_with_the_changes_columns(inputs: GoldInputs) -> None:
    out, names, kinds = decoded(inputs)
    rows = [r for d in out if d.table >= 0 for r in changes_rows(d, names, kinds, "gold-run").to_pylist()]
    first = changes_rows(next(d for d in out if d.table >= 0), names, kinds, "gold-run")
    _unchanged(first, arrow_schema(CHANGES))
    truth = [c for c in load_variant("sample").changes if c.file == SAMPLE_2.name]
    lost = [r for b in inputs.decode([inputs.rows[0] | {"plan_key": next(iter(inputs.plans))}]) for r in b.to_pylist()]
    assert len(rows) == len(truth) - sum(r["kind"] == "change" for r in lost)
    assert all(r["offset"] != inputs.rows[0]["offset"] for r in rows)
    assert {r["run_id"] for r in rows} == {"gold-run"} and {r["server"] for r in rows} == {SERVER}
    shapes = {c.shape.table: c.shape.names for c in truth}
    assert {(r["table_name"], tuple(r["column_names"])) for r in rows} == {(t, tuple(n)) for t, n in shapes.items()}
    assert all(len(r["column_kinds"]) == len(r["column_names"]) and all(r["column_kinds"]) for r in rows)


def test_each_typed_table_gets_its_own_tables_rows_in_its_own_struct(inputs: GoldInputs) -> None:
    out, names, kinds = decoded(inputs)
    counts: Counter[str] = Counter()
    for d in out:
        if d.table < 0:
            continue
        name = inputs.tables[d.table]
        rows = typed_rows(d, "gold-run")
        _unchanged(rows, arrow_schema(typed_change_table(name, inputs.images[d.table])))
        counts[name] += rows.num_rows
    per_table = Counter(
        gold_table_name(r["schema_name"], r["table_name"])
        for d in out
        if d.table >= 0
        for r in changes_rows(d, names, kinds, "r").to_pylist()
    )
    assert counts == per_table
    assert sorted(counts) == ["shop__carts", "shop__customers", "shop__order_items", "shop__orders", "shop__products"]


def test_a_rows_event_without_a_map_becomes_one_gold_quarantine_row(inputs: GoldInputs) -> None:
    out, _, _ = decoded(inputs)
    first = inputs.rows[0]
    (problems,) = [d for d in out if d.table < 0]
    rows = problem_rows(problems, "gold-run")
    _unchanged(rows, arrow_schema(QUARANTINE))
    assert [
        (r["stage"], r["file"], r["offset"], r["event_type_name"], r["code"], r["severity"], r["run_id"], r["body"])
        for r in rows.to_pylist()
    ] == [("gold", str(SAMPLE_2), first["offset"], "UPDATE_ROWS_V1", "UNKNOWN_TABLE_ID", "error", "gold-run",
           first["body"])]  # fmt: skip


def test_an_op_contradicted_by_its_images_is_wrong() -> None:
    op = pa.array(["insert", "insert", "delete", "delete", "update", "update", None])
    before = pa.array([None, "{}", "{}", "{}", "{}", None, None])
    after = pa.array(["{}", "{}", None, "{}", "{}", "{}", None])
    assert wrong_op(op, before, after).to_pylist() == [False, True, False, True, False, True, False]


def test_the_gate_counts_add_up_the_decoded_rows_per_file_table_id_and_problem(inputs: GoldInputs) -> None:
    out, _, _ = decoded(inputs)
    once, twice = Facts(), Facts()
    for d in out:
        once.add(d)
        twice.add(d)
        twice.add(d)
    rows = once.rows()
    problems = [r for r in rows if r["code"] is not None]
    assert [(r["code"], r["severity"], r["problems"], r["unknown"], r["accounted"]) for r in problems] == [
        ("UNKNOWN_TABLE_ID", "error", 1, 1, 1)
    ]
    assert problems[0]["unknown_at"] == [inputs.rows[0]["offset"]]
    changes = [r for r in rows if r["code"] is None]
    assert sum(r["n"] for r in changes) == sum(d.common.num_rows for d in out if d.table >= 0)
    assert sum(r["accounted"] for r in rows) == len(inputs.rows)  # every rows event once, decoded or not
    assert all(r["wrong"] == 0 and r["wrong_at"] == [] for r in changes)
    assert {r["file"] for r in rows} == {str(SAMPLE_2)}
    doubled = {(r["file"], r["table_id"], r["gold_table"], r["code"]): r for r in twice.rows()}
    for r in rows:
        again = doubled[(r["file"], r["table_id"], r["gold_table"], r["code"])]
        assert (again["n"], again["accounted"]) == (2 * r["n"], 2 * r["accounted"])
        assert again["unknown_at"] == r["unknown_at"]


def _written(target: TableTarget, files: list[StagedFile]) -> list[dict[str, Any]]:
    return [
        row for f in files for row in pq.read_table(file_uri(target.location, f).removeprefix("file://")).to_pylist()
    ]


def test_the_task_writes_each_tables_rows_the_changes_and_the_problems_and_hands_back_files_and_counts(
    inputs: GoldInputs, tmp_path: Path
) -> None:
    specs = {i: typed_change_table(name, inputs.images[i]) for i, name in enumerate(inputs.tables)}
    targets = GoldTargets(
        {i: TableTarget.of(spec, str(tmp_path / spec.name), {}) for i, spec in specs.items()},
        TableTarget.of(CHANGES, str(tmp_path / "changes"), {}),
        TableTarget.of(QUARANTINE, str(tmp_path / "quarantine"), {}),
        "gold-run",
    )
    run = staged_decode(inputs.plans, inputs.images, inputs.tables, {str(SAMPLE_2): SERVER}, DecodeOptions(), targets)
    batch = inputs.batch()
    output = pa.Table.from_batches(list(run(iter([batch.slice(0, 40), batch.slice(40)]))))
    assert output.schema.names == OUTPUT.names
    staged = [StagedFile.of(r["staged"]) for r in output.to_pylist() if r["kind"] == "staged"]
    facts = [r["facts"] for r in output.to_pylist() if r["kind"] == "facts"]
    out, names, kinds = decoded(inputs)
    want_changes = [r for d in out if d.table >= 0 for r in changes_rows(d, names, kinds, "gold-run").to_pylist()]
    by_table = {t.table: [f for f in staged if f.table == t.table] for t in (targets.changes, targets.quarantine)}
    got_changes = _written(targets.changes, by_table[targets.changes.table])
    key = lambda r: (r["offset"], r["row_index"])  # noqa: E731
    assert sorted(got_changes, key=key) == sorted(want_changes, key=key)
    assert sum(f.num_records for f in by_table[targets.changes.table]) == len(want_changes)
    assert [r["code"] for r in _written(targets.quarantine, by_table[targets.quarantine.table])] == ["UNKNOWN_TABLE_ID"]
    for i, target in targets.typed.items():
        rows = _written(target, [f for f in staged if f.table == target.table])
        want = [r for d in out if d.table == i for r in typed_rows(d, "gold-run").to_pylist()]
        assert sorted(rows, key=key) == sorted(want, key=key)
    assert sum(r["n"] for r in facts) == len(want_changes)
    assert sum(r["accounted"] for r in facts) == len(inputs.rows)
