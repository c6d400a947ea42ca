"""DDL replay: the column lists of tables, kept up to date by the statements found in binlogs.

Statements are parsed with sqlglot's MySQL dialect (a real SQL parser, not patterns over the
text).  :class:`SchemaRegistry` holds ``(schema, table) -> columns`` and :meth:`SchemaRegistry.apply`
replays one statement, returning what it touched::

    registry = SchemaRegistry()
    registry.apply("CREATE TABLE shop.t (id INT NOT NULL, name VARCHAR(20))", default_schema=None)
    registry.apply("ALTER TABLE shop.t ADD COLUMN price DECIMAL(8,2) AFTER id", default_schema=None)
    [c.name for c in registry.columns("shop", "t")]   # ['id', 'price', 'name']

Handled: CREATE TABLE (column list, ``LIKE``), ALTER TABLE ADD (``FIRST``/``AFTER``) / DROP /
MODIFY / CHANGE / RENAME COLUMN and ``RENAME TO``, RENAME TABLE (several pairs), DROP TABLE
(several), CREATE/DROP DATABASE; TRUNCATE touches a table without changing it.  When sqlglot
cannot build a CREATE TABLE (a type it does not know, such as MariaDB's INET6 or UUID), the
column list is read from sqlglot's tokens of the statement instead: the first identifier of each
top-level element names a column, the tokens after it are its type.  A statement that cannot
be replayed is reported in :attr:`DdlResult.error`, never guessed.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from itertools import pairwise

import sqlglot
from sqlglot import Token, TokenType, exp
from sqlglot.errors import ParseError, TokenError

logging.getLogger("sqlglot").setLevel(logging.ERROR)  # "falling back to a Command" is reported by us

TableKey = tuple[str, str]
"""``(schema, table)`` as the statement names them (MySQL's case of the names kept)."""

_CONSTRAINT_WORDS = frozenset(
    {"PRIMARY", "KEY", "INDEX", "UNIQUE", "CONSTRAINT", "FOREIGN", "FULLTEXT", "SPATIAL", "CHECK", "PERIOD"}
)
_ATTRIBUTE_WORDS = frozenset(
    {
        "NOT",
        "NULL",
        "DEFAULT",
        "AUTO_INCREMENT",
        "PRIMARY",
        "UNIQUE",
        "KEY",
        "COMMENT",
        "COLLATE",
        "CHARACTER",
        "CHARSET",
        "REFERENCES",
        "GENERATED",
        "AS",
        "ON",
        "INVISIBLE",
        "VISIBLE",
        "CHECK",
        "STORED",
        "VIRTUAL",
        "PERSISTENT",
        "COLUMN_FORMAT",
        "STORAGE",
        "SRID",
        "REF_SYSTEM_ID",
        "WITHOUT",
        "WITH",
    }
)


_MUST_PARSE = (["ALTER", "TABLE"], ["CREATE", "TABLE"])
"""Statements that change columns: when sqlglot keeps one as an opaque command, it is reported."""


@dataclass(frozen=True, slots=True)
class ColumnSpec:
    """One column as DDL declares it: its name, MySQL type text, nullability, character set and
    default (its SQL text, ``7``, ``'x'``, ``CURRENT_TIMESTAMP()``; None when it declares none or NULL)."""

    name: str
    type: str
    nullable: bool = True
    charset: str | None = None
    collation: str | None = None
    default: str | None = None
    primary_key: bool = False
    """A column of the table's primary key (``PRIMARY KEY`` on it, or in the table's key list)."""


Charset = tuple[str | None, str | None]
"""A default character set and collation (``("latin1", None)``); ``(None, None)`` when unknown."""

_TEXT_TYPES = frozenset({"char", "varchar", "tinytext", "text", "mediumtext", "longtext", "enum", "set"})
"""Types whose columns take the table's default character set when they name none."""


def _base_type(type_text: str) -> str:
    """``varchar`` of ``varchar(20)``, ``int`` of ``int unsigned``."""
    return type_text.split("(", 1)[0].split(" ", 1)[0].lower()


def _charset_of_collation(collation: str) -> str:
    return collation.split("_", 1)[0]


def _with_default(spec: ColumnSpec, default: Charset) -> ColumnSpec:
    """A text column's character set as MySQL completes it: its own, its collation's, else the table's.

    MariaDB's JSON is LONGTEXT in utf8mb4 whatever the table's default is.
    """
    base = _base_type(spec.type)
    if spec.charset is None and spec.collation is not None:
        return replace(spec, charset=_charset_of_collation(spec.collation))
    if spec.charset is not None or spec.collation is not None:
        return spec
    if base == "json":
        return replace(spec, charset="utf8mb4", collation="utf8mb4_bin")
    if base in _TEXT_TYPES and default != (None, None):
        charset, collation = default
        return replace(
            spec,
            charset=charset or (None if collation is None else _charset_of_collation(collation)),
            collation=collation,
        )
    return spec


def _charset_properties(expressions: list[exp.Expression]) -> Charset:
    """``(charset, collation)`` of ``[DEFAULT] CHARSET=x COLLATE=y`` table or database options."""
    charset = collation = None
    for prop in expressions:
        if isinstance(prop, exp.CharacterSetProperty):
            charset = prop.this.name.lower()
        elif isinstance(prop, exp.CollateProperty):
            collation = prop.this.name.lower()
    if charset is None and collation is not None:
        charset = _charset_of_collation(collation)
    return (charset, collation)


_ALTER_MODIFIERS = frozenset({"ONLINE", "IGNORE"})
"""MariaDB's ``ALTER [ONLINE] [IGNORE] TABLE``: the words change how, not what, so they are dropped."""


def _without_alter_modifiers(statement: str) -> str:
    """``ALTER ONLINE IGNORE TABLE t ...`` -> ``ALTER TABLE t ...`` (other statements unchanged)."""
    try:
        tokens = sqlglot.tokenize(statement, read="mysql")
    except TokenError:
        return statement
    if not tokens or tokens[0].text.upper() != "ALTER":
        return statement
    rest = 1
    while rest < len(tokens) and tokens[rest].text.upper() in _ALTER_MODIFIERS:
        rest += 1
    if rest == 1 or rest >= len(tokens):
        return statement
    return statement[: tokens[1].start] + statement[tokens[rest].start :]


@dataclass(slots=True)
class DdlResult:
    """What one statement did: the objects it touched and the tables whose columns changed."""

    objects: list[tuple[str | None, str, str]] = field(default_factory=list)
    """``(schema, table or database, action)``: action is create, alter, rename_from, rename_to,
    drop, truncate, create_database or drop_database."""
    changed: list[TableKey] = field(default_factory=list)
    """Tables whose column list is new or different after the statement (dropped ones excluded)."""
    dropped: list[TableKey] = field(default_factory=list)
    error: str | None = None


def _schema_of(table: exp.Table, default_schema: str | None) -> str | None:
    return table.db or default_schema


def _lower_type_name(text: str) -> str:
    """``DECIMAL(8, 2) UNSIGNED`` -> ``decimal(8,2) unsigned`` (MySQL's spelling); quoted ENUM/SET
    labels keep their case and spaces."""
    out: list[str] = []
    quote: str | None = None
    previous = ""
    for char in text:
        if quote is not None:
            out.append(char)
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
            out.append(char)
        elif not (char == " " and previous == ","):
            out.append(char.lower())
        if quote is None or char != " ":
            previous = char if quote is None else ""
    return "".join(out)


_LABELLED = {exp.DataType.Type.ENUM: "enum", exp.DataType.Type.SET: "set"}
"""Types whose parameters are quoted labels, written back as MySQL writes them (``''`` inside)."""


def _quoted_labels(word: str, labels: list[str]) -> str:
    """``enum('a','it''s')``."""
    return word + "(" + ",".join("'" + label.replace("'", "''") + "'" for label in labels) + ")"


def _type_text(kind: exp.Expression | None) -> str:
    if kind is None:
        return ""
    word = _LABELLED.get(kind.this) if isinstance(kind, exp.DataType) else None
    if word is not None:
        return _quoted_labels(word, [str(label.this) for label in kind.expressions])
    return _lower_type_name(kind.sql(dialect="mysql"))


def _spec_of(column: exp.ColumnDef) -> ColumnSpec:
    nullable, primary_key = True, False
    charset = collation = default = None
    for constraint in column.args.get("constraints") or []:
        kind = constraint.args.get("kind")
        if isinstance(kind, exp.DefaultColumnConstraint):
            default = None if isinstance(kind.this, exp.Null) else kind.this.sql(dialect="mysql")
        elif isinstance(kind, exp.NotNullColumnConstraint):
            nullable = bool(kind.args.get("allow_null"))
        elif isinstance(kind, exp.PrimaryKeyColumnConstraint):
            nullable, primary_key = False, True
        elif isinstance(kind, exp.CharacterSetColumnConstraint):
            charset = kind.this.name.lower()
        elif isinstance(kind, exp.CollateColumnConstraint):
            collation = kind.this.name.lower()
    type_expr = column.args.get("kind")
    if isinstance(type_expr, exp.DataType):
        for charset_expr in type_expr.find_all(exp.CharacterSet):
            charset = charset_expr.this.name.lower() if charset_expr.this else charset
    return ColumnSpec(column.name, _type_text(type_expr), nullable, charset, collation, default, primary_key)


def _key_names(node: exp.Expression) -> list[str]:
    """The columns of the ``PRIMARY KEY (...)`` lists under ``node`` (a prefix ``a(5)`` names ``a``)."""
    return [
        (part.this if isinstance(part, exp.ColumnPrefix | exp.Ordered) else part).name
        for key in node.find_all(exp.PrimaryKey)
        for part in key.expressions
    ]


def _keyed(columns: list[ColumnSpec], names: list[str]) -> list[ColumnSpec]:
    """The columns with ``names`` (compared case-insensitively) as the primary key."""
    lowered = {name.lower() for name in names}
    return [replace(c, primary_key=c.name.lower() in lowered) for c in columns]


def _names_key(token: Token) -> bool:
    """Whether the token opens ``PRIMARY KEY`` (one token, or ``PRIMARY`` then ``KEY``)."""
    return token.token_type == TokenType.PRIMARY_KEY or token.text.upper() == "PRIMARY"


def _token_key_names(part: list[Token]) -> list[str]:
    """The columns of a ``[CONSTRAINT x] PRIMARY KEY (a, b(5))`` element's tokens; [] for another element."""
    start = next((i for i, token in enumerate(part[:3]) if _names_key(token)), None)
    if start is None:
        return []
    names, depth = [], 0
    for token in part[start:]:
        if token.token_type == TokenType.L_PAREN:
            depth += 1
        elif token.token_type == TokenType.R_PAREN:
            depth -= 1
        elif depth == 1 and token.token_type in (TokenType.VAR, TokenType.IDENTIFIER):
            names.append(token.text)
    return names


def _split_top_level(tokens: list[Token]) -> Iterator[list[Token]]:
    """Tokens of a parenthesised list, split at its top-level commas."""
    depth = 0
    part: list[Token] = []
    for token in tokens:
        if token.token_type == TokenType.L_PAREN:
            depth += 1
        elif token.token_type == TokenType.R_PAREN:
            depth -= 1
        if depth == 0 and token.token_type == TokenType.COMMA:
            yield part
            part = []
        else:
            part.append(token)
    if part:
        yield part


def _column_list(statement: str) -> list[list[Token]]:
    """The top-level elements of a CREATE TABLE's parenthesised list, as tokens."""
    tokens = sqlglot.tokenize(statement, read="mysql")
    start = next((i for i, t in enumerate(tokens) if t.token_type == TokenType.L_PAREN), None)
    if start is None:
        raise ParseError("no column list")
    depth, end = 0, None
    for i in range(start, len(tokens)):
        if tokens[i].token_type == TokenType.L_PAREN:
            depth += 1
        elif tokens[i].token_type == TokenType.R_PAREN:
            depth -= 1
            if depth == 0:
                end = i
                break
    if end is None:
        raise ParseError("unbalanced column list")
    return [part for part in _split_top_level(tokens[start + 1 : end]) if part]


def _element_spec(statement: str, part: list[Token]) -> ColumnSpec:
    """One column definition: parsed alone by sqlglot when it can, else read from its tokens (a
    type sqlglot does not know, such as MariaDB's INET6 or UUID)."""
    text = statement[part[0].start : part[-1].end + 1]
    try:
        parsed = sqlglot.parse_one(f"CREATE TABLE _element ({text})", read="mysql")
    except (ParseError, TokenError):
        parsed = None
    definitions = [] if parsed is None else list(parsed.find_all(exp.ColumnDef))
    if len(definitions) == 1:
        return _spec_of(definitions[0])
    type_tokens: list[Token] = []
    depth = 0
    for token in part[1:]:
        if depth == 0 and token.text.upper() in _ATTRIBUTE_WORDS:
            break
        depth += token.token_type == TokenType.L_PAREN
        depth -= token.token_type == TokenType.R_PAREN
        type_tokens.append(token)
    words = [t.text.upper() for t in part]
    nullable = not any(pair == ("NOT", "NULL") for pair in pairwise(words)) and not any(map(_names_key, part))
    labels = [t.text for t in type_tokens if t.token_type == TokenType.STRING]
    if type_tokens and type_tokens[0].text.lower() in {"enum", "set"}:
        type_text = _quoted_labels(type_tokens[0].text.lower(), labels)
    else:
        joined = " ".join(t.text for t in type_tokens)
        type_text = _lower_type_name(joined.replace(" (", "(").replace("( ", "(").replace(" )", ")").replace(" ,", ","))
    return ColumnSpec(
        part[0].text,
        type_text,
        nullable,
        _word_after(words, "CHARSET", "SET"),
        _word_after(words, "COLLATE"),
        _default_of(part),
        any(_names_key(token) for token in part),
    )


def _default_of(part: list[Token]) -> str | None:
    """The SQL text of the one-token default of a column definition's tokens (``DEFAULT 'x'``)."""
    for token, following in pairwise(part):
        if token.text.upper() == "DEFAULT":
            if following.token_type == TokenType.STRING:
                return "'" + following.text.replace("'", "''") + "'"
            return None if following.text.upper() == "NULL" else following.text
    return None


def _word_after(words: list[str], *keys: str) -> str | None:
    """The (lower-case) word after the first of ``keys`` (``=`` skipped): ``CHARACTER SET x``, ``COLLATE y``."""
    for i, word in enumerate(words[:-1]):
        if word in keys:
            following = words[i + 2] if words[i + 1] == "=" and i + 2 < len(words) else words[i + 1]
            return following.lower()
    return None


def _columns_from_tokens(statement: str) -> list[ColumnSpec]:
    """The column list of a CREATE TABLE that sqlglot cannot build as a whole, element by element."""
    parts = _column_list(statement)
    constraints = [part for part in parts if part[0].text.upper().split()[0] in _CONSTRAINT_WORDS]
    columns = [_element_spec(statement, part) for part in parts if not any(part is c for c in constraints)]
    key = [name for part in constraints for name in _token_key_names(part)]
    return _keyed(columns, key) if key else columns


def _position(column: exp.ColumnDef) -> tuple[str, str | None] | None:
    """``("FIRST", None)``, ``("AFTER", name)`` or None."""
    position = column.args.get("position")
    if position is None:
        return None
    text = position.sql(dialect="mysql") if isinstance(position, exp.Expression) else str(position)
    words = text.split(None, 1)
    if words[0].upper() == "FIRST":
        return ("FIRST", None)
    return ("AFTER", words[1].strip("`")) if len(words) == 2 else None


def _place(columns: list[ColumnSpec], spec: ColumnSpec, position: tuple[str, str | None] | None) -> None:
    if position is None:
        columns.append(spec)
    elif position[0] == "FIRST":
        columns.insert(0, spec)
    else:
        index = _index(columns, position[1] or "")
        columns.insert(index + 1, spec)


def _has(columns: list[ColumnSpec], name: str) -> bool:
    return any(column.name.lower() == name.lower() for column in columns)


def _index(columns: list[ColumnSpec], name: str) -> int:
    for i, column in enumerate(columns):
        if column.name.lower() == name.lower():
            return i
    raise KeyError(f"no column {name!r}")


class SchemaRegistry:
    """Tables and their columns, as replayed from DDL (and a seed snapshot)."""

    def __init__(self) -> None:
        self.tables: dict[TableKey, list[ColumnSpec]] = {}
        self.table_charsets: dict[TableKey, Charset] = {}
        """Each table's default character set (keys in lower case)."""
        self.database_charsets: dict[str, Charset] = {}
        """Each database's default character set (names in lower case), from CREATE/ALTER DATABASE."""

    def table_charset(self, schema: str, table: str) -> Charset:
        """The default character set of a table, else of its database, else ``(None, None)``."""
        found = self.table_charsets.get((schema.lower(), table.lower()))
        return found if found is not None else self.database_charsets.get(schema.lower(), (None, None))

    def _set_table(self, key: TableKey, columns: list[ColumnSpec]) -> None:
        """Store a table's columns, text columns completed with the table's default character set."""
        default = self.table_charset(*key)
        self.tables[key] = [_with_default(c, default) for c in columns]

    def columns(self, schema: str, table: str) -> list[ColumnSpec] | None:
        """The columns of a table, or None when it is not known."""
        return self.tables.get(self.key(schema, table))

    def key(self, schema: str, table: str) -> TableKey:
        """The registry's key of a table (names compared case-insensitively), or ``(schema, table)``."""
        for key in self.tables:
            if key[0].lower() == schema.lower() and key[1].lower() == table.lower():
                return key
        return (schema, table)

    def apply(self, statement: str, default_schema: str | None) -> DdlResult:
        """Replay one statement; parse problems are reported in the result, never raised."""
        result = DdlResult()
        parsed: object
        error: str | None
        statement = _without_alter_modifiers(statement)
        try:
            parsed = sqlglot.parse_one(statement, read="mysql")
        except (ParseError, TokenError) as exc:
            parsed = None
            error = str(exc).splitlines()[0]
        else:
            error = None
        try:
            if isinstance(parsed, exp.Create) or (
                parsed is None and _first_words(statement)[:2] == ["CREATE", "TABLE"]
            ):
                self._create(parsed, statement, default_schema, result)
            elif isinstance(parsed, exp.Alter):
                self._alter(parsed, default_schema, result)
            elif _first_words(statement)[:2] in (["ALTER", "DATABASE"], ["ALTER", "SCHEMA"]):
                self._alter_database(statement, default_schema, result)
            elif _first_words(statement)[:2] == ["ALTER", "TABLE"] and "CONVERT" in _words(statement):
                self._convert(statement, default_schema, result)
            elif isinstance(parsed, exp.Drop):
                self._drop(parsed, default_schema, result)
            elif isinstance(parsed, exp.TruncateTable):
                for table in parsed.expressions:
                    result.objects.append((_schema_of(table, default_schema), table.name, "truncate"))
            elif _first_words(statement)[:2] == ["RENAME", "TABLE"]:
                self._rename_tables(statement, default_schema, result)
            elif _first_words(statement)[:1] == ["TRUNCATE"]:
                table = sqlglot.parse_one(statement.split(None, 2)[-1], read="mysql", into=exp.Table)
                result.objects.append((_schema_of(table, default_schema), table.name, "truncate"))
            elif error is not None:
                result.error = error
            elif isinstance(parsed, exp.Command) and _first_words(statement)[:2] in _MUST_PARSE:
                result.error = f"statement not understood by the parser: {statement[:80]}"
        except (ParseError, TokenError, KeyError, ValueError) as exc:
            result.error = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return result

    def _create(self, parsed: exp.Create | None, statement: str, default_schema: str | None, result: DdlResult) -> None:
        kind = (parsed.args.get("kind") or "").upper() if parsed is not None else "TABLE"
        properties = parsed.args.get("properties") if parsed is not None else None
        options = list(properties.expressions) if properties is not None else []
        if kind in {"DATABASE", "SCHEMA"} and parsed is not None:
            name = parsed.this.name
            result.objects.append((name, name, "create_database"))
            self.database_charsets[name.lower()] = _charset_properties(options)
            return
        if kind != "TABLE":
            return
        temporary = any(isinstance(o, exp.TemporaryProperty) for o in options) or (
            parsed is None and "TEMPORARY" in _first_words(statement)
        )
        like: exp.LikeProperty | None = None
        if parsed is None:
            tokens = sqlglot.tokenize(statement, read="mysql")
            names = _table_name_tokens(tokens)
            table = exp.table_(names[-1], db=names[-2] if len(names) > 1 else None)
            columns = _columns_from_tokens(statement)
        else:
            target = parsed.this
            table = target.this if isinstance(target, exp.Schema) else target
            like = parsed.find(exp.LikeProperty)
            if like is not None:
                source = self.columns(_schema_of(like.this, default_schema) or "", like.this.name)
                if source is None:
                    raise KeyError(f"CREATE TABLE LIKE an unknown table {like.this.sql(dialect='mysql')}")
                columns = list(source)
            elif isinstance(target, exp.Schema):
                columns = [_spec_of(c) for c in target.expressions if isinstance(c, exp.ColumnDef)]
                listed = [n for e in target.expressions if not isinstance(e, exp.ColumnDef) for n in _key_names(e)]
                columns = _keyed(columns, listed) if listed else columns
            else:
                raise ValueError("CREATE TABLE without a column list (CREATE ... SELECT is not replayed)")
        schema = _schema_of(table, default_schema)
        if schema is None:
            raise ValueError("table without a schema and no default schema")
        if temporary:
            # a session's temporary table shadows nothing in the row events (they never name one)
            result.objects.append((schema, table.name, "create_temporary"))
            return
        if parsed is not None and parsed.args.get("exists") and self.columns(schema, table.name) is not None:
            return  # CREATE TABLE IF NOT EXISTS over an existing table changes nothing
        key = self.key(schema, table.name)
        charset = _charset_properties(options)
        if charset == (None, None) and like is not None:
            charset = self.table_charset(_schema_of(like.this, default_schema) or "", like.this.name)
        self.table_charsets[(schema.lower(), table.name.lower())] = (
            charset if charset != (None, None) else self.database_charsets.get(schema.lower(), (None, None))
        )
        self._set_table(key, columns)
        result.objects.append((schema, table.name, "create"))
        result.changed.append(key)

    def _alter(self, parsed: exp.Alter, default_schema: str | None, result: DdlResult) -> None:
        if (parsed.args.get("kind") or "").upper() != "TABLE":
            return
        table = parsed.this
        schema = _schema_of(table, default_schema)
        if schema is None:
            raise ValueError("table without a schema and no default schema")
        key = self.key(schema, table.name)
        current = self.tables.get(key)
        result.objects.append((schema, table.name, "alter"))
        if current is None:
            raise KeyError(f"ALTER TABLE of a table not known to the replay: {schema}.{table.name}")
        columns = list(current)
        renamed_to: exp.Table | None = None
        charset = _charset_properties(list(parsed.args.get("options") or []))
        if charset != (None, None):  # ALTER TABLE t [DEFAULT] CHARSET=x: columns added later take it
            self.table_charsets[(schema.lower(), table.name.lower())] = charset
        for action in parsed.args.get("actions") or []:
            if isinstance(action, exp.ColumnDef):
                if action.args.get("exists") and _has(columns, action.name):
                    continue  # ADD COLUMN IF NOT EXISTS of a column that exists
                _place(columns, _spec_of(action), _position(action))
            elif isinstance(action, exp.Drop) and (action.args.get("kind") or "").upper() == "COLUMN":
                for column in action.args.get("tables") or []:
                    if action.args.get("exists") and not _has(columns, column.name):
                        continue  # DROP COLUMN IF EXISTS of a column that does not exist
                    columns.pop(_index(columns, column.name))
            elif isinstance(action, exp.ModifyColumn):
                definition = action.this
                old = action.args.get("rename_from")
                old_name = old.name if isinstance(old, exp.Expression) else (old or definition.name)
                index = _index(columns, old_name)
                spec = _spec_of(definition)
                spec = replace(spec, primary_key=spec.primary_key or columns[index].primary_key)  # the key stays
                position = _position(definition)
                if position is None:
                    columns[index] = spec
                else:
                    columns.pop(index)
                    _place(columns, spec, position)
            elif isinstance(action, exp.RenameColumn):
                index = _index(columns, action.this.name)
                old_spec = columns[index]
                columns[index] = replace(old_spec, name=action.args["to"].name)
            elif isinstance(action, exp.AlterRename):
                renamed_to = action.this
            elif isinstance(action, exp.DropPrimaryKey):
                columns = _keyed(columns, [])
            elif isinstance(action, exp.AddConstraint) and _key_names(action):
                columns = _keyed(columns, _key_names(action))
        self._set_table(key, columns)
        if self.tables[key] != current:
            result.changed.append(key)
        if renamed_to is not None:
            self._move(key, (_schema_of(renamed_to, schema) or schema, renamed_to.name), result)

    def _move(self, old: TableKey, new: TableKey, result: DdlResult) -> None:
        columns = self.tables.pop(self.key(*old), None)
        result.objects += [(old[0], old[1], "rename_from"), (new[0], new[1], "rename_to")]
        if columns is None:
            raise KeyError(f"RENAME of a table not known to the replay: {old[0]}.{old[1]}")
        self.tables[new] = columns
        charset = self.table_charsets.pop((old[0].lower(), old[1].lower()), None)
        if charset is not None:
            self.table_charsets[(new[0].lower(), new[1].lower())] = charset
        result.dropped.append(old)
        result.changed.append(new)

    def _rename_tables(self, statement: str, default_schema: str | None, result: DdlResult) -> None:
        # the MySQL tokenizer keeps what follows RENAME as one command string: tokenize that part
        head = sqlglot.tokenize(statement, read="mysql")[0]
        tokens = sqlglot.tokenize(statement[head.end + 1 :], read="mysql")[1:]  # after TABLE
        for pair in _split_top_level(tokens):
            words = [t.text.upper() for t in pair]
            if "TO" not in words:
                raise ParseError("RENAME TABLE pair without TO")
            cut = words.index("TO")
            old = _dotted(pair[:cut], default_schema)
            new = _dotted(pair[cut + 1 :], default_schema)
            self._move(old, new, result)

    def _convert(self, statement: str, default_schema: str | None, result: DdlResult) -> None:
        """``ALTER TABLE t CONVERT TO CHARACTER SET x [COLLATE y]``: every text column and the
        table's default change (the only action of the statement, as the parser cannot read it)."""
        words = _words(statement)
        at = words.index("CONVERT")
        if words[at + 1 : at + 2] != ["TO"]:
            raise ParseError(f"statement not understood by the parser: {statement[:80]}")
        tokens = sqlglot.tokenize(statement, read="mysql")
        key = _dotted(tokens[2 : next(i for i, t in enumerate(tokens) if t.text.upper() == "CONVERT")], default_schema)
        result.objects.append((key[0], key[1], "alter"))
        current = self.columns(*key)
        if current is None:
            raise KeyError(f"ALTER TABLE of a table not known to the replay: {key[0]}.{key[1]}")
        tail = words[at + 2 :]
        collation = _word_after(tail, "COLLATE")
        charset = _word_after(tail, "CHARSET", "SET") or (
            None if collation is None else _charset_of_collation(collation)
        )
        self.table_charsets[(key[0].lower(), key[1].lower())] = (charset, collation)
        converted = [
            replace(c, charset=charset, collation=collation) if _base_type(c.type) in _TEXT_TYPES else c
            for c in current
        ]
        if converted != current:
            self.tables[self.key(*key)] = converted
            result.changed.append(self.key(*key))

    def _alter_database(self, statement: str, default_schema: str | None, result: DdlResult) -> None:
        """``ALTER DATABASE [db] [DEFAULT] CHARACTER SET x [COLLATE y]``: tables created later take it."""
        words = _words(statement)
        named = len(words) > 2 and words[2] not in {"DEFAULT", "CHARACTER", "CHARSET", "COLLATE", "READ", "COMMENT"}
        tokens = sqlglot.tokenize(statement, read="mysql")
        name = tokens[2].text if named else default_schema
        if name is None:
            raise ValueError("ALTER DATABASE without a name and no default schema")
        collation = _word_after(words, "COLLATE")
        charset = _word_after(words, "CHARSET", "SET") or (
            None if collation is None else _charset_of_collation(collation)
        )
        if (charset, collation) != (None, None):
            self.database_charsets[name.lower()] = (charset, collation)
        result.objects.append((name, name, "alter_database"))

    def _drop(self, parsed: exp.Drop, default_schema: str | None, result: DdlResult) -> None:
        kind = (parsed.args.get("kind") or "").upper()
        if parsed.args.get("temporary"):
            for table in parsed.args.get("tables") or [parsed.this]:
                result.objects.append((_schema_of(table, default_schema) or "", table.name, "drop_temporary"))
            return
        if kind in {"DATABASE", "SCHEMA"}:
            target = parsed.this or (parsed.args.get("tables") or [None])[0]
            if target is None:
                raise ValueError("DROP DATABASE without a name")
            name = target.name
            result.objects.append((name, name, "drop_database"))
            for key in [k for k in self.tables if k[0].lower() == name.lower()]:
                del self.tables[key]
                result.dropped.append(key)
            return
        if kind != "TABLE":
            return
        for table in parsed.args.get("tables") or [parsed.this]:
            schema = _schema_of(table, default_schema) or ""
            result.objects.append((schema, table.name, "drop"))
            key = self.key(schema, table.name)
            if self.tables.pop(key, None) is not None:
                result.dropped.append(key)


def _first_words(statement: str) -> list[str]:
    """The first keywords (a command the tokenizer keeps as one string is split into words)."""
    try:
        tokens = sqlglot.tokenize(statement, read="mysql")
    except TokenError:
        return []
    words: list[str] = []
    for token in tokens[:3]:
        words += token.text.upper().split() if token.token_type == TokenType.STRING else [token.text.upper()]
    return words[:3]


def _words(statement: str) -> list[str]:
    """Every token of a statement in upper case (strings as they are)."""
    return [
        t.text if t.token_type == TokenType.STRING else t.text.upper()
        for t in sqlglot.tokenize(statement, read="mysql")
    ]


def _table_name_tokens(tokens: list[Token]) -> list[str]:
    """``db.table`` parts after CREATE [TEMPORARY] TABLE [IF NOT EXISTS]."""
    names: list[str] = []
    for token in tokens[2:]:
        if token.token_type == TokenType.L_PAREN:
            break
        if token.text.upper() in {"IF", "NOT", "EXISTS", "TEMPORARY", "TABLE"}:
            continue
        if token.token_type != TokenType.DOT:
            names.append(token.text)
    if not names:
        raise ParseError("CREATE TABLE without a name")
    return names


def _dotted(tokens: list[Token], default_schema: str | None) -> TableKey:
    parts = [t.text for t in tokens if t.token_type != TokenType.DOT]
    if len(parts) == 2:
        return (parts[0], parts[1])
    if len(parts) == 1 and default_schema is not None:
        return (default_schema, parts[0])
    raise ParseError(f"cannot read a table name from {' '.join(t.text for t in tokens)!r}")


def parse_seed(text: str) -> SchemaRegistry:
    """A registry from a seed snapshot: ``SHOW CREATE TABLE`` outputs separated by ``;``.

    ``USE db;`` sets the schema of the unqualified statements that follow::

        USE shop;
        CREATE TABLE `orders` (`id` int NOT NULL, `total` decimal(10,2)) ENGINE=InnoDB;
    """
    registry = SchemaRegistry()
    schema: str | None = None
    for statement in _statements(text):
        words = _first_words(statement)
        if words[:1] == ["USE"]:
            schema = statement.split(None, 1)[1].strip().strip("`")
            continue
        result = registry.apply(statement, schema)
        if result.error is not None:
            raise ValueError(f"seed statement not understood ({result.error}): {statement[:120]}")
    return registry


def _statements(text: str) -> Iterator[str]:
    """Statements of a script, split at top-level semicolons by sqlglot's tokenizer."""
    tokens = sqlglot.tokenize(text, read="mysql")
    start = None
    for token in tokens:
        if token.token_type == TokenType.SEMICOLON:
            if start is not None:
                yield text[start : token.start].strip()
            start = None
        elif start is None:
            start = token.start
    if start is not None and text[start:].strip():
        yield text[start:].strip()


__all__ = ["ColumnSpec", "DdlResult", "SchemaRegistry", "TableKey", "parse_seed"]
