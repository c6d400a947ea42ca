"""Collation ids of MySQL and MariaDB: their charset, their name, and the Python codec for text.

The binlog names a text encoding by *collation id* -- the ``Q_CHARSET_CODE`` status variable of
QUERY, the charset of a USER_VAR, the column charsets in TABLE_MAP optional metadata.  This
module maps an id to ``(charset, collation, codec)`` and decodes text with it.  Physical bytes
stay available: when a value cannot be decoded (the charset has no Python codec, or the bytes
are not valid in it) the functions return the bytes unchanged, and the caller emits a
:class:`binlog_core.errors.CharsetWarning`.  ``binary`` (id 63) always stays bytes; that is
the value, not a problem.

Charsets map to Python codecs faithfully, or not at all:

* MySQL's ``latin1`` is Windows-1252 with the five bytes cp1252 leaves undefined (0x81, 0x8D,
  0x8F, 0x90, 0x9D) mapped to the C1 controls U+0081, U+008D, U+008F, U+0090, U+009D
  (``strings/ctype-latin1.cc``); it is registered here as the codec ``mysql_latin1``, so every
  byte string decodes.
* ``utf8``/``utf8mb3``/``utf8mb4`` -> utf-8; ``ucs2``/``utf16`` -> utf-16-be; ``utf16le`` ->
  utf-16-le; ``utf32`` -> utf-32-be.
* ``binary``, and charsets Python has no codec for (``dec8``, ``hp8``, ``swe7``, ``armscii8``,
  ``keybcs2``, ``geostd8``, ``eucjpms`` -- eucJP-ms differs from Python's euc_jp in the vendor
  rows) -> ``None``: the bytes are kept.

The table was generated once, on 2026-11-22: MariaDB's part by starting a throwaway MariaDB
10.11.19 server and reading ``SELECT ID, CHARACTER_SET_NAME, FULL_COLLATION_NAME FROM
information_schema.COLLATION_CHARACTER_SET_APPLICABILITY`` (1242 collations); MySQL 8.0/9.x's
own ids (76, 248-250 and the ``utf8mb4_*_0900_*`` family 255-323) from MySQL's ``SHOW
COLLATION`` as documented in the MySQL 8.0 reference manual (section 12.10.1, Unicode character
sets) and ``strings/ctype-uca.cc``.  Ids below 248 are shared by both servers; where they name
one differently MariaDB's name is stored and :data:`MYSQL_NAMES` holds MySQL's.  MariaDB's
UCA-14.0.0 collations (ids 2048-3327, MariaDB 10.10+) follow a rule and are generated from it:
``id = base(charset) + 8 * locale_slot + variant`` (see :data:`_UCA1400_BASES`).
"""

from __future__ import annotations

import codecs
from collections.abc import Callable
from functools import lru_cache
from typing import Final, NamedTuple

from binlog_core.constants import Flavor

BINARY_COLLATION: Final = 63
"""``binary``: the bytes are the value."""


class Collation(NamedTuple):
    """One collation id: its charset, its name, and the Python codec for its text (or ``None``)."""

    id: int
    charset: str
    name: str
    codec: str | None


TextDecoder = Callable[[bytes], "str | bytes"]
"""``decode(raw) -> str``, or ``raw`` unchanged when the bytes are not valid text."""

