"""Packed DECIMAL values (``decimal2bin``) decode to the exact text MySQL prints."""

from __future__ import annotations

import random
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from binlog_core.decimal import decimal_reader, decimal_size, decode_decimal
from binlog_core.errors import MalformedError, TruncatedError

DIG2BYTES = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)


def encode_decimal(text: str, precision: int, scale: int) -> bytes:
    """A reference ``decimal2bin``, written from the format MySQL documents in ``strings/decimal.cc``.

    Integer digits are cut into 9-digit groups from the decimal point leftwards (a short group
    first), fraction digits from the point rightwards (a short group last); each group is a
    big-endian number in 4 bytes (short groups in ``dig2bytes[digits]`` bytes); a negative
    value has every byte inverted; the first byte's top bit is then flipped.
    """
    negative = text.startswith("-")
    int_digits, _, frac_digits = text.lstrip("-").partition(".")
    intg = precision - scale
    int_digits = int_digits.lstrip("0").rjust(intg, "0")
    frac_digits = frac_digits.ljust(scale, "0")
    assert len(int_digits) == intg and len(frac_digits) == scale, (text, precision, scale)
    groups: list[tuple[str, int]] = []
    lead = intg % 9
    if lead:
        groups.append((int_digits[:lead], DIG2BYTES[lead]))
    groups += [(int_digits[i : i + 9], 4) for i in range(lead, intg, 9)]
    full = scale - scale % 9
    groups += [(frac_digits[i : i + 9], 4) for i in range(0, full, 9)]
    if scale % 9:
        groups.append((frac_digits[full:], DIG2BYTES[scale % 9]))
    out = bytearray()
    for digits, nbytes in groups:
        out += int(digits).to_bytes(nbytes, "big")
    if negative:
        out = bytearray(b ^ 0xFF for b in out)
    if out:
        out[0] ^= 0x80
    return bytes(out)


def mysql_text(negative: bool, int_digits: str, frac_digits: str) -> str:
    """How ``decimal2string`` prints a value: no leading zeros, ``0`` for no integer digit, no sign on zero."""
    whole = int_digits.lstrip("0") or "0"
    is_zero = whole == "0" and not frac_digits.strip("0")
    sign = "-" if negative and not is_zero else ""
    return sign + whole + ("." + frac_digits if frac_digits else "")


# --- documented examples and limits ------------------------------------------------------------


def test_decimal2bin_examples_from_mysql_source_comment_decode() -> None:
    # strings/decimal.cc, decimal2bin: 1234567890.1234 as DECIMAL(14,4) and its negation
    assert decode_decimal(bytes.fromhex("810DFB38D204D2"), 0, 14, 4) == ("1234567890.1234", 7)
    assert decode_decimal(bytes.fromhex("7EF204C72DFB2D"), 0, 14, 4) == ("-1234567890.1234", 7)


@pytest.mark.parametrize(
    ("precision", "scale", "size"),
    [(1, 0, 1), (9, 0, 4), (10, 0, 5), (10, 2, 5), (5, 5, 3), (14, 4, 7), (18, 9, 8), (65, 30, 30), (65, 0, 29)],
)
def test_decimal_size_follows_dig2bytes(precision: int, scale: int, size: int) -> None:
    assert decimal_size(precision, scale) == size


def test_decimal_65_30_maximum_and_minimum_print_all_digits() -> None:
    largest = "9" * 35 + "." + "9" * 30
    # 8-digit group 99999999 (4 bytes, sign bit set), 3 + 3 full groups 999999999, 3-digit group 999 (2 bytes)
    encoded = bytes.fromhex("85f5e0ff" + "3b9ac9ff" * 6 + "03e7")
    assert encode_decimal(largest, 65, 30) == encoded
    assert decode_decimal(encoded, 0, 65, 30) == (largest, 30)
    inverted = bytes(b ^ 0xFF for b in encoded)
    assert decode_decimal(inverted, 0, 65, 30) == ("-" + largest, 30)


def test_decimal_10_0_prints_integers_without_a_point() -> None:
    read, size = decimal_reader(10, 0)
    assert size == 5
    assert read(bytes.fromhex("810dfb38d2"), 0) == ("1234567890", 5)  # 1-digit group 1, group 234567890
    assert read(bytes.fromhex("7ef204c72d"), 0) == ("-1234567890", 5)
    assert read(bytes.fromhex("8000000000"), 0) == ("0", 5)
    assert read(bytes.fromhex("8900000000"), 0) == ("9000000000", 5)


def test_decimal_5_5_has_no_integer_digits_and_prints_a_leading_zero() -> None:
    assert decode_decimal(bytes.fromhex("7fcfc6"), 0, 5, 5) == ("-0.12345", 3)
    assert decode_decimal(bytes.fromhex("803039"), 0, 5, 5) == ("0.12345", 3)
    assert decode_decimal(bytes.fromhex("800001"), 0, 5, 5) == ("0.00001", 3)


def test_zero_keeps_its_scale_and_negative_zero_prints_without_sign() -> None:
    assert decode_decimal(bytes.fromhex("8000000000"), 0, 10, 2) == ("0.00", 5)
    assert decode_decimal(bytes.fromhex("7fffffffff"), 0, 10, 2) == ("0.00", 5)  # sign clear, digits zero
    assert decode_decimal(bytes.fromhex("7f" + "ff" * 8), 0, 20, 0) == ("0", 9)


