"""Framing: split a binlog file into events, track FORMAT_DESCRIPTION state, verify checksums.

File layout::

    +-------------+-------------------------------------------+---------+-----
    | fe 62 69 6e | event 0 (START_V3 or FORMAT_DESCRIPTION)  | event 1 | ...
    +-------------+-------------------------------------------+---------+-----

Each event's ``event_size`` covers its header, body and checksum, so the walk is sequential.
``log_pos`` is not identity (MariaDB 11.4+ writes 0 inside transactions): events are named
by the byte offset where they start, computed here from the bytes read.  The CRC32 (present
when the latest FORMAT_DESCRIPTION says so) covers header and body.  Memory holds one read
chunk plus the current event, whatever the file size.
"""

from __future__ import annotations

import os
import re
import zlib
from collections.abc import Callable, Iterator
from typing import BinaryIO

from binlog_core.constants import (
    BINLOG_MAGIC,
    CHECKSUM_LEN,
    GTID_EVENTS,
    LOG_EVENT_HEADER_LEN,
    MYSQL_ENCRYPTED_MAGIC,
    OLD_HEADER_LEN,
    ChecksumAlg,
    EventType,
    event_type_name,
)
from binlog_core.errors import (
    BinlogError,
    ChecksumMismatchError,
    EncryptedError,
    MalformedError,
    MissingFormatDescriptionError,
    NotABinlogError,
    TruncatedError,
)
from binlog_core.event import (
    CRC,
    HEADER,
    MAX_EVENT_SIZE,
    OLD_HEADER,
    START_V3_BODY_LEN,
    Event,
    EventHeader,
    FormatDescription,
    description_crc,
    parse_format_description,
    start_v3_description,
)
from binlog_core.payload import unpack_payload

READ_CHUNK = 1 << 20


class _Source:
    """Chunked sequential reads from a binary stream; memory stays at one chunk plus one event."""

    __slots__ = ("buf", "eof", "pos", "stream")

    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream
        self.buf = b""
        self.pos = 0
        self.eof = False

    def available(self, n: int) -> int:
        """Try to have ``n`` bytes buffered at ``pos``; return how many are (fewer only at EOF)."""
        have = len(self.buf) - self.pos
        if have >= n or self.eof:
            return have
        parts = [self.buf[self.pos :]]
        while have < n:
            chunk = self.stream.read(max(READ_CHUNK, n - have))
            if not chunk:
                self.eof = True
                break
            parts.append(chunk)
            have += len(chunk)
        self.buf = b"".join(parts)
        self.pos = 0
        return have


Describe = Callable[[bytes, int], FormatDescription]


def _not_a_binlog(magic: bytes, name: str) -> NotABinlogError:
    return NotABinlogError(f"starts with {magic.hex(' ')}, not the binlog magic fe 62 69 6e", file=name, offset=0)


def _first_description(src: _Source, name: str) -> FormatDescription:
    """Check the magic and read the first event, which says how to read the rest.

    A START_V3 first event means a v1 (13-byte headers, MySQL 3.23) or v3 file (19-byte
    headers, MySQL 4.x); the header length is told apart by the event's size.
    """
    got = src.available(4)
    magic = src.buf[src.pos : src.pos + 4]
    if magic == MYSQL_ENCRYPTED_MAGIC:
        raise EncryptedError(
            "MySQL encrypted binlog (magic fd 62 69 6e and a keyring header): "
            "decrypt it with the server's keyring first",
            file=name,
            offset=0,
        )
    if got < 4 and BINLOG_MAGIC.startswith(magic):
        raise TruncatedError(f"file ends after {got} of the 4 magic bytes", file=name, offset=0)
    if magic != BINLOG_MAGIC:
        raise _not_a_binlog(magic, name)
    src.pos += 4
    got = src.available(OLD_HEADER_LEN)
    if got < OLD_HEADER_LEN:
        raise TruncatedError(f"first event header: {got} of {OLD_HEADER_LEN}+ bytes present", file=name, offset=4)
    _when, type_code, _server_id, event_size = OLD_HEADER.unpack_from(src.buf, src.pos)
    describe: Describe
    if type_code == EventType.START_V3:
        v1 = event_size == OLD_HEADER_LEN + START_V3_BODY_LEN
        header_len, describe = (OLD_HEADER_LEN if v1 else LOG_EVENT_HEADER_LEN), start_v3_description
    elif type_code == EventType.FORMAT_DESCRIPTION:
        header_len, describe = LOG_EVENT_HEADER_LEN, parse_format_description
    else:
        raise MissingFormatDescriptionError(
            f"first event has type {type_code} ({event_type_name(type_code)}); a binlog starts with "
            "FORMAT_DESCRIPTION (v4) or START_V3 (v1/v3)",
            file=name,
            offset=4,
            event_type=event_type_name(type_code),
        )
    type_name = event_type_name(type_code)
    if event_size < header_len or event_size > MAX_EVENT_SIZE:
        raise MalformedError(f"event_size {event_size} is impossible", file=name, offset=4, event_type=type_name)
    got = src.available(event_size)
    if got < event_size:
        raise TruncatedError(
            f"event declares {event_size} bytes, the file has {got} left", file=name, offset=4, event_type=type_name
        )
    try:
        return describe(src.buf[src.pos : src.pos + event_size], header_len)
    except BinlogError as exc:
        raise exc.locate(file=name, offset=4, event_type=type_name) from None


