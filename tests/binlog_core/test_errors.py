"""The one error hierarchy: every problem class of the package carries a stable code listed in
``ERROR_CODES`` (the codes quarantine rows store), a severity, and survives pickling with its
location."""

from __future__ import annotations

import importlib
import pickle
import pkgutil
import re

import pytest

import binlog_core
from binlog_core import errors
from binlog_core.errors import ERROR_CODES, BinlogError


def _every_module() -> list[str]:
    """Import every module of the package, so that a problem class defined anywhere is seen."""
    walked = pkgutil.walk_packages(binlog_core.__path__, "binlog_core.")
    names = [info.name for info in walked if not info.name.endswith(".__main__")]  # __main__ runs the CLI
    for name in names:
        importlib.import_module(name)
    return names


def _subclasses(cls: type[BinlogError]) -> list[type[BinlogError]]:
    found: list[type[BinlogError]] = []
    for sub in cls.__subclasses__():
        found += [sub, *_subclasses(sub)]
    return found


def problem_classes() -> list[type[BinlogError]]:
    """BinlogError and every subclass defined in the package (tests' own subclasses left out)."""
    _every_module()
    return [BinlogError, *(c for c in _subclasses(BinlogError) if c.__module__.startswith("binlog_core."))]


def test_every_binlog_error_subclass_has_its_code_in_error_codes() -> None:
    classes = problem_classes()
    missing = {f"{c.__module__}.{c.__qualname__}": c.code for c in classes if ERROR_CODES.get(c.code) is not c}
    assert missing == {}
    # and nothing else is listed
    assert sorted(ERROR_CODES) == sorted(c.code for c in classes)


def test_problem_classes_live_in_the_errors_module() -> None:
    elsewhere = [f"{c.__module__}.{c.__qualname__}" for c in problem_classes() if c.__module__ != errors.__name__]
    assert elsewhere == []


def test_non_finite_float_warning_is_listed_and_render_uses_the_same_class() -> None:
    from binlog_core import render

    assert ERROR_CODES["NON_FINITE_FLOAT"] is errors.NonFiniteFloatWarning
    assert render.NonFiniteFloatWarning is errors.NonFiniteFloatWarning
    assert errors.NonFiniteFloatWarning.severity == "warning"


def test_codes_are_upper_snake_and_severities_error_or_warning() -> None:
    assert [code for code in ERROR_CODES if not re.fullmatch(r"[A-Z][A-Z0-9]*(_[A-Z0-9]+)*", code)] == []
    assert {cls.severity for cls in ERROR_CODES.values()} == {"error", "warning"}


@pytest.mark.parametrize("cls", list(ERROR_CODES.values()), ids=list(ERROR_CODES))
def test_every_problem_class_pickles_with_its_location(cls: type[BinlogError]) -> None:
    problem = cls("bad", file="f.000001", offset=120, inner_index=2, event_type="WRITE_ROWS", path=("row 1",))
    copy = pickle.loads(pickle.dumps(problem))
    assert (type(copy), str(copy)) == (cls, f"f.000001@120#2 WRITE_ROWS -> row 1: bad [{cls.code}]")
