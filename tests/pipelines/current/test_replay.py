"""The replay of one table's steps (``pipelines.current.replay``): versions opened and closed in order."""

from __future__ import annotations

from typing import Any

from pipelines.current.replay import KeyHistory, Step, Version, replay

COLUMNS = ["id", "name", "blob"]
ID = KeyHistory([((-2, "", -1, -1, -1), ["id"])])
NO_KEY = KeyHistory([])


def at(offset: int, row: int = 0, sequence: int = 1) -> tuple[int, str, int, int, int]:
    return (sequence, f"mysql-bin.{sequence:06d}", offset, -1, row)


def insert(offset: int, **after: Any) -> Step:
    return Step(at(offset), "insert", after=after)


def update(offset: int, before: dict[str, Any], after: dict[str, Any], absent_after: tuple[str, ...] = ()) -> Step:
    return Step(
        at(offset),
        "update",
        before=before,
        after=after,
        absent_before=frozenset(c for c in COLUMNS if c not in before),
        absent_after=frozenset(absent_after) | frozenset(c for c in COLUMNS if c not in after),
    )


def delete(offset: int, **before: Any) -> Step:
    return Step(at(offset), "delete", before=before, absent_before=frozenset(c for c in COLUMNS if c not in before))


def live(versions: list[Version]) -> list[dict[str, Any]]:
    return sorted((v.values for v in versions if v.closed is None), key=lambda row: repr(sorted(row.items())))


def test_steps_apply_in_binlog_order_whatever_order_they_are_given_in() -> None:
    steps = [
        update(30, {"id": 1}, {"name": "b"}),
        insert(10, id=1, name="a", blob=b"x"),
        update(20, {"id": 1}, {"name": "a2"}),
    ]
    versions = replay(steps, COLUMNS, ID)
    assert [v.values["name"] for v in versions] == ["a", "a2", "b"]
    assert [v.closed.position[2] if v.closed else None for v in versions] == [20, 30, None]


def test_a_before_image_holding_only_the_key_finds_its_row_and_absent_after_columns_keep_their_values() -> None:
    versions = replay(
        [insert(10, id=7, name="a", blob=b"big"), update(20, {"id": 7}, {"id": 7, "name": "b"})], COLUMNS, ID
    )
    assert live(versions) == [{"id": 7, "name": "b", "blob": b"big"}]


def test_an_update_of_the_key_moves_the_row_to_its_new_key() -> None:
    versions = replay(
        [insert(10, id=1, name="a", blob=None), update(20, {"id": 1}, {"id": 2}), delete(30, id=1)], COLUMNS, ID
    )
    assert live(versions) == [{"id": 2, "name": "a", "blob": None}]


def test_a_table_without_a_key_is_a_multiset_a_delete_removes_one_of_equal_rows() -> None:
    row = {"id": 1, "name": "same", "blob": None}
    versions = replay([insert(10, **row), insert(20, **row), delete(30, **row)], COLUMNS, NO_KEY)
    assert live(versions) == [row]
    assert [v.closed is None for v in versions] == [False, True]  # the first one opened is the one removed


def test_truncate_drop_and_create_close_every_open_version_with_the_statement() -> None:
    for action in ("truncate", "drop", "create", "drop_database", "rename_from"):
        steps = [insert(10, id=1, name="a", blob=None), insert(11, id=2, name="b", blob=None)]
        steps += [Step(at(20, row=-1), action), insert(30, id=1, name="again", blob=None)]
        versions = replay(steps, COLUMNS, ID)
        assert live(versions) == [{"id": 1, "name": "again", "blob": None}], action
        assert {v.closed.action for v in versions if v.closed} == {action}


def test_an_update_whose_row_is_not_open_opens_its_version_from_both_images() -> None:
    versions = replay([update(10, {"id": 3, "name": "old", "blob": b"b"}, {"id": 3, "name": "new"})], COLUMNS, ID)
    assert live(versions) == [{"id": 3, "name": "new", "blob": b"b"}]


def test_the_key_in_force_follows_the_schema_versions_by_position() -> None:
    keys = KeyHistory([((-2, "", -1, -1, -1), ["id"]), ((2, "mysql-bin.000002", 4, -1, -1), ["name"])])
    assert keys(at(99, sequence=1)) == ("id",)
    assert keys(at(4, sequence=2)) == ("name",)
    assert keys(at(3, sequence=2)) == ("id",)
