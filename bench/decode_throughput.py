"""Decode throughput on one binlog file, side by side with the tools people use today.

::

    .venv/bin/python bench/decode_throughput.py [--binlog .cache/bench/oltp/mysql-bin.000001]
        [--repeats 3] [--pmr-repeats 1] [--skip-pmr] [--prefix 0.25] [--cpu N]

Every measurement runs in a fresh process pinned to one CPU (``--cpu``, default the last one this
process may use), and the contenders run interleaved, round after round, so that load from other
processes on the machine spreads over all of them; the report gives the median of each.

* ``walk``: :func:`bench.common.count_events`, hopping from header to header (the pure-Python floor);
* ``framing``: ``binlog_core.framing.open_events``: every event framed, CRC32 verified, bodies cut;
* ``ours``: ``binlog_core.decoder.decode_file``, touching every value of every row change;
* ``mariadb-binlog``: ``mariadb-binlog --base64-output=decode-rows -vv FILE > /dev/null``;
* ``pmr``: python-mysql-replication streaming the same file from a private MariaDB server
  (``tests.harness.mariadb.MariaDBServer``, the file linked into its binlog directory and index)
  with ``BinLogStreamReader``, touching every value of every row change. The server runs on any
  CPU; the reader is pinned like the others.
* ``ours``/``ours-prefix`` peak RSS: the decoder on the whole file and on its first ``--prefix``
  (cut after a transaction): equal peaks show that memory does not grow with the file.

Rows per second for the tools that do not count rows (``walk``, ``framing``, ``mariadb-binlog``)
use the row changes our decoder found; ``pmr`` counts its own, and the script checks they agree.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as ``python bench/decode_throughput.py``
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import ROOT, count_events, cut_at_transaction, mib, split_binlog_name

DEFAULT_BINLOG = ROOT / ".cache" / "bench" / "oltp" / "mysql-bin.000001"
PMR_SERVER_ID = 4242
"""The replica server id python-mysql-replication registers with."""

Result = dict[str, Any]


# ------------------------------------------------------------------------------ measured work


def _walk(path: str) -> Result:
    return {"events": count_events(path)}


def _framing(path: str) -> Result:
    from binlog_core.framing import open_events

    events = 0
    for _event in open_events(path):
        events += 1
    return {"events": events}


def _ours(path: str) -> Result:
    from binlog_core.decoder import decode_file

    events = rows = values = problems = 0
    for item in decode_file(path):
        events += 1
        if item.problems:
            problems += len(item.problems)
        for change in item.rows:
            rows += 1
            before, after = change.before, change.after
            if before is not None:
                for _value in before:
                    values += 1
            if after is not None:
                for _value in after:
                    values += 1
    return {"events": events, "rows": rows, "values": values, "problems": problems}


def _pmr(path: str, port: int, log_file: str) -> Result:
    from pymysqlreplication import BinLogStreamReader
    from pymysqlreplication.event import RotateEvent
    from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

    settings = {"host": "127.0.0.1", "port": port, "user": "root", "passwd": ""}
    stream = BinLogStreamReader(
        connection_settings=settings,
        server_id=PMR_SERVER_ID,
        log_file=log_file,
        log_pos=4,
        resume_stream=True,
        blocking=False,
        only_events=[WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent, RotateEvent],
    )
    events = rows = values = 0
    try:
        for event in stream:
            if isinstance(event, RotateEvent):
                if event.next_binlog != log_file:
                    break  # the server's own next file: the bench file has been read
                continue
            events += 1
            if isinstance(event, UpdateRowsEvent):
                for row in event.rows:
                    rows += 1
                    for _value in row["before_values"].values():
                        values += 1
                    for _value in row["after_values"].values():
                        values += 1
            else:
                for row in event.rows:
                    rows += 1
                    for _value in row["values"].values():
                        values += 1
    finally:
        stream.close()
    return {"rows_events": events, "rows": rows, "values": values}


def child_main(kind: str, path: str, port: int, log_file: str, cpu: int) -> int:
    """Run one measurement in this process and print it as JSON (wall and CPU seconds, peak RSS)."""
    os.sched_setaffinity(0, {cpu})
    work: dict[str, Callable[[], Result]] = {
        "walk": lambda: _walk(path),
        "framing": lambda: _framing(path),
        "ours": lambda: _ours(path),
        "pmr": lambda: _pmr(path, port, log_file),
    }
    cpu0, wall0 = time.process_time(), time.perf_counter()
    result = work[kind]()
    result["seconds"] = time.perf_counter() - wall0
    result["cpu_seconds"] = time.process_time() - cpu0
    result["max_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(result))
    return 0


# ------------------------------------------------------------------------------ orchestration


def run_child(kind: str, path: Path, cpu: int, port: int = 0, log_file: str = "") -> Result:
    """Measure ``kind`` (walk, framing, ours, pmr) on ``path`` in a fresh process pinned to ``cpu``."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", kind, "--binlog", str(path), "--cpu", str(cpu)]
    if port:
        cmd += ["--port", str(port), "--log-file", log_file]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"{kind} failed:\n{done.stderr[-4000:]}")
    result: Result = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _run_mariadb_binlog(tool: str, path: Path, cpu: int) -> Result:
    cmd = [tool, "--no-defaults", "--base64-output=decode-rows", "-vv", str(path)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall0 = time.perf_counter()
    with open(os.devnull, "wb") as devnull:
        done = subprocess.run(
            cmd, stdout=devnull, stderr=subprocess.PIPE, check=False, preexec_fn=lambda: os.sched_setaffinity(0, {cpu})
        )
    seconds = time.perf_counter() - wall0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {done.stderr.decode(errors='replace')[-2000:]}")
    cpu_seconds = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"seconds": seconds, "cpu_seconds": cpu_seconds}


