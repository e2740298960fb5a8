"""Nothing an execution environment says about its own requests is believed (DESIGN.md, rule 1).

The handlers in tests/handlers/hostile/ attack the channel as a student could: they reach into the
environment's own code (``sandbox.runtime.environment.guest``) and rename their requests, or send the
world messages botocore and awslambdaric never would. The world must judge each request by what it
does, and end an environment that breaks the protocol without breaking itself.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from sandbox import run_scenario
from sandbox.cli import main

HOSTILE = Path(__file__).resolve().parent / "handlers" / "hostile"


@pytest.fixture(autouse=True)
def _process_isolation(monkeypatch):
    monkeypatch.setenv("RWH_ISOLATION", "process")


def hostile(name: str) -> str:
    return f"{HOSTILE / name}:handler"


# -- the operation's name travels with no request ------------------------------------------------------
def test_a_put_labelled_get_still_races_under_the_exhaustive_search(capsys):
    """The exhaustive search reorders requests that touch one item; a PutItem that says it is a read would
    commute with the other copy's read, and the race would pass after one schedule."""
    code = main(["run", "concurrent-claims", "--handler", hostile("put_labelled_get.py"), "--policy", "exhaustive",
                 "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 1 and report["schedules"] > 1 and report["broken"] > 0


def test_a_put_labelled_putitemx_still_meets_the_fault_on_putitem():
    """own-write-retried loses the first PutItem's answer; a handler that calls it something else is retried
    into its own claim like any other, and its order is lost."""
    result = run_scenario("own-write-retried", hostile("claim_labelled_putitemx.py"))
    puts = [(e["op"], e["result"], (e.get("detail") or {}).get("fault")) for e in result.history.of_type("aws")
            if e["service"] == "dynamodb" and e["op"] != "GetItem"]
    assert puts == [("PutItem", "ok", "timeout-applied"), ("PutItem", "ConditionalCheckFailed", None)]
    assert result.status == "invalid" and [f.key for f in result.verdict.lost] == ["o-1"]


# -- every other message the channel carries ---------------------------------------------------------
def _ended_by_protocol(name: str) -> list[str]:
    """Run ``name`` on one order; the errors its invocations ended with (the world must live through it)."""
    result = run_scenario("no-fault", hostile(name), settings={"orders": 1})
    return [str(e.get("error")) for e in result.history.of_type("invoke_end")]


@pytest.mark.parametrize("name", ["sleeps_nan.py", "deep_frame.py", "deep_response.py"])
def test_a_message_the_world_cannot_take_ends_the_environment_not_the_world(name):
    """A NaN sleep would be a NaN on the world's clock; JSON nested 100,000 deep makes json.loads raise
    RecursionError in the world. Each is the environment breaking the protocol."""
    errors = _ended_by_protocol(name)
    assert errors and all("EnvironmentFailed: the environment broke the protocol" in e for e in errors), errors


_AWS = {"t": "aws", "method": "POST", "url": "https://dynamodb.us-east-1.amazonaws.com/",
        "headers": {"X-Amz-Target": "DynamoDB_20120810.GetItem"}, "body": ""}
#: An AWS request with the labels an environment used to send beside it (the world reads neither).
_LABELLED = {**_AWS, "service": "dynamodb", "op": "GetItem"}
_BAD = {
    "a NaN sleep": {"t": "sleep", "seconds": float("nan")},
    "an endless sleep": {"t": "sleep", "seconds": float("inf")},
    "a sleep past CPython's": {"t": "sleep", "seconds": 1e308},
    "a sleep of True": {"t": "sleep", "seconds": True},
    "a negative sleep": {"t": "sleep", "seconds": -1},
    "a sleep of text": {"t": "sleep", "seconds": "1"},
    "a log to another stream": {"t": "log", "stream": "history", "text": "x"},
    "a log that is no text": {"t": "log", "stream": "stdout", "text": ["x"]},
    "a response flag that is no bool": {"t": "response", "body": "{}", "bytes": "yes"},
    "a content type that is no text": {"t": "response", "body": "{}", "content_type": 1},
    "a response body that is no text": {"t": "response", "body": {"statusCode": 200}},
    "classes that are no names": {"t": "error", "body": "{}", "classes": [1, 2]},
    "exit frames that are no frames": {"t": "exit", "frames": [["app.py", "12", "handler"]]},
    "an effect whose args are no mapping": {"t": "effect", "kind": "charge_card", "args": ["order"]},
    "an effect with an argument of its own": {"t": "effect", "kind": "charge_card",
                                              "args": {"order": {"orderId": "o-1"}, "amount": 0}},
    "an AWS body that is not base64": {**_LABELLED, "body": "{\"TableName\": \"t\"}"},
    "an AWS method that is no method": {**_LABELLED, "method": "POST /x HTTP/1.1\r\n"},
    "an AWS URL of another scheme": {**_LABELLED, "url": "file:///etc/passwd"},
    "one header twice": {**_LABELLED, "headers": {"X-Amz-Target": "a", "x-amz-target": "b"}},
    "a header that splits the request": {**_LABELLED, "headers": {"X-Amz-Target": "a\r\nAction: PutItem"}},
    "a restored environment's pid of True": {"t": "cloned", "pid": True},
    "a clone status of text": {"t": "clone_status", "status": "0"},
}


@pytest.mark.parametrize("message", _BAD.values(), ids=_BAD.keys())
def test_each_field_of_each_message_is_checked(message):
    import socket

    from sandbox.runtime.environment import wire

    a, b = socket.socketpair()
    with a, b:
        wire.send(a, message)
        with pytest.raises(wire.ProtocolError):
            wire.receive_from_environment(b)


def test_the_messages_botocore_and_awslambdaric_send_pass():
    import socket

    from sandbox.runtime.environment import wire

    good = [_AWS, {"t": "sleep", "seconds": 0}, {"t": "sleep", "seconds": 2.5}, {"t": "log", "stream": "stderr",
            "text": "x"}, {"t": "response", "body": "{}", "content_type": "application/json", "bytes": False},
            {"t": "error", "body": "{}", "classes": ["ValueError", "Exception", "BaseException", "object"]},
            {"t": "exit", "frames": [["/var/task/app.py", 12, "handler"]]}, {"t": "clone_status", "status": None},
            {"t": "effect", "kind": "charge_card", "args": {"order": {"orderId": "o-1"}, "idempotency_key": None}}]
    for message in good:
        a, b = socket.socketpair()
        with a, b:
            wire.send(a, message)
            assert wire.receive_from_environment(b) == message


def test_an_error_is_of_the_classes_it_names_only_if_the_first_is_its_type():
    """The class names come from the environment: a handler may raise a class of any name with any bases, so
    they say no more than errorType; but they must describe the error reported, or only errorType is kept."""
    from sandbox.runtime.environment.host import HandlerError

    payload = {"errorType": "ValueError", "errorMessage": "no"}
    assert HandlerError(payload, None, ["StillInProgressError", "Exception"]).classes == ["ValueError"]
    assert HandlerError(payload, None, ["ValueError", "Exception"]).classes == ["ValueError", "Exception"]


def test_an_effects_arguments_are_the_services_to_judge():
    """What an order and an idempotency key hold is checked where the services check it, for a handler in the
    world as in an environment: the answer is the handler's BadInput."""
    from sandbox import Sandbox
    from sandbox.errors import BadInput

    with Sandbox(seed=0) as sb:
        order = {"orderId": "o-1", "email": "a@example.com", "amount": 1}
        with pytest.raises(BadInput, match="at most 255"):
            sb.services.charge_card(order, idempotency_key="k" * 256)
        with pytest.raises(BadInput, match="orderId must be a string"):
            sb.services.send_confirmation_email({**order, "orderId": "o" * 10_000})
        with pytest.raises(BadInput, match="orderId must be a string"):
            sb.services.send_confirmation_email({**order, "orderId": ["o-1"]})


def test_an_operation_dynamodb_lacks_gets_its_error_from_the_world():
    """From an environment: the handler hears UnknownOperationException, as from AWS; moto runs nothing."""
    from sandbox import Sandbox

    with Sandbox(seed=0) as sb:
        fn = sb.function(hostile("target_putitemx.py"))
        assert fn.invoke({}).result == {"code": "UnknownOperationException"}
        [record] = [e for e in sb.history.of_type("aws") if e["service"] == "dynamodb"]
        assert record["op"] == "UnknownOperation" and record["detail"]["named"] == "DynamoDB_20120810.PutItemX"


def test_a_snapshot_that_answers_a_status_request_with_something_else_says_nothing():
    """A SnapStart snapshot ran the handler's init, so any of its threads may write on its channel: a log line
    where the world asked how a restored environment ended is no status (it was a KeyError in the world)."""
    import socket

    from sandbox.runtime.environment import wire
    from sandbox.runtime.environment.host import EnvironmentProcess

    snapshot = object.__new__(EnvironmentProcess)
    snapshot.sock, theirs = socket.socketpair()
    with snapshot.sock, theirs:
        wire.send(theirs, {"t": "log", "stream": "stdout", "text": "a thread of init, printing"})
        assert snapshot._restored_status(1234, wait=0.1) is None
