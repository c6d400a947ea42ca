"""MariaDB's compressed event payloads (``log_bin_compress=ON``, MariaDB 10.2+).

QUERY_COMPRESSED (165) stores its statement this way, and the six compressed rows events
(166-171) store everything after the post-header and the column bitmaps this way.  Layout
(``# orig: binlog_buf_compress``, ``binlog_get_uncompress_len``, ``binlog_buf_uncompress``
in MariaDB ``sql/log_event.cc``)::

    +--------+---------------------------+---------------------------+
    | header | uncompressed length       | zlib stream (RFC 1950)    |
    | u8     | 1-4 bytes, big-endian     | to the end of the payload |
    +--------+---------------------------+---------------------------+

    header  bit 7      1 = compressed (always set)
            bits 4-6   algorithm: 0 = zlib, nothing else is defined
            bit 3      0 (the server writes 0 and reads only bits 0-2)
            bits 0-2   number of bytes of the uncompressed length, 1..4

https://github.com/MariaDB/server/blob/11.4/sql/log_event.cc
"""

from __future__ import annotations

import zlib
from enum import IntEnum
from typing import Final

from binlog_core.cursor import Cursor
from binlog_core.errors import DecompressionError, TruncatedError

COMPRESSED_FLAG: Final = 0x80
ALGORITHM_MASK: Final = 0x70
RESERVED_BIT: Final = 0x08
LEN_BYTES_MASK: Final = 0x07

MAX_INFLATED_SIZE: Final = 1 << 30
"""Largest uncompressed payload accepted: an event never exceeds ``max_allowed_packet`` (1 GiB)."""

ZLIB_MAX_RATIO: Final = 1032
"""zlib's deflate cannot expand data by more than about 1032:1 (RFC 1951 block limits)."""


class CompressionAlgorithm(IntEnum):
    """Bits 4-6 of the header byte (``# orig: alg`` in ``binlog_buf_uncompress``)."""

    ZLIB = 0


def inflate_mariadb(data: bytes, *, limit: int = MAX_INFLATED_SIZE) -> bytes:
    """Inflate one MariaDB compressed payload (header, length, zlib stream) to its original bytes.

    The declared length is checked against ``limit`` and against what the compressed bytes
    could possibly hold before anything is allocated; the result must have exactly that length.

    >>> import zlib
    >>> inflate_mariadb(bytes([0x81, 5]) + zlib.compress(b"hello"))
    b'hello'
    """
    c = Cursor(data)
    header = c.u8("compression header")
    if not header & COMPRESSED_FLAG:
        raise DecompressionError(f"compression header 0x{header:02x} lacks the compressed flag (bit 7)")
    algorithm = (header & ALGORITHM_MASK) >> 4
    if algorithm != CompressionAlgorithm.ZLIB:
        raise DecompressionError(f"compression algorithm {algorithm} (only 0 = zlib is defined)")
    if header & RESERVED_BIT:
        raise DecompressionError(f"compression header 0x{header:02x} sets reserved bit 3")
    len_bytes = header & LEN_BYTES_MASK
    if not 1 <= len_bytes <= 4:
        raise DecompressionError(f"compression header 0x{header:02x}: {len_bytes} length bytes (1..4 allowed)")
    declared = int.from_bytes(c.take(len_bytes, "uncompressed length"), "big")
    if declared == 0:
        raise DecompressionError("uncompressed length 0 (the server never compresses an empty payload)")
    if declared > limit:
        raise DecompressionError(f"uncompressed length {declared} exceeds the limit of {limit} bytes")
    stream = c.rest()
    if declared > len(stream) * ZLIB_MAX_RATIO + 64:
        raise DecompressionError(f"{len(stream)} compressed bytes cannot inflate to the declared {declared} bytes")
    inflater = zlib.decompressobj()
    try:
        out = inflater.decompress(stream, declared + 1)
    except zlib.error as exc:
        raise DecompressionError(f"zlib: {exc}") from None
    if len(out) > declared:
        raise DecompressionError(f"zlib stream inflates past the declared {declared} bytes")
    if not inflater.eof:
        raise TruncatedError(f"zlib stream ends early: {len(out)} of {declared} bytes inflated, no end marker")
    if inflater.unused_data:
        raise DecompressionError(f"{len(inflater.unused_data)} bytes after the end of the zlib stream")
    if len(out) != declared:
        raise DecompressionError(f"zlib stream inflated to {len(out)} bytes, the header declares {declared}")
    return out


def deflate_mariadb(data: bytes) -> bytes:
    """Compress ``data`` the way the server does (the inverse of :func:`inflate_mariadb`; for tests).

    >>> inflate_mariadb(deflate_mariadb(b"x" * 300)) == b"x" * 300
    True
    """
    if not 0 < len(data) < 1 << 32:
        raise ValueError("MariaDB compresses payloads of 1 byte to 4 GiB - 1")
    len_bytes = (len(data).bit_length() + 7) // 8
    return bytes((COMPRESSED_FLAG | len_bytes,)) + len(data).to_bytes(len_bytes, "big") + zlib.compress(data)
