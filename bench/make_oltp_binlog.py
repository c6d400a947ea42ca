"""Write a realistic OLTP binlog of a given size with a private MariaDB server.

::

    .venv/bin/python bench/make_oltp_binlog.py --size-mib 256 --annotate [--out .cache/bench/oltp] [--seed N]
        [--workers 2] [--keep-server]

The server (``tests.harness.mariadb.MariaDBServer``) runs with ``binlog_format=ROW``,
``binlog_row_image=FULL``, ``binlog_row_metadata=FULL``, ``binlog_checksum=CRC32`` and
``max_binlog_size=1G`` (the largest the server allows), so up to 1 GiB lands in one file; bigger
targets roll over into more files of about 1 GiB. ``--annotate`` sets
``binlog_annotate_row_events=ON`` (each rows event is preceded by an ANNOTATE_ROWS event holding the
statement text, as on a production MariaDB); without it the statements are not logged.

Schema: ``sbtest.sbtest1..8`` as sysbench creates them (``id INT PK AUTO_INCREMENT, k INT,
c CHAR(120), pad CHAR(60)``, index on ``k``) and two wider tables, ``shop.customers`` and
``shop.orders`` (DECIMAL, DATETIME(6), TIMESTAMP(6), DATE, VARCHAR, CHAR, ENUM, DOUBLE, nullable
columns, a JSON column, which MariaDB stores as LONGTEXT). The tables are filled first with binary
logging switched off for the session, so the file holds the DDL and then only the workload:

* sysbench ``oltp_write_only`` transactions: an index UPDATE, a non-index UPDATE, a DELETE and an
  INSERT of the same id (4 row changes);
* multi-row INSERTs (10-40 rows) and range UPDATEs (5-30 rows) into the sbtest tables;
* shop transactions: new orders (multi-row INSERT + customer UPDATE), order status UPDATEs,
  bulk shipping (UPDATE ... WHERE id IN (...)), cancellations (DELETE + UPDATE), customer
  logins and profile changes.

The mix writes about 480 bytes of binlog per row change with ``--annotate``. Several connections
(one process each) run the workload on disjoint tables and rows, one transaction per round trip
(all its statements sent at once), with ``innodb_flush_log_at_trx_commit=0`` and ``sync_binlog=0``.
The statements are fully determined by ``--seed`` (timestamps come from a simulated clock); the
interleaving of the connections and the event timestamps are not.

When the binlog files reach the target size the workers stop, the server is shut down, and the
binlog files are copied to ``--out``. The script prints their size, event counts by type, and the
number of row changes (counted independently by ``mariadb-binlog -vv``), and writes them to
``--out/summary.json``. With ``--keep-server`` the server's whole directory (data, binlog files and
index) is kept at ``--out/server``; otherwise it is deleted. (``decode_throughput.py`` does not need
it: it serves the copied file from a server of its own.)
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from multiprocessing.synchronize import Barrier, Event
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as ``python bench/make_oltp_binlog.py``
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import event_type_counts, mib, split_binlog_name

DEFAULT_SEED = 20240517
MAX_BINLOG_SIZE = "1G"

SERVER_OPTIONS: dict[str, str] = {
    "binlog_row_image": "FULL",
    "binlog_row_metadata": "FULL",
    "binlog_checksum": "CRC32",
    "max_binlog_size": MAX_BINLOG_SIZE,
    "innodb_flush_log_at_trx_commit": "0",
    "sync_binlog": "0",
    "innodb_buffer_pool_size": "512M",
    "innodb_log_file_size": "256M",
    "binlog_cache_size": "1M",
    "transaction_isolation": "READ-COMMITTED",
}
"""Server settings on top of the harness defaults (ROW format is always on)."""

_VARIABLE_ALIASES = {"transaction_isolation": "tx_isolation"}
"""Names MariaDB 10.x shows some of those settings under."""

SBTEST_TABLES = 8
SBTEST_ROWS = 20_000
"""Rows preloaded into each sbtest table; point statements pick ids among them."""
CUSTOMERS = 24_000
ORDERS = 48_000
PRELOAD_BATCH = 500

WORKLOAD_MIX: tuple[tuple[str, int], ...] = (
    ("oltp_write", 40),
    ("sb_bulk_insert", 5),
    ("sb_range_update", 12),
    ("new_order", 12),
    ("order_progress", 10),
    ("bulk_ship", 4),
    ("cancel_order", 3),
    ("customer_login", 8),
    ("customer_profile", 3),
)
"""Transaction kinds and their relative weights."""

ORDER_STATUSES = ("new", "paid", "packed", "shipped", "delivered", "cancelled", "returned")
TIERS = ("free", "silver", "gold", "platinum")
COUNTRIES = ("DE", "FR", "NL", "US", "GB", "ES", "IT", "PL", "SE", "JP", "BR", "CA")
CITIES = ("Berlin", "Paris", "Amsterdam", "Austin", "Leeds", "Madrid", "Milano", "Kraków", "Malmö", "Osaka", "Recife")
CHANNELS = ("web", "ios", "android", "phone", "partner")
FIRST_NAMES = ("Ana", "Ben", "Chloé", "Dmitri", "Eva", "Farid", "Grace", "Hiro", "Inès", "Jonas", "Kalle", "Lena")
LAST_NAMES = ("Smith", "Müller", "García", "Rossi", "Nowak", "Dubois", "Tanaka", "Silva", "Jensen", "Okafor")

SCHEMA_SQL: tuple[str, ...] = (
    "CREATE DATABASE sbtest",
    "CREATE DATABASE shop",
    *(
        f"CREATE TABLE sbtest.sbtest{i} ("
        "id INT NOT NULL AUTO_INCREMENT, k INT NOT NULL DEFAULT 0, "
        "c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT '', "
        f"PRIMARY KEY (id), KEY k_{i} (k)) ENGINE=InnoDB"
        for i in range(1, SBTEST_TABLES + 1)
    ),
    """CREATE TABLE shop.customers (
        id INT UNSIGNED NOT NULL,
        email VARCHAR(190) NOT NULL,
        full_name VARCHAR(100) NOT NULL,
        country CHAR(2) NOT NULL,
        tier ENUM('free','silver','gold','platinum') NOT NULL DEFAULT 'free',
        balance DECIMAL(14,2) NOT NULL DEFAULT 0.00,
        order_count INT UNSIGNED NOT NULL DEFAULT 0,
        is_active TINYINT(1) NOT NULL DEFAULT 1,
        birth_date DATE NULL,
        created_at DATETIME(6) NOT NULL,
        last_login_at TIMESTAMP(6) NULL DEFAULT NULL,
        preferences JSON NULL,
        PRIMARY KEY (id),
        KEY idx_email (email)
    ) ENGINE=InnoDB""",
    """CREATE TABLE shop.orders (
        id BIGINT UNSIGNED NOT NULL,
        customer_id INT UNSIGNED NOT NULL,
        status ENUM('new','paid','packed','shipped','delivered','cancelled','returned') NOT NULL DEFAULT 'new',
        currency CHAR(3) NOT NULL DEFAULT 'EUR',
        total DECIMAL(12,2) NOT NULL,
        tax DECIMAL(10,4) NULL,
        discount_pct DECIMAL(5,2) NULL,
        weight_kg DOUBLE NULL,
        num_items SMALLINT UNSIGNED NOT NULL,
        created_at DATETIME(6) NOT NULL,
        updated_at DATETIME(6) NULL,
        shipped_at DATETIME(6) NULL,
        ship_country CHAR(2) NULL,
        ship_city VARCHAR(64) NULL,
        coupon_code VARCHAR(32) NULL,
        note VARCHAR(255) NULL,
        attributes JSON NULL,
        PRIMARY KEY (id),
        KEY idx_customer (customer_id),
        KEY idx_status_created (status, created_at)
    ) ENGINE=InnoDB""",
)

_ORDER_COLUMNS = (
    "id, customer_id, status, currency, total, tax, discount_pct, weight_kg, num_items, created_at, "
    "updated_at, shipped_at, ship_country, ship_city, coupon_code, note, attributes"
)
_CUSTOMER_COLUMNS = (
    "id, email, full_name, country, tier, balance, order_count, is_active, birth_date, created_at, "
    "last_login_at, preferences"
)


def sql_str(text: str) -> str:
    """A single-quoted SQL string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "''") + "'"


