"""The silver stage over real fixture binlogs, run as the pipeline runs it.

One input folder holds three servers (a folder each): the ``sample`` files 1-3 (FULL metadata,
then NO_LOG from file 3; file 2 alters ``shop.customers`` and drops and re-creates
``shop.carts``), the ``metadata_nolog`` files 1-3 (no column names anywhere: names come only from
DDL; file 1 creates every table of file 2) and the ``metadata_minimal`` file 2 (the same table
names as ``metadata_nolog``, none of its DDL).

* ``late``: files arrive out of order -- first sample 1 and 3, nolog 2 and 3, minimal 2; then
  sample 2 and nolog 1, whose DDL changes what earlier-built files' maps are named with;
* ``whole``: a second lakehouse built from the complete folder at once, with the files of the
  ``rows`` partition of ``binlog_events`` deleted before silver runs (silver must not read them).

Silver must come out the same either way.  A fourth, small lakehouse reads two NO_LOG files whose
tables were created before its first file, with a seed snapshot.
"""

from __future__ import annotations

import hashlib
import io
import itertools
import json
import shutil
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from binlog_core.constants import EventType
from binlog_core.decoder import decode_file
from binlog_core.events.query import QueryEvent
from binlog_core.framing import iter_events
from binlog_core.sequence import FileSequence
from conf import AppConfig, InputSettings, StorageSettings
from conf.models import SilverSettings
from pipelines.bronze.discover import sequence_of
from pipelines.bronze.stage import BronzeStage
from pipelines.run import RunReport, run
from pipelines.silver.history import names_at, position_key
from pipelines.silver.stage import NAMELESS_MAPS, SilverOutput, SilverStage
from pipelines.stage import Context
from pipelines.storage import Lakehouse
from pipelines.tables import BINLOG_EVENTS, DDL_EVENTS, SCHEMA_HISTORY, TABLE_ID_LIFECYCLE, TABLE_MAPS, Layer
from tests.fixtures.truth import FIXTURES

SERVERS = {"sample": "sample", "nolog": "metadata_nolog", "minimal": "metadata_minimal"}
"""Input sub-folder -> the fixture variant it holds files of."""
FIRST = {"sample": [1, 3], "nolog": [2, 3], "minimal": [2]}
LATE = {"sample": [2], "nolog": [1]}
SILVER = (TABLE_MAPS, DDL_EVENTS, SCHEMA_HISTORY)


def name(number: int) -> str:
    return f"mysql-bin.{number:06d}"


def place(folder: Path, files: dict[str, list[int]]) -> None:
    for server, numbers in files.items():
        (folder / server).mkdir(parents=True, exist_ok=True)
        for number in numbers:
            shutil.copy(FIXTURES / SERVERS[server] / name(number), folder / server / name(number))


def uri(path: Path) -> str:
    return f"file:{path}"


def config(binlogs: Path, root: Path, seed: str | None = None) -> AppConfig:
    return AppConfig(
        input=InputSettings(path=str(binlogs), recursive=True),
        storage=StorageSettings(root=str(root), register_tables=False),
        silver=SilverSettings(seed_path=seed),
    )


def ok(spark: SparkSession, cfg: AppConfig, stages: tuple[str, ...]) -> RunReport:
    report = run(spark, cfg, stages, err=io.StringIO(), progress_every=None)
    assert report.exit_code == 0, report
    return report


@dataclass
class Late:
    cfg: AppConfig
    lake: Lakehouse
    binlogs: Path
    first: RunReport
    second: SilverOutput
    progress_before: dict[str, dict[str, Any]]
    progress_after: dict[str, dict[str, Any]]
    maps_before: list[Any]


@dataclass
class Whole:
    cfg: AppConfig
    lake: Lakehouse
    binlogs: Path
    deleted: list[Path]
    report: RunReport


@pytest.fixture(scope="module")
def late(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Late]:
    root = tmp_path_factory.mktemp("silver_late")
    binlogs = root / "binlogs"
    place(binlogs, FIRST)
    cfg = config(binlogs, root / "lake")
    lake = Lakehouse(spark, cfg.storage)
    first = ok(spark, cfg, ("bronze", "silver"))
    before = Context(spark, cfg, lake, "before").state.progress(Layer.SILVER)
    maps_before = lake.read(TABLE_MAPS).collect()
    place(binlogs, LATE)
    ctx = Context(spark, cfg, lake, "late-run")
    bronze = BronzeStage()
    framed = bronze.build(ctx)
    bronze.write(ctx, framed)
    framed.release()
    silver = SilverStage()
    second = silver.build(ctx)
    silver.write(ctx, second)
    second.release()
    after = Context(spark, cfg, lake, "after").state.progress(Layer.SILVER)
    yield Late(cfg, lake, binlogs, first, second, before, after, maps_before)


