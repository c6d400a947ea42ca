"""USER_VAR values decoded by ``binlog_core`` agree with ``mariadb-binlog``'s ``SET @`name`:=...`` lines.

Before a statement that reads a user variable the server logs the variable's value; the dump tool
prints it as the statement that sets it again (``User_var_log_event::print`` in MariaDB's
``sql/log_event_client.cc``)::

    SET @`s`:=_utf8mb4 X'68C3A96C6C6F' COLLATE `utf8mb4_general_ci`/*!*/;
    SET @`d`:=-1234.567/*!*/;
    SET @`n`:=NULL/*!*/;

Every such line, in file order, is compared with the USER_VAR events ``decode_file`` yields: the
name; NULL; integers (unsigned when the event says so) and decimals by their text; doubles by
value (the tool prints them with ``%g``-style rounding); strings by their bytes decoded in the
collation the event names, and by that collation's charset and name. The sources: the small
MariaDB 10.11 file of ``events/data`` (user variables of every type) and every corpus file that
logs a user variable and that the tool reads.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from binlog_core.charsets import codec_for_collation, collation_info
from binlog_core.constants import Flavor
from binlog_core.decoder import decode_file
from binlog_core.errors import BinlogError
from binlog_core.events.control import UserVarEvent, UserVarType
from tests.binlog_core.real_events import MISC
from tests.harness.corpus import CORPUS, corpus_files, corpus_path
from tests.harness.mariadb_binlog import dump_file, require_mariadb_binlog, run_dump

CORPUS_FILES_WITH_USER_VARS = (
    "mariadb-test-data/suite/binlog/std_data/binlog_old_version_4_1.000001",
    "mariadb-test-data/suite/binlog/std_data/ver_5_1-telco.001",
    "mariadb-test-data/suite/binlog/std_data/ver_5_1_17.001",
    "mysql-cdc-rs/5.7/14_user_var/log.bin",
    "mysql-server/suite/binlog/std_data/bug11747887-bin.000003",
    "mysql-server/suite/binlog/std_data/ver_5_1_23.001",
    "mysql-server/suite/binlog/std_data/ver_trunk_row_v2.001",
)
"""Corpus files with a USER_VAR event that the tool reads."""

NOT_REACHED_BY_THE_TOOL = {
    "mysql-server/suite/binlog/std_data/ver_5_1-wl2325_s.001": (
        "the tool stops at offset 411 on a rows event of the 5.2 development tree (type 20), before the USER_VAR at 438"
    ),
}
"""Corpus files whose user variables the tool never prints, and why (with the files above: every
corpus file with a USER_VAR event, asserted below)."""

_SET_RE = re.compile(r"^SET @`((?:[^`]|``)+)`:=(.*)/\*!\*/;$", re.MULTILINE)
_STRING_RE = re.compile(r"^_(\w+) X'([0-9A-F]*)' COLLATE `(\w+)`$")


def logged_user_vars(path: Path) -> list[tuple[str, str]]:
    """(name, printed value) of every ``SET @`name`:=...`` line of the tool's dump of ``path``."""
    dump = dump_file(path, require_mariadb_binlog())
    return [(name.replace("``", "`"), value) for name, value in _SET_RE.findall(dump)]


def decoded_user_vars(path: Path) -> list[UserVarEvent]:
    """The USER_VAR events of ``path``, in file order."""
    found: list[UserVarEvent] = []
    try:
        for item in decode_file(path):
            if isinstance(item.body, UserVarEvent):
                found.append(item.body)
    except BinlogError:
        pass  # a deliberately damaged file: the user variables before the damage are compared
    return found


def disagreement(ours: UserVarEvent, printed: str) -> str | None:
    """How the decoded variable differs from the tool's text (``None`` when they agree)."""
    if ours.is_null or printed == "NULL":
        return None if ours.is_null and printed == "NULL" else "NULL on one side only"
    if ours.value_type == UserVarType.REAL:
        return None if float(printed) == pytest.approx(ours.value, rel=1e-14) else "double differs"
    if ours.value_type in (UserVarType.INT, UserVarType.DECIMAL):
        return None if str(ours.value) == printed else "number differs"
    match = _STRING_RE.match(printed)
    collation = collation_info(ours.collation_id or 0, Flavor.MARIADB)
    if match is None or collation is None:
        return "not a string on both sides"
    charset, hex_bytes, name = match.groups()
    if (charset, name) != (collation.charset, collation.name):
        return f"collation {collation.charset}/{collation.name}"
    raw = bytes.fromhex(hex_bytes)
    codec = codec_for_collation(ours.collation_id)
    text = raw if codec is None or ours.undecodable_text else raw.decode(codec)
    return None if text == ours.value else f"string differs: ours {ours.value!r}, the tool's bytes {raw!r}"


def assert_user_vars_agree(path: Path) -> None:
    ours = decoded_user_vars(path)
    logged = logged_user_vars(path)
    assert ours, f"{path.name} logs no user variable"
    assert [var.name for var in ours] == [name for name, _ in logged]
    problems = [
        f"@{var.name}: {problem} (ours {var.value!r}, mariadb-binlog {printed})"
        for var, (_, printed) in zip(ours, logged, strict=True)
        if (problem := disagreement(var, printed)) is not None
    ]
    assert problems == []


def test_user_variables_of_every_type_agree_with_mariadb_binlog() -> None:
    ours = decoded_user_vars(MISC)
    assert {var.value_type for var in ours} == {*UserVarType, None}  # None: a NULL variable
    assert_user_vars_agree(MISC)


@pytest.mark.corpus
@pytest.mark.parametrize("relative", CORPUS_FILES_WITH_USER_VARS)
def test_user_variables_agree_with_mariadb_binlog_on_corpus_files(relative: str) -> None:
    assert_user_vars_agree(corpus_path(relative))


@pytest.mark.corpus
@pytest.mark.parametrize("relative", sorted(NOT_REACHED_BY_THE_TOOL))
def test_mariadb_binlog_stops_before_the_user_variables_of_the_reviewed_files(relative: str) -> None:
    dump = run_dump(corpus_path(relative), require_mariadb_binlog())
    assert dump.returncode != 0
    assert _SET_RE.search(dump.text) is None, "the tool now prints them: compare this file"


@pytest.mark.corpus
def test_the_corpus_files_reviewed_are_every_one_that_logs_a_user_variable() -> None:
    with_vars = {relative for relative in corpus_files() if decoded_user_vars(CORPUS / relative)}
    assert with_vars == {*CORPUS_FILES_WITH_USER_VARS, *NOT_REACHED_BY_THE_TOOL}