def iter_events(
    stream: BinaryIO,
    name: str,
    *,
    start_offset: int | None = None,
    fde: FormatDescription | None = None,
    verify_checksums: bool = True,
    explode_payloads: bool = True,
) -> Iterator[Event]:
    """Yield every event of a binlog stream in file order, then stop or raise the first fatal error.

    ``name`` labels events and errors (usually the file's base name).  To continue a file
    that grew since it was last read, pass ``start_offset`` (the end of the last complete
    event) and the ``fde`` in force there; the stream must be positioned at ``start_offset``.

    Fatal errors -- not a binlog, truncated or impossible event sizes, an encrypted
    remainder, a checksum mismatch whose next event does not verify either -- are raised
    after every good event before them has been yielded.  A checksum mismatch followed by
    an event that verifies (or by the end of the file) is not fatal: the event is yielded
    with ``checksum_ok=False``, its body is not to be trusted, and
    :func:`binlog_core.event.checksum_error` names the problem.

    With ``explode_payloads`` each TRANSACTION_PAYLOAD event is followed by the events
    packed inside it, numbered by ``inner_index`` and sharing the outer event's offset.  A
    payload whose events cannot all be unpacked (it does not inflate, or an inner event runs
    past its end) is not fatal: the outer event carries the problem in ``Event.problem``
    (:func:`binlog_core.payload.unpack_payload`), the inner events before the damage follow it,
    and the walk goes on with the next event of the file.
    """
    src = _Source(stream)
    if start_offset is None or start_offset <= 4:
        desc = _first_description(src, name)
        offset = 4
    else:
        if fde is None:
            raise ValueError("resuming at an offset needs the FormatDescription in force there")
        desc, offset = fde, start_offset
    yield from _walk(src, name, offset, desc, verify_checksums, explode_payloads)


_FORMAT_DESCRIPTION = int(EventType.FORMAT_DESCRIPTION)
_START_ENCRYPTION = int(EventType.START_ENCRYPTION)
_TRANSACTION_PAYLOAD = int(EventType.TRANSACTION_PAYLOAD)
_CRC32 = int(ChecksumAlg.CRC32)


