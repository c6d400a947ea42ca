"""Where the embedded engine finds a table by its catalog name, and how it reaches object stores.

The lakehouse layout is the pipeline's (``pipelines.storage``): the table ``<database>.<name>``
lives at ``<storage.root>/<layer>/<name>``, where the configuration names each layer's database
(``storage.<layer>_database``).  Folders whose names start with ``_`` are bookkeeping and are not
tables.  No metastore is read: a name resolves to a path, and the path to a Delta snapshot::

    lake = LakeTables(cfg.storage.root, cfg.storage.layers())
    lake.candidates("binlog_gold", "shop__orders")   # ['<root>/gold/shop__orders']

This module must not import Spark: ``binlog-lakehouse sql`` answers in a fraction of a second
only because it never loads the JVM bridge.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

from conf.paths import local_path_of

BOOKKEEPING_PREFIX = "_"
"""Folders below a layer whose names start with this are the pipeline's own bookkeeping."""

SPARK_HADOOP_PREFIX = "spark.hadoop."


class TableNotFoundError(LookupError):
    """A ``database.table`` name the lakehouse does not hold; the message says what it does hold."""


def layer_databases(layers: Mapping[str, str]) -> dict[str, tuple[str, ...]]:
    """Lower-cased database name -> the layer folders it names, in the order ``layers`` lists them.

    >>> layer_databases({"silver": "Shared", "gold": "shared", "quality": "binlog_quality"})["shared"]
    ('silver', 'gold')

    ``layers`` is each layer folder's database (``StorageSettings.layers``). Two layers may share a
    database; a table name is then looked up in each layer in turn.
    """
    found: dict[str, tuple[str, ...]] = {}
    for layer, database in layers.items():
        found[database.lower()] = (*found.get(database.lower(), ()), layer)
    return found


@dataclass(frozen=True)
class LakeTables:
    """The lakehouse's tables by catalog name, below ``storage_root``, in the databases ``layers`` names."""

    storage_root: str
    layers: Mapping[str, str]
    """Each layer folder's catalog database (``StorageSettings.layers``, ``QuerySettings.layers``)."""

    @property
    def root(self) -> str:
        """The lakehouse root, without a trailing slash."""
        return self.storage_root.rstrip("/")

    @property
    def databases(self) -> dict[str, tuple[str, ...]]:
        """Lower-cased database name -> its layer folders."""
        return layer_databases(self.layers)

    def candidates(self, database: str, name: str) -> list[str]:
        """The paths at which ``database.name`` may be stored (one per layer of the database).

        Raises ``TableNotFoundError`` for a database the configuration does not name, and for a
        bookkeeping name (``_progress``).
        """
        layers = self.databases.get(database.lower())
        if layers is None:
            known = ", ".join(sorted(self.databases))
            raise TableNotFoundError(f"{database}.{name}: no database {database} in this lakehouse (it has {known})")
        if name.startswith(BOOKKEEPING_PREFIX) or not name or "/" in name:
            raise TableNotFoundError(f"{database}.{name}: no such table")
        return [f"{self.root}/{layer}/{name.lower()}" for layer in layers]

    def local_tables(self, database: str) -> list[str] | None:
        """The table names of ``database`` found on a local root (None for an object-store root)."""
        root = local_path_of(self.root)
        if root is None:
            return None
        names: set[str] = set()
        for layer in self.databases.get(database.lower(), ()):
            folder = os.path.join(root, layer)
            if not os.path.isdir(folder):
                continue
            for entry in os.scandir(folder):
                if not entry.name.startswith(BOOKKEEPING_PREFIX) and os.path.isdir(
                    os.path.join(entry.path, "_delta_log")
                ):
                    names.add(entry.name)
        return sorted(names)

    def not_found(self, database: str, name: str) -> TableNotFoundError:
        """The error for a name none of whose candidate paths holds a Delta table."""
        held = self.local_tables(database)
        if held is None:
            where = " or ".join(self.candidates(database, name))
            return TableNotFoundError(f"{database}.{name}: no such table (no Delta table at {where})")
        listing = ", ".join(held) if held else "no tables yet"
        return TableNotFoundError(f"{database}.{name}: no such table ({database} has {listing})")


def hadoop_settings(spark_conf: Mapping[str, object]) -> dict[str, str]:
    """The Hadoop settings the configuration's ``spark.conf`` gives (``spark.hadoop.`` removed).

    >>> hadoop_settings({"spark.hadoop.fs.s3a.endpoint": "http://minio:9000", "spark.ui.port": 4041})
    {'fs.s3a.endpoint': 'http://minio:9000'}

    Settings a cluster keeps in ``core-site.xml`` are not seen here: give them in the config (or
    the environment variables delta-rs reads, ``AWS_ACCESS_KEY_ID`` ...) for the embedded engine.
    """
    return {
        key.removeprefix(SPARK_HADOOP_PREFIX): _hadoop_text(value)
        for key, value in spark_conf.items()
        if key.startswith(SPARK_HADOOP_PREFIX)
    }


