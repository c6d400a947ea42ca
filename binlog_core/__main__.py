"""``python -m binlog_core FILE...`` runs the ``binlog-dump`` CLI."""

import sys

from binlog_core.cli import main

sys.exit(main())