@pytest.fixture(scope="module")
def whole(spark: SparkSession, late: Late, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Whole]:
    cfg = config(late.binlogs, tmp_path_factory.mktemp("silver_whole") / "lake")
    lake = Lakehouse(spark, cfg.storage)
    ok(spark, cfg, ("bronze",))
    rows_partition = Path(lake.path(BINLOG_EVENTS)) / "event_class=rows"
    deleted = sorted(rows_partition.glob("*.parquet"))
    for path in deleted:
        path.unlink()
    report = ok(spark, cfg, ("silver",))
    yield Whole(cfg, lake, late.binlogs, deleted, report)


def rows_of(lake: Lakehouse, spec: Any, drop: tuple[str, ...] = ("run_id",)) -> list[dict[str, Any]]:
    frame = lake.read(spec).drop(*drop)
    return sorted((r.asDict(recursive=True) for r in frame.collect()), key=lambda d: json.dumps(d, default=str))


def sequence_facts(path: Path) -> dict[tuple[int, int | None], tuple[Any, ...]]:
    """Each TABLE_MAP of a file -> (until offset, until inner index, ended by, rows events, shape changed)
    as :class:`binlog_core.sequence.FileSequence` tells them walking the file."""
    sequence = FileSequence()
    maps = {}
    with path.open("rb") as stream:
        for event in iter_events(stream, path.name):
            place = sequence.step(event)
            if event.type_code == EventType.TABLE_MAP and place.map is not None:
                maps[(event.offset, event.inner_index)] = (place.map, place.shape_changed)
    sequence.finish()
    return {
        key: (m.until_offset, m.until_inner_index, m.ended_by, m.rows_events, changed)
        for key, (m, changed) in maps.items()
    }


def truth_columns(variant: str, files: list[str]) -> dict[tuple[str, str], set[tuple[str, ...]]]:
    """(file name, schema.table) -> the column lists the workload recorded for its changes."""
    seen: dict[tuple[str, str], set[tuple[str, ...]]] = defaultdict(set)
    for line in (FIXTURES / variant / "expected.jsonl").read_text().splitlines():
        change = json.loads(line)
        if change["file"] in files:
            seen[(change["file"], f"{change['schema']}.{change['table']}")].add(tuple(change["columns"]))
    return seen


def all_files(binlogs: Path) -> list[Path]:
    return sorted(p for p in binlogs.rglob("mysql-bin.*"))


# -- what silver reads and keeps from bronze -----------------------------------------------------


def test_silver_reads_only_the_table_map_and_query_partitions_of_bronze(whole: Whole) -> None:
    assert len(whole.deleted) > 0
    assert not list((Path(whole.lake.path(BINLOG_EVENTS)) / "event_class=rows").glob("*.parquet"))
    assert whole.report.files_built == {"silver": 7}
    maps = queries = 0
    for path in all_files(whole.binlogs):
        for item in decode_file(path):
            maps += item.event.type_code == EventType.TABLE_MAP
            queries += isinstance(item.body, QueryEvent)
    assert whole.lake.read(TABLE_MAPS).count() == maps
    assert whole.lake.read(DDL_EVENTS).count() == queries


def test_each_maps_in_force_range_and_rows_events_are_what_binlog_core_sequence_says(whole: Whole) -> None:
    stored = whole.lake.read(TABLE_MAPS).collect()
    for path in all_files(whole.binlogs):
        silver = {
            (m.offset, m.inner_index): (
                m.in_force_until,
                m.in_force_until_inner_index,
                m.ended_by,
                m.rows_events,
                m.shape_changed,
            )
            for m in stored
            if m.file == uri(path)
        }
        assert silver == sequence_facts(path), path
    assert all(m.in_force_from == m.offset for m in stored)
    lifecycle = whole.lake.read(TABLE_ID_LIFECYCLE).collect()
    assert sum(r.rows_events for r in lifecycle) == sum(m.rows_events for m in stored) > 0
    assert all(r.rows is None for r in lifecycle)  # gold counts rows


