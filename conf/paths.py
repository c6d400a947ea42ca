"""Paths and URIs in a configuration: what is local, and where a relative path resolves.

Pure functions, without pydantic: the query commands use them on settings served from the cache
of validated files (:mod:`conf.query`) as the models use them when validating.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

__all__ = ["absolute_path", "default_base_dir", "is_uri", "local_path_of", "project_root"]

_URI_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")


def project_root() -> Path | None:
    """The checkout this package runs from (the folder holding ``pyproject.toml``), or None."""
    candidate = Path(__file__).resolve().parent.parent
    return candidate if (candidate / "pyproject.toml").is_file() else None


def default_base_dir() -> Path:
    """Where relative paths in a config resolve: the project root, else the working directory."""
    return project_root() or Path.cwd()


def is_uri(value: str) -> bool:
    """True when ``value`` carries a URI scheme (``s3a://b/k``, ``file:/x``), not a local path."""
    return bool(_URI_SCHEME.match(value)) and not _WINDOWS_DRIVE.match(value)


def absolute_path(value: str, base_dir: str | Path | None = None) -> str:
    """``value`` with ``~`` expanded, made absolute against ``base_dir`` (default: :func:`default_base_dir`)
    and resolved (symbolic links followed); a URI is kept as written.

    >>> absolute_path("lake", "/data"), absolute_path("s3a://b/lake", "/data")
    ('/data/lake', 's3a://b/lake')
    """
    if is_uri(value):
        return value
    path = Path(value).expanduser()
    if not path.is_absolute():
        path = Path(base_dir or default_base_dir()) / path
    return str(path.resolve())


def local_path_of(value: str) -> str | None:
    """The local path ``value`` names (a path, or a ``file:`` URI), None for any other URI.

    >>> local_path_of("file:///data/lake"), local_path_of("/data/lake"), local_path_of("s3a://b/lake")
    ('/data/lake', '/data/lake', None)
    """
    if not is_uri(value):
        return value
    parts = urlsplit(value)
    if parts.scheme.lower() != "file" or parts.netloc not in ("", "localhost"):
        return None
    return unquote(parts.path)
