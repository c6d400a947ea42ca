"""The quality rules, as data: which fact column of which gate must satisfy which expectation.

Each fact frame has one row per file (or one row for the run); a rule names the frame, the
column, the great-expectations expectation and its arguments, and the default action when it
fails (``fail`` stops the run before the stage writes, ``quarantine`` puts a quarantine row
for each failing file and goes on, ``warn`` only records; see :mod:`pipelines.quality.gate`).
``quality.actions`` in the configuration overrides actions, ``quality.disabled`` skips rules.
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


ZERO = {"min_value": 0, "max_value": 0}

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
    ),
)
"""Every rule, in the order gates report them."""

RULE_NAMES = frozenset(rule.name for rule in RULES)