def _walk(
    src: _Source,
    name: str,
    offset: int,
    desc: FormatDescription,
    verify_checksums: bool,
    explode_payloads: bool,
) -> Iterator[Event]:
    # The hot loop: the buffer and position live in locals, synced with ``src`` only when it
    # must read more; the description's settings are re-derived only when a new one arrives.
    crc32 = zlib.crc32
    unpack_header = HEADER.unpack_from
    unpack_old = OLD_HEADER.unpack_from
    unpack_crc = CRC.unpack_from
    new_header = tuple.__new__
    header_len = desc.header_length
    old_style = header_len == OLD_HEADER_LEN
    permutation = desc.type_permutation
    checksummed = desc.checksum_alg == _CRC32
    verify = checksummed and verify_checksums
    min_size = header_len + (CHECKSUM_LEN if checksummed else 0)
    suspect: ChecksumMismatchError | None = None
    buf, pos = src.buf, src.pos
    view = memoryview(buf)
    while True:
        if pos + header_len > len(buf):
            src.pos = pos
            got = src.available(header_len)
            if got == 0:
                return  # a mismatching last event had the right size: it ends exactly at EOF
            if got < header_len:
                _raise_suspect(suspect)
                raise TruncatedError(
                    f"file ends inside an event header ({got} of {header_len} bytes)", file=name, offset=offset
                )
            buf, pos = src.buf, src.pos
            view = memoryview(buf)
        if old_style:
            when, type_code, server_id, event_size = unpack_old(buf, pos)
            header = EventHeader(when, type_code, server_id, event_size, 0, 0)
        else:
            header = new_header(EventHeader, unpack_header(buf, pos))
            type_code, event_size = header[1], header[3]
            if permutation is not None and type_code < len(permutation):
                type_code = permutation[type_code]
                header = header._replace(type_code=type_code)
        if event_size < min_size or event_size > MAX_EVENT_SIZE:
            _raise_suspect(suspect)
            raise MalformedError(
                f"event_size {event_size} is impossible (minimum {min_size})",
                file=name,
                offset=offset,
                event_type=event_type_name(type_code),
            )
        end = pos + event_size
        if end > len(buf):
            src.pos = pos
            got = src.available(event_size)
            if got < event_size:
                _raise_suspect(suspect)
                raise TruncatedError(
                    f"event declares {event_size} bytes, the file has {got} left",
                    file=name,
                    offset=offset,
                    event_type=event_type_name(type_code),
                )
            buf, pos = src.buf, src.pos
            view = memoryview(buf)
            end = pos + event_size
        if type_code == _FORMAT_DESCRIPTION and offset != 4:
            # a relay log or a re-announced description governs the events after it
            try:
                desc = parse_format_description(buf[pos:end], LOG_EVENT_HEADER_LEN)
            except BinlogError as exc:
                raise exc.locate(file=name, offset=offset, event_type="FORMAT_DESCRIPTION") from None
            checksummed = desc.checksum_alg == _CRC32
            verify = checksummed and verify_checksums
            permutation = desc.type_permutation
            min_size = header_len + (CHECKSUM_LEN if checksummed else 0)
        body_end = end - CHECKSUM_LEN if checksummed else end
        checksum_ok: bool | None = None
        if verify:
            (stored,) = unpack_crc(buf, body_end)
            if type_code == _FORMAT_DESCRIPTION:
                computed = description_crc(buf[pos:body_end])
            else:
                computed = crc32(view[pos:body_end])
            checksum_ok = computed == stored
            if checksum_ok:
                suspect = None
            else:
                _raise_suspect(suspect)
                suspect = ChecksumMismatchError(
                    f"stored CRC32 {stored:08x} != computed {computed:08x}",
                    file=name,
                    offset=offset,
                    event_type=event_type_name(type_code),
                )
        event = Event(name, offset, None, header, buf[pos + header_len : body_end], desc, checksum_ok)
        pos = end
        if type_code == _TRANSACTION_PAYLOAD and explode_payloads and checksum_ok is not False:
            # a damaged payload is a problem of this event alone: its size is known, the next
            # event can be framed
            inner, event.problem = unpack_payload(event)
            yield event
            yield from inner
        else:
            yield event
            if type_code == _START_ENCRYPTION and checksum_ok is not False:
                raise EncryptedError(
                    "MariaDB encrypted binlog: the events after START_ENCRYPTION need the server's encryption key",
                    file=name,
                    offset=offset + event_size,
                )
        offset += event_size


def _raise_suspect(suspect: ChecksumMismatchError | None) -> None:
    """A mismatch followed by a bad event means its size can't be trusted either: report the mismatch."""
    if suspect is not None:
        raise suspect


