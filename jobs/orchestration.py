"""What the Airflow DAG ``binlog_lakehouse`` (``jobs/dags/binlog_lakehouse.py``) runs, declared once.

One task per stage (``current`` building only with ``current.enabled``, as ``run`` does), each
running the stage's spark-submit entry point (``jobs/<stage>.py``) with
the DAG run's id (``--run-id``: every row the stage writes records it) and its logical date
(``--logical-date``: the stage's summary records it; left out for a run without one), then
``quality_report``, which prints the quality-gate results of the DAG run from
``binlog_quality.gate_results``. Each task runs after
the one before it. The commands are Jinja templates rendered by Airflow; what they start is set
by the DAG's params (:data:`PARAMS`), whose defaults come from the environment of the process
that parses the DAG.

Exit codes (:mod:`pipelines.exits`): a stage exiting 4 (done, but the input's files carry bad
input) lets the next stages run, and ``quality_report`` then fails with exit code 4 after
printing the gate results, so the DAG run fails once every layer is built; any other non-zero
code fails the stage's task, and the tasks after it do not run.

No Airflow here: the README's table of tasks is checked against this module without it.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from pipelines.exits import Exit

DAG_ID = "binlog_lakehouse"
SCHEDULE = "@hourly"
"""How often a run is started once the DAG is unpaused (a run with nothing new does almost nothing)."""

STAGES = ("bronze", "silver", "gold", "current")
"""The stage tasks in order (``jobs.cli.STAGES``)."""
OPTIONS = {"current": ("--if-enabled", "nothing when the configuration's `current.enabled` is false")}
"""stage -> the option its task's command adds to the run's, and what it does: the current stage
follows ``current.enabled``, as ``binlog-lakehouse run`` does."""
REPORT = "quality_report"

EXIT_LINE = "exit code"
"""What a stage task prints last (and Airflow keeps as its XCom): ``exit code N``."""


@dataclass(frozen=True)
class Param:
    """A DAG param: its default is the environment variable's value, else ``default``."""

    name: str
    env: str
    default: str
    description: str


_PROJECT = Path(__file__).resolve().parent.parent

PARAMS = (
    Param(
        "submit",
        "BINLOG_LAKEHOUSE_SUBMIT",
        "spark-submit",
        "The command that starts a job file, with its options: `spark-submit --master yarn --packages ...` "
        '(see "Running on a cluster"), or a Python interpreter holding the project, which starts a local '
        "JVM as the config says.",
    ),
    Param(
        "jobs",
        "BINLOG_LAKEHOUSE_JOBS",
        str(_PROJECT / "jobs"),
        "The folder holding the job files `bronze.py`, `silver.py`, `gold.py` (default: this installation's).",
    ),
    Param(
        "config",
        "BINLOG_LAKEHOUSE_CONFIG",
        str(_PROJECT / "conf" / "local.yaml"),
        "The YAML configuration every task runs with (default: this installation's `conf/local.yaml`).",
    ),
    Param(
        "cli",
        "BINLOG_LAKEHOUSE_CLI",
        "binlog-lakehouse",
        "The `binlog-lakehouse` command `quality_report` runs.",
    ),
)


def _option(stage: str, part: int = 0, sep: str = " ") -> str:
    """The stage's option (``part`` 0) or what it does (1), after ``sep``; empty for a stage without one."""
    return sep + OPTIONS[stage][part] if stage in OPTIONS else ""


def _stage_command(stage: str) -> str:
    options = _option(stage)
    return (
        f"{{{{ params.submit }}}} {{{{ params.jobs | sh }}}}/{stage}.py --config {{{{ params.config | sh }}}}"
        f"{options} --run-id {{{{ run_id | sh }}}}{{% if logical_date is defined and logical_date %}}"
        " --logical-date {{ logical_date.isoformat() | sh }}"
        f'{{% endif %}}; code=$?; echo "{EXIT_LINE} $code"; [ "$code" -eq {int(Exit.OK)} ] '
        f'|| [ "$code" -eq {int(Exit.BAD_INPUT)} ] || exit "$code"'
    )


_REPORT_COMMAND = (
    "{{ params.cli }} sql --config {{ params.config | sh }} {{ run_id | gate_results_sql | sh }} || exit 1"
    f"{{% if '{EXIT_LINE} {int(Exit.BAD_INPUT)}' in ti.xcom_pull(task_ids={list(STAGES)!r}) %}}"
    f'; echo "bad input: files of the input carry error-severity quarantine rows (exit code {int(Exit.BAD_INPUT)}):'
    f" the stages' summaries name them\" >&2; exit {int(Exit.BAD_INPUT)}{{% endif %}}"
)


@dataclass(frozen=True)
class Task:
    """One task of the DAG: its id, the bash command it runs (a Jinja template) and what it does."""

    task_id: str
    command: str
    does: str


TASKS = (
    *(
        Task(
            stage,
            _stage_command(stage),
            f"`jobs/{stage}.py{_option(stage)}` (the `{stage}` command{_option(stage, 1, '; ')}); "
            "exit code 4 lets the next tasks run",
        )
        for stage in STAGES
    ),
    Task(
        REPORT,
        _REPORT_COMMAND,
        "prints this run's rows of `binlog_quality.gate_results`; fails with exit code 4 when a stage exited 4",
    ),
)
"""The tasks in order: each runs after the one before it."""


def sh(value: object) -> str:
    """A value as one shell word (the ``sh`` filter of the commands)."""
    return shlex.quote(str(value))


def gate_results_sql(run_id: str) -> str:
    """The quality report's query: the gate results of the run ``run_id``, stage by stage.

    ``gate_results_sql("r1")``: ``SELECT gate, `check`, success, action, observed FROM
    binlog_quality.gate_results WHERE run_id = 'r1' ORDER BY`` the gate (bronze, silver, gold),
    then the check.
    """
    literal = "'" + run_id.replace("\\", "\\\\").replace("'", "\\'") + "'"
    order = " ".join(f"WHEN '{stage}' THEN {n}" for n, stage in enumerate(STAGES))
    return (
        "SELECT gate, `check`, success, action, observed FROM binlog_quality.gate_results "
        f"WHERE run_id = {literal} ORDER BY CASE gate {order} END, `check`"
    )


FILTERS = {"sh": sh, "gate_results_sql": gate_results_sql}
"""The Jinja filters the commands use."""


def readme_table() -> str:
    """The README's table of the DAG's tasks (Markdown), in order."""
    rows = [f"| `{task.task_id}` | {task.does} |" for task in TASKS]
    return "\n".join(["| Task | Runs |", "|---|---|", *rows])


def readme_params() -> str:
    """The README's table of the DAG's params (Markdown)."""
    rows = [f"| `{p.name}` | `{p.env}` | {p.description} |" for p in PARAMS]
    return "\n".join(["| Param | Default from | What |", "|---|---|---|", *rows])


__all__ = [
    "DAG_ID",
    "FILTERS",
    "OPTIONS",
    "PARAMS",
    "REPORT",
    "SCHEDULE",
    "STAGES",
    "TASKS",
    "Param",
    "Task",
    "gate_results_sql",
    "readme_params",
    "readme_table",
    "sh",
]
