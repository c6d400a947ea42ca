"""Rows events: their header, and the row images decoded with a plan made once per TABLE_MAP.

Layout (``# orig: Rows_log_event``; v0 = 5.1 development trees, v1 = 5.1-5.5 and MariaDB,
v2 = MySQL 5.6+)::

    post-header  table_id u48 (u32 when the post-header length is 6) | flags u16 |
                 [v2: len_extra u16 (counts itself) | extra row info { tag u8 | ... }]
    body         num_columns packed | columns_present bitmap[(num_columns + 7) / 8] |
                 [UPDATE/PARTIAL_UPDATE: columns_present_after bitmap] |
                 rows: { image } for WRITE/DELETE, { before image | after image } for UPDATE

    image        null bitmap[(present columns + 7) / 8] | value of each present non-NULL column
    PARTIAL_UPDATE_ROWS: before image | value_options packed | [partial bits[(JSON columns of the
                         table + 7) / 8]] | after image, partial JSON columns holding diffs

Bitmaps are least significant bit first.  MariaDB's compressed rows events (166-171) store
the rows part (after the bitmaps) zlib-compressed (:mod:`binlog_core.compression`).

The hot loop: a :class:`TablePlan` binds one :class:`~binlog_core.columns.ColumnCodec` per
column when the TABLE_MAP arrives.  For each set of present columns an :class:`ImageDecoder`
compiles, per null-bitmap pattern, one straight-line function that unpacks runs of
fixed-width columns with a single precompiled ``Struct`` and inlines length-prefixed strings.
The interpreter (:meth:`ImageDecoder.interpret`) walks the same codecs one by one; it is the
reference, and it re-reads any row the compiled function fails on, so errors name the row and
column and undecodable text becomes bytes with a warning.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import IntEnum
from struct import Struct

from binlog_core.charsets import describe_collation, utf8_decode
from binlog_core.columns import ABSENT, ColumnCodec, DecodeOptions, codec_for
from binlog_core.compression import inflate_mariadb
from binlog_core.constants import ColumnType, EventType, Flavor
from binlog_core.cursor import Cursor
from binlog_core.errors import (
    BinlogError,
    CharsetWarning,
    MalformedError,
    TruncatedError,
    UnsupportedError,
    as_event_problem,
)
from binlog_core.event import FormatDescription
from binlog_core.json_binary import JsonDiff, decode_json_diff
from binlog_core.table_map import TableMap


class RowsFlag(IntEnum):
    """Rows event flags (``# orig: Rows_event::enum_flag``)."""

    STMT_END = 0x1
    NO_FOREIGN_KEY_CHECKS = 0x2
    RELAXED_UNIQUE_CHECKS = 0x4
    COMPLETE_ROWS = 0x8


class ExtraTag(IntEnum):
    """v2 extra row info tags (``# orig: enum_extra_row_info_typecode``)."""

    NDB = 0
    PART = 1


@dataclass(frozen=True, slots=True)
class RowsKind:
    """What a rows event type means: the operation, format version, and how it is stored."""

    op: str  # insert | update | delete
    version: int  # 0 pre-GA, 1, 2
    compressed: bool = False
    partial: bool = False

    @property
    def has_after_bitmap(self) -> bool:
        """UPDATE v1/v2 carry a second columns-present bitmap for the after image."""
        return self.op == "update" and self.version > 0


ROWS_KINDS: dict[int, RowsKind] = {
    EventType.WRITE_ROWS_V0: RowsKind("insert", 0),
    EventType.UPDATE_ROWS_V0: RowsKind("update", 0),
    EventType.DELETE_ROWS_V0: RowsKind("delete", 0),
    EventType.WRITE_ROWS_V1: RowsKind("insert", 1),
    EventType.UPDATE_ROWS_V1: RowsKind("update", 1),
    EventType.DELETE_ROWS_V1: RowsKind("delete", 1),
    EventType.WRITE_ROWS: RowsKind("insert", 2),
    EventType.UPDATE_ROWS: RowsKind("update", 2),
    EventType.DELETE_ROWS: RowsKind("delete", 2),
    EventType.PARTIAL_UPDATE_ROWS: RowsKind("update", 2, partial=True),
    EventType.WRITE_ROWS_COMPRESSED_V1: RowsKind("insert", 1, compressed=True),
    EventType.UPDATE_ROWS_COMPRESSED_V1: RowsKind("update", 1, compressed=True),
    EventType.DELETE_ROWS_COMPRESSED_V1: RowsKind("delete", 1, compressed=True),
    EventType.WRITE_ROWS_COMPRESSED: RowsKind("insert", 2, compressed=True),
    EventType.UPDATE_ROWS_COMPRESSED: RowsKind("update", 2, compressed=True),
    EventType.DELETE_ROWS_COMPRESSED: RowsKind("delete", 2, compressed=True),
}
"""Every rows event type and what it means."""


@dataclass(frozen=True, slots=True)
class ExtraRowInfo:
    """One v2 extra-row-info chunk: NDB info bytes, or partition ids."""

    tag: int
    ndb_info: bytes | None = None
    partition_id: int | None = None
    source_partition_id: int | None = None


@dataclass(frozen=True, slots=True)
class RowsEvent:
    """A rows event's header; ``data[rows_at:]`` holds the row images (decompressed if need be)."""

    type_code: int
    kind: RowsKind
    table_id: int
    flags: int
    extra: tuple[ExtraRowInfo, ...]
    num_columns: int
    present_before: bytes
    present_after: bytes
    data: bytes = field(repr=False)
    rows_at: int

    @property
    def statement_end(self) -> bool:
        """The last rows event of its statement: the table maps before it go out of force."""
        return bool(self.flags & RowsFlag.STMT_END)


def _extra_info(c: Cursor, op: str) -> tuple[ExtraRowInfo, ...]:
    """v2 extra row info: ``{ tag | NDB: len u8 (counts itself and the format byte) ... |
    PART: partition u16 [source partition u16 for updates] }``."""
    out: list[ExtraRowInfo] = []
    while not c.at_end():
        tag = c.u8("extra row info tag")
        if tag == ExtraTag.NDB:
            length = c.u8("NDB info length")
            if length < 2:
                raise MalformedError(f"NDB extra row info length {length} (at least 2)")
            out.append(ExtraRowInfo(tag, ndb_info=bytes((length,)) + c.take(length - 1, "NDB info")))
        elif tag == ExtraTag.PART:
            part = c.u16("partition id")
            source = c.u16("source partition id") if op == "update" else None
            out.append(ExtraRowInfo(tag, partition_id=part, source_partition_id=source))
        else:
            raise MalformedError(f"invalid extra row info tag {tag}")
    return tuple(out)


_FAST_HEADER: dict[int, tuple[RowsKind, int, bool]] = {
    code: (kind, kind.version, kind.has_after_bitmap)
    for code, kind in ROWS_KINDS.items()
    if kind.version and not kind.compressed
}
"""Rows event types the header fast path reads: kind, version, second bitmap."""

_ID_FLAGS = Struct("<IHH")
"""table_id u48 as low u32 and high u16, then flags u16: the common v1/v2 post-header."""


def decode_rows_header(body: bytes, type_code: int, fde: FormatDescription) -> RowsEvent:
    """Decode a rows event's header (its rows stay bytes until a table plan reads them)."""
    # fast path for the usual shapes: 6-byte table id, no v2 extra row info, fewer than 251
    # columns, uncompressed; anything else (and any short body) takes the general reader below
    fast = _FAST_HEADER.get(type_code)
    if fast is not None and len(body) > 12 and fde.post_header_len(type_code) != 6:
        kind, version, has_after_bitmap = fast
        low, high, flags = _ID_FLAGS.unpack_from(body, 0)
        pos = 8
        if version == 2:
            if body[8] != 2 or body[9] != 0:
                return _decode_rows_header(body, type_code, kind, fde)
            pos = 10
        num_columns = body[pos]
        if 0 < num_columns < 251:
            nbytes = (num_columns + 7) >> 3
            pos += 1
            rows_at = pos + nbytes
            before = body[pos:rows_at]
            if has_after_bitmap:
                after = body[rows_at : rows_at + nbytes]
                rows_at += nbytes
            else:
                after = before
            if rows_at <= len(body):
                return RowsEvent(
                    type_code, kind, high << 32 | low, flags, (), num_columns, before, after, body, rows_at
                )
    return _decode_rows_header(body, type_code, ROWS_KINDS[type_code], fde)


def _decode_rows_header(body: bytes, type_code: int, kind: RowsKind, fde: FormatDescription) -> RowsEvent:
    """The general reader of a rows event's header, checking every field."""
    c = Cursor(body)
    post_header = fde.post_header_len(type_code)
    table_id = c.uint(4 if post_header == 6 else 6, "table_id")
    flags = c.u16("flags")
    extra: tuple[ExtraRowInfo, ...] = ()
    if kind.version == 2:
        len_extra = c.u16("len_extra")
        if len_extra < 2:
            raise MalformedError(f"extra data length {len_extra} (it counts its own 2 bytes)")
        extra = _extra_info(c.sized(len_extra - 2, "extra row info"), kind.op)
    num_columns = c.packed_int("num_columns")
    if num_columns == 0:
        raise MalformedError("rows event with 0 columns")
    nbytes = (num_columns + 7) // 8
    before = c.take(nbytes, "columns_present")
    after = c.take(nbytes, "columns_present_after") if kind.has_after_bitmap else before
    if kind.compressed:
        # MariaDB compresses the row images only (``# orig: Rows_log_event::uncompress_buf``)
        return RowsEvent(
            type_code, kind, table_id, flags, extra, num_columns, before, after, inflate_mariadb(c.rest()), 0
        )
    return RowsEvent(type_code, kind, table_id, flags, extra, num_columns, before, after, body, c.pos)


class UndecodedText(bytes):
    """Text whose bytes are invalid in the column's charset (or have no codec): kept as bytes."""

    __slots__ = ()


def _kept_as_bytes(raw: bytes, codec: ColumnCodec, problems: list[BinlogError]) -> UndecodedText:
    """Text that did not decode, as :class:`UndecodedText`, with a warning unless bytes were asked for.

    Its charset is the column's when the file names one, else the default charset
    (``DecodeOptions.default_charset``); with no default, text stays bytes by request: no warning.
    """
    column = codec.column
    if column.collation is not None:
        charset = describe_collation(column.collation)
    elif codec.default_charset is not None:
        charset = f"{codec.default_charset}, the default charset (the file names none for the column: it may be binary)"
    else:
        return UndecodedText(raw)
    problems.append(
        CharsetWarning(
            f"bytes not decodable as {charset}; kept as bytes",
            path=(f"col {column.index + 1} {column.display_name}",),
        )
    )
    return UndecodedText(raw)


@dataclass(frozen=True, slots=True)
class JsonPartialUpdate:
    """A JSON column of a PARTIAL_UPDATE_ROWS after image: the diffs, not the document."""

    diffs: tuple[JsonDiff, ...]


Row = tuple[object, ...]
"""One image: a value per table column; ``None`` is NULL, ``ABSENT`` not in the image."""

_COMPILE_LIMIT = 64
"""Null-bitmap patterns compiled per image layout; rarer patterns run in the interpreter."""


class _Fallback(Exception):
    """Raised by compiled row functions; the interpreter re-reads the row and explains."""


_COMPILED_ERRORS = (_Fallback, struct.error, IndexError, UnicodeDecodeError, BinlogError)
"""What a compiled row function may raise; the interpreter then re-reads the row and explains."""


class ImageDecoder:
    """Decodes row images of one table plan with one set of present columns."""

    __slots__ = ("codecs", "compiled", "nbytes", "num_columns", "present")

    def __init__(self, codecs: list[ColumnCodec | BinlogError], present: list[int], num_columns: int) -> None:
        self.present = present
        self.num_columns = num_columns
        self.nbytes = (len(present) + 7) // 8
        self.codecs = codecs
        self.compiled: dict[bytes, Callable[[bytes, int], tuple[Row, int]]] = {}

    def decode(self, buf: bytes, pos: int, problems: list[BinlogError]) -> tuple[Row, int]:
        """One image at ``pos``: (values, position after it)."""
        nulls = buf[pos : pos + self.nbytes]
        fn = self.compiled.get(nulls)
        if fn is None and len(self.compiled) < _COMPILE_LIMIT and len(nulls) == self.nbytes:
            fn = self.compiled[nulls] = self._compile(nulls)
        if fn is not None:
            try:
                return fn(buf, pos + self.nbytes)
            except _COMPILED_ERRORS:
                pass
        return self.interpret(buf, pos, problems)

    def interpret(self, buf: bytes, pos: int, problems: list[BinlogError]) -> tuple[Row, int]:
        """The reference reader: one codec at a time, errors naming the column."""
        if pos + self.nbytes > len(buf):
            raise TruncatedError(f"null bitmap needs {self.nbytes} bytes, {len(buf) - pos} remain")
        nulls = buf[pos : pos + self.nbytes]
        pos += self.nbytes
        out: list[object] = [ABSENT] * self.num_columns
        for bit, index in enumerate(self.present):
            if nulls[bit >> 3] >> (bit & 7) & 1:
                out[index] = None
                continue
            codec = self.codecs[index]
            if isinstance(codec, BinlogError):
                raise codec.copy()
            try:
                value, pos = codec.read(buf, pos)
            except BinlogError as exc:
                raise exc.within(f"col {index + 1} {codec.column.display_name}") from None
            except (struct.error, IndexError, ValueError, OverflowError) as exc:
                raise MalformedError(str(exc), path=(f"col {index + 1} {codec.column.display_name}",)) from None
            if value.__class__ is bytes and codec.inline is not None and codec.inline[0] == "text":
                value = _kept_as_bytes(value, codec, problems)
            out[index] = value
        return tuple(out), pos

    def _compile(self, nulls: bytes) -> Callable[[bytes, int], tuple[Row, int]]:
        """Straight-line code for one null pattern: struct runs, inlined strings, reader calls."""
        env: dict[str, object] = {"ABSENT": ABSENT, "Fallback": _Fallback, "U32": Struct("<I").unpack_from}
        body: list[str] = []
        names = ["ABSENT"] * self.num_columns
        run: list[tuple[int, str]] = []

        converted: list[int] = []  # columns of the run cut out as raw bytes, converted after it

        def flush() -> None:
            if not run:
                return
            s = Struct("<" + "".join(code for _, code in run))
            key = f"S{len(env)}"
            env[key] = s.unpack_from
            targets = ", ".join(f"r{i}" if i in converted else f"v{i}" for i, _ in run)
            body.append(f"    {targets}, = {key}(buf, pos)")
            body.append(f"    pos += {s.size}")
            for i in converted:
                env[f"C{i}"] = self.codecs[i].convert  # type: ignore[union-attr]
                body.append(f"    v{i} = C{i}(r{i})")
            run.clear()
            converted.clear()

        for bit, index in enumerate(self.present):
            if nulls[bit >> 3] >> (bit & 7) & 1:
                names[index] = "None"
                continue
            codec = self.codecs[index]
            if isinstance(codec, BinlogError):
                body.append("    raise Fallback")
                break
            names[index] = f"v{index}"
            if codec.fmt is not None:
                run.append((index, codec.fmt))
                continue
            if codec.convert is not None and codec.size:
                run.append((index, f"{codec.size}s"))
                converted.append(index)
                continue
            flush()
            if codec.inline is None:
                env[f"R{index}"] = codec.read
                body.append(f"    v{index}, pos = R{index}(buf, pos)")
                continue
            _kind, prefix, convert = codec.inline
            body.append(_LENGTH_CODE[prefix])
            body.append("    e = pos + n")
            body.append("    if e > blen: raise Fallback")
            if convert is None and _kind == "text":  # text kept as bytes by request, as interpret keeps it
                env["Undecoded"] = UndecodedText
                body.append(f"    v{index} = Undecoded(buf[pos:e])")
            elif convert is None:
                body.append(f"    v{index} = buf[pos:e]")
            elif convert is utf8_decode:
                body.append(f"    v{index} = buf[pos:e].decode()")
            else:
                env[f"C{index}"] = convert
                body.append(f"    v{index} = C{index}(buf[pos:e])")
                if _kind == "text":  # undecodable text comes back as bytes: let the interpreter warn
                    body.append(f"    if v{index}.__class__ is bytes: raise Fallback")
            body.append("    pos = e")
        flush()
        body.append(f"    return ({', '.join(names)},), pos")
        if any("blen" in line for line in body):
            body.insert(0, "    blen = len(buf)")
        source = "def row(buf, pos):\n" + "\n".join(body) + "\n"
        exec(compile(source, f"<row image {len(self.compiled)}>", "exec"), env)
        return env["row"]  # type: ignore[return-value]


_LENGTH_CODE = {
    1: "    n = buf[pos]; pos += 1",
    2: "    n = buf[pos] | buf[pos + 1] << 8; pos += 2",
    3: "    n = buf[pos] | buf[pos + 1] << 8 | buf[pos + 2] << 16; pos += 3",
    4: "    n = U32(buf, pos)[0]; pos += 4",
}


def present_columns(bitmap: bytes, num_columns: int) -> list[int]:
    """Indexes of the set bits of a columns-present bitmap (LSB first)."""
    return [i for i in range(num_columns) if bitmap[i >> 3] >> (i & 7) & 1]


class TablePlan:
    """Codecs for every column of one TABLE_MAP, and image decoders per present-column set."""

    __slots__ = ("codecs", "images", "json_columns", "table_map", "unsized_temporal")

    def __init__(self, table_map: TableMap, options: DecodeOptions, fde: FormatDescription) -> None:
        self.table_map = table_map
        # MariaDB 5.3-10.0 logged TIME/DATETIME/TIMESTAMP(n) with their old type codes and no
        # precision: the value's size is not in the file
        self.unsized_temporal = (
            fde.flavor == Flavor.MARIADB
            and fde.version < (10, 1, 0)
            and any(c.type in _OLD_TEMPORAL for c in table_map.columns)
        )
        codecs: list[ColumnCodec | BinlogError] = []
        for column in table_map.columns:
            try:
                codecs.append(codec_for(column, options, fde.flavor))
            except BinlogError as exc:
                codecs.append(exc)  # raised (as a fresh copy each time) only if a row holds this column
        self.codecs = codecs
        self.json_columns = [c.index for c in table_map.columns if c.type == ColumnType.JSON]
        self.images: dict[tuple[bytes, int], ImageDecoder] = {}

    def image(self, bitmap: bytes, num_columns: int) -> ImageDecoder:
        """The decoder for images holding the columns of ``bitmap``."""
        width = len(self.codecs)
        if num_columns > width:
            raise MalformedError(f"rows event has {num_columns} columns, its TABLE_MAP {width}")
        key = (bitmap, num_columns)
        decoder = self.images.get(key)
        if decoder is None:
            decoder = self.images[key] = ImageDecoder(self.codecs, present_columns(bitmap, num_columns), width)
        return decoder


RowPair = tuple[Row | None, Row | None]

_OLD_TEMPORAL = frozenset({ColumnType.TIME, ColumnType.DATETIME, ColumnType.TIMESTAMP})


def decode_rows(event: RowsEvent, plan: TablePlan, problems: list[BinlogError]) -> list[RowPair]:
    """Every row of a rows event that can be read, as (before, after) images; the absent side is ``None``.

    Rows are framed one after the other, so a row that cannot be read ends the event's rows:
    the rows before it are returned, and its error (path ``row N -> col M name``) is appended
    to ``problems`` as a problem of the whole event -- a value running past the event's end is
    MALFORMED, as :func:`~binlog_core.errors.as_event_problem` says.  Warnings (text kept as
    bytes) are appended too, and the rows they concern are returned.

    The one exception: a table whose TIME/DATETIME/TIMESTAMP columns MariaDB < 10.1 logged
    without their precision is read as precision 0; when a row does not read so, no row of the
    event is returned (the ones before were read at a guessed width) and the problem is
    UNSUPPORTED.
    """
    rows: list[RowPair] = []
    try:
        _decode_rows(event, plan, problems, rows)
    except BinlogError as exc:
        if plan.unsized_temporal and isinstance(exc, (TruncatedError, MalformedError)):
            rows.clear()
            exc = UnsupportedError(
                "the table has TIME/DATETIME/TIMESTAMP columns logged by MariaDB before 10.1 without their "
                f"fractional precision, and its rows do not read as precision 0 ({exc.message})",
                path=exc.path,
            )
        problems.append(as_event_problem(exc))
    return rows


def _decode_rows(event: RowsEvent, plan: TablePlan, problems: list[BinlogError], rows: list[RowPair]) -> None:
    """Append each row to ``rows`` as it is read; raise the first error (naming its row)."""
    data, pos, end = event.data, event.rows_at, len(event.data)
    if event.kind.version == 0:
        _decode_v0(event, plan, problems, rows)
        return
    if event.kind.partial:
        _decode_partial(event, plan, problems, rows)
        return
    first = plan.image(event.present_before, event.num_columns)
    second = plan.image(event.present_after, event.num_columns) if event.kind.op == "update" else None
    if pos < end and not first.nbytes and (second is None or not second.nbytes):
        # images of no columns have no bytes, not even a null bitmap: the rows cannot advance
        raise MalformedError(f"{end - pos} bytes of rows follow, but the columns-present bitmaps name no column")
    op = event.kind.op
    append = rows.append
    # ImageDecoder.decode inlined: look the null bitmap's compiled function up, run it, and let
    # the decoder (compiling a new pattern, or interpreting) handle everything else
    compiled, nbytes, decode_first = first.compiled, first.nbytes, first.decode
    try:
        if second is None:
            while pos < end:
                fn = compiled.get(data[pos : pos + nbytes])
                image: Row | None = None
                if fn is not None:
                    try:  # noqa: SIM105 -- contextlib.suppress costs a call per image
                        image, pos = fn(data, pos + nbytes)
                    except _COMPILED_ERRORS:
                        pass
                if image is None:
                    image, pos = decode_first(data, pos, problems)
                append((None, image) if op == "insert" else (image, None))
        else:
            compiled2, nbytes2, decode_second = second.compiled, second.nbytes, second.decode
            while pos < end:
                fn = compiled.get(data[pos : pos + nbytes])
                before: Row | None = None
                if fn is not None:
                    try:  # noqa: SIM105 -- contextlib.suppress costs a call per image
                        before, pos = fn(data, pos + nbytes)
                    except _COMPILED_ERRORS:
                        pass
                if before is None:
                    before, pos = decode_first(data, pos, problems)
                fn = compiled2.get(data[pos : pos + nbytes2])
                after: Row | None = None
                if fn is not None:
                    try:  # noqa: SIM105 -- contextlib.suppress costs a call per image
                        after, pos = fn(data, pos + nbytes2)
                    except _COMPILED_ERRORS:
                        pass
                if after is None:
                    after, pos = decode_second(data, pos, problems)
                append((before, after))
    except BinlogError as exc:
        raise exc.within(f"row {len(rows)}") from None


def _decode_v0(event: RowsEvent, plan: TablePlan, problems: list[BinlogError], rows: list[RowPair]) -> None:
    """Pre-GA rows events (MySQL 5.1.0-5.1.17 and 5.1/5.2 development trees).

    Their images are the table's record null bytes followed by every column of the
    columns-present bitmap, NULL or not (``# orig: pack_row_old``)::

        null bytes[(1 + nullable columns + 7) / 8]: bit 0 is the record's X bit (always 1),
            then one bit per nullable column of the table in order, unused bits 1
        value of each present column (also when NULL)

    BIT columns keep their odd bits in the null bytes, in a layout the file does not
    describe: such tables are reported unsupported rather than guessed at.
    """
    columns = plan.table_map.columns
    if any(c.type == ColumnType.BIT for c in columns):
        raise UnsupportedError("pre-GA rows event on a table with BIT columns (their bits live in the null bytes)")
    null_bit = {c.index: 1 + k for k, c in enumerate(c for c in columns if c.nullable)}
    used_bits = 1 + len(null_bit)
    nbytes = (used_bits + 7) // 8
    unused_mask = ((1 << (nbytes * 8)) - 1) ^ ((1 << used_bits) - 1)
    present = plan.image(event.present_before, event.num_columns).present
    data, pos, end = event.data, event.rows_at, len(event.data)

    def image() -> Row:
        nonlocal pos
        c = Cursor(data, pos)
        nulls = int.from_bytes(c.take(nbytes, "record null bytes"), "little")
        if not nulls & 1 or nulls & unused_mask != unused_mask:
            raise MalformedError(f"record null bytes {nulls:#x} lack the X bit or the unused bits")
        pos = c.pos
        out: list[object] = [ABSENT] * len(columns)
        for index in present:
            codec = plan.codecs[index]
            if isinstance(codec, BinlogError):
                raise codec.copy()
            try:
                value, pos = codec.read(data, pos)
            except BinlogError as exc:
                raise exc.within(f"col {index + 1} {codec.column.display_name}") from None
            bit = null_bit.get(index)
            if bit is not None and nulls >> bit & 1:
                out[index] = None
                continue
            if value.__class__ is bytes and codec.inline is not None and codec.inline[0] == "text":
                value = _kept_as_bytes(value, codec, problems)
            out[index] = value
        return tuple(out)

    try:
        while pos < end:
            if event.kind.op == "insert":
                rows.append((None, image()))
            elif event.kind.op == "delete":
                rows.append((image(), None))
            else:
                before = image()
                rows.append((before, image()))
    except BinlogError as exc:
        raise exc.within(f"row {len(rows)}") from None


PARTIAL_JSON_UPDATES = 1
"""``value_options`` bit: the after image's JSON columns flagged in ``partial_bits`` hold diffs
(``# orig: enum_binlog_row_value_options::PARTIAL_JSON_UPDATES``)."""


def _decode_partial(event: RowsEvent, plan: TablePlan, problems: list[BinlogError], rows: list[RowPair]) -> None:
    """PARTIAL_UPDATE_ROWS (MySQL 8.0 ``binlog_row_value_options=PARTIAL_JSON``)::

        before image | value_options packed |
        [PARTIAL_JSON_UPDATES: partial_bits[(JSON columns of the table + 7) / 8]] | after image

    ``partial_bits`` has one bit (LSB first) for every JSON column of the TABLE_MAP, in column
    order, whether or not the column is in the after image; a set bit means that column's value
    in the after image is a diff vector (:func:`~binlog_core.json_binary.decode_json_diff`).
    MySQL ``sql/log_event.cc``, ``Rows_log_event::print_verbose_one_row`` ("the partial_bits
    bitmap has a bit for every JSON column regardless of whether it is included in the
    bitmap"; ``value += (td->json_column_count() + 7) / 8``):
    https://github.com/mysql/mysql-server/blob/trunk/sql/log_event.cc
    """
    data, pos, end = event.data, event.rows_at, len(event.data)
    before_image = plan.image(event.present_before, event.num_columns)
    after_present = present_columns(event.present_after, event.num_columns)
    json_columns = plan.json_columns
    len_partial_bits = (len(json_columns) + 7) // 8
    try:
        while pos < end:
            before, pos = before_image.interpret(data, pos, problems)
            c = Cursor(data, pos)
            options = c.packed_int("value_options")
            partial: set[int] = set()
            if options & PARTIAL_JSON_UPDATES:
                bits = c.take(len_partial_bits, "partial_bits")
                partial = {col for k, col in enumerate(json_columns) if bits[k >> 3] >> (k & 7) & 1}
            after, pos = _partial_after(data, c.pos, plan, after_present, partial, problems)
            rows.append((before, after))
    except BinlogError as exc:
        raise exc.within(f"row {len(rows)}") from None


def _partial_after(
    data: bytes, pos: int, plan: TablePlan, present: list[int], partial: set[int], problems: list[BinlogError]
) -> tuple[Row, int]:
    nbytes = (len(present) + 7) // 8
    c = Cursor(data, pos)
    nulls = c.take(nbytes, "null bitmap")
    out: list[object] = [ABSENT] * len(plan.table_map.columns)
    pos = c.pos
    for bit, index in enumerate(present):
        if nulls[bit >> 3] >> (bit & 7) & 1:
            out[index] = None
            continue
        codec = plan.codecs[index]
        if isinstance(codec, BinlogError):
            raise codec.copy()
        column = codec.column
        try:
            if index in partial:
                c = Cursor(data, pos)
                raw = c.take(c.uint(column.pack_length, "diff length"), "JSON diff")
                out[index] = JsonPartialUpdate(tuple(decode_json_diff(raw)))
                pos = c.pos
            else:
                out[index], pos = codec.read(data, pos)
        except BinlogError as exc:
            raise exc.within(f"col {index + 1} {column.display_name}") from None
    return tuple(out), pos
