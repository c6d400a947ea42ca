"""Run one gate: fact frames -> great-expectations (the gate's suite, a checkpoint) -> results with
the configured action.

What a failed check does depends on its action (the rule's default, or ``quality.actions``):

==========  ===================================================================================
fail        the stage is not written and the run stops (:class:`GateFailed`, exit code 3)
quarantine  every failing file gets a quarantine row (stage = the gate, code ``GATE_<RULE>``,
            severity ``error``, the observed value, the gold table and the first offending
            offsets in the message), written with the stage's own quarantine rows; the run goes
            on and ends with exit code 4
warn        only the ``gate_results`` row records it
==========  ===================================================================================

Checks named in ``quality.disabled`` are not run and leave no ``gate_results`` row.  A run
validates through its :class:`pipelines.quality.gx.QualityProject` (file-backed, with Data Docs);
without one, gates validate in memory.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from datetime import UTC, datetime

import pandas as pd

from conf.models import QualitySettings
from pipelines.quality.gx import OFFSETS, CheckResult, QualityProject
from pipelines.quality.rules import RULES, Action


class GateFailed(RuntimeError):
    """A check whose action is ``fail`` did not pass: the stage is not written."""


@dataclass(frozen=True)
class GateOutcome:
    """What a gate found."""

    gate: str
    results: list[tuple[CheckResult, Action]]

    @property
    def failed(self) -> list[str]:
        """Checks that stop the run."""
        return [r.rule.name for r, action in self.results if not r.success and action == "fail"]

    @property
    def quarantined(self) -> list[str]:
        """Checks that flag bad input (the run goes on)."""
        return [r.rule.name for r, action in self.results if not r.success and action == "quarantine"]

    def quarantine_rows(self, run_id: str) -> list[dict[str, object]]:
        """``quarantine`` rows (bronze ``QUARANTINE`` columns) of every file failing a quarantine check.

        >>> row = outcome.quarantine_rows(run_id)[0]
        >>> row["code"], row["message"]
        ('GATE_CHECKSUMS_VERIFIED',
         'quality gate bronze/checksums_verified failed: checksum_failures = 2 at offsets 4410, 9120; ...')
        """
        rows: list[dict[str, object]] = []
        for result, action in self.results:
            if result.success or action != "quarantine":
                continue
            rule = result.rule
            for failing in result.failing:
                file = failing.get("file")
                if file is None:  # a fact of the whole run: the gate result alone records it
                    continue
                rows.append(
                    {
                        "stage": self.gate,
                        "file": str(file),
                        "file_name": posixpath.basename(str(file).rstrip("/")),
                        "offset": None,
                        "inner_index": None,
                        "event_type_name": None,
                        "code": gate_code(rule.name),
                        "severity": "error",
                        "path": None,
                        "message": failure_message(self.gate, result, failing),
                        "body": None,
                        "run_id": run_id,
                    }
                )
        return rows

    def rows(self, run_id: str) -> list[dict[str, object]]:
        """``gate_results`` rows."""
        now = datetime.now(UTC)
        return [
            {
                "run_id": run_id,
                "gate": self.gate,
                "check": r.rule.name,
                "success": r.success,
                "action": action,
                "observed": r.observed,
                "details": r.details,
                "description": r.rule.description,
                "checked_at": now,
            }
            for r, action in self.results
        ]


def failure_message(gate: str, result: CheckResult, failing: dict[str, object]) -> str:
    """What a failing row of a check tells: the value, the gold table, the first offending offsets.

    >>> failure_message("gold", result, {"file": f, "gold_table": "shop__orders", "null_key_inserts": 2,
    ...                                  "first_offsets": [4410, 5120]})
    'quality gate gold/insert_keys_not_null failed: null_key_inserts = 2 in shop__orders at offsets 4410, 5120; ...'
    """
    rule = result.rule
    text = f"quality gate {gate}/{rule.name} failed: {rule.column} = {failing.get(rule.column)}"
    if failing.get("gold_table"):
        text += f" in {failing['gold_table']}"
    offsets = failing.get(OFFSETS) or []
    if offsets:
        shown = ", ".join(str(o) for o in offsets)  # type: ignore[attr-defined]
        text += f" at offset{'s' if len(offsets) > 1 else ''} {shown}"  # type: ignore[arg-type]
    return f"{text}; {rule.description}"


def gate_code(rule: str) -> str:
    """The quarantine code of a failed check: ``GATE_`` and the rule name in upper case.

    >>> gate_code("bad_files")
    'GATE_BAD_FILES'
    """
    return f"GATE_{rule.upper()}"


_in_memory: QualityProject | None = None


def run_gate(
    gate: str,
    facts: dict[str, pd.DataFrame],
    settings: QualitySettings,
    project: QualityProject | None = None,
    run_id: str = "gate",
) -> GateOutcome:
    """Check ``facts`` (small pandas frames the stage computed) with the rules of ``gate``: the
    checkpoint of ``project`` (None: a project kept in memory), results named ``run_id``."""
    global _in_memory  # noqa: PLW0603 (one in-memory project per process, made when first needed)
    if project is None:
        project = _in_memory = _in_memory or QualityProject(None)
    configured: dict[str, Action] = {str(k): v for k, v in settings.actions.items()}
    rules = [r for r in RULES if r.gate == gate and r.name not in settings.disabled]
    if not rules:
        return GateOutcome(gate, [])
    actions = {r.name: configured.get(r.name, r.action) for r in rules}
    results = project.validate(gate, facts, rules, actions, run_id)
    return GateOutcome(gate, [(r, actions[r.rule.name]) for r in results])


__all__ = ["GateFailed", "GateOutcome", "failure_message", "gate_code", "run_gate"]
