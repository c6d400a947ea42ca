"""Peak memory and throughput of the bronze stage on one large binlog file, on ``local[2]``.

::

    .venv/bin/python bench/bronze_memory.py [--size-mib 1024] [--source FILE] [--out bench/out/bronze_memory]

1. Writes a valid binlog of at least ``--size-mib`` MiB (once; reused while its size fits):
   the source file's FORMAT_DESCRIPTION, then its transactions (every event after the header
   events, up to the closing ROTATE/STOP) repeated until the size is reached, each copy with
   ``log_pos`` patched to its new end and the CRC32 recomputed.  Pure Python, no server.
   The default source is a fixture file written by MariaDB 10.11 (row events with annotations,
   about 540 bytes per event).
2. Runs the bronze stage (``BronzeStage.build`` + ``write``) on it with the Spark settings of ``conf/local.yaml``
   (``driver_memory: 1536m``), the master forced to ``local[2]`` and the UI off, while a thread
   samples ``/proc`` every 0.2 s: resident memory of the driver JVM, of the Python workers it
   forks, and of this driver process.
3. Prints the file size, events, wall time of framing (``build_bronze``: discovery, framing,
   local checkpoint on disk) and of the three Delta writes, events per second, and the peak resident memory
   of each process group; checks that ``binlog_events`` holds every event.
"""

from __future__ import annotations

import argparse
import shutil
import struct
import sys
import tempfile
import time
import zlib
from collections.abc import Sequence
from pathlib import Path

if __package__ in (None, ""):  # run as ``python bench/bronze_memory.py``
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import ROOT, mib
from bench.memory import Sampler
from binlog_core.constants import EventType
from binlog_core.framing import open_events

DEFAULT_SOURCE = ROOT / "tests" / "fixtures" / "mariadb" / "full" / "mysql-bin.000002"
HEADER_EVENTS = frozenset(
    {
        EventType.FORMAT_DESCRIPTION,
        EventType.ROTATE,
        EventType.STOP,
        EventType.GTID_LIST,
        EventType.BINLOG_CHECKPOINT,
        EventType.PREVIOUS_GTIDS,
    }
)
"""Events not repeated: they describe the file, not a transaction."""

_LOG_POS = struct.Struct("<I")
_LOG_POS_AT = 13
_FLAGS_AT = 17
_BINLOG_IN_USE = 0x1


def make_binlog(source: Path, target: Path, size: int) -> int:
    """Write ``target``: ``source``'s header then its transactions repeated to ``size`` bytes; return events."""
    events = list(open_events(source))
    if events[0].fde.checksum_alg != 1:
        raise SystemExit(f"{source}: the source must carry CRC32 checksums")
    raw = source.read_bytes()
    fde = events[0]
    unit = [raw[e.offset : e.offset + e.header.event_size] for e in events if e.type_code not in HEADER_EVENTS]
    first = bytearray(raw[fde.offset : fde.offset + fde.header.event_size])
    first[_FLAGS_AT] &= ~_BINLOG_IN_USE & 0xFF  # a closed file
    count = 1
    offset = 4 + len(first)
    with open(target, "wb") as out:
        out.write(b"\xfebin")
        out.write(first)  # its checksum covers the cleared flag already
        pending: list[bytes] = []
        pending_bytes = 0
        while offset < size:
            for event in unit:
                patched = bytearray(event)
                offset += len(patched)
                _LOG_POS.pack_into(patched, _LOG_POS_AT, offset)
                _LOG_POS.pack_into(patched, len(patched) - 4, zlib.crc32(memoryview(patched)[:-4]))
                pending.append(bytes(patched))
                pending_bytes += len(patched)
                count += 1
            if pending_bytes >= 16 << 20:
                out.write(b"".join(pending))
                pending, pending_bytes = [], 0
        out.write(b"".join(pending))
    return count


