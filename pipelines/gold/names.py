"""Gold table names, without Spark (the query engine names tables with them too)."""

from __future__ import annotations

import hashlib
import re

_PLAIN_NAME = re.compile(r"[a-z0-9]+(?:_[a-z0-9]+)*")
"""A schema or table name that ``<schema>__<table>`` keeps as it is, with no way to collide."""


def gold_table_name(schema_name: str, table_name: str) -> str:
    """``<schema>__<table>`` when both names are plain (lower-case letters, digits, single ``_``
    inside); otherwise the lower-cased name with other characters as ``_`` and a short hash of
    the exact names, so that tables MySQL tells apart (``Orders``/``orders``, ``a__b.c``/``a.b__c``)
    never share a gold table.

    >>> gold_table_name("shop", "order_items")
    'shop__order_items'
    >>> gold_table_name("Shop", "order-items")
    'shop__order_items__h13dd599a'
    """
    if _PLAIN_NAME.fullmatch(schema_name) and _PLAIN_NAME.fullmatch(table_name):
        return f"{schema_name}__{table_name}"
    readable = re.sub(r"[^a-z0-9_]", "_", f"{schema_name}__{table_name}".lower())
    digest = hashlib.blake2b(f"{schema_name}\x1f{table_name}".encode("utf-8", "surrogatepass"), digest_size=4)
    return f"{readable}__h{digest.hexdigest()}"


__all__ = ["gold_table_name"]