class ServedBinlog:
    """A private MariaDB server whose binlog index starts with (a hard link to) the bench file."""

    def __init__(self, path: Path, work_dir: Path) -> None:
        from tests.harness.mariadb import MariaDBServer

        basename, _number = split_binlog_name(path.name)
        self.log_file = path.name
        self.server = MariaDBServer(
            {"binlog_row_metadata": "FULL", "binlog_checksum": "CRC32"},
            base_dir=work_dir,
            binlog_basename=basename,
        )
        self.server.binlog_dir.mkdir(parents=True, exist_ok=True)
        target = self.server.binlog_dir / path.name
        try:
            os.link(path, target)
        except OSError:
            shutil.copyfile(path, target)
        (self.server.binlog_dir / f"{basename}.index").write_text(f"{target}\n")

    def __enter__(self) -> ServedBinlog:
        self.server.start()
        served = self.server.binlog_files()
        if not served or served[0] != self.log_file:
            raise SystemExit(f"the server does not list {self.log_file} first: {served}")
        return self

    def __exit__(self, *_exc: object) -> None:
        self.server.cleanup()


def _default_cpu() -> int:
    return max(os.sched_getaffinity(0))


def _median(results: list[Result], key: str) -> float:
    return float(statistics.median(r[key] for r in results))


def _measure(kind: str, path: Path, prefix: Path, tool: str, server: ServedBinlog | None, cpu: int) -> Result:
    """One run of one contender."""
    if kind == "mariadb-binlog":
        return _run_mariadb_binlog(tool, path, cpu)
    if kind == "ours-prefix":
        return run_child("ours", prefix, cpu)
    if kind == "pmr":
        assert server is not None
        return run_child("pmr", path, cpu, server.server.port, server.log_file)
    return run_child(kind, path, cpu)


def run(args: argparse.Namespace) -> Result:
    """Interleave every contender ``args.repeats`` times (pmr ``args.pmr_repeats`` times); return the report."""
    from tests.harness.mariadb import find_mariadb_binlog

    path: Path = args.binlog.resolve()
    size = path.stat().st_size
    tool = find_mariadb_binlog()
    if tool is None:
        raise SystemExit("mariadb-binlog not found: install Debian's mariadb-client")
    work_dir = Path(tempfile.mkdtemp(prefix="bench-", dir=path.parent))
    prefix = work_dir / path.name
    prefix_size = cut_at_transaction(path, prefix, args.prefix)
    samples: dict[str, list[Result]] = {
        k: [] for k in ("walk", "framing", "ours", "mariadb-binlog", "pmr", "ours-prefix")
    }
    server: ServedBinlog | None = None
    try:
        if not args.skip_pmr:
            server = ServedBinlog(path, work_dir / "server").__enter__()
        for round_no in range(args.repeats):
            print(f"round {round_no + 1}/{args.repeats}", file=sys.stderr, flush=True)
            kinds = ["walk", "ours", "mariadb-binlog", "framing", "ours-prefix"]
            if server is not None and round_no < args.pmr_repeats:
                kinds.insert(2, "pmr")
            for kind in kinds:
                result = _measure(kind, path, prefix, tool, server, args.cpu)
                samples[kind].append(result)
                print(f"  {kind:15s} {result['seconds']:8.2f} s", file=sys.stderr, flush=True)
    finally:
        if server is not None:
            server.__exit__(None, None, None)
        shutil.rmtree(work_dir, ignore_errors=True)
    return _report(path, size, prefix_size, samples, args.cpu)


