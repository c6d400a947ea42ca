"""Small helpers shared by the event decoders: names, post-header lengths, trailing bytes."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeAlias

from binlog_core.cursor import Cursor
from binlog_core.errors import MalformedError
from binlog_core.event import Event

EventBody: TypeAlias = object
"""A decoded event body: a frozen dataclass of JSON-friendly fields (see the per-family modules)."""

Decoder: TypeAlias = Callable[[Event], EventBody]
"""Decodes the body of one event type."""


def name_text(raw: bytes) -> str:
    """An identifier (schema, file, user, variable name): UTF-8, or Latin-1 when it is not UTF-8.

    The server stores identifiers in its system charset (utf8mb3); the Latin-1 fallback keeps
    every byte of anything else, one character per byte, so the value stays a string.
    """
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def uuid_text(raw: bytes) -> str:
    """16 bytes as a lower-case RFC 4122 string, the way MySQL prints a server UUID."""
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def body_cursor(event: Event, default_post_header: int = 0) -> tuple[Cursor, int]:
    """A cursor over the body and the post-header length the file declares for this type.

    ``default_post_header`` applies when the description lists 0 for the type (MySQL 8.0+
    descriptions list 0 for the retired LOAD DATA events).
    """
    return Cursor(event.body), event.fde.post_header_len(event.type_code) or default_post_header


def expect_end(c: Cursor, what: str) -> None:
    """Fixed layouts end where the server stops writing: any byte left over is malformed."""
    if not c.at_end():
        raise MalformedError(f"{c.remaining} unexpected bytes after {what}")


def skip_post_header_rest(c: Cursor, start: int, post_header_len: int, what: str) -> None:
    """Move to the end of a post-header that may be longer than the fields this decoder reads."""
    consumed = c.pos - start
    if post_header_len > consumed:
        c.skip(post_header_len - consumed, f"{what} post-header")
