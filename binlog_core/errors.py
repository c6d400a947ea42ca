"""One error hierarchy for everything that can be wrong with a binlog file.

Every error carries where it happened -- the file, the byte offset of the event, the index of
an inner event inside a compressed transaction, the event type, and a path to the failing
field such as ``UPDATE_ROWS -> row 3 -> col 7 created_at`` -- and a stable upper-snake
``code`` that is stored in quarantine rows.  The classes also inherit the closest builtin
(``EOFError``, ``ValueError``, ``LookupError``, ``NotImplementedError``) so callers that do
not know this package still catch them sensibly.

Decoders raise an error with the message and whatever they know; layers above fill in the
rest with :meth:`BinlogError.locate` and :meth:`BinlogError.within` as the error travels up::

    try:
        value = decode_column(...)
    except BinlogError as exc:
        raise exc.within(f"col {i} {name}")
"""

from __future__ import annotations

from typing import ClassVar, Self


class BinlogError(Exception):
    """Base class: something in a binlog file could not be read as the format requires."""

    code: ClassVar[str] = "BINLOG_ERROR"
    severity: ClassVar[str] = "error"
    """``error``: data could not be decoded; ``warning``: everything was kept, something is unusual."""

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        offset: int | None = None,
        inner_index: int | None = None,
        event_type: str | None = None,
        path: tuple[str, ...] = (),
    ) -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.offset = offset
        self.inner_index = inner_index
        self.event_type = event_type
        self.path = path

    def locate(
        self,
        *,
        file: str | None = None,
        offset: int | None = None,
        inner_index: int | None = None,
        event_type: str | None = None,
    ) -> Self:
        """Fill in location fields that are still unknown; fields already set are kept."""
        if self.file is None:
            self.file = file
        if self.offset is None:
            self.offset = offset
        if self.inner_index is None:
            self.inner_index = inner_index
        if self.event_type is None:
            self.event_type = event_type
        return self

    def within(self, step: str) -> Self:
        """Prefix the field path with an enclosing step (``row 3``, ``col 7 created_at``)."""
        self.path = (step, *self.path)
        return self

    def copy(self) -> Self:
        """A new error of the same class, message, location and path.

        An error kept to be raised later, possibly many times (a column a table plan cannot
        decode), is raised as a copy: :meth:`locate` and :meth:`within` then add the context
        of each raise to that raise's error alone.
        """
        return type(self)(
            self.message,
            file=self.file,
            offset=self.offset,
            inner_index=self.inner_index,
            event_type=self.event_type,
            path=self.path,
        )

    @property
    def where(self) -> str:
        """``file@offset[#inner] EVENT -> path`` for messages and quarantine rows."""
        parts: list[str] = []
        place = self.file or "<stream>"
        if self.offset is not None:
            place += f"@{self.offset}"
        if self.inner_index is not None:
            place += f"#{self.inner_index}"
        parts.append(place)
        trail = " -> ".join(([self.event_type] if self.event_type else []) + list(self.path))
        if trail:
            parts.append(trail)
        return " ".join(parts)

    def __str__(self) -> str:
        return f"{self.where}: {self.message} [{self.code}]"

    def __reduce__(self) -> tuple[object, ...]:
        # keep keyword context when errors cross process boundaries (Spark workers)
        return (
            _rebuild,
            (type(self), self.message, self.file, self.offset, self.inner_index, self.event_type, self.path),
        )


def _rebuild(
    cls: type[BinlogError],
    message: str,
    file: str | None,
    offset: int | None,
    inner_index: int | None,
    event_type: str | None,
    path: tuple[str, ...],
) -> BinlogError:
    return cls(message, file=file, offset=offset, inner_index=inner_index, event_type=event_type, path=path)


class TruncatedError(BinlogError, EOFError):
    """The bytes end before a length read from the file says they should."""

    code = "TRUNCATED"


class MalformedError(BinlogError, ValueError):
    """The bytes are present but do not form a valid value of the format."""

    code = "MALFORMED"


class NotABinlogError(MalformedError):
    """The file does not start with the binlog magic ``fe 62 69 6e``."""

    code = "NOT_A_BINLOG"


class MissingFormatDescriptionError(MalformedError):
    """A v4 file whose first event is not a FORMAT_DESCRIPTION event."""

    code = "NO_FORMAT_DESCRIPTION"


class ChecksumMismatchError(MalformedError):
    """The CRC32 stored after an event does not match the event's bytes."""

    code = "CHECKSUM_MISMATCH"


class DecompressionError(MalformedError):
    """A compressed event or transaction payload could not be inflated."""

    code = "DECOMPRESSION_FAILED"