def _report(path: Path, size: int, prefix_size: int, samples: dict[str, list[Result]], cpu: int) -> Result:
    ours = samples["ours"]
    rows = ours[0]["rows"]
    if any(r["rows"] != rows for r in ours) or any(r["problems"] for r in ours):
        raise SystemExit(f"our decoder was not consistent or reported problems: {ours}")
    figures: dict[str, Result] = {}
    for kind, results in samples.items():
        if not results or kind == "ours-prefix":
            continue
        seconds = _median(results, "seconds")
        figures[kind] = {
            "runs": len(results),
            "seconds": round(seconds, 3),
            "all_seconds": [round(r["seconds"], 3) for r in results],
            "cpu_seconds": round(_median(results, "cpu_seconds"), 3),
            "rows_per_s": round(rows / seconds),
            "mib_per_s": round(mib(size) / seconds, 1),
        }
    if samples["pmr"] and samples["pmr"][0]["rows"] != rows:
        raise SystemExit(f"python-mysql-replication saw {samples['pmr'][0]['rows']} row changes, we saw {rows}")
    ratios = {
        f"ours_vs_{kind}": round(figures[kind]["seconds"] / figures["ours"]["seconds"], 2)
        for kind in ("pmr", "mariadb-binlog", "framing", "walk")
        if kind in figures
    }
    cpu_ratios = {
        f"ours_vs_{kind}": round(figures[kind]["cpu_seconds"] / figures["ours"]["cpu_seconds"], 2)
        for kind in ("pmr", "mariadb-binlog", "framing", "walk")
        if kind in figures
    }
    memory = {
        "ours_full_max_rss_mib": round(_median(ours, "max_rss_mib"), 1),
        "ours_prefix_max_rss_mib": round(_median(samples["ours-prefix"], "max_rss_mib"), 1),
        "prefix_mib": round(mib(prefix_size), 1),
    }
    return {
        "binlog": str(path),
        "mib": round(mib(size), 1),
        "events": ours[0]["events"],
        "row_changes": rows,
        "values": ours[0]["values"],
        "cpu": cpu,
        "python": sys.version.split()[0],
        "figures": figures,
        "ratios_speedup_of_ours": ratios,
        "cpu_ratios_speedup_of_ours": cpu_ratios,
        "memory": memory,
    }


def _print_table(report: Result) -> None:
    print(
        f"{report['binlog']}: {report['mib']} MiB, {report['events']} events, {report['row_changes']} row changes, "
        f"{report['values']} values; one CPU (#{report['cpu']}), Python {report['python']}"
    )
    print(f"{'contender':16s} {'runs':>4s} {'median s':>9s} {'cpu s':>8s} {'rows/s':>10s} {'MiB/s':>8s}")
    for kind, fig in report["figures"].items():
        print(
            f"{kind:16s} {fig['runs']:4d} {fig['seconds']:9.2f} {fig['cpu_seconds']:8.2f} "
            f"{fig['rows_per_s']:10,d} {fig['mib_per_s']:8.1f}"
        )
    for name, ratio in report["ratios_speedup_of_ours"].items():
        cpu_ratio = report["cpu_ratios_speedup_of_ours"][name]
        print(f"{name}: {ratio:.2f}x by median wall seconds, {cpu_ratio:.2f}x by median CPU seconds")
    m = report["memory"]
    print(
        f"peak RSS of ours: {m['ours_full_max_rss_mib']} MiB on the whole file, "
        f"{m['ours_prefix_max_rss_mib']} MiB on its first {m['prefix_mib']} MiB"
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Parse arguments, run the contenders interleaved, print the table and the JSON report."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binlog", type=Path, default=DEFAULT_BINLOG, help="binlog file (make_oltp_binlog.py)")
    parser.add_argument("--repeats", type=int, default=3, help="rounds of walk/framing/ours/mariadb-binlog")
    parser.add_argument("--pmr-repeats", type=int, default=1, help="rounds that also run python-mysql-replication")
    parser.add_argument("--skip-pmr", action="store_true", help="leave python-mysql-replication out")
    parser.add_argument("--prefix", type=float, default=0.25, help="share of the file for the memory comparison")
    parser.add_argument("--cpu", type=int, default=_default_cpu(), help="CPU every measured process is pinned to")
    parser.add_argument("--json", type=Path, help="also write the report here")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--log-file", default="", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child_main(args.child, str(args.binlog), args.port, args.log_file, args.cpu)
    if not args.binlog.is_file():
        parser.error(f"{args.binlog} not found: make one with bench/make_oltp_binlog.py")
    report = run(args)
    _print_table(report)
    print(json.dumps(report, indent=2))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
