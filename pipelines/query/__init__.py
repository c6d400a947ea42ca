"""``binlog-lakehouse sql`` without Spark: analysts' Spark SQL over the lakehouse's Delta tables, in-process.

A table is named as in the Spark catalog (``binlog_gold.shop__orders``, backquoted or not) and is
read by path, ``<storage.root>/<layer>/<table>``, as a Delta snapshot: no metastore, no lock, so
reads never wait for a run and a run never waits for reads. Modules:

* :mod:`pipelines.query.lake`: names to paths; S3A settings to delta-rs storage options.
* :mod:`pipelines.query.engine`: the embedded engine (sqlglot reads Spark SQL and writes DuckDB's
  dialect; DuckDB scans delta-rs' Arrow streams of the snapshots).
* :mod:`pipelines.query.output`: the aligned table, TSV, CSV and JSON lines.
* :mod:`pipelines.query.spark`: the same statements through Spark (``--engine spark``); the only
  module here that imports pyspark, and only that command imports it.

Why DuckDB over delta-rs, with sqlglot translating
--------------------------------------------------

Measured on the sample lakehouse (bundled binlogs, 15 tables), 2 CPUs, Python 3.11, duckdb 2.0.1,
deltalake 1.6.6, datafusion 55.0.0, sqlglot 30.30. Latency: ``bench/sql_latency.py --candidates``,
each command a fresh process answering ``SELECT count(*) FROM binlog_gold.changes``, median of 5
interleaved runs on a quiet machine, in seconds (the candidates are the least code that answers
through each engine: no config, no translation)::

    python -c "import duckdb"                          0.095   (floor)
    python -c "import deltalake"                       0.053
    python -c "import datafusion"                      0.405   (imports pandas)
    DuckDB over deltalake's pyarrow dataset            0.573   (pyarrow.dataset imports pandas)
    datafusion package + delta-rs table provider       0.453
    delta-rs' own DataFusion (deltalake.QueryBuilder)  0.061
    binlog-lakehouse sql (the whole command)           0.297   (3.3x the floor; 7 runs, floor 0.090)
    binlog-lakehouse sql --engine spark                30.9

Correctness: ``bench/sql_engines.py``, the 19 statements of the Spark-agreement tests that the
sample lake holds, written as an analyst writes Spark SQL, compared with Spark's rows::

    DuckDB + sqlglot (this package)   19 same
    DataFusion (either build)         15 same, 4 errors: "delete" is a column to it, not a string;
                                      offset is a keyword; no get_json_object, no size
    DuckDB, untranslated              12 same, 7 errors (offset is reserved, "..." strings, ...)

DataFusion inside delta-rs is the fastest to start, but it reads another dialect than the one
the tables are documented in, and has no JSON functions for ``binlog_gold.changes``; no sqlglot
dialect writes DataFusion's SQL. DuckDB with sqlglot's Spark-to-DuckDB translation answered every
statement as Spark does, in a third of a second from a cold start. The data reaches DuckDB as
Arrow streams from delta-rs' own scan (``DeltaTable.scan``: it applies the Delta protocol, reader
3 / writer 7 with ``timestampNtz`` included, partitions and added struct fields), for only the
columns a statement names; ``to_pyarrow_dataset`` would have cost the 0.25 s import of
``pyarrow.dataset`` and pandas. DuckDB's own delta extension is not used: it downloads itself
at run time.

Where the time goes now, in 0.26 s against the floor's 0.11 s (2.4x; ``bench/README.md``): importing
DuckDB 0.06 s, sqlglot with its Spark and DuckDB dialects 0.07 s, delta-rs 0.015 s, the query
0.05 s (DuckDB's connection 0.02 s of it). The configuration costs 0.003 s once a file has been
validated: the command takes its query settings from the cache of validated files
(:mod:`conf.query`), and validates the file in full (pydantic, YAML: about 0.07 s more) only when
it, the ``conf`` package or the validating libraries have changed. The process ends with
``os._exit`` once its output is flushed (``jobs.cli.console``), which saves the ~0.06 s of tearing
DuckDB and delta-rs down.

``SHOW DATABASES`` and ``SHOW TABLES [IN db]`` are answered from the lakehouse's folders (local
roots); ``DESCRIBE db.table`` is DuckDB's (column names and DuckDB types). A statement sqlglot
cannot write for DuckDB fails with one line: ``--engine spark`` runs it.
"""
