"""The gateway's answers to PartiQL requests that carry an INSERT (see ``partiql`` for why).

moto answers every other statement; an INSERT is put by ``adapter.insert_item``, which refuses a
taken key as DynamoDB does.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING

from . import adapter
from .partiql import (
    DUPLICATE_CODE,
    DUPLICATE_ITEM,
    DUPLICATE_MESSAGE,
    Insert,
    StatementError,
    is_insert,
    parse_insert,
)

if TYPE_CHECKING:
    from ..parts import AwsGateway
    from .gateway import Served

_PREFIX = "com.amazonaws.dynamodb.v20120810#"


# -- serving the three operations --------------------------------------------------------------
def serve(gateway: "AwsGateway", region: str) -> None:
    """Answer PartiQL requests that carry an INSERT as DynamoDB does; moto answers all the others."""
    gateway.serve_locally("dynamodb", "ExecuteStatement", lambda p, forward: _execute(region, p, forward))
    gateway.serve_locally("dynamodb", "BatchExecuteStatement", lambda p, forward: _batch(region, p, forward))
    gateway.serve_locally("dynamodb", "ExecuteTransaction", lambda p, forward: _transaction(region, p, forward))


def _answer(data: dict, status: int = 200) -> "Served":
    return status, {"Content-Type": "application/x-amz-json-1.0"}, json.dumps(data).encode()


def _error(code: str, message: str, extra: dict | None = None) -> "Served":
    return _answer({"__type": _PREFIX + code, "message": message, **(extra or {})}, 400)


def _execute(region: str, params: dict, forward: Callable[[], "Served"]) -> "Served":
    if not is_insert(params.get("Statement")):
        return forward()
    try:
        insert = parse_insert(params["Statement"], params.get("Parameters"))
    except StatementError as e:
        return _error("ValidationException", str(e))
    refused = adapter.insert_item(region, insert.table, insert.item)
    if refused is not None:
        return _error(*refused)
    return _answer({"Items": []})  # "This statement does not return any values"


def _batch(region: str, params: dict, forward: Callable[[], "Served"]) -> "Served":
    statements = params.get("Statements") or []
    if not any(is_insert((s or {}).get("Statement")) for s in statements):
        return forward()
    responses = []
    for s in statements:
        # Each statement of a batch succeeds or fails on its own (API_BatchStatementResponse.html).
        if not is_insert(s.get("Statement")):
            responses.append(adapter.partiql_statement(region, "batch", s))
            continue
        try:
            insert = parse_insert(s["Statement"], s.get("Parameters"))
        except StatementError as e:
            responses.append({"Error": {"Code": "ValidationError", "Message": str(e)}})
            continue
        refused = adapter.insert_item(region, insert.table, insert.item)
        if refused is None:
            responses.append({"TableName": insert.table})
        else:
            code, message = refused
            short = DUPLICATE_CODE if code == DUPLICATE_ITEM else code.removesuffix("Exception")
            responses.append({"TableName": insert.table, "Error": {"Code": short, "Message": message}})
    return _answer({"Responses": responses})


def _transaction(region: str, params: dict, forward: Callable[[], "Served"]) -> "Served":
    statements = params.get("TransactStatements") or []
    if not any(is_insert((s or {}).get("Statement")) for s in statements):
        return forward()
    inserts: list[Insert | None] = []
    for s in statements:
        try:
            inserts.append(parse_insert(s["Statement"], s.get("Parameters")) if is_insert(s.get("Statement")) else None)
        except StatementError as e:
            return _error("ValidationException", str(e))
    # All or nothing: every INSERT is checked before any statement is applied (the gateway holds
    # the AWS lock, so nothing changes in between). A taken key cancels the whole transaction, with
    # one cancellation reason per statement, as TransactWriteItems does.
    problems = [adapter.insert_item(region, i.table, i.item, check_only=True) if i is not None else None
                for i in inserts]
    invalid = next((p for p in problems if p is not None and p[0] != DUPLICATE_ITEM), None)
    if invalid is not None:
        return _error(*invalid)
    if any(p is not None for p in problems):
        reasons = [{"Code": DUPLICATE_CODE, "Message": DUPLICATE_MESSAGE} if p is not None else {"Code": "None"}
                   for p in problems]
        codes = ", ".join(r["Code"] for r in reasons)
        return _error("TransactionCanceledException",
                      f"Transaction cancelled, please refer cancellation reasons for specific reasons [{codes}]",
                      {"CancellationReasons": reasons})
    responses: list[dict] = []
    for s, insert in zip(statements, inserts):
        if insert is not None:
            adapter.insert_item(region, insert.table, insert.item)
            continue
        answer = adapter.partiql_statement(region, "transaction", s)
        if isinstance(answer, tuple):
            return _error(*answer)
        responses.extend(answer)
    return _answer({"Responses": responses})