def _hadoop_text(value: object) -> str:
    """A setting as Hadoop reads it (YAML booleans become ``true``/``false``)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


# delta-rs storage options from S3A settings ------------------------------------------------------

S3_SCHEMES = frozenset({"s3", "s3a", "s3n"})
_AWS_ENDPOINT = re.compile(r"^s3(?:[.-](?P<region>[a-z0-9-]+))?\.amazonaws\.com(?:\.cn)?$")
_S3A_DEFAULT_PROVIDERS = ("TemporaryAWSCredentialsProvider", "SimpleAWSCredentialsProvider", "DefaultChain")


def _bool(value: str | None, default: bool) -> bool:
    """A Hadoop boolean (``true``/``false`` in any case; anything else is the default)."""
    text = (value or "").strip().lower()
    return text == "true" if text in ("true", "false") else default


def _class_names(value: str | None) -> list[str]:
    """The simple names of a comma-separated list of Java classes."""
    return [name.rsplit(".", 1)[-1] for name in re.split(r"[\s,]+", value or "") if name]


def delta_storage_options(uri: str, hadoop: Mapping[str, str]) -> dict[str, str]:
    """delta-rs ``storage_options`` equivalent to the S3A settings ``hadoop`` holds for ``uri``'s bucket.

    The same translation as ``pipelines.storage.s3_filesystem_kwargs`` (which configures pyarrow
    for the input files), in delta-rs' keys: a per-bucket ``fs.s3a.bucket.<bucket>.<key>`` wins
    over ``fs.s3a.<key>``; ``endpoint`` (an AWS endpoint gives its region, any other becomes
    ``AWS_ENDPOINT_URL``, with ``AWS_ALLOW_HTTP`` when ``connection.ssl.enabled`` is false or the
    endpoint says ``http://``), ``endpoint.region``, ``path.style.access`` (false with a custom
    endpoint means virtual-hosted requests, as in S3A), the credential providers in S3A's order
    (keys, session token, anonymous, assumed role), and the proxy. A pure function::

        >>> delta_storage_options("s3a://lake/tables", {"fs.s3a.endpoint": "http://minio:9000",
        ...     "fs.s3a.path.style.access": "true", "fs.s3a.access.key": "AK", "fs.s3a.secret.key": "SK"})
        {'AWS_ENDPOINT_URL': 'http://minio:9000', 'AWS_ALLOW_HTTP': 'true', 'AWS_ACCESS_KEY_ID': 'AK', \
'AWS_SECRET_ACCESS_KEY': 'SK'}

    Local paths and other schemes get no options (delta-rs then reads its environment variables).
    The result holds credentials when the settings do: never log it.
    """
    parts = urlsplit(uri)
    if parts.scheme.lower() not in S3_SCHEMES or not parts.netloc:
        return {}
    bucket = parts.netloc

    def get(key: str) -> str | None:
        for name in (f"fs.s3a.bucket.{bucket}.{key}", f"fs.s3a.{key}"):
            value = hadoop.get(name)
            if value is not None and value.strip():
                return value.strip()
        return None

    options: dict[str, str] = {}
    secure = _bool(get("connection.ssl.enabled"), True)
    region = get("endpoint.region")
    endpoint = get("endpoint")
    if endpoint:
        scheme, _, host = endpoint.rpartition("://")
        scheme = scheme.lower() or ("https" if secure else "http")
        host = host.rstrip("/")
        aws = _AWS_ENDPOINT.match(host)
        if aws is not None:
            region = region or aws.group("region")
        else:
            virtual = not _bool(get("path.style.access"), False)
            # delta-rs (object_store) wants the bucket in a virtual-hosted endpoint
            options["AWS_ENDPOINT_URL"] = f"{scheme}://{bucket}.{host}" if virtual else f"{scheme}://{host}"
            if virtual:
                options["AWS_VIRTUAL_HOSTED_STYLE_REQUEST"] = "true"
            if scheme == "http":
                options["AWS_ALLOW_HTTP"] = "true"
    if region:
        options["AWS_REGION"] = region
    options.update(_s3_credentials(get))
    proxy_host = get("proxy.host")
    if proxy_host:
        proxy_scheme = "https" if _bool(get("proxy.secured"), False) else "http"
        port = get("proxy.port") or ("443" if secure else "80")
        user, password = get("proxy.username"), get("proxy.password")
        login = f"{quote(user, safe='')}:{quote(password or '', safe='')}@" if user else ""
        options["proxy_url"] = f"{proxy_scheme}://{login}{proxy_host}:{port}"
    return options


def _s3_credentials(get: Callable[[str], str | None]) -> dict[str, str]:
    """The first S3A credential provider that applies, as delta-rs options (none: its default chain)."""
    access, secret, token = get("access.key"), get("secret.key"), get("session.token")
    for provider in _class_names(get("aws.credentials.provider")) or _S3A_DEFAULT_PROVIDERS:
        if provider == "TemporaryAWSCredentialsProvider":
            if access and secret and token:
                return {"AWS_ACCESS_KEY_ID": access, "AWS_SECRET_ACCESS_KEY": secret, "AWS_SESSION_TOKEN": token}
        elif provider == "SimpleAWSCredentialsProvider":
            if access and secret:
                return {"AWS_ACCESS_KEY_ID": access, "AWS_SECRET_ACCESS_KEY": secret}
        elif provider == "AnonymousAWSCredentialsProvider":
            return {"AWS_SKIP_SIGNATURE": "true"}
        elif provider == "AssumedRoleCredentialProvider":
            role = get("assumed.role.arn")
            if role:
                session = get("assumed.role.session.name")
                return {"AWS_IAM_ROLE_ARN": role, **({"AWS_IAM_ROLE_SESSION_NAME": session} if session else {})}
        else:
            return {}
    return {}
