"""The Airflow DAG ``binlog_lakehouse``: bronze, silver, gold, then the quality report.

Its tasks, commands and params are declared in :mod:`jobs.orchestration`; this file only builds
them into an Airflow DAG (Airflow 3, the standard provider's ``BashOperator``). Point Airflow's
``dags_folder`` at this folder, with the project importable by Airflow's Python
(``pip install 'binlog-lakehouse[airflow]'``, or ``PYTHONPATH`` naming the project root).

At most one run at a time (``max_active_runs=1``): the lakehouse admits one writer, and a second
one would exit 5.
"""

from __future__ import annotations

import os

import pendulum
from airflow.providers.standard.operators.bash import BashOperator
from airflow.sdk import DAG, Param

from jobs.orchestration import DAG_ID, FILTERS, PARAMS, SCHEDULE, TASKS

with DAG(
    DAG_ID,
    description="MySQL/MariaDB binlogs to Delta tables: bronze, silver, gold, quality report",
    schedule=SCHEDULE,
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    params={p.name: Param(os.environ.get(p.env, p.default), type="string", description=p.description) for p in PARAMS},
    user_defined_filters=FILTERS,
    tags=["binlog-lakehouse"],
    doc_md=__doc__,
) as dag:
    previous = None
    for task in TASKS:
        operator = BashOperator(task_id=task.task_id, bash_command=task.command, doc_md=task.does)
        if previous is not None:
            previous >> operator
        previous = operator