# -- names ------------------------------------------------------------------------------------


def test_maps_without_names_get_the_names_of_the_history_version_in_force_at_their_position(whole: Whole) -> None:
    maps = whole.lake.read(TABLE_MAPS).where("rows_events > 0").collect()
    history = [r.asDict(recursive=True) for r in whole.lake.read(SCHEMA_HISTORY).collect()]
    resolved: dict[tuple[str, str], set[tuple[str, ...]]] = defaultdict(set)
    sources: dict[tuple[str, str], set[str | None]] = defaultdict(set)
    for m in maps:
        server = m.server.rsplit("/", 2)[-2]
        if server == "minimal":
            continue
        resolved[(f"{server}/{m.file_name}", f"{m.schema_name}.{m.table_name}")].add(tuple(m.resolved_column_names))
        sources[(server, m.file_name)].add(m.names_source)
        if m.names_source != "table_map":
            sequence = sequence_of(m.file_name)
            own = [h for h in history if h["server"] == m.server and h["table_name"] == m.table_name]
            columns = names_at(own, m.schema_name, m.table_name, m.file, m.offset, m.inner_index, sequence)
            assert columns is not None
            assert [c["name"] for c in columns] == m.resolved_column_names
            here = position_key(m.file, m.offset, m.inner_index, sequence)
            in_force = [
                h["version"]
                for h in own
                if position_key(h["valid_from_file"], h["valid_from_offset"], h["valid_from_inner_index"],
                                h["valid_from_sequence"]) <= here
                and (h["valid_to_file"] is None or here < position_key(h["valid_to_file"], h["valid_to_offset"],
                                                                        h["valid_to_inner_index"],
                                                                        h["valid_to_sequence"]))
            ]  # fmt: skip
            assert in_force == [m.history_version]
    expected = {
        **{(f"sample/{f}", t): v for (f, t), v in truth_columns("sample", [name(1), name(2), name(3)]).items()},
        **{(f"nolog/{f}", t): v for (f, t), v in truth_columns("metadata_nolog", [name(1), name(2), name(3)]).items()},
    }
    assert resolved == expected
    assert sources == {
        ("sample", name(1)): {"table_map"},
        ("sample", name(2)): {"table_map"},
        ("sample", name(3)): {"ddl"},  # NO_LOG from file 3 on
        ("nolog", name(1)): {"ddl"},
        ("nolog", name(2)): {"ddl"},
        ("nolog", name(3)): {"ddl"},
    }


def test_two_servers_with_the_same_table_names_keep_separate_histories(whole: Whole) -> None:
    minimal = f"{uri(whole.binlogs)}/minimal/mysql-bin"
    nolog = f"{uri(whole.binlogs)}/nolog/mysql-bin"
    maps = whole.lake.read(TABLE_MAPS).where(f"file_name = '{name(2)}' AND rows_events > 0").collect()
    by_server = defaultdict(set)
    for m in maps:
        by_server[m.server].add((m.table_name, m.names_source, m.resolved_column_names is None))
    tables = {"t_int", "t_decimal", "t_bityear", "t_temporal", "t_string", "t_binary", "t_enumset", "t_json_geo",
              "t_inet_uuid"}  # fmt: skip
    # the same tables, the same file name: only the server whose binlogs hold their CREATE names them
    assert by_server[nolog] == {(t, "ddl", False) for t in tables}
    assert by_server[minimal] == {(t, None, True) for t in tables}
    history = whole.lake.read(SCHEMA_HISTORY).collect()
    assert {r.server for r in history} == {nolog, f"{uri(whole.binlogs)}/sample/mysql-bin"}
    assert all(r.valid_from_file is None or r.valid_from_file.startswith(r.server) for r in history)


def test_ddl_events_list_every_query_with_the_objects_its_ddl_touches(whole: Whole) -> None:
    ddl = whole.lake.read(DDL_EVENTS).where("kind = 'DDL'").collect()
    by_statement = {r.statement: r for r in ddl}
    rename = by_statement["RENAME TABLE fixture.t_evolve TO fixture.t_evolved"]
    assert [tuple(o) for o in rename.objects] == [
        ("fixture", "t_evolve", "rename_from"),
        ("fixture", "t_evolved", "rename_to"),
    ]
    assert all(r.ddl_parsed for r in ddl), [(r.statement, r.ddl_error) for r in ddl if not r.ddl_parsed]
    assert whole.report.ddl is not None
    assert (whole.report.ddl.statements, whole.report.ddl.parsed) == (len(ddl), len(ddl))