CHARSET_CODECS: Final[dict[str, str | None]] = {
    "big5": "big5",
    "dec8": None,
    "cp850": "cp850",
    "hp8": None,
    "koi8r": "koi8_r",
    "latin1": "mysql_latin1",
    "latin2": "iso8859_2",
    "swe7": None,
    "ascii": "ascii",
    "ujis": "euc_jp",
    "sjis": "shift_jis",
    "hebrew": "iso8859_8",
    "tis620": "tis_620",
    "euckr": "euc_kr",
    "koi8u": "koi8_u",
    "gb2312": "gb2312",
    "greek": "iso8859_7",
    "cp1250": "cp1250",
    "gbk": "gbk",
    "latin5": "iso8859_9",
    "armscii8": None,
    "utf8": "utf-8",
    "utf8mb3": "utf-8",
    "ucs2": "utf-16-be",
    "cp866": "cp866",
    "keybcs2": None,
    "macce": "mac_latin2",
    "macroman": "mac_roman",
    "cp852": "cp852",
    "latin7": "iso8859_13",
    "utf8mb4": "utf-8",
    "cp1251": "cp1251",
    "utf16": "utf-16-be",
    "utf16le": "utf-16-le",
    "cp1256": "cp1256",
    "cp1257": "cp1257",
    "utf32": "utf-32-be",
    "binary": None,
    "geostd8": None,
    "cp932": "cp932",
    "eucjpms": None,
    "gb18030": "gb18030",
}
"""Charset name -> Python codec, ``None`` where Python has none (or the bytes are the value)."""

