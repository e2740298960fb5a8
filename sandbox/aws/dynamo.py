"""Reading DynamoDB's wire format: typed values, SET clauses, numbers as DynamoDB writes them."""
from __future__ import annotations

import json
import re
from typing import Any

_SET_CLAUSE = re.compile(r"\bSET\b(.*?)(\b(REMOVE|ADD|DELETE)\b|$)", re.I | re.S)


def scalar(attr: Any) -> Any:
    """A low-level value ({"S": "x"}, {"N": "5"}) as a plain value; other types as ``<L>`` etc."""
    if isinstance(attr, dict) and len(attr) == 1:
        (kind, value), = attr.items()
        if kind == "N":
            number = float(value)
            return int(number) if number.is_integer() else number
        if kind in ("S", "BOOL"):
            return value
        if kind == "NULL":
            return None
        return f"<{kind}>"
    return attr


def update_assignments(params: dict) -> dict[str, Any]:
    """The attributes an UpdateExpression's SET clause assigns, with their plain values."""
    match = _SET_CLAUSE.search(params.get("UpdateExpression") or "")
    if not match:
        return {}
    names = params.get("ExpressionAttributeNames") or {}
    values = params.get("ExpressionAttributeValues") or {}
    out = {}
    for clause in match.group(1).split(","):
        lhs, _, rhs = clause.partition("=")
        lhs, rhs = lhs.strip(), rhs.strip()
        out[names.get(lhs, lhs)] = scalar(values[rhs]) if rhs in values else rhs
    return out


_NAME_PLACEHOLDER = re.compile(r"#[A-Za-z0-9_]+")


def expanded(expression: str, params: dict) -> str:
    """An expression with its ``#name`` placeholders replaced by the names ExpressionAttributeNames gives them
    (``#o = :me`` with ``{"#o": "Owner"}`` reads ``Owner = :me``), so a misspelt attribute shows on the timeline.
    A placeholder the request does not define stays as written (DynamoDB refuses such a request)."""
    names = params.get("ExpressionAttributeNames") or {}
    return _NAME_PLACEHOLDER.sub(lambda m: str(names.get(m.group(0), m.group(0))), expression)


_EXISTS_TEST = re.compile(r"\battribute_(?:not_)?exists\s*\(\s*([^),\s]+)\s*\)", re.I)


def tested_but_absent(params: dict) -> list[str]:
    """The attributes a PutItem's condition tests with ``attribute_exists`` or ``attribute_not_exists`` that the
    item it writes does not have (names read through ExpressionAttributeNames; a path by its first part).

    A put's condition is checked against the item already stored, and that item was written by the same code:
    a test on an attribute the code never writes always comes out the same way (``attribute_not_exists`` of it
    always holds), however many times the key has been written.
    """
    condition, item = params.get("ConditionExpression"), params.get("Item")
    if not isinstance(condition, str) or not isinstance(item, dict):
        return []
    names = params.get("ExpressionAttributeNames") or {}
    out: list[str] = []
    for path in _EXISTS_TEST.findall(condition):
        first = re.split(r"[.\[]", path, maxsplit=1)[0]
        name = str(names.get(first, first))
        if name not in item and name not in out:
            out.append(name)
    return out


