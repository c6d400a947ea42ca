"""The ``s3_server`` fixture: a server speaking the S3 API (moto's server mode) on 127.0.0.1.

One server per test run (per pytest-xdist worker), started as a separate process on a free port,
waited on until it answers, and stopped at the end. It keeps its buckets in memory and accepts
any access key; tests create buckets of their own names. ``S3Server.hadoop`` is the set of
``fs.s3a.*`` settings that reach it, as an operator writes them for MinIO or Ceph:

    fs.s3a.endpoint: http://127.0.0.1:<port>
    fs.s3a.endpoint.region: us-east-1
    fs.s3a.path.style.access: true
    fs.s3a.connection.ssl.enabled: false
    fs.s3a.access.key / fs.s3a.secret.key

A JVM that lists ``s3a://`` needs Hadoop's S3A connector, ``hadoop-aws`` matching pyspark's Hadoop
(:func:`conf.hadoop_aws_package`, with the AWS SDK bundle it names). ``S3A_PACKAGES`` lists it with
the Delta jars; ``python -m tests.harness.s3 --warm`` (run by ``.ci/setup --dev``) resolves them
into the project's Ivy cache once, so that a run started by a test does not download them.
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from pyarrow import fs as pafs

from conf import SparkSettings, default_delta_package, hadoop_aws_package

S3A_PACKAGES = (default_delta_package(), hadoop_aws_package())
"""What a JVM reading ``s3a://`` is started with: the Delta jars and the S3A connector."""

REGION = "us-east-1"
STARTUP_SECONDS = 60.0


@dataclass(frozen=True)
class S3Server:
    """A running S3-API server: where it listens and the keys the tests sign with."""

    host: str
    port: int
    access_key: str = "binlog-lakehouse-test"
    secret_key: str = "binlog-lakehouse-test-secret"

    @property
    def endpoint(self) -> str:
        return f"http://{self.host}:{self.port}"

    def hadoop(self) -> dict[str, str]:
        """The ``fs.s3a.*`` settings that reach this server (Hadoop's names and spellings)."""
        return {
            "fs.s3a.endpoint": self.endpoint,
            "fs.s3a.endpoint.region": REGION,
            "fs.s3a.path.style.access": "true",
            "fs.s3a.connection.ssl.enabled": "false",
            "fs.s3a.access.key": self.access_key,
            "fs.s3a.secret.key": self.secret_key,
        }

    def spark_conf(self) -> dict[str, str]:
        """:meth:`hadoop` as a config's ``spark.conf`` (``spark.hadoop.`` before each name)."""
        return {f"spark.hadoop.{key}": value for key, value in self.hadoop().items()}

    def client(self) -> pafs.S3FileSystem:
        """A pyarrow client of this server that may create buckets (for setting up tests)."""
        return pafs.S3FileSystem(
            access_key=self.access_key,
            secret_key=self.secret_key,
            endpoint_override=f"{self.host}:{self.port}",
            scheme="http",
            region=REGION,
            allow_bucket_creation=True,
            allow_bucket_deletion=True,
        )

    def upload(self, folder: Path, target: str, names: Sequence[str] | None = None) -> list[str]:
        """Copy the files of ``folder`` (or only ``names``) to ``target`` (``bucket/prefix``),
        creating the bucket; return their ``s3a://`` URIs."""
        client = self.client()
        client.create_dir(target.partition("/")[0])
        uris: list[str] = []
        for name in names if names is not None else sorted(p.name for p in folder.iterdir() if p.is_file()):
            with client.open_output_stream(f"{target}/{name}") as out:
                out.write((folder / name).read_bytes())
            uris.append(f"s3a://{target}/{name}")
        return uris


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on at the moment (the kernel's pick)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def _wait_until_answering(process: subprocess.Popen[bytes], url: str, log: Path) -> None:
    """Return once ``url`` answers an HTTP request; fail with the server's output if it ends or never does."""
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the S3 server ended with {process.returncode}: {log.read_text(errors='replace')}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except urllib.error.HTTPError:
            return  # it answered
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"the S3 server did not answer {url} within {STARTUP_SECONDS:.0f}s: {log.read_text()}")


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """moto's S3-API server on 127.0.0.1 and a free port, for the whole test run."""
    host = "127.0.0.1"
    port = free_port(host)
    log = tmp_path_factory.mktemp("s3_server") / "server.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", host, "-p", str(port)], stdout=out, stderr=subprocess.STDOUT
        )
    try:
        _wait_until_answering(process, f"http://{host}:{port}/", log)
        yield S3Server(host, port)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def s3a_spark_settings(**updates: object) -> SparkSettings:
    """Spark settings of a JVM that reads ``s3a://``: :data:`S3A_PACKAGES` from the project's Ivy cache."""
    return SparkSettings(packages=list(S3A_PACKAGES)).model_copy(update=updates)


@pytest.fixture(scope="session")
def s3a_spark(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """The ``spark`` section of a config whose run lists ``s3a://``: local, small, with the S3A
    jars that ``python -m tests.harness.s3 --warm`` left in the Ivy cache (the test fails, naming
    that command, when they are not there: a run would otherwise download the AWS SDK)."""
    from pipelines.session import resolved_jars

    settings = s3a_spark_settings()
    if resolved_jars(settings.ivy_dir, settings.packages) is None:
        pytest.fail(
            f"the S3A jars ({', '.join(S3A_PACKAGES)}) are not in {settings.ivy_dir}: "
            "run .ci/setup --dev, or python -m tests.harness.s3 --warm"
        )
    return {
        "master": "local[2]",
        "ui_enabled": False,
        "catalog": "in-memory",
        "driver_memory": "1g",
        "packages": list(S3A_PACKAGES),
        "scratch_dir": str(tmp_path_factory.mktemp("s3a_scratch")),
    }


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m tests.harness.s3 --warm``: resolve :data:`S3A_PACKAGES` into the Ivy cache once."""
    from pipelines.session import warm

    parser = argparse.ArgumentParser(prog="python -m tests.harness.s3", description=main.__doc__)
    parser.add_argument("--warm", action="store_true", required=True, help="cache the jars of S3A_PACKAGES")
    parser.parse_args(argv)
    jars = warm(s3a_spark_settings())
    print(f"S3A jars cached: {', '.join(S3A_PACKAGES)} ({len(jars)} jars in the Ivy cache)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
