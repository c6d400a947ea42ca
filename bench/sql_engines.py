"""Which embedded engine answers analysts' Spark SQL as Spark does: the correctness half of the engine choice.

    .venv/bin/python bench/sql_engines.py [--config FILE]

On the sample lakehouse that ``bench/sql_latency.py`` builds (or the one ``--config`` names), every
statement of ``tests/pipelines/query/test_spark_agreement.py`` that does not need the tests' extra
table runs through Spark (the reference) and through each candidate, each given the statement as
an analyst writes it:

* ``duckdb+sqlglot``: the embedded engine of ``binlog-lakehouse sql`` (``pipelines.query``);
* ``duckdb``: DuckDB over the same delta-rs scans, the statement not translated;
* ``datafusion``: the ``datafusion`` package, every table registered through delta-rs' provider;
* ``deltalake-querybuilder``: delta-rs' own DataFusion (``deltalake.QueryBuilder``).

A candidate's answer counts as the same when its rows equal Spark's as Python values (in any
order when the statement has no final ORDER BY). Needs ``pip install datafusion`` for that column.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
Rows = list[tuple[Any, ...]]


def main(argv: Sequence[str] | None = None) -> int:
    """Run every statement through Spark and the candidates; print the tally and the differences."""
    parser = argparse.ArgumentParser(prog="bench/sql_engines.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", type=Path, help="an existing lakehouse's config (default: the bench's sample)")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))

    import duckdb
    import pyarrow as pa
    from deltalake import DeltaTable, QueryBuilder

    from bench.sql_latency import DEFAULT_OUT, build_lake, console_script
    from conf import load_config
    from pipelines.query.engine import EmbeddedEngine, _DeltaScan
    from pipelines.query.lake import LakeTables
    from pipelines.query.spark import arrow_rows, spark_result
    from pipelines.session import build_spark
    from pipelines.storage import Lakehouse, Table
    from pipelines.tables import CATALOGED
    from tests.pipelines.query.test_spark_agreement import ORDERED, UNORDERED

    config = args.config or build_lake(DEFAULT_OUT, console_script(DEFAULT_OUT))
    cfg = load_config(config)
    cfg = cfg.model_copy(update={"spark": cfg.spark.model_copy(update={"catalog": "in-memory", "metastore_dir": None})})
    spark = build_spark(cfg.spark)
    lake = Lakehouse(spark, cfg.storage)
    tables = {
        (lake.database(layer), name): lake.path(Table(layer, name))
        for layer in CATALOGED
        for name in lake.tables(layer)
        if not name.startswith("_")
    }
    for database, name in tables:
        lake.register([Table(next(la for la in CATALOGED if lake.database(la) == database), name)])

    raw_duckdb = duckdb.connect()
    query_builder = QueryBuilder()
    import datafusion
    from datafusion.catalog import Schema

    context = datafusion.SessionContext()
    for database in {database for database, _ in tables}:
        raw_duckdb.execute(f'CREATE SCHEMA "{database}"')
        query_builder.execute(f"CREATE SCHEMA {database}").read_all()
        context.catalog().register_schema(database, Schema.memory_schema())
    for (database, name), path in tables.items():
        snapshot = DeltaTable(path)
        source = f"__{database}__{name}"
        raw_duckdb.register(source, _DeltaScan(snapshot, [field.name for field in snapshot.schema().fields]))
        raw_duckdb.execute(f'CREATE VIEW "{database}"."{name}" AS SELECT * FROM "{source}"')
        query_builder.register(f"{database}.{name}", snapshot)
        context.register_table(f"{database}.{name}", snapshot)
    embedded = EmbeddedEngine(LakeTables(cfg.storage.root, cfg.storage.layers()))

    def ours(statement: str) -> Rows:
        result = embedded.execute(statement)
        assert result is not None
        return result.rows()

    candidates: dict[str, Callable[[str], Rows]] = {
        "duckdb+sqlglot": ours,
        "duckdb": lambda statement: raw_duckdb.sql(statement).fetchall(),
        "datafusion": lambda statement: arrow_rows(context.sql(statement).to_arrow_table()),
        "deltalake-querybuilder": lambda statement: arrow_rows(pa.table(query_builder.execute(statement).read_all())),
    }
    statements = [(name, text, True) for name, text in ORDERED.items() if "typed_probe" not in text]
    statements += [(name, text, False) for name, text in UNORDERED.items() if "typed_probe" not in text]
    tally = {name: {"same": 0, "different": 0, "error": 0} for name in candidates}
    notes: list[str] = []
    for label, statement, ordered in statements:
        expected = spark_result(spark, statement).rows()
        for name, run in candidates.items():
            try:
                actual = run(statement)
            except Exception as exc:
                tally[name]["error"] += 1
                first = next((line for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
                notes.append(f"{name:<24} {label}: error: {first[:110]}")
                continue
            same = actual == expected if ordered else sorted(actual, key=repr) == sorted(expected, key=repr)
            tally[name]["same" if same else "different"] += 1
            if not same:
                notes.append(f"{name:<24} {label}: different rows (first: {actual[:1]!r:.80} vs {expected[:1]!r:.80})")
    spark.stop()
    print(f"{len(statements)} statements of tests/pipelines/query/test_spark_agreement.py, Spark 4.2 as reference\n")
    print(f"{'candidate':<24} {'same':>5} {'different':>10} {'error':>6}")
    for name, counts in tally.items():
        print(f"{name:<24} {counts['same']:>5} {counts['different']:>10} {counts['error']:>6}")
    print("\n" + "\n".join(notes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
