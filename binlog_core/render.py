"""JSON-ready rendering of decoded values and records, the way MySQL's ``SELECT`` shows values.

================================  ==========================================================
integers, YEAR, BIT               JSON numbers
DECIMAL                           string of its exact digits (``"-12.50"``)
FLOAT                             the shortest decimal that reads back as the same float32
                                  (``0.1``, ``3.4028235e+38``, ``1e-45``), not the float32
                                  widened to double (``0.10000000149011612``)
DOUBLE                            the shortest decimal that reads back as the same double
temporal                          ``YYYY-MM-DD HH:MM:SS[.ffffff]`` (TIMESTAMP in UTC)
text, ENUM and SET labels, JSON   strings (a JSON document as MySQL's text of it)
binary strings, GEOMETRY          ``"hex:<lowercase hex>"`` (GEOMETRY: SRID + WKB)
VECTOR                            array of numbers, each element as FLOAT is (float32)
partially updated JSON            ``{"json_diffs": [{"op", "path", "value"}, ...]}`` (below)
NaN, +-infinity (damage)          the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``
NULL                              ``null``; a column absent from the image is left out
================================  ==========================================================

**Non-finite floats.**  MySQL and MariaDB refuse to store NaN or an infinity in FLOAT, DOUBLE
or VECTOR columns, so such bits in a row image are damage.  The value is printed as one of the
strings above (JSON has no literal for them; output stays strict JSON) and, when the caller
passes a ``problems`` list, a :class:`NonFiniteFloatWarning` names where it was.

**Partially updated JSON** (MySQL 8 ``PARTIAL_UPDATE_ROWS``, ``binlog_row_value_options=
PARTIAL_JSON``): the after image of such a column holds the changes, not the document.  It is
rendered as an object -- never a string, so it cannot be mistaken for a JSON column's value,
which is always a string or ``null``::

    {"json_diffs": [{"op": "REPLACE", "path": "$.age", "value": "26"}]}

``op`` is ``REPLACE``, ``INSERT`` or ``REMOVE``; ``path`` a MySQL JSON path; ``value`` MySQL's
JSON text of the new value (``null`` for ``REMOVE``).  Replaying the diffs in order on the
before document gives the after document, as the server applies them
(``Json_diff_vector::apply`` in ``sql-common/json_diff.cc``,
https://github.com/mysql/mysql-server/blob/trunk/sql-common/json_diff.cc)::

    REPLACE  JSON_REPLACE(doc, path, CAST(value AS JSON))
    INSERT   JSON_ARRAY_INSERT(doc, path, CAST(value AS JSON))  when path ends with ']'
             JSON_INSERT(doc, path, CAST(value AS JSON))        otherwise
    REMOVE   JSON_REMOVE(doc, path)

(:func:`binlog_core.json_binary.render_json_diffs` writes the same diffs as the one SQL
expression ``mysqlbinlog -vv`` prints.)
"""

from __future__ import annotations

import dataclasses
import enum
import json
import math
import struct
from collections.abc import Callable, Mapping
from decimal import Decimal
from json.encoder import encode_basestring
from typing import TYPE_CHECKING, Any, Final

from binlog_core.columns import ABSENT
from binlog_core.constants import ColumnType
from binlog_core.errors import BinlogError, NonFiniteFloatWarning
from binlog_core.rows import JsonPartialUpdate, Row
from binlog_core.table_map import Column

if TYPE_CHECKING:
    from binlog_core.decoder import RowChange

_F32 = struct.Struct("<f")
_F32_MIN_NORMAL: Final = 2.0**-126
"""Below this a float32 is subnormal and has fewer than 6 significant digits of precision."""


def float32_text(value: float) -> float:
    """The shortest decimal that reads back as the same float32 (how MySQL 8 prints FLOAT).

    >>> [float32_text(x) for x in (0.10000000149011612, 3.4028234663852886e38, 1.401298464324817e-45)]
    [0.1, 3.4028235e+38, 1e-45]
    """
    # a normal float32 needs at least 6 digits (FLT_DIG); %.Ng rounds correctly, so the first N
    # that reads back is the shortest, and the nearest of that length
    for digits in range(1 if abs(value) < _F32_MIN_NORMAL else 6, 10):
        shortest = float(f"{value:.{digits}g}")
        if _F32.unpack(_F32.pack(shortest))[0] == value:
            return shortest
    return value


def non_finite_text(value: float) -> str:
    """``"NaN"``, ``"Infinity"`` or ``"-Infinity"``: how a non-finite float is printed."""
    if math.isnan(value):
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"


def hex_text(raw: bytes) -> str:
    """Binary values as ``hex:<lowercase hex>``."""
    return "hex:" + raw.hex()


def _float32_json(value: float) -> float | str:
    return float32_text(value) if math.isfinite(value) else non_finite_text(value)