@dataclass(frozen=True)
class WorkerSpec:
    """What one workload connection owns: its sbtest tables, and customers/orders with ``id % n == index``."""

    index: int
    num_workers: int
    seed: int
    port: int

    @property
    def sbtest_tables(self) -> tuple[int, ...]:
        """Numbers of the sbtest tables this worker alone writes to."""
        return tuple(i for i in range(1, SBTEST_TABLES + 1) if (i - 1) % self.num_workers == self.index)

    def owns(self, row_id: int) -> bool:
        """True for the customer/order ids this worker alone writes to."""
        return row_id % self.num_workers == self.index


@dataclass
class WorkerTotals:
    """What one worker did."""

    transactions: int = 0
    statements: int = 0
    affected_rows: int = 0
    seconds: float = 0.0


class Generator:
    """Builds the SQL text of one worker's transactions from its seeded random stream."""

    def __init__(self, spec: WorkerSpec) -> None:
        self.spec = spec
        self.rng = random.Random(spec.seed * 1009 + spec.index)
        self.clock = datetime(2024, 3, 1, 8, 0, 0) + timedelta(milliseconds=37 * spec.index)
        self.tables = spec.sbtest_tables
        n = spec.num_workers
        self.customers = list(range(spec.index or n, CUSTOMERS + 1, n))
        self.orders = list(range(spec.index or n, ORDERS + 1, n))
        self.next_order_id = ORDERS + (spec.index or n)
        self.email_serial = 0
        kinds, weights = zip(*WORKLOAD_MIX, strict=True)
        self.kinds: tuple[str, ...] = kinds
        self.cum_weights = [sum(weights[: i + 1]) for i in range(len(weights))]
        self.builders: dict[str, Callable[[], list[str]]] = {
            "oltp_write": self.oltp_write,
            "sb_bulk_insert": self.sb_bulk_insert,
            "sb_range_update": self.sb_range_update,
            "new_order": self.new_order,
            "order_progress": self.order_progress,
            "bulk_ship": self.bulk_ship,
            "cancel_order": self.cancel_order,
            "customer_login": self.customer_login,
            "customer_profile": self.customer_profile,
        }

    # ------------------------------------------------------------------ values

    def sb_c(self) -> str:
        """sysbench's ``c``: ten groups of 11 random digits joined by dashes (119 characters)."""
        digits = str(self.rng.randrange(10**110)).zfill(110)
        return "-".join(digits[i : i + 11] for i in range(0, 110, 11))

    def sb_pad(self) -> str:
        """sysbench's ``pad``: five groups of 11 random digits (59 characters)."""
        digits = str(self.rng.randrange(10**55)).zfill(55)
        return "-".join(digits[i : i + 11] for i in range(0, 55, 11))

    def tick(self) -> str:
        """Advance the simulated clock a little and return it as a DATETIME(6) literal."""
        self.clock += timedelta(microseconds=self.rng.randrange(1, 60_000))
        return "'" + self.clock.isoformat(" ", "microseconds") + "'"

    def money(self, low: int, high: int) -> str:
        """A DECIMAL(…,2) literal between ``low`` and ``high`` units."""
        cents = self.rng.randrange(low * 100, high * 100)
        return f"{cents // 100}.{cents % 100:02d}"

    def sb_row(self, row_id: int | None) -> str:
        """One sbtest row as a VALUES tuple (``id`` left to AUTO_INCREMENT when ``None``)."""
        head = "" if row_id is None else f"{row_id},"
        return f"({head}{self.rng.randint(1, SBTEST_ROWS)},'{self.sb_c()}','{self.sb_pad()}')"

    def order_attributes(self) -> str:
        """A JSON document like a shop keeps next to an order."""
        rng = self.rng
        items = ",".join(
            f'{{"sku":"SKU-{rng.randrange(100000):05d}","qty":{rng.randint(1, 4)}}}' for _ in range(rng.randint(1, 3))
        )
        return (
            f'{{"channel":"{rng.choice(CHANNELS)}","gift":{str(rng.random() < 0.1).lower()},'
            f'"items":[{items}],"utm":"{rng.choice(("spring24", "newsletter", "search", "affiliate"))}"}}'
        )

    def order_row(self, order_id: int, customer_id: int) -> str:
        """One new order as a VALUES tuple."""
        rng = self.rng
        created = self.tick()
        coupon = sql_str(f"SAVE{rng.randrange(5, 30)}") if rng.random() < 0.15 else "NULL"
        note = (
            sql_str(rng.choice(("Leave at the door", "Call before delivery", "Gift wrap, please")))
            if (rng.random() < 0.1)
            else "NULL"
        )
        discount = self.money(1, 30) if coupon != "NULL" else "NULL"
        weight = f"{rng.uniform(0.1, 25):.3f}" if rng.random() < 0.9 else "NULL"
        return (
            f"({order_id},{customer_id},'new','{rng.choice(('EUR', 'EUR', 'USD', 'GBP'))}',{self.money(5, 900)},"
            f"{self.money(0, 90)}{rng.randrange(100):02d},{discount},{weight},{rng.randint(1, 6)},{created},"
            f"NULL,NULL,'{rng.choice(COUNTRIES)}',{sql_str(rng.choice(CITIES))},{coupon},{note},"
            f"{sql_str(self.order_attributes())})"
        )

    def customer_row(self, customer_id: int) -> str:
        """One customer as a VALUES tuple (preload only)."""
        rng = self.rng
        name = f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}"
        birth = (
            f"'{rng.randint(1950, 2005)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}'"
            if (rng.random() < 0.7)
            else "NULL"
        )
        return (
            f"({customer_id},'user{customer_id}@example.com',{sql_str(name)},'{rng.choice(COUNTRIES)}',"
            f"'{rng.choice(TIERS)}',{self.money(0, 500)},0,1,{birth},{self.tick()},NULL,"
            f"{sql_str(self.preferences())})"
        )

    def preferences(self) -> str:
        """A customer's preferences as a JSON document."""
        rng = self.rng
        return (
            f'{{"newsletter":{str(rng.random() < 0.4).lower()},"lang":"{rng.choice(("en", "de", "fr", "ja"))}",'
            f'"theme":"{rng.choice(("light", "dark"))}","notify":{{"sms":{str(rng.random() < 0.2).lower()},'
            f'"email":true}}}}'
        )

    def pick_table(self) -> str:
        """One of this worker's sbtest tables."""
        return f"sbtest.sbtest{self.rng.choice(self.tables)}"

    def pick_customer(self) -> int:
        """One of this worker's customers."""
        return self.rng.choice(self.customers)

    def pick_order(self) -> int:
        """One of this worker's live orders."""
        return self.rng.choice(self.orders)

    # ------------------------------------------------------------------ transactions

    def transaction(self) -> list[str]:
        """The statements of the next transaction."""
        kind = self.rng.choices(self.kinds, cum_weights=self.cum_weights)[0]
        return self.builders[kind]()

    def oltp_write(self) -> list[str]:
        """sysbench oltp_write_only: index update, non-index update, delete + insert of one id."""
        rng, table = self.rng, self.pick_table()
        row_id = rng.randint(1, SBTEST_ROWS)
        return [
            f"UPDATE {table} SET k=k+1 WHERE id={rng.randint(1, SBTEST_ROWS)}",
            f"UPDATE {table} SET c='{self.sb_c()}' WHERE id={rng.randint(1, SBTEST_ROWS)}",
            f"DELETE FROM {table} WHERE id={row_id}",
            f"INSERT INTO {table} (id, k, c, pad) VALUES {self.sb_row(row_id)}",
        ]

    def sb_bulk_insert(self) -> list[str]:
        """A multi-row INSERT of new rows."""
        rows = ",".join(self.sb_row(None) for _ in range(self.rng.randint(10, 40)))
        return [f"INSERT INTO {self.pick_table()} (k, c, pad) VALUES {rows}"]

    def sb_range_update(self) -> list[str]:
        """An UPDATE of a range of ids (every row changes)."""
        first = self.rng.randint(1, SBTEST_ROWS - 30)
        last = first + self.rng.randint(5, 30) - 1
        return [f"UPDATE {self.pick_table()} SET k=k+1 WHERE id BETWEEN {first} AND {last}"]

    def new_order(self) -> list[str]:
        """One to three orders of one customer, and the customer's counters."""
        customer = self.pick_customer()
        rows = []
        for _ in range(self.rng.choice((1, 1, 1, 2, 3))):
            order_id = self.next_order_id
            self.next_order_id += self.spec.num_workers
            self.orders.append(order_id)
            rows.append(self.order_row(order_id, customer))
        return [
            f"INSERT INTO shop.orders ({_ORDER_COLUMNS}) VALUES {','.join(rows)}",
            f"UPDATE shop.customers SET order_count=order_count+{len(rows)}, "
            f"balance=balance+{self.money(5, 900)} WHERE id={customer}",
        ]

    def order_progress(self) -> list[str]:
        """Move one or two orders a step further."""
        statements = []
        for _ in range(self.rng.choice((1, 1, 2))):
            status = self.rng.choice(ORDER_STATUSES[1:5])
            now = self.tick()
            shipped = f", shipped_at={now}" if status == "shipped" else ""
            statements.append(
                f"UPDATE shop.orders SET status='{status}', updated_at={now}{shipped} WHERE id={self.pick_order()}"
            )
        return statements

    def bulk_ship(self) -> list[str]:
        """Ship a batch of orders with one UPDATE."""
        ids = ",".join(str(self.pick_order()) for _ in range(self.rng.randint(5, 20)))
        now = self.tick()
        return [f"UPDATE shop.orders SET status='shipped', shipped_at={now}, updated_at={now} WHERE id IN ({ids})"]

    def cancel_order(self) -> list[str]:
        """Delete an order and refund its customer."""
        position = self.rng.randrange(len(self.orders))
        order_id = self.orders[position]
        self.orders[position] = self.orders[-1]
        self.orders.pop()
        return [
            f"DELETE FROM shop.orders WHERE id={order_id}",
            f"UPDATE shop.customers SET balance=balance-{self.money(5, 200)} WHERE id={self.pick_customer()}",
        ]

    def customer_login(self) -> list[str]:
        """Record a login."""
        return [f"UPDATE shop.customers SET last_login_at={self.tick()} WHERE id={self.pick_customer()}"]

    def customer_profile(self) -> list[str]:
        """Change a customer's tier, e-mail address and preferences."""
        customer = self.pick_customer()
        self.email_serial += 1
        return [
            f"UPDATE shop.customers SET tier='{self.rng.choice(TIERS)}', "
            f"email='user{customer}.{self.email_serial}@example.com', "
            f"preferences={sql_str(self.preferences())} WHERE id={customer}"
        ]

    # ------------------------------------------------------------------ preload

    def preload_statements(self) -> list[str]:
        """Multi-row INSERTs that fill this worker's share of the tables."""
        statements = []
        for number in self.tables:
            for first in range(1, SBTEST_ROWS + 1, PRELOAD_BATCH):
                rows = ",".join(self.sb_row(i) for i in range(first, min(first + PRELOAD_BATCH, SBTEST_ROWS + 1)))
                statements.append(f"INSERT INTO sbtest.sbtest{number} (id, k, c, pad) VALUES {rows}")
        for ids, build, table, columns in (
            (self.customers, self.customer_row, "customers", _CUSTOMER_COLUMNS),
            (self.orders, lambda i: self.order_row(i, self.pick_customer()), "orders", _ORDER_COLUMNS),
        ):
            for start in range(0, len(ids), PRELOAD_BATCH):
                rows = ",".join(build(i) for i in ids[start : start + PRELOAD_BATCH])
                statements.append(f"INSERT INTO shop.{table} ({columns}) VALUES {rows}")
        return statements