# fmt: off
_RUNS: Final[tuple[tuple[int, str], ...]] = (
    (
        1,
        "big5_chinese_ci latin2_czech_cs dec8_swedish_ci cp850_general_ci latin1_german1_ci "
        "hp8_english_ci koi8r_general_ci latin1_swedish_ci latin2_general_ci swe7_swedish_ci "
        "ascii_general_ci ujis_japanese_ci sjis_japanese_ci cp1251_bulgarian_ci latin1_danish_ci "
        "hebrew_general_ci"
    ),
    (
        18,
        "tis620_thai_ci euckr_korean_ci latin7_estonian_cs latin2_hungarian_ci koi8u_general_ci "
        "cp1251_ukrainian_ci gb2312_chinese_ci greek_general_ci cp1250_general_ci latin2_croatian_ci "
        "gbk_chinese_ci cp1257_lithuanian_ci latin5_turkish_ci latin1_german2_ci armscii8_general_ci "
        "utf8mb3_general_ci cp1250_czech_cs ucs2_general_ci cp866_general_ci keybcs2_general_ci "
        "macce_general_ci macroman_general_ci cp852_general_ci latin7_general_ci latin7_general_cs "
        "macce_bin cp1250_croatian_ci utf8mb4_general_ci utf8mb4_bin latin1_bin latin1_general_ci "
        "latin1_general_cs cp1251_bin cp1251_general_ci cp1251_general_cs macroman_bin utf16_general_ci "
        "utf16_bin utf16le_general_ci cp1256_general_ci cp1257_bin cp1257_general_ci utf32_general_ci "
        "utf32_bin utf16le_bin binary armscii8_bin ascii_bin cp1250_bin cp1256_bin cp866_bin dec8_bin "
        "greek_bin hebrew_bin hp8_bin keybcs2_bin koi8r_bin koi8u_bin utf8mb3_tolower_ci latin2_bin "
        "latin5_bin latin7_bin cp850_bin cp852_bin swe7_bin utf8mb3_bin big5_bin euckr_bin gb2312_bin "
        "gbk_bin sjis_bin tis620_bin ucs2_bin ujis_bin geostd8_general_ci geostd8_bin latin1_spanish_ci "
        "cp932_japanese_ci cp932_bin eucjpms_japanese_ci eucjpms_bin cp1250_polish_ci"
    ),
    (
        101,
        "utf16_unicode_ci utf16_icelandic_ci utf16_latvian_ci utf16_romanian_ci utf16_slovenian_ci "
        "utf16_polish_ci utf16_estonian_ci utf16_spanish_ci utf16_swedish_ci utf16_turkish_ci "
        "utf16_czech_ci utf16_danish_ci utf16_lithuanian_ci utf16_slovak_ci utf16_spanish2_ci "
        "utf16_roman_ci utf16_persian_ci utf16_esperanto_ci utf16_hungarian_ci utf16_sinhala_ci "
        "utf16_german2_ci utf16_croatian_mysql561_ci utf16_unicode_520_ci utf16_vietnamese_ci"
    ),
    (
        128,
        "ucs2_unicode_ci ucs2_icelandic_ci ucs2_latvian_ci ucs2_romanian_ci ucs2_slovenian_ci "
        "ucs2_polish_ci ucs2_estonian_ci ucs2_spanish_ci ucs2_swedish_ci ucs2_turkish_ci ucs2_czech_ci "
        "ucs2_danish_ci ucs2_lithuanian_ci ucs2_slovak_ci ucs2_spanish2_ci ucs2_roman_ci ucs2_persian_ci "
        "ucs2_esperanto_ci ucs2_hungarian_ci ucs2_sinhala_ci ucs2_german2_ci ucs2_croatian_mysql561_ci "
        "ucs2_unicode_520_ci ucs2_vietnamese_ci"
    ),
    (
        159,
        "ucs2_general_mysql500_ci utf32_unicode_ci utf32_icelandic_ci utf32_latvian_ci utf32_romanian_ci "
        "utf32_slovenian_ci utf32_polish_ci utf32_estonian_ci utf32_spanish_ci utf32_swedish_ci "
        "utf32_turkish_ci utf32_czech_ci utf32_danish_ci utf32_lithuanian_ci utf32_slovak_ci "
        "utf32_spanish2_ci utf32_roman_ci utf32_persian_ci utf32_esperanto_ci utf32_hungarian_ci "
        "utf32_sinhala_ci utf32_german2_ci utf32_croatian_mysql561_ci utf32_unicode_520_ci "
        "utf32_vietnamese_ci"
    ),
    (
        192,
        "utf8mb3_unicode_ci utf8mb3_icelandic_ci utf8mb3_latvian_ci utf8mb3_romanian_ci "
        "utf8mb3_slovenian_ci utf8mb3_polish_ci utf8mb3_estonian_ci utf8mb3_spanish_ci utf8mb3_swedish_ci "
        "utf8mb3_turkish_ci utf8mb3_czech_ci utf8mb3_danish_ci utf8mb3_lithuanian_ci utf8mb3_slovak_ci "
        "utf8mb3_spanish2_ci utf8mb3_roman_ci utf8mb3_persian_ci utf8mb3_esperanto_ci "
        "utf8mb3_hungarian_ci utf8mb3_sinhala_ci utf8mb3_german2_ci utf8mb3_croatian_mysql561_ci "
        "utf8mb3_unicode_520_ci utf8mb3_vietnamese_ci"
    ),
    (
        223,
        "utf8mb3_general_mysql500_ci utf8mb4_unicode_ci utf8mb4_icelandic_ci utf8mb4_latvian_ci "
        "utf8mb4_romanian_ci utf8mb4_slovenian_ci utf8mb4_polish_ci utf8mb4_estonian_ci "
        "utf8mb4_spanish_ci utf8mb4_swedish_ci utf8mb4_turkish_ci utf8mb4_czech_ci utf8mb4_danish_ci "
        "utf8mb4_lithuanian_ci utf8mb4_slovak_ci utf8mb4_spanish2_ci utf8mb4_roman_ci utf8mb4_persian_ci "
        "utf8mb4_esperanto_ci utf8mb4_hungarian_ci utf8mb4_sinhala_ci utf8mb4_german2_ci "
        "utf8mb4_croatian_mysql561_ci utf8mb4_unicode_520_ci utf8mb4_vietnamese_ci gb18030_chinese_ci "
        "gb18030_bin gb18030_unicode_520_ci"
    ),
    (
        255,
        "utf8mb4_0900_ai_ci utf8mb4_de_pb_0900_ai_ci utf8mb4_is_0900_ai_ci utf8mb4_lv_0900_ai_ci "
        "utf8mb4_ro_0900_ai_ci utf8mb4_sl_0900_ai_ci utf8mb4_pl_0900_ai_ci utf8mb4_et_0900_ai_ci "
        "utf8mb4_es_0900_ai_ci utf8mb4_sv_0900_ai_ci utf8mb4_tr_0900_ai_ci utf8mb4_cs_0900_ai_ci "
        "utf8mb4_da_0900_ai_ci utf8mb4_lt_0900_ai_ci utf8mb4_sk_0900_ai_ci utf8mb4_es_trad_0900_ai_ci "
        "utf8mb4_la_0900_ai_ci"
    ),
    (273, "utf8mb4_eo_0900_ai_ci utf8mb4_hu_0900_ai_ci utf8mb4_hr_0900_ai_ci"),
    (
        277,
        "utf8mb4_vi_0900_ai_ci utf8mb4_0900_as_cs utf8mb4_de_pb_0900_as_cs utf8mb4_is_0900_as_cs "
        "utf8mb4_lv_0900_as_cs utf8mb4_ro_0900_as_cs utf8mb4_sl_0900_as_cs utf8mb4_pl_0900_as_cs "
        "utf8mb4_et_0900_as_cs utf8mb4_es_0900_as_cs utf8mb4_sv_0900_as_cs utf8mb4_tr_0900_as_cs "
        "utf8mb4_cs_0900_as_cs utf8mb4_da_0900_as_cs utf8mb4_lt_0900_as_cs utf8mb4_sk_0900_as_cs "
        "utf8mb4_es_trad_0900_as_cs utf8mb4_la_0900_as_cs"
    ),
    (296, "utf8mb4_eo_0900_as_cs utf8mb4_hu_0900_as_cs utf8mb4_hr_0900_as_cs"),
    (300, "utf8mb4_vi_0900_as_cs"),
    (
        303,
        "utf8mb4_ja_0900_as_cs utf8mb4_ja_0900_as_cs_ks utf8mb4_0900_as_ci utf8mb4_ru_0900_ai_ci "
        "utf8mb4_ru_0900_as_cs utf8mb4_zh_0900_as_cs utf8mb4_0900_bin utf8mb4_nb_0900_ai_ci "
        "utf8mb4_nb_0900_as_cs utf8mb4_nn_0900_ai_ci utf8mb4_nn_0900_as_cs utf8mb4_sr_latn_0900_ai_ci "
        "utf8mb4_sr_latn_0900_as_cs utf8mb4_bs_0900_ai_ci utf8mb4_bs_0900_as_cs utf8mb4_bg_0900_ai_ci "
        "utf8mb4_bg_0900_as_cs utf8mb4_gl_0900_ai_ci utf8mb4_gl_0900_as_cs utf8mb4_mn_cyrl_0900_ai_ci "
        "utf8mb4_mn_cyrl_0900_as_cs"
    ),
    (576, "utf8mb3_croatian_ci utf8mb3_myanmar_ci utf8mb3_thai_520_w2"),
    (608, "utf8mb4_croatian_ci utf8mb4_myanmar_ci utf8mb4_thai_520_w2"),
    (640, "ucs2_croatian_ci ucs2_myanmar_ci ucs2_thai_520_w2"),
    (672, "utf16_croatian_ci utf16_myanmar_ci utf16_thai_520_w2"),
    (736, "utf32_croatian_ci utf32_myanmar_ci utf32_thai_520_w2"),
    (1025, "big5_chinese_nopad_ci"),
    (1027, "dec8_swedish_nopad_ci cp850_general_nopad_ci"),
    (
        1030,
        "hp8_english_nopad_ci koi8r_general_nopad_ci latin1_swedish_nopad_ci latin2_general_nopad_ci "
        "swe7_swedish_nopad_ci ascii_general_nopad_ci ujis_japanese_nopad_ci sjis_japanese_nopad_ci"
    ),
    (1040, "hebrew_general_nopad_ci"),
    (1042, "tis620_thai_nopad_ci euckr_korean_nopad_ci"),
    (1046, "koi8u_general_nopad_ci"),
    (1048, "gb2312_chinese_nopad_ci greek_general_nopad_ci cp1250_general_nopad_ci"),
    (1052, "gbk_chinese_nopad_ci"),
    (1054, "latin5_turkish_nopad_ci"),
    (1056, "armscii8_general_nopad_ci utf8mb3_general_nopad_ci"),
    (
        1059,
        "ucs2_general_nopad_ci cp866_general_nopad_ci keybcs2_general_nopad_ci macce_general_nopad_ci "
        "macroman_general_nopad_ci cp852_general_nopad_ci latin7_general_nopad_ci"
    ),
    (1067, "macce_nopad_bin"),
    (1069, "utf8mb4_general_nopad_ci utf8mb4_nopad_bin latin1_nopad_bin"),
    (1074, "cp1251_nopad_bin cp1251_general_nopad_ci"),
    (
        1077,
        "macroman_nopad_bin utf16_general_nopad_ci utf16_nopad_bin utf16le_general_nopad_ci "
        "cp1256_general_nopad_ci cp1257_nopad_bin cp1257_general_nopad_ci utf32_general_nopad_ci "
        "utf32_nopad_bin utf16le_nopad_bin"
    ),
    (
        1088,
        "armscii8_nopad_bin ascii_nopad_bin cp1250_nopad_bin cp1256_nopad_bin cp866_nopad_bin "
        "dec8_nopad_bin greek_nopad_bin hebrew_nopad_bin hp8_nopad_bin keybcs2_nopad_bin koi8r_nopad_bin "
        "koi8u_nopad_bin"
    ),
    (
        1101,
        "latin2_nopad_bin latin5_nopad_bin latin7_nopad_bin cp850_nopad_bin cp852_nopad_bin "
        "swe7_nopad_bin utf8mb3_nopad_bin big5_nopad_bin euckr_nopad_bin gb2312_nopad_bin gbk_nopad_bin "
        "sjis_nopad_bin tis620_nopad_bin ucs2_nopad_bin ujis_nopad_bin geostd8_general_nopad_ci "
        "geostd8_nopad_bin"
    ),
    (1119, "cp932_japanese_nopad_ci cp932_nopad_bin eucjpms_japanese_nopad_ci eucjpms_nopad_bin"),
    (1125, "utf16_unicode_nopad_ci"),
    (1147, "utf16_unicode_520_nopad_ci"),
    (1152, "ucs2_unicode_nopad_ci"),
    (1174, "ucs2_unicode_520_nopad_ci"),
    (1184, "utf32_unicode_nopad_ci"),
    (1206, "utf32_unicode_520_nopad_ci"),
    (1216, "utf8mb3_unicode_nopad_ci"),
    (1238, "utf8mb3_unicode_520_nopad_ci"),
    (1248, "utf8mb4_unicode_nopad_ci"),
    (1270, "utf8mb4_unicode_520_nopad_ci"),
)
"""Collations below 2048 as runs of consecutive ids: (first id, space-separated names)."""
# fmt: on

