"""``python -m conf show [CONFIG]`` prints the effective config; ``python -m conf reference`` the docs."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from conf.loader import ConfigError, load_config
from conf.reference import render_reference


def main(argv: Sequence[str] | None = None) -> int:
    """Print the effective configuration (defaults, file and overrides applied) or the reference."""
    parser = argparse.ArgumentParser(prog="python -m conf", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    show = commands.add_parser("show", help="print the effective configuration as JSON")
    show.add_argument("config", nargs="?", help="YAML file (default: conf/local.yaml)")
    commands.add_parser("reference", help="print the configuration reference as Markdown")
    args = parser.parse_args(argv)
    if args.command == "reference":
        sys.stdout.write(render_reference())
        return 0
    try:
        cfg = load_config(args.config)
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        return 2
    print(json.dumps(cfg.model_dump(mode="json"), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