def _connect(port: int) -> Any:
    """A PyMySQL connection that may send several statements in one query."""
    import pymysql
    from pymysql.constants import CLIENT

    return pymysql.connect(
        host="127.0.0.1",
        port=port,
        user="root",
        password="",
        charset="utf8mb4",
        autocommit=True,
        client_flag=CLIENT.MULTI_STATEMENTS,
        init_command="SET time_zone='+00:00'",
    )


def _run_batch(cur: Any, sql: str) -> int:
    """Run a multi-statement query, read every result, return the summed affected-row counts."""
    cur.execute(sql)
    affected: int = max(cur.rowcount, 0)
    while cur.nextset():
        affected += max(cur.rowcount, 0)
    return affected


def worker_main(spec: WorkerSpec, ready: Barrier, stop: Event, results: Any) -> None:
    """Preload this worker's share unlogged, wait for the others, then run transactions until ``stop``."""
    gen = Generator(spec)
    totals = WorkerTotals()
    with _connect(spec.port) as conn, conn.cursor() as cur:
        cur.execute("SET SESSION sql_log_bin=0")
        for statement in gen.preload_statements():
            cur.execute(statement)
        cur.execute("SET SESSION sql_log_bin=1")
        ready.wait()
        started = time.perf_counter()
        while not stop.is_set():
            statements = gen.transaction()
            totals.affected_rows += _run_batch(cur, "BEGIN;" + ";".join(statements) + ";COMMIT")
            totals.transactions += 1
            totals.statements += len(statements)
        totals.seconds = time.perf_counter() - started
    results.put((spec.index, asdict(totals)))


