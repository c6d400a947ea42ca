"""spark-submit entry point: `spark-submit jobs/current.py --config conf/x.yaml` (the `current` command)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

if __package__ in (None, ""):  # run as a file by spark-submit: make the project importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pyspark.sql import SparkSession

from conf.models import AppConfig
from jobs.cli import main as cli_main


def main(
    argv: Sequence[str] | None = None, *, config: AppConfig | None = None, spark: SparkSession | None = None
) -> int:
    """Run the current command with these arguments (`--config FILE`); ``config``/``spark`` may be injected."""
    args = ["current", *(sys.argv[1:] if argv is None else argv)]
    return cli_main(args, config=config, spark=spark)


if __name__ == "__main__":
    sys.exit(main())
