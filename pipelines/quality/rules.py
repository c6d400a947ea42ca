"""The quality rules, as data: which fact column of which gate must satisfy which expectation.

Each fact frame has one row per file (``files``), per file and gold table (``tables``) or one
row for the run (``run``); a rule names the frame, the column, the great-expectations
expectation and its arguments, the default action when it fails (``fail`` stops the run before
the stage writes, ``quarantine`` puts a quarantine row for each failing file and goes on,
``warn`` only records; see :mod:`pipelines.quality.gate`), and the column of the same frame
listing where it failed: the first :data:`FIRST_OFFSETS` offending offsets of the file (for a
fact of the run, positions ``file_name@offset``).  ``quality.actions`` in the configuration
overrides actions, ``quality.disabled`` skips rules.

The stages compute the facts from what they already hold (:mod:`pipelines.stage`); the rules of
a gate are one great-expectations Expectation Suite (:mod:`pipelines.quality.gx`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Action = Literal["fail", "quarantine", "warn"]


@dataclass(frozen=True)
class Rule:
    """One check: ``expectation(column=..., **kwargs)`` over the rows of fact frame ``facts``."""

    name: str
    gate: Literal["bronze", "silver", "gold"]
    facts: str
    column: str
    expectation: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    action: Action = "fail"
    description: str = ""
    at: str | None = None
    """The fact column listing where the check fails (a short list of offsets), when the stage knows."""


ZERO = {"min_value": 0, "max_value": 0}

FIRST_OFFSETS = 5
"""How many offending offsets a fact lists per file (the first ones, in file order)."""

KEYS = ("file", "gold_table")
"""The fact columns that name what a fact row is about (a run's facts have neither)."""

RULES: tuple[Rule, ...] = (
    Rule(
        "offset_contiguity",
        "bronze",
        "files",
        "offset_gaps",
        "ExpectColumnValuesToBeBetween",
        ZERO,
        "fail",
        "Each event of a file starts where the previous one ends (offset + event_size = next offset).",
        at="offset_gaps_at",
    ),
    Rule(
        "file_fully_framed",
        "bronze",
        "files",
        "unexplained_tail",
        "ExpectColumnValuesToBeBetween",
        ZERO,
        "fail",
        "The last event ends at the file length, or the file is marked truncated/corrupt/encrypted.",
        at="unexplained_tail_at",
    ),
    Rule(
        "checksums_verified",
        "bronze",
        "files",
        "checksum_failures",
        "ExpectColumnValuesToBeBetween",
        ZERO,
        "quarantine",
        "No event fails its CRC32 (failures are kept, flagged and quarantined).",
        at="checksum_failures_at",
    ),
    Rule(
        "bad_files",
        "bronze",
        "files",
        "unreadable",
        "ExpectColumnValuesToBeBetween",
        ZERO,
        "quarantine",
        "Every file is a readable binlog: not corrupt, encrypted or foreign. A file ending inside an "
        "event (the active binlog) is not bad input: its tail waits for the next run.",
        at="unreadable_at",
    ),
    Rule(
        "known_event_types",
        "bronze",
        "files",
        "unknown_events",
        "ExpectColumnValuesToBeBetween",
        ZERO,
        "warn",
        "No event has a type code the decoder does not know (they are kept with their raw bytes).",
        at="unknown_events_at",
    ),
    Rule(
        "rows_events_have_a_map",
        "silver",
        "files",
        "unmapped_rows_events",
        "ExpectColumnValuesToBeBetween",
        ZERO,
        "quarantine",
        "Every rows event has a TABLE_MAP in force in its file.",
        at="unmapped_rows_events_at",
    ),
    Rule(
        "table_id_one_table",
        "silver",
        "files",
        "ids_reused_for_other_table",
        "ExpectColumnValuesToBeBetween",
        ZERO,
        "warn",
        "A table id names one table per file (reuse is handled; this reports it).",
        at="ids_reused_for_other_table_at",
    ),
    Rule(
        "ddl_parse_coverage",
        "silver",
        "run",
        "ddl_parsed_share",
        "ExpectColumnValuesToBeBetween",
        {"min_value": 0.9, "max_value": 1.0},
        "warn",
        "Share of DDL statements the replay understood.",
        at="ddl_parsed_share_at",
    ),
    Rule(
        "rows_reconcile",
        "gold",
        "files",
        "unreconciled_rows_events",
        "ExpectColumnValuesToBeBetween",
        ZERO,
        "fail",
        "Every rows event of bronze is decoded into changes or quarantined: none lost.",
        at="unreconciled_rows_events_at",
    ),
    Rule(
        "op_matches_images",
        "gold",
        "files",
        "op_image_mismatches",
        "ExpectColumnValuesToBeBetween",
        ZERO,
        "fail",
        "insert has only an after image, delete only a before image, update both.",
        at="op_image_mismatches_at",
    ),
    Rule(
        "no_unknown_table",
        "gold",
        "files",
        "unknown_table_events",
        "ExpectColumnValuesToBeBetween",
        ZERO,
        "quarantine",
        "No rows event is lost to a table id without a TABLE_MAP.",
        at="unknown_table_events_at",
    ),
    Rule(
        "commit_not_before_event",
        "gold",
        "files",
        "commits_before_event",
        "ExpectColumnValuesToBeBetween",
        ZERO,
        "warn",
        "No rows event's transaction commits before the event's own time (the commit: MySQL's "
        "immediate_commit_timestamp, else the time of the event ending the transaction); one that "
        "does tells of a server clock that went back.",
        at="commits_before_event_at",
    ),
    Rule(
        "insert_keys_not_null",
        "gold",
        "tables",
        "null_key_inserts",
        "ExpectColumnValuesToBeBetween",
        ZERO,
        "quarantine",
        "Per gold table: no insert leaves a primary-key column NULL in its after image (the key the "
        "TABLE_MAP carries with binlog_row_metadata=FULL; tables whose maps carry none are not checked).",
        at="null_key_inserts_at",
    ),
)
"""Every rule, in the order gates report them."""

RULE_NAMES = frozenset(rule.name for rule in RULES)
