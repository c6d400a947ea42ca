"""How the pipeline's Python tasks walk a partition (framing in bronze, the decodes of silver and gold).

Decoding allocates millions of short-lived tuples, lists and rows that form no reference cycles.
At CPython's default first-generation threshold (700 allocations) the cyclic collector runs
thousands of times per partition and takes about a quarter of a decode's time (gold's decode of
the 256 MiB OLTP file: 10.4 s, 7.5-7.9 s with the threshold raised; bronze's framing of it: 8.0
s, 6.8 s).  :func:`rarely_collected` raises the threshold while a partition is walked and puts
the worker's back after, so the worker process, which Spark reuses for other tasks, keeps its
own settings.  Memory is unchanged: reference counting frees the objects as before, and the
collector still runs, after :data:`FIRST_GENERATION` allocations.  When the walk ends, the memory
Arrow's pool keeps free goes back to the system: a reused worker does not keep a partition's peak
(framing a 128 MiB piece of a binlog: about 20 MiB).
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable, Iterator
from typing import ParamSpec, TypeVar

import pyarrow as pa

FIRST_GENERATION = 50_000
"""Allocations (less deallocations) between two collections of the youngest generation while a
partition is walked."""

_P = ParamSpec("_P")
_T = TypeVar("_T")


def rarely_collected(walk: Callable[_P, Iterator[_T]]) -> Callable[_P, Iterator[_T]]:
    """``walk`` (a partition's batches -> output batches) run with the first generation's threshold
    at :data:`FIRST_GENERATION`, the worker's thresholds restored and Arrow's free memory released
    when its output ends or is closed."""

    @functools.wraps(walk)
    def run(*args: _P.args, **kwargs: _P.kwargs) -> Iterator[_T]:
        previous = gc.get_threshold()
        gc.set_threshold(max(FIRST_GENERATION, previous[0]), *previous[1:])
        try:
            yield from walk(*args, **kwargs)
        finally:
            gc.set_threshold(*previous)
            pa.default_memory_pool().release_unused()

    return run


__all__ = ["FIRST_GENERATION", "rarely_collected"]