def test_schema_history_versions_follow_alter_rename_drop_and_recreate(whole: Whole) -> None:
    history = (
        whole.lake.read(SCHEMA_HISTORY)
        .where("table_name like 't_evolve%'")
        .orderBy("valid_from_offset", "table_name", "version")
        .collect()
    )
    got = [
        (r.table_name, r.version, r.source, None if r.columns is None else [(c.name, c.type) for c in r.columns])
        for r in history
    ]
    z, i = ("z", "tinyint"), ("id", "int")
    assert got == [
        ("t_evolve", 1, "ddl", [i, ("a", "int"), ("b", "varchar(10)")]),
        ("t_evolve", 2, "ddl", [i, ("a", "int"), ("b", "varchar(10)"), ("c", "date")]),
        ("t_evolve", 3, "ddl", [z, i, ("a", "int"), ("b", "varchar(10)"), ("c", "date")]),
        ("t_evolve", 4, "ddl", [z, i, ("a", "int"), ("m", "varchar(5)"), ("b", "varchar(10)"), ("c", "date")]),
        ("t_evolve", 5, "ddl", [z, i, ("a", "int"), ("m", "varchar(5)"), ("b", "varchar(10)")]),
        ("t_evolve", 6, "ddl", [z, i, ("a", "bigint"), ("m", "varchar(5)"), ("b", "varchar(10)")]),
        ("t_evolve", 7, "ddl", [z, i, ("a", "bigint"), ("m", "varchar(5)"), ("b", "varchar(50)")]),
        ("t_evolve", 8, "ddl", [z, i, ("a", "bigint"), ("m2", "varchar(8)"), ("b", "varchar(50)")]),
        ("t_evolve", 9, "ddl", [z, i, ("a", "bigint"), ("m3", "varchar(8)"), ("b", "varchar(50)")]),
        ("t_evolve", 10, "ddl", None),  # renamed away
        ("t_evolved", 1, "ddl", [z, i, ("a", "bigint"), ("m3", "varchar(8)"), ("b", "varchar(50)")]),
        ("t_evolved", 2, "ddl", None),  # dropped
        ("t_evolved", 3, "ddl", [("k", "varchar(20)"), ("val", "json"), ("n", "decimal(8,2)"), ("at", "datetime(3)")]),
    ]
    assert {(r.valid_from_sequence, r.valid_from_file.rsplit("/", 2)[-2]) for r in history} == {(3, "nolog")}
    # each version ends where the next one of its table starts; the last is still in force
    for row, after in itertools.pairwise(history):
        if row.table_name == after.table_name:
            assert (row.valid_to_sequence, row.valid_to_file, row.valid_to_offset) == (
                after.valid_from_sequence,
                after.valid_from_file,
                after.valid_from_offset,
            )
    assert (history[-1].valid_to_file, history[-1].valid_to_offset) == (None, None)
    assert all(r.statement for r in history)


# -- convergence ------------------------------------------------------------------------------


@pytest.mark.parametrize("spec", SILVER, ids=[s.name for s in SILVER])
def test_files_arriving_late_leave_silver_as_if_all_had_come_at_once(late: Late, whole: Whole, spec: Any) -> None:
    assert rows_of(late.lake, spec) == rows_of(whole.lake, spec)


def test_files_whose_names_a_late_file_changes_are_rebuilt_and_recorded_in_progress(late: Late) -> None:
    binlogs = uri(late.binlogs)
    added = [f"{binlogs}/nolog/{name(1)}", f"{binlogs}/sample/{name(2)}"]
    # sample 3 (NO_LOG) names carts and customers from file 2's DDL; nolog 2's tables come from file 1,
    # and nolog 3's text columns take the character set of the database file 1 creates
    rebuilt = [f"{binlogs}/nolog/{name(2)}", f"{binlogs}/nolog/{name(3)}", f"{binlogs}/sample/{name(3)}"]
    assert late.first.files_built == {"bronze": 5, "silver": 5}
    assert late.second.files == added
    assert late.second.rebuilt == rebuilt
    assert late.second.counts["rebuilt"] == 3
    changed = sorted(f for f, row in late.progress_after.items() if row != late.progress_before.get(f))
    assert changed == sorted(added + rebuilt)
    assert {late.progress_after[f]["run_id"] for f in changed} == {"late-run"}
    # a rebuilt file is rebuilt from the same bronze rows: what it was built from does not change
    assert all(late.progress_after[f]["built_from"] == late.progress_before[f]["built_from"] for f in rebuilt)