def test_decimal_0_0_is_the_zero_json_stores_without_bytes() -> None:
    assert decimal_size(0, 0) == 0
    assert decode_decimal(b"", 0, 0, 0) == ("0", 0)


def test_decode_reads_at_an_offset_and_returns_the_position_after_the_value() -> None:
    buf = b"\xaa\xbb" + bytes.fromhex("8000000d05") + b"\xcc"
    assert decode_decimal(buf, 2, 10, 2) == ("13.05", 7)


def test_reader_is_built_once_per_type() -> None:
    assert decimal_reader(12, 3)[0] is decimal_reader(12, 3)[0]
    assert decimal_reader(12, 3)[1] == 6


# --- errors ------------------------------------------------------------------------------------


def test_every_short_buffer_is_truncated() -> None:
    value = encode_decimal("-12345678901234567890.123456789012", 40, 12)
    for cut in range(len(value)):
        with pytest.raises(TruncatedError):
            decode_decimal(value[:cut], 0, 40, 12)
    with pytest.raises(TruncatedError):
        decode_decimal(bytes.fromhex("80000000"), 0, 10, 2)


@pytest.mark.parametrize(
    ("hex_value", "precision", "scale"),
    [
        ("85f5e10000", 10, 2),  # integer group 100000000 has 9 digits, DECIMAL(10,2) allows 8
        ("8000000064", 10, 2),  # fraction group 100 has 3 digits, scale is 2
        ("bb9aca00", 9, 0),  # full group 1000000000
        ("803b9aca00", 10, 0),  # full integer group 1000000000 after a 1-digit group
        ("800000003b9aca00", 18, 9),  # full fraction group 1000000000
        ("8a", 1, 0),  # 1-digit group 10
    ],
)
def test_digit_groups_beyond_their_digits_are_malformed(hex_value: str, precision: int, scale: int) -> None:
    with pytest.raises(MalformedError):
        decode_decimal(bytes.fromhex(hex_value), 0, precision, scale)


@pytest.mark.parametrize(("precision", "scale"), [(66, 0), (65, 31), (5, 6), (-1, 0), (10, -1)])
def test_types_beyond_mysql_limits_are_malformed(precision: int, scale: int) -> None:
    with pytest.raises(MalformedError):
        decimal_size(precision, scale)
    with pytest.raises(MalformedError):
        decimal_reader(precision, scale)


# --- every type round-trips ----------------------------------------------------------------------


def _values(precision: int, scale: int, rng: random.Random) -> list[tuple[bool, str, str]]:
    """(negative, integer digits, fraction digits): the limits, zero, the smallest step, random values."""
    intg = precision - scale
    values = [
        (False, "9" * intg, "9" * scale),
        (True, "9" * intg, "9" * scale),
        (False, "0" * intg, "0" * scale),
        (False, "0" * intg, "0" * (scale - 1) + "1" if scale else ""),
        (True, "0" * (intg - 1) + "1" if intg else "", "0" * scale),
    ]
    for _ in range(4):
        int_digits = "".join(rng.choice("0123456789") for _ in range(intg))
        frac_digits = "".join(rng.choice("0123456789") for _ in range(scale))
        values.append((rng.random() < 0.5, int_digits, frac_digits))
    return values


def test_every_precision_and_scale_round_trips_against_the_reference_encoder() -> None:
    rng = random.Random(20240611)
    checked = 0
    for precision in range(1, 66):
        for scale in range(min(30, precision) + 1):
            read, size = decimal_reader(precision, scale)
            for negative, int_digits, frac_digits in _values(precision, scale, rng):
                source = ("-" if negative else "") + (int_digits or "0") + ("." + frac_digits if scale else "")
                encoded = encode_decimal(source, precision, scale)
                assert len(encoded) == size
                text, end = read(b"\x00" + encoded + b"\x00", 1)
                assert end == size + 1
                assert text == mysql_text(negative, int_digits, frac_digits), (precision, scale, source)
                assert Decimal(text) == Decimal(source)
                checked += 1
    assert checked == 9 * sum(min(30, p) + 1 for p in range(1, 66))


@given(st.data())
def test_random_values_of_random_types_round_trip(data: st.DataObject) -> None:
    precision = data.draw(st.integers(1, 65))
    scale = data.draw(st.integers(0, min(30, precision)))
    int_digits = data.draw(st.text("0123456789", min_size=precision - scale, max_size=precision - scale))
    frac_digits = data.draw(st.text("0123456789", min_size=scale, max_size=scale))
    negative = data.draw(st.booleans())
    source = ("-" if negative else "") + (int_digits or "0") + ("." + frac_digits if scale else "")
    text, _ = decode_decimal(encode_decimal(source, precision, scale), 0, precision, scale)
    assert text == mysql_text(negative, int_digits, frac_digits)
    assert Decimal(text) == Decimal(source)


@given(st.integers(1, 65).flatmap(lambda p: st.tuples(st.just(p), st.integers(0, min(30, p)))), st.binary())
def test_arbitrary_bytes_decode_or_raise_only_decoder_errors(ps: tuple[int, int], raw: bytes) -> None:
    precision, scale = ps
    try:
        text, _ = decode_decimal(raw, 0, precision, scale)
    except (TruncatedError, MalformedError):
        return
    assert Decimal(text).as_tuple().exponent == -scale