MYSQL_NAMES: Final[dict[int, str]] = {
    122: "utf16_croatian_ci",
    149: "ucs2_croatian_ci",
    181: "utf32_croatian_ci",
    213: "utf8mb3_croatian_ci",
    245: "utf8mb4_croatian_ci",
}
"""Ids MySQL names differently from MariaDB (MariaDB calls them ``*_croatian_mysql561_ci``)."""

_UCA1400_BASES: Final = {"utf8mb3": 2048, "utf8mb4": 2304, "ucs2": 2560, "utf16": 2816, "utf32": 3072}
"""MariaDB 10.10+ UCA-14.0.0 collations: the first id of each charset's block of 256."""

_UCA1400_LOCALES: Final = (
    "", "icelandic", "latvian", "romanian", "slovenian", "polish", "estonian", "spanish", "swedish",
    "turkish", "czech", "danish", "lithuanian", "slovak", "spanish2", "roman", "persian", "esperanto",
    "hungarian", "sinhala", "german2", None, None, "vietnamese", "croatian",
)  # fmt: skip
"""Locale of each slot of 8 ids inside a block (slots 21 and 22 are unused)."""

_UCA1400_VARIANTS: Final = (
    "_ai_ci", "_ai_cs", "_as_ci", "_as_cs", "_nopad_ai_ci", "_nopad_ai_cs", "_nopad_as_ci", "_nopad_as_cs",
)  # fmt: skip
"""Variant by ``id % 8``: bit 2 NO PAD, bit 1 accent-sensitive, bit 0 case-sensitive."""