def binlog_bytes(binlog_dir: Path, basename: str) -> int:
    """Total size of the numbered binlog files in ``binlog_dir``."""
    total = 0
    for entry in os.scandir(binlog_dir):
        if entry.name.startswith(basename + ".") and entry.name[len(basename) + 1 :].isdigit():
            total += entry.stat().st_size
    return total


def count_row_changes(path: Path) -> dict[str, int]:
    """Row changes in a binlog file as ``mariadb-binlog -vv`` prints them (``### INSERT INTO`` ...)."""
    from tests.harness.mariadb import find_mariadb_binlog

    tool = find_mariadb_binlog()
    if tool is None:
        raise SystemExit("mariadb-binlog not found: install Debian's mariadb-client")
    patterns = {"insert": b"\n### INSERT INTO ", "update": b"\n### UPDATE ", "delete": b"\n### DELETE FROM "}
    counts = dict.fromkeys(patterns, 0)
    keep = max(len(p) for p in patterns.values()) - 1
    cmd = [tool, "--no-defaults", "--base64-output=decode-rows", "-vv", str(path)]
    with subprocess.Popen(cmd, stdout=subprocess.PIPE) as proc:
        assert proc.stdout is not None
        tail = b"\n"
        while block := proc.stdout.read(1 << 20):
            data = tail + block
            for op, pattern in patterns.items():
                # a match lying wholly inside the carried-over tail was counted with the block before
                counts[op] += data.count(pattern) - tail.count(pattern)
            tail = data[-keep:]
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed with exit code {proc.returncode}")
    return counts