def number_text(value: float) -> str:
    """A number as DynamoDB text, written the way the item was (1700000000, not 1700000000.0)."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def error_code(body: bytes) -> str | None:
    """The short error code of a JSON error response ("ConditionalCheckFailed"), or None."""
    try:
        data = json.loads(body or b"{}")
    except ValueError:
        return None
    code = data.get("__type") or data.get("code") or data.get("Code") if isinstance(data, dict) else None
    if not code:
        return None
    code = code.rsplit("#", 1)[-1].rsplit(".", 1)[-1]
    return code[: -len("Exception")] if code.endswith("Exception") else code


#: PartiQL's requests (ExecuteStatement, BatchExecuteStatement, ExecuteTransaction).
PARTIQL_OPS = ("ExecuteStatement", "BatchExecuteStatement", "ExecuteTransaction")
#: The single-item operation each kind of write in a batch or a transaction amounts to.
_AS_OP = {"Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem",
          "PutRequest": "PutItem", "DeleteRequest": "DeleteItem"}


def table_writes(op: str, params: dict) -> list[tuple[str | None, str, dict]]:
    """Every item write a request makes, as (table, single-item op, that op's params); table None: the
    request names none (moto refuses it).

    PutItem, UpdateItem and DeleteItem write one item; TransactWriteItems and BatchWriteItem
    write several (so can PartiQL's requests: their INSERTs are read here as PutItems, their other
    statements are not), and each counts the same as the single-item call it amounts to (for TTL,
    for locks on the timeline, for the checker's "remaining window").
    """
    if op in ("PutItem", "UpdateItem", "DeleteItem"):
        return [(params.get("TableName"), op, params)]
    if op == "TransactWriteItems":
        out: list[tuple[str | None, str, dict]] = []
        for entry in params.get("TransactItems") or []:
            for kind, body in (entry or {}).items():
                if kind in _AS_OP and isinstance(body, dict):
                    out.append((body.get("TableName"), _AS_OP[kind], body))
        return out
    if op == "BatchWriteItem":
        return [(table, _AS_OP[kind], {"TableName": table, **body})
                for table, requests in (params.get("RequestItems") or {}).items()
                for request in requests or [] for kind, body in (request or {}).items() if kind in _AS_OP]
    if op in PARTIQL_OPS:
        from .partiql import writes  # a PartiQL INSERT writes what a PutItem does

        return list(writes(op, params))
    return []


def cancellation_reasons(body: bytes) -> list[str]:
    """The codes a cancelled transaction gives per item ("ConditionalCheckFailed", "None", ...)."""
    try:
        data = json.loads(body or b"{}")
    except ValueError:
        return []
    reasons = data.get("CancellationReasons") if isinstance(data, dict) else None
    return [str((r or {}).get("Code")) for r in reasons or []]


def plain_value(attr: Any) -> Any:
    """A DynamoDB JSON value ({"S": "x"}, {"N": "5"}, {"M": {...}}) as a plain JSON value, all the way down.

    Numbers become ints when whole, else floats; sets become lists (in DynamoDB's order).
    """
    if not isinstance(attr, dict) or len(attr) != 1:
        return attr
    (kind, value), = attr.items()
    if kind == "M":
        return {k: plain_value(v) for k, v in value.items()}
    if kind == "L":
        return [plain_value(v) for v in value]
    if kind == "NS":
        return [scalar({"N": v}) for v in value]
    if kind == "SS":
        return list(value)
    return scalar(attr)


def plain_item(item: dict) -> dict[str, Any]:
    """A DynamoDB JSON item (an image in a stream record, say) as a plain dict."""
    return {name: plain_value(attr) for name, attr in (item or {}).items()}


def attribute_value(value: Any) -> dict:
    """A plain JSON value as DynamoDB JSON: the inverse of ``plain_value`` for str, numbers, bool, None, dict, list."""
    if value is None:
        return {"NULL": True}
    if isinstance(value, bool):
        return {"BOOL": value}
    if isinstance(value, (int, float)):
        return {"N": number_text(value)}
    if isinstance(value, str):
        return {"S": value}
    if isinstance(value, dict):
        return {"M": {k: attribute_value(v) for k, v in value.items()}}
    if isinstance(value, (list, tuple)):
        return {"L": [attribute_value(v) for v in value]}
    raise TypeError(f"no DynamoDB type for {type(value).__name__}: {value!r}")


def dynamo_item(plain: dict) -> dict[str, dict]:
    """A plain dict (an order) as a DynamoDB JSON item for PutItem."""
    return {name: attribute_value(value) for name, value in plain.items()}