def test_progress_counts_each_files_maps_without_names_and_only_such_files_are_resolved_again(late: Late) -> None:
    nameless: dict[str, int] = defaultdict(int)
    for row in late.lake.read(TABLE_MAPS).where("column_names IS NULL").select("file").collect():
        nameless[row.file] += 1
    files = [f for f in late.progress_after if f.startswith("file:")]
    counted = {f: late.progress_after[f]["counts"][NAMELESS_MAPS] for f in files}

    assert counted == {f: nameless[f] for f in files}
    assert {f for f, n in counted.items() if n == 0} == {f"{uri(late.binlogs)}/sample/{name(n)}" for n in (1, 2)}
    assert late.second.rebuilt and all(counted[f] for f in late.second.rebuilt)


def test_a_map_of_a_rebuilt_file_takes_the_charset_of_a_database_created_in_a_late_file(late: Late) -> None:
    file = f"{uri(late.binlogs)}/nolog/{name(3)}"

    def charsets(maps: list[Any]) -> set[str | None]:
        return {
            c.charset
            for m in maps
            if m.file == file and m.table_name == "t_evolve"
            for c in m.resolved_columns
            if c.name == "b"
        }

    # CREATE DATABASE fixture CHARACTER SET utf8mb4 (file 1); CREATE TABLE fixture.t_evolve (.., b VARCHAR(10))
    # (file 3) and, later in file 3, ALTER TABLE fixture.t_evolve MODIFY b VARCHAR(50) CHARACTER SET utf8mb4
    assert charsets(late.maps_before) == {None, "utf8mb4"}
    assert charsets(late.lake.read(TABLE_MAPS).collect()) == {"utf8mb4"}


def test_a_map_of_a_rebuilt_file_gets_the_names_the_late_ddl_gives(late: Late) -> None:
    carts = (
        late.lake.read(TABLE_MAPS)
        .where(f"file = '{uri(late.binlogs)}/sample/{name(3)}' AND table_name = 'carts'")
        .collect()
    )
    assert {(tuple(m.resolved_column_names), m.names_source, m.run_id) for m in carts} == {
        (("id", "customer_id", "product_id", "qty", "added_at"), "ddl", "late-run")
    }


def test_a_second_silver_run_has_nothing_to_do(spark: SparkSession, whole: Whole) -> None:
    before = rows_of(whole.lake, TABLE_MAPS, ())
    again = ok(spark, whole.cfg, ("silver",))
    assert (again.files_built, again.rebuilt) == ({"silver": 0}, 0)
    assert rows_of(whole.lake, TABLE_MAPS, ()) == before


# -- seed snapshot and plan keys ----------------------------------------------------------------


@dataclass
class Seeded:
    binlogs: Path
    lake: Lakehouse
    seed: str
    before: list[Any]
    """``table_maps`` before the seed was configured."""
    report: RunReport
    """The silver run after the seed was configured."""
    progress: dict[str, dict[str, Any]]
    """Silver progress rows after it."""


@pytest.fixture(scope="module")
def seeded(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seeded]:
    """NO_LOG files 2 and 4 built first without a seed, then with one (their tables come from file 1)."""
    root = tmp_path_factory.mktemp("silver_seed")
    binlogs = root / "binlogs"
    binlogs.mkdir()
    variant = FIXTURES / "metadata_nolog"
    for number in (2, 4):  # their tables were created in file 1, which is not given
        shutil.copy(variant / name(number), binlogs)
    creates = [
        str(item.body.statement)
        for item in decode_file(variant / name(1))
        if isinstance(item.body, QueryEvent) and str(item.body.statement).startswith("CREATE TABLE")
    ]
    seed = root / "seed.sql"
    seed.write_text("USE fixture;\n" + ";\n".join(s.replace("fixture.", "") for s in creates) + ";\n")
    ok(spark, config(binlogs, root / "lake"), ("bronze", "silver"))
    lake = Lakehouse(spark, config(binlogs, root / "lake").storage)
    before = lake.read(TABLE_MAPS).collect()
    cfg = config(binlogs, root / "lake", seed.as_uri())  # a URI: read through Spark, as an s3a:// seed would be
    report = ok(spark, cfg, ("silver",))
    progress = Context(spark, cfg, lake, "after").state.progress(Layer.SILVER)
    yield Seeded(binlogs, lake, seed.as_uri(), before, report, progress)