def _prepare_out(out: Path, keep_server: bool) -> Path | None:
    """Create ``out`` and remove what an earlier run left there; return the server directory to use."""
    out.mkdir(parents=True, exist_ok=True)
    for entry in out.iterdir():
        if entry.is_file() and (entry.name == "summary.json" or entry.suffix[1:].isdigit()):
            entry.unlink()
    server_dir = out / "server"
    if server_dir.exists():
        shutil.rmtree(server_dir)
    if keep_server:
        server_dir.mkdir()
        return server_dir
    return None


def _progress(start: float, size: int, target: int) -> None:
    elapsed = time.perf_counter() - start
    print(
        f"  {mib(size):7.1f} / {mib(target):.0f} MiB  {elapsed:6.1f} s  {mib(size) / max(elapsed, 1e-9):5.1f} MiB/s",
        file=sys.stderr,
        flush=True,
    )


def generate(
    size_mib: float, out: Path, seed: int, workers: int, keep_server: bool, annotate: bool = False
) -> dict[str, Any]:
    """Run the workload until the binlog holds ``size_mib`` MiB; copy the files to ``out``; return a summary."""
    from tests.harness.mariadb import MariaDBServer

    target = int(size_mib * (1 << 20))
    out = out.resolve()  # the server resolves relative paths against its basedir, not our cwd
    server_dir = _prepare_out(out, keep_server)
    options = {**SERVER_OPTIONS, "binlog_annotate_row_events": "ON" if annotate else "OFF"}
    server = MariaDBServer(options, base_dir=server_dir)
    summary: dict[str, Any] = {"seed": seed, "target_mib": size_mib, "workers": workers, "server_options": {}}
    try:
        server.start()
        summary["server_version"] = server.query("SELECT VERSION()")[0][0]
        variables = {str(name): str(value) for name, value in server.query("SHOW GLOBAL VARIABLES")}
        for name in (*options, "binlog_format"):
            summary["server_options"][name] = variables.get(name, variables.get(_VARIABLE_ALIASES.get(name, "")))
        with server.connect() as conn, conn.cursor() as cur:
            for statement in SCHEMA_SQL:
                cur.execute(statement)
        ctx = mp.get_context("fork")
        ready, stop, results = ctx.Barrier(workers + 1), ctx.Event(), ctx.Queue()
        procs = [
            ctx.Process(target=worker_main, args=(WorkerSpec(i, workers, seed, server.port), ready, stop, results))
            for i in range(workers)
        ]
        for proc in procs:
            proc.start()
        print(
            f"preloading {SBTEST_TABLES}x{SBTEST_ROWS} sbtest rows, {CUSTOMERS} customers, {ORDERS} orders "
            "(not logged)",
            file=sys.stderr,
            flush=True,
        )
        ready.wait(timeout=600)
        print(f"running the workload on {workers} connections", file=sys.stderr, flush=True)
        start = last_report = time.perf_counter()
        while (size := binlog_bytes(server.binlog_dir, server.binlog_basename)) < target:
            if not all(proc.is_alive() for proc in procs):
                stop.set()
                raise SystemExit("a workload process died; see its traceback above")
            now = time.perf_counter()
            if now - last_report >= 5:
                _progress(start, size, target)
                last_report = now
            time.sleep(0.05)
        stop.set()
        totals = dict(results.get(timeout=120) for _ in procs)
        for proc in procs:
            proc.join(timeout=60)
        summary["workload_seconds"] = round(time.perf_counter() - start, 2)
        summary["transactions"] = sum(t["transactions"] for t in totals.values())
        summary["statements"] = sum(t["statements"] for t in totals.values())
        summary["affected_rows"] = sum(t["affected_rows"] for t in totals.values())
        server.stop()
        files = _copy_binlogs(server.binlog_dir, server.binlog_basename, out)
    finally:
        if keep_server:
            server.stop()
        else:
            server.cleanup()
    summary["files"] = [_describe(path) for path in files]
    summary["total_bytes"] = sum(f["bytes"] for f in summary["files"])
    summary["total_events"] = sum(f["events"] for f in summary["files"])
    summary["total_row_changes"] = sum(f["row_changes"] for f in summary["files"])
    summary["bytes_per_row_change"] = round(summary["total_bytes"] / max(summary["total_row_changes"], 1), 1)
    if keep_server:
        summary["server_dir"] = str(server_dir)
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def _copy_binlogs(binlog_dir: Path, basename: str, out: Path) -> list[Path]:
    """Copy the binlog files listed in the server's index to ``out``; return the copies."""
    index = binlog_dir / (basename + ".index")
    copies = []
    for line in index.read_text().splitlines():
        if line.strip():
            source = binlog_dir / Path(line.strip()).name
            copies.append(Path(shutil.copy2(source, out / source.name)))
    return copies