def json_diffs_value(update: JsonPartialUpdate) -> dict[str, Any]:
    """A partially updated JSON column as ``{"json_diffs": [...]}`` (see the module doc).

    >>> from binlog_core.json_binary import JsonDiff
    >>> json_diffs_value(JsonPartialUpdate((JsonDiff("REPLACE", "$.age", "26"),)))
    {'json_diffs': [{'op': 'REPLACE', 'path': '$.age', 'value': '26'}]}
    """
    return {"json_diffs": [{"op": d.operation, "path": d.path, "value": d.value} for d in update.diffs]}


def render_value(value: object, column: Column | None = None) -> Any:
    """One column value as a JSON-ready object (the module doc's table)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            return non_finite_text(value)
        if column is not None and column.type == ColumnType.FLOAT:
            return float32_text(value)
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return hex_text(bytes(value))
    if isinstance(value, tuple):  # VECTOR: float32 elements
        return [_float32_json(v) for v in value]
    if isinstance(value, JsonPartialUpdate):
        return json_diffs_value(value)
    return str(value)


def _non_finite_warnings(value: object, column: Column, side: str, problems: list[BinlogError]) -> None:
    """Append a warning for each NaN or infinity in a FLOAT/DOUBLE value or VECTOR."""
    step = f"col {column.index + 1} {column.display_name}"
    if isinstance(value, float):
        if not math.isfinite(value):
            text = non_finite_text(value)
            problems.append(
                NonFiniteFloatWarning(
                    f"the {side} image holds {text}, which MySQL never stores (damaged value); printed as {text!r}",
                    path=(step,),
                )
            )
    elif isinstance(value, tuple):
        for k, element in enumerate(value):
            if isinstance(element, float) and not math.isfinite(element):
                text = non_finite_text(element)
                problems.append(
                    NonFiniteFloatWarning(
                        f"the {side} image holds {text} in a VECTOR, which MySQL never stores (damaged value); "
                        f"printed as {text!r}",
                        path=(step, f"element {k}"),
                    )
                )


def render_image(
    image: Row | None,
    columns: tuple[Column, ...],
    problems: list[BinlogError] | None = None,
    *,
    side: str = "row",
) -> dict[str, Any] | None:
    """A row image as ``{column name: value}``, leaving out columns absent from the image.

    With ``problems``, a :class:`NonFiniteFloatWarning` is appended for each NaN or infinity
    (path ``col N name``; ``side`` -- ``before`` or ``after`` -- is named in its message).
    """
    if image is None:
        return None
    rendered = {
        column.display_name: render_value(value, column)
        for column, value in zip(columns, image, strict=False)
        if value is not ABSENT
    }
    if problems is not None:
        for column, value in zip(columns, image, strict=False):
            if isinstance(value, (float, tuple)):
                _non_finite_warnings(value, column, side, problems)
    return rendered


def _json_float(value: float) -> str:
    return float.__repr__(value) if math.isfinite(value) else encode_basestring(non_finite_text(value))


def _json_float32(value: float) -> str:
    return float.__repr__(float32_text(value)) if math.isfinite(value) else encode_basestring(non_finite_text(value))


_JSON_TEXT: Final[dict[type, Callable[[Any], str]]] = {
    type(None): lambda _: "null",
    bool: lambda value: "true" if value else "false",
    int: int.__repr__,
    str: encode_basestring,
    float: _json_float,
    Decimal: lambda value: encode_basestring(str(value)),
    bytes: lambda value: encode_basestring(hex_text(value)),
}
"""JSON text of a value of exactly this type, as ``json.dumps(render_value(value))`` writes it."""


class ImageJson:
    """The JSON text of row images of one table map: ``json.dumps(render_image(image, columns),
    ensure_ascii=False)``, character for character, without building the dict.

    Each column's key is encoded once; a value of a common type (:data:`_JSON_TEXT`) is written
    directly, any other through :func:`render_value` and ``json.dumps``.

    >>> from binlog_core.table_map import Column
    >>> id_, name = (Column(0, ColumnType.LONG, ColumnType.LONG, 0, False, name="id"),
    ...              Column(1, ColumnType.VARCHAR, ColumnType.VARCHAR, 20, True))
    >>> ImageJson((id_, name)).text([7, "é"])
    '{"id": 7, "@2": "é"}'
    """

    def __init__(self, columns: tuple[Column, ...]) -> None:
        self.columns = columns
        self.keys = [json.dumps(c.display_name, ensure_ascii=False) + ": " for c in columns]
        self.unique = len({c.display_name for c in columns}) == len(columns)
        self.writers: list[dict[type, Callable[[Any], str]]] = [
            {**_JSON_TEXT, float: _json_float32} if c.type == ColumnType.FLOAT else _JSON_TEXT for c in columns
        ]
        self._whole = _whole_image_text(self.keys, self.writers) if self.unique and columns else None

    def text(self, image: Row | None) -> str | None:
        """The image's JSON object (columns absent from it left out); None when there is no image."""
        if image is None:
            return None
        if self._whole is not None:
            try:  # every column present, each value of a common type
                return self._whole(image)
            except (KeyError, ValueError):
                pass
        return self._text(image)

    def _text(self, image: Row) -> str:
        if not self.unique:  # a dict keeps one value per name: let json.dumps decide which
            return json.dumps(render_image(image, self.columns), ensure_ascii=False)
        parts = []
        for key, writers, column, value in zip(self.keys, self.writers, self.columns, image, strict=False):
            if value is ABSENT:
                continue
            write = writers.get(type(value))
            parts.append(key + (write(value) if write is not None else _rendered_text(value, column)))
        return "{" + ", ".join(parts) + "}"