def main(argv: Sequence[str] | None = None) -> int:
    """Generate the file if needed, run bronze on it, print the figures."""
    parser = argparse.ArgumentParser(prog="bench/bronze_memory.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mib", type=int, default=1024, help="size of the generated binlog (MiB)")
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE, help="binlog whose transactions are repeated")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "bronze_memory", help="work directory")
    parser.add_argument("--config", default=str(ROOT / "conf" / "local.yaml"), help="Spark settings come from here")
    args = parser.parse_args(argv)

    binlogs = args.out / "binlogs"
    binlogs.mkdir(parents=True, exist_ok=True)
    target = binlogs / "mysql-bin.000001"
    size = args.size_mib << 20
    if not target.is_file() or not size <= target.stat().st_size < size + (8 << 20):
        started = time.perf_counter()
        count = make_binlog(args.source, target, size)
        print(f"generated {target} ({mib(target.stat().st_size):.0f} MiB, {count} events) in "
              f"{time.perf_counter() - started:.1f} s")  # fmt: skip
    expected_events = sum(1 for _ in open_events(target))

    from conf import load_config
    from pipelines.bronze.stage import BronzeStage
    from pipelines.session import build_spark
    from pipelines.stage import Context
    from pipelines.storage import Lakehouse, Table

    cfg = load_config(args.config)
    lake_root = Path(tempfile.mkdtemp(prefix="lake-", dir=args.out))
    cfg = cfg.model_copy(
        update={
            "spark": cfg.spark.model_copy(update={"master": "local[2]", "ui_enabled": False}),
            "input": cfg.input.model_copy(update={"path": str(binlogs), "recursive": False}),
            "storage": cfg.storage.model_copy(update={"root": str(lake_root), "register_tables": False}),
        }
    )
    sampler = Sampler()
    sampler.start()
    started = time.perf_counter()
    spark = build_spark(cfg.spark)
    up = time.perf_counter()
    try:
        lake = Lakehouse(spark, cfg.storage)
        ctx = Context(spark, cfg, lake, "bench")
        stage = BronzeStage()
        out = stage.build(ctx)
        built = time.perf_counter()
        stage.write(ctx, out)
        written = time.perf_counter()
        out.release()
        stored = lake.read(Table.bronze("binlog_events")).count()
        status = [(r.status, r.framed_until) for r in lake.read(Table.bronze("binlog_files")).collect()]
    finally:
        peaks = sampler.stop()
        spark.stop()
        shutil.rmtree(lake_root, ignore_errors=True)

    file_size = target.stat().st_size
    frame_s, write_s = built - up, written - built
    print(f"file               {mib(file_size):10.0f} MiB, {expected_events} events")
    print(f"spark              {cfg.spark.master}, driver_memory {cfg.spark.driver_memory}")
    print(f"session start      {up - started:10.1f} s")
    print(f"bronze build       {frame_s:10.1f} s   (discover, frame, local checkpoint on disk)")
    print(f"bronze write       {write_s:10.1f} s   (events, quarantine, binlog_files)")
    print(f"bronze total       {frame_s + write_s:10.1f} s   {expected_events / (frame_s + write_s):,.0f} events/s, "
          f"{mib(file_size) / (frame_s + write_s):.1f} MiB/s")  # fmt: skip
    print(f"framing only       {expected_events / frame_s:,.0f} events/s")
    print(f"peak RSS JVM       {mib(peaks.jvm):10.0f} MiB")
    print(
        f"peak RSS workers   {mib(peaks.workers):10.0f} MiB   ({len(peaks.worker_pids)} Python worker processes seen)"
    )
    print(f"peak RSS driver py {mib(peaks.driver_python):10.0f} MiB")
    print(f"peak RSS total     {mib(peaks.total):10.0f} MiB   ({peaks.samples} samples)")
    print(f"binlog_events rows {stored}   binlog_files {status}")
    if stored != expected_events or status != [("complete", file_size)]:
        print("MISMATCH: bronze did not store every event of the file", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