def _describe(path: Path) -> dict[str, Any]:
    """Size, events by type and row changes of one binlog file."""
    split_binlog_name(path.name)
    by_type = event_type_counts(path)
    changes = count_row_changes(path)
    return {
        "name": path.name,
        "path": str(path),
        "bytes": path.stat().st_size,
        "mib": round(mib(path.stat().st_size), 2),
        "events": sum(by_type.values()),
        "events_by_type": dict(by_type.most_common()),
        "row_changes": sum(changes.values()),
        "row_changes_by_op": changes,
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Parse arguments, generate the binlog and print the summary."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mib", type=float, default=256.0, help="target binlog size in MiB (default 256)")
    parser.add_argument("--out", type=Path, default=Path(".cache/bench/oltp"), help="folder for the binlog files")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"workload seed (default {DEFAULT_SEED})")
    parser.add_argument("--workers", type=int, default=2, help="workload connections (default 2, at most 8)")
    parser.add_argument(
        "--keep-server", action="store_true", help="keep the server's data and binlog directory in OUT/server"
    )
    parser.add_argument(
        "--annotate",
        action="store_true",
        help="binlog_annotate_row_events=ON: an ANNOTATE_ROWS event with the statement text before each rows event",
    )
    args = parser.parse_args(argv)
    if not 1 <= args.workers <= SBTEST_TABLES:
        parser.error(f"--workers must be between 1 and {SBTEST_TABLES}")
    summary = generate(args.size_mib, args.out, args.seed, args.workers, args.keep_server, args.annotate)
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
