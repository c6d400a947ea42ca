"""The README's table of quality checks is the rules: each check with its gate and default action."""

from __future__ import annotations

from pathlib import Path

from pipelines.quality.rules import RULES

README = Path(__file__).resolve().parents[3] / "README.md"


def test_the_readme_lists_every_check_with_its_gate_and_default_action_in_rule_order() -> None:
    block = README.read_text(encoding="utf-8").split("<!-- checks -->")[1].split("<!-- /checks -->")[0]
    rows = [line.split("|")[1:4] for line in block.strip().splitlines()[2:]]
    assert [(gate.strip(), check.strip().strip("`"), action.strip()) for gate, check, action in rows] == [
        (rule.gate, rule.name, rule.action) for rule in RULES
    ]