def open_events(
    path: str | os.PathLike[str],
    *,
    verify_checksums: bool = True,
    explode_payloads: bool = True,
) -> Iterator[Event]:
    """Yield the events of the binlog file at ``path`` (see :func:`iter_events`)."""
    name = os.path.basename(os.fspath(path))
    with open(path, "rb") as stream:
        yield from iter_events(stream, name, verify_checksums=verify_checksums, explode_payloads=explode_payloads)


SEARCH_CHUNK = 256 << 10
SEARCH_WINDOW = 16 << 20
"""Bytes :func:`find_transaction_start` reads past its target before it gives up."""

MAX_GTID_EVENT = 4096
"""No GTID event is larger (they are tens of bytes, tagged ones a few hundred)."""

_GTID_TYPE = re.compile(b"[" + b"".join(re.escape(bytes([int(t)])) for t in sorted(GTID_EVENTS)) + b"]")
"""A byte that could be the type code of a GTID event's header."""


def find_transaction_start(
    stream: BinaryIO, fde: FormatDescription, at: int, *, window: int = SEARCH_WINDOW
) -> int | None:
    """The offset of the first GTID event (a transaction's start) at or after ``at``, found without
    walking the file from its start; None when the ``window`` bytes from ``at`` hold none.

    ``stream`` is seekable; ``fde`` is the FORMAT_DESCRIPTION in force there, a v4 one with CRC32
    checksums (else ``ValueError``: without checksums an event start cannot be told from bytes
    inside an event).  A position counts as an event start only when the bytes there read as a
    GTID event header whose event's CRC32 verifies, and the event after it verifies too (or the
    file ends right after it): a chance match of both is about one in 2^64 positions::

        with open(path, "rb") as stream:
            cut = find_transaction_start(stream, fde, size // 2)   # where a second walk may begin
    """
    if (
        fde.checksum_alg != ChecksumAlg.CRC32
        or fde.header_length != LOG_EVENT_HEADER_LEN
        or fde.type_permutation is not None
    ):
        raise ValueError("event starts can only be found in a v4 file with CRC32 checksums")
    stream.seek(at)
    buf = b""
    search_from = 4  # where the type byte of the next candidate may be
    eof = False
    while not eof and len(buf) < window:
        chunk = stream.read(min(SEARCH_CHUNK << (len(buf) // SEARCH_CHUNK).bit_length(), window - len(buf)))
        eof = not chunk
        buf += chunk
        for match in _GTID_TYPE.finditer(buf, search_from):
            start = match.start() - 4
            verdict = _starts_events(buf, start, eof or len(buf) >= window, window)
            if verdict is None:  # more bytes needed to tell
                search_from = match.start()
                break
            if verdict:
                return at + start
        else:
            search_from = max(search_from, len(buf))
    return None


def _starts_events(buf: bytes, start: int, eof: bool, window: int) -> bool | None:
    """Whether ``buf[start:]`` starts with a checksummed GTID-sized event followed by another
    checksummed event (or the end of the file); None when ``buf`` ends too early to tell and more
    may come (up to ``window`` bytes).  An event after it too large to check within the window
    leaves the GTID event's own CRC32 to decide."""
    second = _checksummed_event_end(buf, start, eof, min(window, start + MAX_GTID_EVENT))
    if second is None or second <= 0:
        return None if second is None else False
    if second == len(buf) and eof:
        return True
    third = _checksummed_event_end(buf, second, eof, window)
    return None if third is None else third != 0


def _checksummed_event_end(buf: bytes, start: int, eof: bool, window: int) -> int | None:
    """The end of the event at ``start`` when its size is possible and its CRC32 verifies, else 0;
    -1 when it would end past ``window``; None when ``buf`` ends inside it and more may come."""
    if start + LOG_EVENT_HEADER_LEN > len(buf):
        return 0 if eof else None
    size = HEADER.unpack_from(buf, start)[3]
    if size < LOG_EVENT_HEADER_LEN + CHECKSUM_LEN or size > MAX_EVENT_SIZE:
        return 0
    end = start + size
    if end > window:
        return -1
    if end > len(buf):
        return 0 if eof else None
    stored = CRC.unpack_from(buf, end - CHECKSUM_LEN)[0]
    return end if zlib.crc32(memoryview(buf)[start : end - CHECKSUM_LEN]) == stored else 0
