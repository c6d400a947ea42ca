"""Exit codes of ``binlog-lakehouse`` and the jobs, declared once (the README's table is checked against it).

No Spark here: the ``sql`` command imports it too.
"""

from __future__ import annotations

from enum import IntEnum


class Exit(IntEnum):
    """What a run's exit code tells an orchestrator."""

    OK = 0
    ERROR = 1
    USAGE = 2
    GATE_FAILED = 3
    BAD_INPUT = 4
    LOCKED = 5
    UPSTREAM_MISSING = 6
    INTERRUPTED = 130
    TERMINATED = 143


MEANINGS: dict[Exit, str] = {
    Exit.OK: "done, nothing wrong (warnings, such as the truncated tail of an active binlog, are recorded)",
    Exit.ERROR: "unexpected error (a traceback follows)",
    Exit.USAGE: "bad configuration, usage or environment, found before any work: one line names the setting",
    Exit.GATE_FAILED: "a quality gate with action fail failed: that stage was not written",
    Exit.BAD_INPUT: "done, but files of the input carry error-severity quarantine rows, whichever run wrote "
    "them (the summary lists them)",
    Exit.LOCKED: "another run holds the lakehouse (one line names it); nothing was done",
    Exit.UPSTREAM_MISSING: "a stage run alone found files its upstream stage has not built: run that first",
    Exit.INTERRUPTED: "interrupted (SIGINT) between or during steps: re-run to complete",
    Exit.TERMINATED: "terminated (SIGTERM) between or during steps: re-run to complete",
}
"""One line per exit code, as the README's exit-code table says it."""

SHORT: dict[Exit, str] = {
    Exit.OK: "done",
    Exit.ERROR: "error",
    Exit.USAGE: "bad configuration or usage",
    Exit.GATE_FAILED: "a quality gate failed",
    Exit.BAD_INPUT: "done, bad input quarantined",
    Exit.LOCKED: "the lakehouse is locked by another run",
    Exit.UPSTREAM_MISSING: "upstream stage has not built the files",
    Exit.INTERRUPTED: "interrupted",
    Exit.TERMINATED: "terminated",
}
"""What the summary's first line says of each code."""


def readme_table() -> str:
    """The README's exit-code table (Markdown)."""
    return "\n".join(["| Code | Meaning |", "|---|---|", *(f"| `{int(code)}` | {MEANINGS[code]} |" for code in Exit)])


__all__ = ["MEANINGS", "SHORT", "Exit", "readme_table"]
