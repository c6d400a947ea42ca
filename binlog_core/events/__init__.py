"""Event bodies: one decoder per type code, chosen from one table.

:data:`DECODERS` maps every event type this library knows to the function that decodes its
body.  TABLE_MAP and the rows events are decoded by :mod:`binlog_core.table_map` and
:mod:`binlog_core.rows` (their bodies need the table maps in force, which the file decoder
keeps); :func:`decode_body` still gives their self-contained parts so that an ``--events``
dump shows every event.  A type code missing from the table becomes an :class:`UnknownEvent`
holding the raw bytes: never a silent skip.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from binlog_core.constants import EventType
from binlog_core.errors import BinlogError, UnknownEventTypeWarning, UnknownStatusVarWarning
from binlog_core.event import Event
from binlog_core.events.common import Decoder, EventBody
from binlog_core.events.control import CONTROL_DECODERS
from binlog_core.events.gtid import GTID_DECODERS
from binlog_core.events.load import LOAD_DECODERS
from binlog_core.events.query import QUERY_DECODERS
from binlog_core.rows import ROWS_KINDS, decode_rows_header
from binlog_core.table_map import TableMap, decode_table_map, optional_metadata_warnings


@dataclass(frozen=True, slots=True)
class UnknownEvent:
    """An event whose type code this library does not know: its raw body, kept as it is."""

    type_code: int
    raw: bytes = field(repr=False)


def _table_map(event: Event) -> EventBody:
    return decode_table_map(event.body, event.fde)


def _rows_header(event: Event) -> EventBody:
    return decode_rows_header(event.body, event.type_code, event.fde)


DECODERS: Final[dict[int, Decoder]] = {
    **CONTROL_DECODERS,
    **GTID_DECODERS,
    **LOAD_DECODERS,
    **QUERY_DECODERS,
    EventType.TABLE_MAP: _table_map,
    **{code: _rows_header for code in ROWS_KINDS},
}
"""Type code -> body decoder, for every event type the library knows."""


QUERY_SHAPED: Final = frozenset({EventType.QUERY, EventType.QUERY_COMPRESSED, EventType.EXECUTE_LOAD_QUERY})
"""Events whose body is a statement with status variables (:mod:`binlog_core.events.query`)."""


def decode_body(event: Event) -> EventBody:
    """The typed body of ``event``, or an :class:`UnknownEvent` for a type code not in the table."""
    decoder = DECODERS.get(event.type_code)
    if decoder is None:
        return UnknownEvent(event.type_code, event.body)
    return decoder(event)


def body_warnings(event: Event, body: EventBody) -> list[BinlogError]:
    """What is wrong with an event whose body decoded, beyond the body's own fields (located on ``event``).

    An unknown event type (kept as raw bytes), a QUERY status variable the library does not
    know (the server stops reading there too) and a TABLE_MAP optional metadata field of an
    unknown type (kept raw) are warnings, never silent.  A problem framing found inside the
    event (:attr:`binlog_core.event.Event.problem`: a TRANSACTION_PAYLOAD whose events could not
    all be unpacked) comes first; it is an error.
    """
    found: list[BinlogError] = [] if event.problem is None else [event.problem]
    if isinstance(body, TableMap):
        found += [event.locate(warning) for warning in optional_metadata_warnings(body)]
    elif isinstance(body, UnknownEvent):
        found.append(
            event.locate(UnknownEventTypeWarning(f"event type {event.type_code} is unknown; kept as raw bytes"))
        )
    else:
        unknown_code = getattr(body, "unknown_status_code", None)
        if unknown_code is not None:
            found.append(
                event.locate(
                    UnknownStatusVarWarning(f"unknown status variable code {unknown_code}; later ones not read")
                )
            )
    return found


__all__ = ["DECODERS", "QUERY_SHAPED", "UnknownEvent", "body_warnings", "decode_body"]