def _charset_of_name(name: str) -> str:
    return name if name == "binary" else name.split("_", 1)[0]


def _build_table() -> dict[int, Collation]:
    table: dict[int, Collation] = {}
    for first, names in _RUNS:
        for offset, name in enumerate(names.split()):
            charset = _charset_of_name(name)
            table[first + offset] = Collation(first + offset, charset, name, CHARSET_CODECS[charset])
    for charset, base in _UCA1400_BASES.items():
        for slot, locale in enumerate(_UCA1400_LOCALES):
            if locale is None:
                continue
            stem = f"{charset}_uca1400" + (f"_{locale}" if locale else "")
            for variant, suffix in enumerate(_UCA1400_VARIANTS):
                cid = base + 8 * slot + variant
                table[cid] = Collation(cid, charset, stem + suffix, CHARSET_CODECS[charset])
    return table


COLLATIONS: Final[dict[int, Collation]] = _build_table()
"""Every known collation id of MySQL 8.0/9.x and MariaDB 10.x/11.x."""


# -- MySQL's latin1 --------------------------------------------------------------------------


def _mysql_latin1_table() -> str:
    chars = []
    for byte in range(256):
        try:
            chars.append(bytes((byte,)).decode("cp1252"))
        except UnicodeDecodeError:
            chars.append(chr(byte))  # 0x81 0x8D 0x8F 0x90 0x9D -> the C1 control of the same number
    return "".join(chars)


