"""A durable execution's checkpointed operations, and how a checkpoint's updates change them.

The durable execution service keeps, for each execution, the log of its operations (the execution
itself, steps, waits, child contexts). ``CheckpointDurableExecution`` sends updates to it
(``START``, ``SUCCEED``, ``FAIL``, ``RETRY``, ``CANCEL``), and every invocation of the function gets
the log back, so that the SDK replays it; a ``CALLBACK`` is started here and ended by the external system
(``durable_callbacks``)
(https://docs.aws.amazon.com/lambda/latest/api/API_CheckpointDurableExecution.html,
https://docs.aws.amazon.com/lambda/latest/dg/durable-basic-concepts.html). The transitions follow the
model's shapes (``OperationUpdate``, ``Operation``, ``StepDetails``, ``WaitDetails`` in botocore's
Lambda model) and AWS's testing SDK's local service (``aws-durable-execution-sdk-python-testing``,
``checkpoint/processors``): a step's ``RETRY`` makes it ``PENDING`` until ``now +
NextAttemptDelaySeconds``, when the service makes it ``READY``; a ``WAIT``'s ``START`` schedules its end,
when the service makes it ``SUCCEEDED``.

Operations are kept in the API's form, their timestamps in epoch seconds; ``for_invocation`` gives an
operation as the invocation's payload carries it (timestamps in milliseconds, as the SDK's
``Operation.from_json_dict`` reads them).
"""
from __future__ import annotations

import copy

from ..core.jsonvalues import JsonObject

#: The operation types the sandbox serves; CHAINED_INVOKE is not served (sources/durable.py says why).
SERVED_TYPES = ("EXECUTION", "STEP", "WAIT", "CONTEXT", "CALLBACK")
#: An execution's states (GetDurableExecution's Status), and the ones that close it.
RUNNING, SUCCEEDED, FAILED, TIMED_OUT, STOPPED = "RUNNING", "SUCCEEDED", "FAILED", "TIMED_OUT", "STOPPED"


class UpdateRefused(ValueError):
    """An update the service cannot apply: Lambda answers InvalidParameterValueException."""


def execution_operation(op_id: str, payload: str, now: float) -> JsonObject:
    """The EXECUTION operation every execution starts with; its id is the last part of the execution's ARN (the
    SDK's ``ExecutionState.get_execution_operation``), and it carries the input payload."""
    return {"Id": op_id, "Type": "EXECUTION", "Status": "STARTED", "StartTimestamp": now,
            "ExecutionDetails": {"InputPayload": payload}}


def apply_update(ops: dict[str, dict], update: JsonObject, now: float) -> JsonObject:
    """Apply one ``OperationUpdate`` to ``ops`` and return the operation it leaves (``UpdateRefused`` if none)."""
    kind, action, op_id = update.get("Type"), update.get("Action"), update.get("Id")
    if kind not in SERVED_TYPES:
        raise UpdateRefused(f"operations of type {kind} are not served by this sandbox (only "
                            f"{', '.join(SERVED_TYPES)})")
    current = ops.get(str(op_id))
    if kind != "EXECUTION" and current is not None and _closed(current) and action != "START":
        raise UpdateRefused(f"operation {op_id} is already {current['Status']}")
    op = copy.deepcopy(current) if current is not None else _new(update, now)
    handler = _ACTIONS.get((str(kind), str(action)))
    if handler is None:
        raise UpdateRefused(f"invalid action {action} for a {kind} operation")
    handler(op, update, now)
    ops[op["Id"]] = op
    return op


def _new(update: JsonObject, now: float) -> JsonObject:
    op = {"Id": update["Id"], "Type": update["Type"], "Status": "STARTED", "StartTimestamp": now}
    for key in ("ParentId", "Name", "SubType"):
        if update.get(key):
            op[key] = update[key]
    if update["Type"] == "STEP":
        op["StepDetails"] = {"Attempt": 0}
    return op


def _closed(op: JsonObject) -> bool:
    return op["Status"] in ("SUCCEEDED", "FAILED", "CANCELLED", "TIMED_OUT", "STOPPED")


def _start(op: dict, update: dict, now: float) -> None:
    op["Status"] = "STARTED"


def _succeed(op: dict, update: dict, now: float) -> None:
    op["Status"], op["EndTimestamp"] = "SUCCEEDED", now
    details = {"STEP": "StepDetails", "CONTEXT": "ContextDetails"}.get(op["Type"])
    if details is not None:
        op.setdefault(details, {})["Result"] = update.get("Payload")


