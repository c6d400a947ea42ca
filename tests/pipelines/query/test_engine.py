"""The embedded engine's parts that need no lake: statement splitting, names and columns a statement reads."""

from __future__ import annotations

import sqlglot

from pipelines.query.engine import one_line, referenced_tables, split_statements, used_names


def test_semicolons_separate_statements_outside_quotes_and_comments() -> None:
    text = (
        "SELECT ';' AS a, \"x;y\" AS b, `c;d` FROM t; -- one; two\n"
        "SELECT 'it\\'s; fine' /* a; b */ FROM u;\n"
        "  ;\n"
        "-- only a comment;\n"
    )
    assert split_statements(text) == [
        "SELECT ';' AS a, \"x;y\" AS b, `c;d` FROM t",
        "-- one; two\nSELECT 'it\\'s; fine' /* a; b */ FROM u",
    ]


def test_an_unclosed_quote_keeps_the_rest_as_one_statement() -> None:
    assert split_statements("SELECT 1; SELECT 'a;b") == ["SELECT 1", "SELECT 'a;b"]


def test_the_tables_of_a_statement_are_its_qualified_names_lower_cased() -> None:
    tree = sqlglot.parse_one(
        "WITH recent AS (SELECT * FROM Binlog_Gold.Changes) "
        "SELECT * FROM recent JOIN `binlog_gold`.`shop__orders` o ON TRUE "
        "WHERE o.op IN (SELECT op FROM binlog_gold.changes) AND EXISTS (SELECT 1 FROM delta.`/lake/Gold/T`) "
        "AND x IN (SELECT 1 FROM unqualified)",
        read="spark",
    )
    assert sorted((t.database, t.name) for t in referenced_tables(tree)) == [
        ("binlog_gold", "changes"),
        ("binlog_gold", "shop__orders"),
        ("delta", "/lake/Gold/T"),
    ]


def test_the_columns_a_statement_can_read_are_among_its_identifiers() -> None:
    tree = sqlglot.parse_one(
        "SELECT o.after.total, count(*) FROM binlog_gold.shop__orders o JOIN t USING (File) GROUP BY 1",
        read="spark",
    )
    assert used_names(tree) == {"o", "after", "total", "binlog_gold", "shop__orders", "t", "file"}


def test_a_star_a_natural_join_or_a_pivot_may_read_every_column() -> None:
    pivot = "SELECT a FROM t PIVOT (sum(x) FOR y IN (1, 2))"
    assert used_names(sqlglot.parse_one(pivot, read="spark")) is None
    assert used_names(sqlglot.parse_one("DESCRIBE binlog_gold.changes", read="spark")) is None
    assert used_names(sqlglot.parse_one("SELECT * FROM t", read="spark")) is None
    assert used_names(sqlglot.parse_one("SELECT after.* FROM t", read="spark")) is None
    assert used_names(sqlglot.parse_one("SELECT a FROM t NATURAL JOIN u", read="spark")) is None
    assert used_names(sqlglot.parse_one("SELECT count(*) FROM t", read="spark")) == {"t"}


def test_an_error_prints_as_its_first_line_without_colour_codes() -> None:
    error = OSError("\x1b[31mKernel error\x1b[0m -> Generic S3 error\n   caused by: timeout\n")
    assert one_line(error) == "Kernel error -> Generic S3 error"
    assert one_line(ValueError("\n\n")) == "ValueError"
