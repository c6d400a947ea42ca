"""The file systems Python tasks read input files and write table files with: ``pyarrow.fs``,
configured from the same Hadoop settings Spark uses (see :func:`arrow_target` for which settings
translate, and how)::

    options = hadoop_filesystem_options(spark)             # on the driver (pipelines.storage): plain data
    read = open_arrow_input("s3a://b/mysql-bin.000001", options)   # in a task
    filesystem, path = arrow_filesystem("s3a://b/lake/bronze/binlog_events", options)

Local paths and ``file:`` URIs are the local file system.  Plain data and pyarrow: no session.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import BinaryIO, cast
from urllib.parse import SplitResult, quote, urlsplit

import pyarrow as pa
from pyarrow import fs as pafs

from conf.paths import local_path_of

FILESYSTEM_KEYS = r"^fs\.(s3a|gs|azure)\."
"""The Hadoop settings (a regular expression on their names) handed to the tasks reading input files."""


class UnsupportedSchemeError(OSError):
    """An input file that Python tasks cannot open here; the message names the file and the reason.

    ``code`` is the stable name of the problem: ``UNSUPPORTED_SCHEME``.
    """

    code = "UNSUPPORTED_SCHEME"

    def __init__(self, uri: str, reason: str) -> None:
        super().__init__(f"{uri}: cannot read this file: {reason}")
        self.uri = uri
        self.reason = reason


@dataclass(frozen=True)
class ArrowTarget:
    """How a Python task reads one URI: a ``pyarrow.fs`` class name, its keyword arguments, the path in it."""

    filesystem: str
    kwargs: Mapping[str, object]
    path: str


def _hadoop_bool(value: str | None, default: bool) -> bool:
    """A Hadoop boolean setting (``true``/``false`` in any case; anything else is the default)."""
    text = (value or "").strip().lower()
    return text == "true" if text in ("true", "false") else default


def _lookup(hadoop: Mapping[str, str], *names: str) -> str | None:
    """The first of ``names`` set to a non-blank value, stripped."""
    for name in names:
        value = hadoop.get(name)
        if value is not None and value.strip():
            return value.strip()
    return None


def _class_names(value: str | None) -> list[str]:
    """The simple names of a comma-separated list of Java classes."""
    return [name.rsplit(".", 1)[-1] for name in re.split(r"[\s,]+", value or "") if name]


_AWS_ENDPOINT = re.compile(r"^s3(?:[.-](?P<region>[a-z0-9-]+))?\.amazonaws\.com(?:\.cn)?$")
_S3A_DEFAULT_PROVIDERS = ["TemporaryAWSCredentialsProvider", "SimpleAWSCredentialsProvider", "DefaultChain"]


def _s3_credentials(get: Callable[[str], str | None]) -> dict[str, object]:
    """The S3A credential providers, tried in order as S3A does, as S3FileSystem arguments.

    Providers that need keys are skipped when the keys are not set; any provider this does not
    know (environment, instance profile, web identity, a custom class) means the AWS SDK's default
    chain, which pyarrow uses when given no credentials.
    """
    access, secret, token = get("access.key"), get("secret.key"), get("session.token")
    for provider in _class_names(get("aws.credentials.provider")) or _S3A_DEFAULT_PROVIDERS:
        if provider == "TemporaryAWSCredentialsProvider":
            if access and secret and token:
                return {"access_key": access, "secret_key": secret, "session_token": token}
        elif provider == "SimpleAWSCredentialsProvider":
            if access and secret:
                return {"access_key": access, "secret_key": secret}
        elif provider == "AnonymousAWSCredentialsProvider":
            return {"anonymous": True}
        elif provider == "AssumedRoleCredentialProvider":
            role = get("assumed.role.arn")
            if role:
                session = get("assumed.role.session.name")
                return {"role_arn": role, **({"session_name": session} if session else {})}
        else:
            return {}
    return {}


def _endpoint(value: str, secure: bool) -> tuple[str, str]:
    """``(scheme, host[:port])`` of an endpoint written with or without a scheme."""
    scheme, _, host = value.rpartition("://")
    return (scheme.lower() or ("https" if secure else "http")), host.rstrip("/")


def s3_filesystem_kwargs(bucket: str, hadoop: Mapping[str, str]) -> dict[str, object]:
    """``pyarrow.fs.S3FileSystem`` arguments equivalent to the S3A settings ``hadoop`` holds for ``bucket``.

    A per-bucket setting ``fs.s3a.bucket.<bucket>.<key>`` wins over ``fs.s3a.<key>``, as in S3A.
    Translated: ``endpoint`` (an AWS endpoint gives its region; any other becomes
    ``endpoint_override``), ``endpoint.region``, ``connection.ssl.enabled``, ``path.style.access``
    (false with a custom endpoint forces virtual-host addressing, as S3A does), the credential
    providers with ``access.key``/``secret.key``/``session.token`` and ``assumed.role.arn``/
    ``assumed.role.session.name``, and ``proxy.host``/``port``/``username``/``password``/``secured``::

        >>> s3_filesystem_kwargs("b", {"fs.s3a.endpoint": "http://minio:9000", "fs.s3a.path.style.access": "true"})
        {'endpoint_override': 'minio:9000', 'scheme': 'http'}

    Secrets kept in Hadoop credential providers (JCEKS files) are not visible here: use the AWS
    default chain (environment, profile, instance or pod role) on the executors instead.
    """

    def get(key: str) -> str | None:
        return _lookup(hadoop, f"fs.s3a.bucket.{bucket}.{key}", f"fs.s3a.{key}")

    kwargs: dict[str, object] = {}
    secure = _hadoop_bool(get("connection.ssl.enabled"), True)
    region = get("endpoint.region")
    scheme = "https" if secure else "http"
    endpoint = get("endpoint")
    if endpoint:
        scheme, host = _endpoint(endpoint, secure)
        aws = _AWS_ENDPOINT.match(host)
        if aws is not None:
            region = region or aws.group("region")
        else:
            kwargs["endpoint_override"] = host
            if not _hadoop_bool(get("path.style.access"), False):
                kwargs["force_virtual_addressing"] = True
    if scheme != "https":
        kwargs["scheme"] = scheme
    if region:
        kwargs["region"] = region
    kwargs.update(_s3_credentials(get))
    proxy_host = get("proxy.host")
    if proxy_host:
        proxy_secured = _hadoop_bool(get("proxy.secured"), False)
        port = get("proxy.port") or ("443" if secure else "80")
        user, password = get("proxy.username"), get("proxy.password")
        login = f"{quote(user, safe='')}:{quote(password or '', safe='')}@" if user else ""
        kwargs["proxy_options"] = f"{'https' if proxy_secured else 'http'}://{login}{proxy_host}:{port}"
    return kwargs


_GCS_DEFAULT_ROOT = "https://storage.googleapis.com"


def gcs_filesystem_kwargs(hadoop: Mapping[str, str]) -> dict[str, object]:
    """``pyarrow.fs.GcsFileSystem`` arguments from the GCS connector's settings.

    Translated: ``fs.gs.auth.type`` (``UNAUTHENTICATED`` reads anonymously; every other type means
    Google's application-default credentials, e.g. ``GOOGLE_APPLICATION_CREDENTIALS`` on the
    executors), ``fs.gs.auth.impersonation.service.account``, ``fs.gs.project.id`` and
    ``fs.gs.storage.root.url`` (an emulator)::

        >>> gcs_filesystem_kwargs({"fs.gs.auth.type": "UNAUTHENTICATED"})
        {'anonymous': True}
    """

    def get(key: str) -> str | None:
        return _lookup(hadoop, f"fs.gs.{key}")

    kwargs: dict[str, object] = {}
    if (get("auth.type") or "").upper() == "UNAUTHENTICATED":
        kwargs["anonymous"] = True
    impersonate = get("auth.impersonation.service.account")
    if impersonate:
        kwargs["target_service_account"] = impersonate
    project = get("project.id")
    if project:
        kwargs["project_id"] = project
    root = get("storage.root.url")
    if root and root.rstrip("/") != _GCS_DEFAULT_ROOT:
        scheme, host = _endpoint(root, True)
        kwargs["endpoint_override"] = host
        if scheme != "https":
            kwargs["scheme"] = scheme
    return kwargs


_AZURE_PUBLIC_CLOUD = "core.windows.net"
_AZURE_TENANT = re.compile(r"^https://[^/]+/(?P<tenant>[^/]+)/")


def azure_filesystem_kwargs(account_host: str, secure: bool, hadoop: Mapping[str, str]) -> dict[str, object]:
    """``pyarrow.fs.AzureFileSystem`` arguments from the ABFS settings for ``account_host``.

    ``account_host`` is the host of the URI (``acct.dfs.core.windows.net``); a setting suffixed
    with it (``fs.azure.account.key.acct.dfs.core.windows.net``) wins over the plain one, as in
    ABFS. Translated by ``fs.azure.account.auth.type``: ``SharedKey`` (the default) with
    ``fs.azure.account.key``; ``SAS`` with ``fs.azure.sas.fixed.token``; ``OAuth`` with
    ``ClientCredsTokenProvider`` (``fs.azure.account.oauth2.client.id``/``client.secret``, the tenant
    read from ``client.endpoint``) or ``MsiTokenProvider`` (a managed identity, its client id if
    set); anything else, or missing secrets, means Azure's default credential. Clouds other than
    the public one (``core.chinacloudapi.cn``, ...) keep their host suffix::

        >>> azure_filesystem_kwargs("acct.dfs.core.windows.net", True, {"fs.azure.account.key": "c2VjcmV0"})
        {'account_name': 'acct', 'account_key': 'c2VjcmV0'}
    """

    def get(key: str) -> str | None:
        return _lookup(hadoop, f"fs.azure.{key}.{account_host}", f"fs.azure.{key}")

    account, _, suffix = account_host.partition(".")
    kwargs: dict[str, object] = {"account_name": account}
    cloud = suffix.partition(".")[2]  # "dfs.core.windows.net" -> "core.windows.net"
    if cloud and cloud != _AZURE_PUBLIC_CLOUD:
        kwargs["blob_storage_authority"] = f".blob.{cloud}"
        kwargs["dfs_storage_authority"] = f".dfs.{cloud}"
    if not secure:
        kwargs["blob_storage_scheme"] = kwargs["dfs_storage_scheme"] = "http"
    auth = (get("account.auth.type") or "SharedKey").lower()
    if auth == "sharedkey":
        key = get("account.key")
        if key:
            kwargs["account_key"] = key
    elif auth == "sas":
        token = get("sas.fixed.token")
        if token:
            kwargs["sas_token"] = token.lstrip("?")
    elif auth == "oauth":
        provider = _class_names(get("account.oauth.provider.type"))
        client_id = get("account.oauth2.client.id")
        if provider == ["ClientCredsTokenProvider"]:
            secret = get("account.oauth2.client.secret")
            tenant = _AZURE_TENANT.match(get("account.oauth2.client.endpoint") or "")
            if client_id and secret and tenant is not None:
                kwargs.update(tenant_id=tenant.group("tenant"), client_id=client_id, client_secret=secret)
        elif provider == ["MsiTokenProvider"] and client_id:
            kwargs["client_id"] = client_id
    return kwargs


def _s3_target(parts: SplitResult, hadoop: Mapping[str, str]) -> ArrowTarget:
    bucket = parts.netloc
    return ArrowTarget("S3FileSystem", s3_filesystem_kwargs(bucket, hadoop), f"{bucket}{parts.path}")


def _gcs_target(parts: SplitResult, hadoop: Mapping[str, str]) -> ArrowTarget:
    return ArrowTarget("GcsFileSystem", gcs_filesystem_kwargs(hadoop), f"{parts.netloc}{parts.path}")


def _azure_target(parts: SplitResult, hadoop: Mapping[str, str]) -> ArrowTarget:
    container, _, host = parts.netloc.rpartition("@")
    scheme = parts.scheme.lower()
    secure = scheme in ("abfss", "wasbs") or (
        scheme == "abfs" and _hadoop_bool(hadoop.get("fs.azure.always.use.https"), True)
    )
    return ArrowTarget("AzureFileSystem", azure_filesystem_kwargs(host, secure, hadoop), f"{container}{parts.path}")


def _hdfs_target(parts: SplitResult, hadoop: Mapping[str, str]) -> ArrowTarget:
    # no host: fs.defaultFS; no port: the configured one (0 also resolves HA nameservices)
    host = parts.netloc.rpartition("@")[2]
    if parts.port is not None:
        host = host.rpartition(":")[0]
    kwargs: dict[str, object] = {"host": host or "default", "port": parts.port or 0}
    return ArrowTarget("HadoopFileSystem", kwargs, parts.path)


_TARGETS: dict[str, Callable[[SplitResult, Mapping[str, str]], ArrowTarget]] = {
    "s3a": _s3_target,
    "s3": _s3_target,
    "s3n": _s3_target,
    "gs": _gcs_target,
    "abfs": _azure_target,
    "abfss": _azure_target,
    "wasb": _azure_target,
    "wasbs": _azure_target,
    "hdfs": _hdfs_target,
}
"""URI scheme -> its pyarrow file system (local paths and ``file:`` URIs are opened directly)."""


def arrow_target(uri: str, hadoop: Mapping[str, str]) -> ArrowTarget:
    """Which ``pyarrow.fs`` file system reads ``uri``, configured from the Hadoop settings ``hadoop``.

    ``s3a://``, ``s3://``, ``s3n://``: ``S3FileSystem`` (:func:`s3_filesystem_kwargs`); ``gs://``:
    ``GcsFileSystem`` (:func:`gcs_filesystem_kwargs`); ``abfs[s]://``, ``wasb[s]://``:
    ``AzureFileSystem`` (:func:`azure_filesystem_kwargs`); ``hdfs://``: ``HadoopFileSystem``, which
    needs libhdfs and a Hadoop client on every executor and reads their ``HADOOP_CONF_DIR``. A pure
    function: no network, no file system is built::

        >>> arrow_target("s3a://logs/db1/mysql-bin.000001", {"fs.s3a.endpoint.region": "eu-west-1"})
        ArrowTarget(filesystem='S3FileSystem', kwargs={'region': 'eu-west-1'}, path='logs/db1/mysql-bin.000001')

    Raises ``UnsupportedSchemeError`` for any other scheme.
    """
    parts = urlsplit(uri)
    target = _TARGETS.get(parts.scheme.lower())
    if target is None:
        known = ", ".join(f"{scheme}://" for scheme in _TARGETS)
        raise UnsupportedSchemeError(uri, f"Python tasks read local files and {known}, not {parts.scheme}://")
    if not parts.netloc and parts.scheme.lower() != "hdfs":
        raise UnsupportedSchemeError(uri, "the URI names no bucket or container")
    return target(parts, hadoop)


@functools.lru_cache(maxsize=64)
def _bucket_region(bucket: str) -> str | None:
    """The region of an AWS bucket, asked once per bucket and worker (None when it cannot be told)."""
    try:
        return str(pafs.resolve_s3_region(bucket))
    except OSError:
        return None  # left to the AWS SDK's region chain; a wrong one fails the read with S3's message


@functools.lru_cache(maxsize=64)
def _arrow_filesystem(name: str, kwargs: tuple[tuple[str, object], ...]) -> pafs.FileSystem:
    """One file system per class and arguments in each worker process (clients are costly to build)."""
    return cast(pafs.FileSystem, getattr(pafs, name)(**dict(kwargs)))


def arrow_filesystem(uri: str, hadoop: Mapping[str, str]) -> tuple[pafs.FileSystem, str]:
    """The ``pyarrow.fs`` file system of ``uri`` (any scheme of :func:`arrow_target`; a local path or
    ``file:`` URI: the local one) and the path in it.

    An S3 bucket outside AWS's default region is found as ``pyarrow.fs.FileSystem.from_uri`` does,
    when neither a region nor an endpoint is configured. Raises ``UnsupportedSchemeError`` when
    the installed pyarrow lacks the file system, or HDFS cannot be reached through libhdfs.
    """
    local = local_path_of(uri)
    if local is not None:
        return _arrow_filesystem("LocalFileSystem", ()), local
    target = arrow_target(uri, hadoop)
    if getattr(pafs, target.filesystem, None) is None:
        raise UnsupportedSchemeError(uri, f"pyarrow {pa.__version__} has no pyarrow.fs.{target.filesystem}")
    kwargs = dict(target.kwargs)
    if target.filesystem == "S3FileSystem" and "region" not in kwargs and "endpoint_override" not in kwargs:
        region = _bucket_region(target.path.partition("/")[0])
        if region is not None:
            kwargs["region"] = region
    try:
        filesystem = _arrow_filesystem(target.filesystem, tuple(sorted(kwargs.items())))
    except OSError as exc:
        if target.filesystem != "HadoopFileSystem":
            raise
        first_line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise UnsupportedSchemeError(
            uri,
            "pyarrow.fs.HadoopFileSystem needs a JVM (JAVA_HOME), libhdfs (HADOOP_HOME or ARROW_LIBHDFS_DIR) "
            f"and the Hadoop jars (CLASSPATH=$(hadoop classpath --glob)) on every executor: {first_line}",
        ) from exc
    return filesystem, target.path


def open_arrow_input(uri: str, hadoop: Mapping[str, str], *, random_access: bool = False) -> Callable[[], BinaryIO]:
    """A function opening ``uri`` (any scheme of :func:`arrow_target`) as a binary stream (a
    seekable file with ``random_access``); see :func:`arrow_filesystem`."""
    filesystem, path = arrow_filesystem(uri, hadoop)
    if random_access:
        return lambda: cast(BinaryIO, filesystem.open_input_file(path))
    return lambda: cast(BinaryIO, filesystem.open_input_stream(path))


__all__ = [
    "FILESYSTEM_KEYS",
    "ArrowTarget",
    "UnsupportedSchemeError",
    "arrow_filesystem",
    "arrow_target",
    "azure_filesystem_kwargs",
    "gcs_filesystem_kwargs",
    "open_arrow_input",
    "s3_filesystem_kwargs",
]