_LATIN1_DECODING: Final = _mysql_latin1_table()
_LATIN1_ENCODING: Final = codecs.charmap_build(_LATIN1_DECODING)


def latin1_decode(raw: bytes) -> str:
    """Decode MySQL ``latin1`` (cp1252 plus five C1 controls); every byte string decodes.

    >>> latin1_decode(b"\\x80\\x81caf\\xe9")
    '€\\x81café'
    """
    return codecs.charmap_decode(raw, "strict", _LATIN1_DECODING)[0]


def _latin1_codec(name: str) -> codecs.CodecInfo | None:
    if name != "mysql_latin1":
        return None
    return codecs.CodecInfo(
        name="mysql_latin1",
        encode=lambda text, errors="strict": codecs.charmap_encode(text, errors, _LATIN1_ENCODING),
        decode=lambda data, errors="strict": codecs.charmap_decode(data, errors, _LATIN1_DECODING),
    )


codecs.register(_latin1_codec)


# -- lookups and decoding ---------------------------------------------------------------------


def collation_info(collation_id: int, flavor: Flavor | None = None) -> Collation | None:
    """The collation with this id (named as ``flavor`` names it), or ``None`` when unknown.

    >>> collation_info(255)
    Collation(id=255, charset='utf8mb4', name='utf8mb4_0900_ai_ci', codec='utf-8')
    """
    found = COLLATIONS.get(collation_id)
    if found is not None and flavor == Flavor.MYSQL and collation_id in MYSQL_NAMES:
        return found._replace(name=MYSQL_NAMES[collation_id])
    if found is None and 2048 <= collation_id < 3328:
        # a UCA-14.0.0 id of a locale added after the table was generated: the block tells the charset
        charset = next(cs for cs, base in _UCA1400_BASES.items() if base <= collation_id < base + 256)
        return Collation(collation_id, charset, f"{charset}_uca1400_#{collation_id}", CHARSET_CODECS[charset])
    return found


def _by_name() -> dict[str, int]:
    names = {info.name: cid for cid, info in COLLATIONS.items()}
    names.update({name: cid for cid, name in MYSQL_NAMES.items()})
    return names