def _whole_image_text(keys: list[str], writers: list[dict[type, Callable[[Any], str]]]) -> Callable[[Row], str]:
    """``image -> JSON text`` for an image of exactly these columns whose values all have a writer,
    as one expression (compiled once per table map): it raises ``ValueError`` for an image of
    another length and ``KeyError`` for any other value (ABSENT included), which take the general way."""
    names = [f"v{i}" for i in range(len(keys))]
    scope: dict[str, Any] = {}
    parts = []
    for i, name in enumerate(names):
        scope[f"k{i}"] = ("{" if i == 0 else ", ") + keys[i]
        scope[f"w{i}"] = writers[i]
        parts += [f"k{i}", f"w{i}[type({name})]({name})"]
    source = f"def whole(image):\n    [{', '.join(names)}] = image\n    return ''.join(({', '.join(parts)}, '}}'))\n"
    exec(source, scope)  # the source names only identifiers made above
    whole: Callable[[Row], str] = scope["whole"]
    return whole


def _rendered_text(value: object, column: Column) -> str:
    return json.dumps(render_value(value, column), ensure_ascii=False)


def render_change(change: RowChange, problems: list[BinlogError] | None = None) -> dict[str, Any]:
    """The CLI's one-line record of a row change.

    With ``problems``, warnings about its values are appended, located at the change's file,
    offset, inner index and event type, with the path ``row N -> col M name``.
    """
    columns = change.table_map.columns
    found: list[BinlogError] | None = None if problems is None else []
    record = {
        "file": change.file,
        "offset": change.offset,
        "inner_index": change.inner_index,
        "row_index": change.row_index,
        "event_type": change.event_type,
        "gtid": change.gtid,
        "timestamp": change.timestamp,
        "server_id": change.server_id,
        "schema": change.schema,
        "table": change.table,
        "table_id": change.table_id,
        "op": change.op,
        "before": render_image(change.before, columns, found, side="before"),
        "after": render_image(change.after, columns, found, side="after"),
    }
    if problems is not None and found:
        for problem in found:
            problems.append(
                problem.within(f"row {change.row_index}").locate(
                    file=change.file,
                    offset=change.offset,
                    inner_index=change.inner_index,
                    event_type=change.event_type,
                )
            )
    return record


def to_jsonable(obj: object, problems: list[BinlogError] | None = None, path: tuple[str, ...] = ()) -> Any:
    """Any decoded event body (dataclasses, enums, bytes, tuples) as JSON-ready data.

    A NaN or infinity becomes its string (:func:`non_finite_text`); with ``problems``, a
    :class:`NonFiniteFloatWarning` with the field path (``path`` + field names) is appended.
    """
    if obj is None or isinstance(obj, (bool, int, str)):
        return obj.value if isinstance(obj, enum.Enum) else obj
    if isinstance(obj, float):
        if math.isfinite(obj):
            return obj
        text = non_finite_text(obj)
        if problems is not None:
            message = f"the field holds {text}, which MySQL never writes; printed as {text!r}"
            problems.append(NonFiniteFloatWarning(message, path=path))
        return text
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return hex_text(bytes(obj))
    if obj is ABSENT:
        return None
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {
            f.name: to_jsonable(getattr(obj, f.name), problems, (*path, f.name))
            for f in dataclasses.fields(obj)
            if f.repr
        }
    if isinstance(obj, Mapping):
        return {str(k): to_jsonable(v, problems, (*path, str(k))) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [to_jsonable(v, problems, (*path, str(i))) for i, v in enumerate(obj)]
    return str(obj)


__all__ = [
    "ImageJson",
    "NonFiniteFloatWarning",
    "float32_text",
    "hex_text",
    "json_diffs_value",
    "non_finite_text",
    "render_change",
    "render_image",
    "render_value",
    "to_jsonable",
]
