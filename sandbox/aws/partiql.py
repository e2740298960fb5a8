"""PartiQL ``INSERT`` as DynamoDB runs it, where moto (5.2) does not.

DynamoDB's INSERT adds one item and fails when the table already holds its key: "If the DynamoDB
table already has an item with the same primary key as the primary key of the item being inserted,
DuplicateItemException is returned"
(https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ql-reference.insert.html). So an
INSERT is a claim, exactly as a PutItem with ``attribute_not_exists(pk)`` is. moto 5.2.5 gets two
things wrong (its parser is py-partiql-parser 0.6):

- a second INSERT of the same key succeeds and overwrites the item (it calls ``put_item`` with no
  condition), so two copies of a handler that claim with INSERT both win;
- ``?`` placeholders in the item are never filled from ``Parameters``: the request fails inside moto
  with a TypeError ("Unsupported type ... Variable"), in ExecuteStatement, BatchExecuteStatement
  and ExecuteTransaction alike.

This module reads an INSERT statement (its table and its item, with ``?`` filled from the request's
``Parameters`` in order) without moto; ``partiql_ops.serve`` answers the three PartiQL operations for
requests that carry an INSERT, and leaves every other statement to moto. The README's list of moto's
deviations has the note offered upstream.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, TypedDict

#: DynamoDB's answers (the code in ``__type``, the message AWS gives).
DUPLICATE_ITEM = "DuplicateItemException"
DUPLICATE_MESSAGE = "Duplicate primary key exists in table"
#: A BatchExecuteStatement's per-statement error code and a transaction's cancellation reason for
#: the same case (API_BatchStatementError.html lists ``DuplicateItem`` among the valid codes).
DUPLICATE_CODE = "DuplicateItem"


class StatementError(ValueError):
    """A statement DynamoDB refuses before it touches a table (a ValidationException)."""


_MALFORMED = "Statement wasn't well formed, can't be processed: "


class AttributeValue(TypedDict, total=False):
    """A DynamoDB value in wire form, one key for its type
    (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_AttributeValue.html)."""

    S: str
    N: str
    B: str  # base64, as the wire carries it
    SS: list[str]
    NS: list[str]
    BS: list[str]
    M: dict[str, AttributeValue]
    L: list[AttributeValue]
    NULL: bool
    BOOL: bool


@dataclass(frozen=True)
class Insert:
    """One INSERT: the table and the item (DynamoDB JSON), parameters filled in."""

    table: str
    item: dict[str, AttributeValue]


_INSERT_HEAD = re.compile(r'\s*INSERT\s+INTO\s+(?:"((?:[^"]|"")+)"|([A-Za-z0-9_.-]+))\s+VALUE\s*', re.I | re.S)
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_WORD = re.compile(r"[A-Za-z_]+")


def is_insert(statement: Any) -> bool:
    """Does this statement begin with INSERT (whatever else it holds)?"""
    return isinstance(statement, str) and statement.lstrip()[:6].upper() == "INSERT"


def parse_insert(statement: str, parameters: list[AttributeValue] | None = None) -> Insert:
    """The table and item of ``INSERT INTO "table" VALUE {...}``; StatementError if it is not one.

    The item is a PartiQL tuple: 'strings' ('' for a quote), numbers, TRUE/FALSE, NULL, nested
    tuples {...}, lists [...], sets <<...>>, and ``?`` for the next of ``parameters`` (AttributeValues,
    used as they are).
    """
    head = _INSERT_HEAD.match(statement)
    if head is None:
        raise StatementError(_MALFORMED + "expected INSERT INTO table VALUE {...}")
    table = head.group(1).replace('""', '"') if head.group(1) is not None else head.group(2)
    reader = _Reader(statement, head.end(), list(parameters or []))
    item = reader.value()
    reader.skip_space()
    if reader.pos < len(statement) and statement[reader.pos] == ";":
        reader.pos += 1
        reader.skip_space()
    if reader.pos != len(statement):
        raise StatementError(_MALFORMED + f"unexpected {statement[reader.pos:]!r}")
    if "M" not in item:
        raise StatementError(_MALFORMED + "the item must be a tuple {...}")
    if reader.parameters:
        raise StatementError("Number of parameters in request and statement don't match.")
    return Insert(table, item["M"])


class _Reader:
    """A cursor over a PartiQL value, filling each ``?`` from ``parameters``."""

    def __init__(self, text: str, pos: int, parameters: list[AttributeValue]):
        self.text, self.pos, self.parameters = text, pos, parameters

    def skip_space(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def peek(self, n: int = 1) -> str:
        self.skip_space()
        return self.text[self.pos:self.pos + n]

    def expect(self, token: str) -> None:
        if self.peek(len(token)) != token:
            found = self.text[self.pos:self.pos + 20] or "the end"
            raise StatementError(_MALFORMED + f"expected {token!r} at {found!r}")
        self.pos += len(token)

    def value(self) -> AttributeValue:
        c = self.peek()
        if c == "{":
            return {"M": self._entries()}
        if c == "[":
            return {"L": self._items("[", "]")}
        if self.peek(2) == "<<":
            return _as_set(self._items("<<", ">>"))
        if c == "'":
            return {"S": self._string()}
        if c == "?":
            self.pos += 1
            if not self.parameters:
                raise StatementError("Number of parameters in request and statement don't match.")
            return self.parameters.pop(0)
        number = _NUMBER.match(self.text, self.pos)
        if number:
            self.pos = number.end()
            return {"N": number.group(0).lstrip("+")}
        word = _WORD.match(self.text, self.pos)
        if word and word.group(0).upper() in ("TRUE", "FALSE", "NULL"):
            self.pos = word.end()
            w = word.group(0).upper()
            return {"NULL": True} if w == "NULL" else {"BOOL": w == "TRUE"}
        raise StatementError(_MALFORMED + f"unexpected {self.text[self.pos:self.pos + 20]!r}")

    def _string(self) -> str:
        self.expect("'")
        out = []
        while True:
            end = self.text.find("'", self.pos)
            if end < 0:
                raise StatementError(_MALFORMED + "a string has no closing quote")
            out.append(self.text[self.pos:end])
            self.pos = end + 1
            if self.text.startswith("'", self.pos):  # '' is a quote inside the string
                out.append("'")
                self.pos += 1
                continue
            return "".join(out)

    def _entries(self) -> dict[str, AttributeValue]:
        self.expect("{")
        out: dict[str, AttributeValue] = {}
        if self.peek() == "}":
            self.pos += 1
            return out
        while True:
            if self.peek() == '"':  # a quoted identifier names an attribute too
                self.pos += 1
                end = self.text.find('"', self.pos)
                if end < 0:
                    raise StatementError(_MALFORMED + "a name has no closing quote")
                name, self.pos = self.text[self.pos:end], end + 1
            else:
                name = self._string()
            self.expect(":")
            out[name] = self.value()
            if self.peek() == ",":
                self.pos += 1
                continue
            self.expect("}")
            return out

    def _items(self, opening: str, closing: str) -> list[AttributeValue]:
        self.expect(opening)
        out: list[AttributeValue] = []
        if self.peek(len(closing)) == closing:
            self.pos += len(closing)
            return out
        while True:
            out.append(self.value())
            if self.peek() == ",":
                self.pos += 1
                continue
            self.expect(closing)
            return out


def _as_set(members: list[AttributeValue]) -> AttributeValue:
    """<<...>>: a string, number or binary set (every member of one of those types, as DynamoDB requires)."""
    kinds = {next(iter(m)) for m in members if len(m) == 1}
    if len(kinds) != 1 or len(members) == 0 or next(iter(kinds)) not in ("S", "N", "B"):
        raise StatementError(_MALFORMED + "a set holds strings, numbers or "
                             "binaries, all of one type")
    kind = next(iter(kinds))
    if kind == "S":
        return {"SS": [m["S"] for m in members]}
    if kind == "N":
        return {"NS": [m["N"] for m in members]}
    return {"BS": [m["B"] for m in members]}


def writes(op: str, params: dict) -> list[tuple[str, str, dict]]:
    """The item writes the INSERTs of a PartiQL request make, as (table, "PutItem", PutItem's params).

    An INSERT writes what a PutItem conditional on the key's absence writes; statements that do not
    parse write nothing (DynamoDB refuses them).
    """
    if op == "ExecuteStatement":
        statements = [params]
    elif op == "BatchExecuteStatement":
        statements = params.get("Statements") or []
    elif op == "ExecuteTransaction":
        statements = params.get("TransactStatements") or []
    else:
        return []
    out = []
    for s in statements:
        if isinstance(s, dict) and is_insert(s.get("Statement")):
            try:
                insert = parse_insert(s["Statement"], s.get("Parameters"))
            except (StatementError, TypeError, AttributeError):
                continue
            out.append((insert.table, "PutItem", {"TableName": insert.table, "Item": insert.item}))
    return out