def _fail(op: dict, update: dict, now: float) -> None:
    op["Status"], op["EndTimestamp"] = "FAILED", now
    details = {"STEP": "StepDetails", "CONTEXT": "ContextDetails"}.get(op["Type"])
    if details is not None and update.get("Error") is not None:
        op.setdefault(details, {})["Error"] = update["Error"]


def _retry(op: dict, update: dict, now: float) -> None:
    """A step that failed (or asks to run again) waits ``NextAttemptDelaySeconds``, one attempt more counted."""
    delay = float((update.get("StepOptions") or {}).get("NextAttemptDelaySeconds") or 0)
    details = op.setdefault("StepDetails", {"Attempt": 0})
    details["Attempt"] = int(details.get("Attempt") or 0) + 1
    details["NextAttemptTimestamp"] = now + delay
    details.pop("Error", None)
    if update.get("Error") is not None:
        details["Error"] = update["Error"]
    if update.get("Payload") is not None:
        details["Result"] = update["Payload"]
    op["Status"] = "PENDING"


def _wait_start(op: dict, update: dict, now: float) -> None:
    seconds = float((update.get("WaitOptions") or {}).get("WaitSeconds") or 1)
    op["Status"], op["StartTimestamp"] = "STARTED", now
    op["WaitDetails"] = {"ScheduledEndTimestamp": now + seconds}


def _cancel(op: dict, update: dict, now: float) -> None:
    op["Status"], op["EndTimestamp"] = "CANCELLED", now


_ACTIONS = {
    ("EXECUTION", "SUCCEED"): _succeed, ("EXECUTION", "FAIL"): _fail,
    ("STEP", "START"): _start, ("STEP", "SUCCEED"): _succeed, ("STEP", "FAIL"): _fail, ("STEP", "RETRY"): _retry,
    ("WAIT", "START"): _wait_start, ("WAIT", "CANCEL"): _cancel,
    ("CONTEXT", "START"): _start, ("CONTEXT", "SUCCEED"): _succeed, ("CONTEXT", "FAIL"): _fail,
    # A callback's only update is its START: the external system ends it, through the Send...Callback APIs
    # (sources/durable_callbacks.py), and the service gives it its CallbackId.
    ("CALLBACK", "START"): _start,
}


def next_due(ops: dict[str, dict]) -> float | None:
    """When the service next has something to do for a suspended execution: the earliest step retry or wait end."""
    times = [t for t in (_due_at(op) for op in ops.values()) if t is not None]
    return min(times) if times else None


def _due_at(op: JsonObject) -> float | None:
    if op["Type"] == "STEP" and op["Status"] == "PENDING":
        return (op.get("StepDetails") or {}).get("NextAttemptTimestamp")
    if op["Type"] == "WAIT" and op["Status"] == "STARTED":
        return (op.get("WaitDetails") or {}).get("ScheduledEndTimestamp")
    return None


def fire_due(ops: dict[str, dict], now: float) -> list[str]:
    """Make every step whose retry time has come ``READY`` and end every wait whose time is up; their ids."""
    fired = []
    for op in ops.values():
        due = _due_at(op)
        if due is None or due > now + 1e-9:
            continue
        if op["Type"] == "STEP":
            op["Status"] = "READY"
            op["StepDetails"].pop("NextAttemptTimestamp", None)
        else:
            op["Status"], op["EndTimestamp"] = "SUCCEEDED", now
        fired.append(op["Id"])
    return fired


def for_invocation(op: JsonObject) -> JsonObject:
    """``op`` as an invocation's payload carries it: its timestamps in epoch milliseconds."""
    out = copy.deepcopy(op)
    stamps = ((out, "StartTimestamp"), (out, "EndTimestamp"), (out.get("StepDetails"), "NextAttemptTimestamp"),
              (out.get("WaitDetails"), "ScheduledEndTimestamp"))
    for holder, key in stamps:
        if holder is not None and holder.get(key) is not None:
            holder[key] = int(round(holder[key] * 1000))
    return out


__all__ = ["FAILED", "RUNNING", "STOPPED", "SERVED_TYPES", "SUCCEEDED", "TIMED_OUT", "UpdateRefused", "apply_update",
           "execution_operation", "fire_due", "for_invocation", "next_due"]