def test_a_seed_configured_later_renames_the_files_built_before_it(seeded: Seeded) -> None:
    assert {(m.schema_name, m.names_source) for m in seeded.before if m.rows_events} == {
        ("fixture", None),
        ("fixture_extra", "ddl"),
    }
    assert (seeded.report.files_built, seeded.report.rebuilt) == ({"silver": 0}, 2)
    progress = seeded.progress
    digest = hashlib.sha256(Path(seeded.seed.removeprefix("file://")).read_bytes()).hexdigest()
    assert progress[f"seed:{seeded.seed}"]["built_from"] == digest
    assert {progress[f"{uri(seeded.binlogs)}/{name(n)}"]["run_id"] for n in (2, 4)} == {seeded.report.run_id}


def test_a_seed_snapshot_names_tables_created_before_the_first_file(seeded: Seeded) -> None:
    maps = seeded.lake.read(TABLE_MAPS).where("rows_events > 0").collect()
    sources = {(m.file_name, m.schema_name, m.table_name): m.names_source for m in maps}
    seeded_tables = ["t_binary", "t_counter", "t_int", "t_myisam", "t_nopk", "t_replace", "t_string"]
    assert sources == {
        **{(name(2), "fixture", t): "seed" for t in ("t_int", "t_decimal", "t_bityear", "t_temporal", "t_string",
                                                        "t_binary", "t_enumset", "t_json_geo", "t_inet_uuid")},
        **{(name(4), "fixture", t): "seed" for t in seeded_tables},
        (name(4), "fixture_extra", "t_int"): "ddl",  # created in file 4
    }  # fmt: skip
    expected = truth_columns("metadata_nolog", [name(2), name(4)])
    resolved: dict[tuple[str, str], set[tuple[str, ...]]] = defaultdict(set)
    for m in maps:
        resolved[(m.file_name, f"{m.schema_name}.{m.table_name}")].add(tuple(m.resolved_column_names))
    assert resolved == expected
    seed_rows = seeded.lake.read(SCHEMA_HISTORY).where("source = 'seed'").collect()
    assert {r.table_name for r in seed_rows} == {
        "t_int", "t_decimal", "t_bityear", "t_temporal", "t_string", "t_binary", "t_enumset",
        "t_json_geo", "t_inet_uuid", "t_nopk", "t_myisam", "t_replace", "t_counter", "t_bulk", "t_big",
    }  # fmt: skip
    assert {(r.version, r.valid_from_sequence, r.valid_from_file, r.schema_name) for r in seed_rows} == {
        (1, None, None, "fixture")
    }


def test_maps_of_one_shape_in_different_files_share_a_plan_key(seeded: Seeded) -> None:
    maps = seeded.lake.read(TABLE_MAPS).where("schema_name = 'fixture'").collect()
    plans: dict[str, set[str]] = defaultdict(set)
    files: dict[str, set[str]] = defaultdict(set)
    ids: dict[str, set[int]] = defaultdict(set)
    for m in maps:
        plans[m.table_name].add(m.plan_key)
        files[m.table_name].add(m.file_name)
        ids[m.table_name].add(m.table_id)
    both = sorted(t for t, f in files.items() if f == {name(2), name(4)})
    assert both == ["t_binary", "t_int", "t_string"]
    assert all(len(ids[t]) > 1 for t in both)  # other table ids, in other files
    assert {t: len(plans[t]) for t in both} == {t: 1 for t in both}
    assert len({next(iter(plans[t])) for t in both}) == 3


def test_maps_of_one_shape_share_a_plan_key_across_the_first_file_after_a_server_start(whole: Whole) -> None:
    orders = (
        whole.lake.read(TABLE_MAPS)
        .where(f"server = '{uri(whole.binlogs)}/sample/mysql-bin' AND table_name = 'orders'")
        .where(f"file_name IN ('{name(1)}', '{name(2)}')")
        .collect()
    )
    assert {m.file_name for m in orders} == {name(1), name(2)}
    assert {tuple(m.resolved_column_names) for m in orders} == {
        ("id", "customer_id", "status", "total", "ordered_at", "note")
    }
    assert len({m.plan_key for m in orders}) == 1
