"""``--engine spark`` over a lakehouse whose tables are not in the catalog: names read from folders."""

from __future__ import annotations

import pytest

from conf import StorageSettings
from pipelines.query.engine import StatementError
from pipelines.query.lake import LakeTables
from pipelines.query.spark import by_path

LAKE = LakeTables("/lake", StorageSettings(root="/lake", silver_database="shared", gold_database="shared").layers())
STORED = {"/lake/gold/changes", "/lake/silver/ddl_events", "/lake/history/app__items"}


def _by_path(statement: str) -> str:
    return by_path(statement, LAKE, STORED.__contains__)


def test_a_lakehouse_name_reads_its_folder_under_the_name_as_alias() -> None:
    assert _by_path("SELECT count(*) FROM binlog_history.app__items WHERE app__items.id = 1") == (
        "SELECT COUNT(*) FROM delta.`/lake/history/app__items` AS app__items WHERE app__items.id = 1"
    )


def test_an_alias_the_statement_gives_is_kept() -> None:
    assert _by_path("SELECT c.op FROM shared.changes c") == "SELECT c.op FROM delta.`/lake/gold/changes` AS c"


def test_a_database_two_layers_share_reads_the_folder_that_holds_the_table() -> None:
    statement = "SELECT * FROM shared.changes UNION ALL SELECT * FROM shared.ddl_events"
    assert _by_path(statement) == (
        "SELECT * FROM delta.`/lake/gold/changes` AS changes UNION ALL "
        "SELECT * FROM delta.`/lake/silver/ddl_events` AS ddl_events"
    )


def test_names_outside_the_lakehouse_and_unparsable_statements_are_left_to_spark() -> None:
    for statement in ("SELECT * FROM other.t", "SELECT 1", "SHOW TABLES IN shared", "SELECT FROM WHERE ("):
        assert _by_path(statement) == statement


@pytest.mark.parametrize(
    ("statement", "message"),
    [
        ("SELECT * FROM shared.nope", "shared.nope: no such table (shared has no tables yet)"),
        ("SELECT * FROM shared._progress", "shared._progress: no such table"),
    ],
)
def test_a_lakehouse_name_with_no_table_behind_it_fails_with_one_line(statement: str, message: str) -> None:
    with pytest.raises(StatementError) as raised:
        _by_path(statement)
    assert str(raised.value) == message