class UnsupportedError(BinlogError, NotImplementedError):
    """Valid input that this decoder does not read (a feature it does not implement)."""

    code = "UNSUPPORTED"


class EncryptedError(UnsupportedError):
    """The file (or the rest of it) is encrypted; the key is not available to a file reader."""

    code = "ENCRYPTED"


class UnknownTableIdError(BinlogError, LookupError):
    """A rows event refers to a table id with no TABLE_MAP in force in the same file."""

    code = "UNKNOWN_TABLE_ID"


class UnknownEventTypeWarning(BinlogError):
    """An event type this decoder does not know; the event is kept as raw bytes."""

    code = "UNKNOWN_EVENT_TYPE"
    severity = "warning"


class UnknownStatusVarWarning(BinlogError):
    """A QUERY status variable code this decoder does not know; like the server, reading stops there."""

    code = "UNKNOWN_STATUS_VAR"
    severity = "warning"


class UnknownOptionalMetadataWarning(BinlogError):
    """A TABLE_MAP optional metadata field type this decoder does not know (a newer server's):
    skipped by its length and kept raw in ``TableMap.unknown_optional``; the map still decodes."""

    code = "UNKNOWN_OPTIONAL_METADATA"
    severity = "warning"


class CharsetWarning(BinlogError):
    """Text in a charset with no Python codec, or bytes invalid in their charset: kept as bytes."""

    code = "UNDECODABLE_TEXT"
    severity = "warning"


class NonFiniteFloatWarning(BinlogError):
    """A FLOAT, DOUBLE or VECTOR element holds NaN or an infinity, which no server stores: damage.

    The value is kept (and printed as ``"NaN"``, ``"Infinity"`` or ``"-Infinity"``, see
    :mod:`binlog_core.render`).
    """

    code = "NON_FINITE_FLOAT"
    severity = "warning"


class SqlError(BinlogError, ValueError):
    """A change or statement that cannot be written as SQL exactly (``binlog-dump --rows-as sql``,
    ``--flashback``): what is missing is named, nothing is guessed."""

    code = "SQL_ERROR"


class NonFiniteValueError(SqlError):
    """A FLOAT, DOUBLE or VECTOR value that is NaN or an infinity: SQL has no literal for it."""

    code = "NON_FINITE_VALUE"


class ColumnNamesUnknownError(SqlError):
    """A TABLE_MAP without column names (``binlog_row_metadata`` MINIMAL or NO_LOG) and no names
    known for the table from earlier in the files."""

    code = "COLUMN_NAMES_UNKNOWN"


class PartialImageError(SqlError):
    """A value the statement needs is absent from the row image (``binlog_row_image`` MINIMAL/NOBLOB)."""

    code = "PARTIAL_IMAGE"


class AmbiguousValueError(SqlError):
    """A value whose meaning depends on metadata the file does not carry (the signedness of a
    negative integer, whether a CHAR-typed column is text or BINARY)."""

    code = "AMBIGUOUS_VALUE"


class IrreversibleStatementError(SqlError):
    """A statement in a flashback selection that the row images cannot undo (DDL, statement-based DML)."""

    code = "IRREVERSIBLE_STATEMENT"


class UnreplayableEventError(SqlError):
    """An event whose effect a SQL script cannot reproduce exactly (a statement that failed on the
    source, text in a client charset the script cannot carry, LOAD DATA, an unknown event type)."""

    code = "UNREPLAYABLE_EVENT"


ERROR_CODES: dict[str, type[BinlogError]] = {
    cls.code: cls
    for cls in (
        BinlogError,
        TruncatedError,
        MalformedError,
        NotABinlogError,
        MissingFormatDescriptionError,
        ChecksumMismatchError,
        DecompressionError,
        UnsupportedError,
        EncryptedError,
        UnknownTableIdError,
        UnknownEventTypeWarning,
        UnknownStatusVarWarning,
        UnknownOptionalMetadataWarning,
        CharsetWarning,
        NonFiniteFloatWarning,
        SqlError,
        NonFiniteValueError,
        ColumnNamesUnknownError,
        PartialImageError,
        AmbiguousValueError,
        IrreversibleStatementError,
        UnreplayableEventError,
    )
}
"""Every stable error code and the class that carries it."""


def as_event_problem(exc: BinlogError) -> BinlogError:
    """How a problem met inside one event is reported.

    Framing has read the whole event, so a field that runs past its end is damage to the event
    (MALFORMED); TRUNCATED is kept for a file that ends inside an event.
    """
    if isinstance(exc, TruncatedError):
        return MalformedError(f"{exc.message} (the event ends before its fields do)", path=exc.path).locate(
            file=exc.file, offset=exc.offset, inner_index=exc.inner_index, event_type=exc.event_type
        )
    return exc