_COLLATION_IDS: Final[dict[str, int]] = _by_name()
_FIRST_OF_CHARSET: Final[dict[str, int]] = {info.charset: cid for cid, info in sorted(COLLATIONS.items(), reverse=True)}


def collation_id_of(collation: str | None, charset: str | None = None) -> int | None:
    """The id of a collation named in DDL, else of the first collation of ``charset``; ``None``
    when neither is known.  Either one tells how the bytes decode.

    >>> collation_id_of("latin1_bin"), collation_id_of(None, "latin1"), collation_id_of(None, "binary")
    (47, 5, 63)
    """
    if collation is not None:
        name = collation.lower()
        found = _COLLATION_IDS.get(name)
        if found is None and name.startswith("utf8_"):  # MySQL's alias of utf8mb3
            found = _COLLATION_IDS.get("utf8mb3_" + name[len("utf8_") :])
        if found is not None:
            return found
    if charset is None:
        return None
    name = charset.lower()
    return _FIRST_OF_CHARSET.get("utf8mb3" if name == "utf8" else name)


def codec_for_collation(collation_id: int | None, default: str | None = "utf-8") -> str | None:
    """The Python codec for text in this collation: bind it once per column or statement.

    ``None`` means the text stays bytes: ``binary``, a charset without a Python codec, or an
    unknown id.  ``default`` applies only when the file names no collation (``collation_id``
    is ``None``).

    >>> codec_for_collation(8), codec_for_collation(63), codec_for_collation(None)
    ('mysql_latin1', None, 'utf-8')
    """
    if collation_id is None:
        return default
    found = collation_info(collation_id)
    return None if found is None else found.codec


def utf8_decode(raw: bytes) -> str | bytes:
    """Strict UTF-8, or ``raw`` unchanged when it is not valid UTF-8."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw


def _keep_bytes(raw: bytes) -> bytes:
    return raw


@lru_cache(maxsize=64)
def decoder_for_codec(codec: str | None) -> TextDecoder:
    """A strict decoder for one Python codec; it returns the bytes unchanged when they do not decode."""
    if codec is None:
        return _keep_bytes
    if codec == "utf-8":
        return utf8_decode
    if codec == "mysql_latin1":
        return latin1_decode

    def decode(raw: bytes) -> str | bytes:
        try:
            return raw.decode(codec)
        except UnicodeDecodeError:
            return raw

    return decode


def text_decoder(collation_id: int | None, default: str | None = "utf-8") -> TextDecoder | None:
    """The decoder to bind for a text column or statement; ``None`` for ``binary`` (bytes are the value).

    For a charset without a codec or an unknown id the decoder returns the bytes unchanged, so
    a ``bytes`` result always means "could not decode": the caller's cue for a CharsetWarning.
    """
    if collation_id == BINARY_COLLATION or (collation_id is None and default is None):
        return None
    return decoder_for_codec(codec_for_collation(collation_id, default))


def decode_text(raw: bytes, collation_id: int | None, default: str | None = "utf-8") -> str | bytes:
    """Decode ``raw`` in the collation's charset; ``bytes`` when that is impossible (see the module doc).

    >>> decode_text(b"\\xe9", 8), decode_text("😀".encode(), 45), decode_text(b"\\xff", 45)
    ('é', '😀', b'\\xff')
    """
    decoder = text_decoder(collation_id, default)
    return raw if decoder is None else decoder(raw)


def is_undecodable(value: object, collation_id: int | None) -> bool:
    """True when :func:`decode_text` gave up (bytes for a collation that is not ``binary``)."""
    return isinstance(value, bytes) and collation_id != BINARY_COLLATION


def describe_collation(collation_id: int | None) -> str:
    """``"45 (utf8mb4_general_ci)"`` for messages; ``"unknown collation 9999"`` when unknown."""
    if collation_id is None:
        return "no collation"
    found = collation_info(collation_id)
    return f"unknown collation {collation_id}" if found is None else f"{collation_id} ({found.name})"
