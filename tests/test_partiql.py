"""PartiQL INSERT as DynamoDB runs it: a taken key is refused, ``?`` is filled from ``Parameters``.

DynamoDB: "If the DynamoDB table already has an item with the same primary key as the primary key of
the item being inserted, DuplicateItemException is returned"
(https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ql-reference.insert.html). moto 5.2.5
overwrites the item instead, and fails on any ``?`` with a TypeError; ``sandbox/aws/partiql.py`` serves
these requests itself.
"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from botocore.exceptions import ClientError
from hypothesis import given, settings
from hypothesis import strategies as st

from sandbox import Sandbox, run_scenario
from sandbox.aws.partiql import StatementError, parse_insert

from conftest import ROOT

CLAIM = f"{ROOT / 'tests' / 'handlers' / 'partiql_claim.py'}:handler"
INSERT = "INSERT INTO \"idempotency\" VALUE {'pk': ?, 'status': ?}"


def test_a_partiql_insert_claim_with_parameters_is_judged_valid():
    # Two copies race for one key, and a retry comes after a failure: one email each, as with PutItem.
    for scenario in ("concurrent-claims", "async-retry"):
        result = run_scenario(scenario, CLAIM)
        assert result.status == "valid", (scenario, result.report())
    out = subprocess.run([sys.executable, "-m", "sandbox", "run", "concurrent-claims", "--handler", CLAIM, "--json"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    report = json.loads(out.stdout)
    assert out.returncode == 0 and report["verdict"] == "valid" and report["duplicates"] == []
    assert report["dynamodb_calls"].get("ExecuteStatement", 0) >= 3


def test_a_duplicate_insert_gives_duplicate_item_exception_with_aws_message():
    with Sandbox(seed=1) as sb:
        c = sb.dynamodb
        c.execute_statement(Statement=INSERT, Parameters=[{"S": "o-1"}, {"S": "IN_PROGRESS"}])
        with pytest.raises(ClientError) as caught:
            c.execute_statement(Statement=INSERT, Parameters=[{"S": "o-1"}, {"S": "COMPLETED"}])
        error = caught.value.response["Error"]
        assert isinstance(caught.value, c.exceptions.DuplicateItemException)
        assert (error["Code"], error["Message"]) == ("DuplicateItemException", "Duplicate primary key exists in table")
        stored = c.get_item(TableName="idempotency", Key={"pk": {"S": "o-1"}}, ConsistentRead=True)["Item"]
        assert stored["status"] == {"S": "IN_PROGRESS"}  # the first INSERT's item, not overwritten

        # A batch answers each statement on its own; a transaction is cancelled whole.
        batch = c.batch_execute_statement(Statements=[
            {"Statement": INSERT, "Parameters": [{"S": "o-2"}, {"S": "IN_PROGRESS"}]},
            {"Statement": INSERT, "Parameters": [{"S": "o-1"}, {"S": "IN_PROGRESS"}]}])["Responses"]
        assert "Error" not in batch[0]
        assert batch[1]["Error"] == {"Code": "DuplicateItem", "Message": "Duplicate primary key exists in table"}
        with pytest.raises(c.exceptions.TransactionCanceledException) as cancelled:
            c.execute_transaction(TransactStatements=[
                {"Statement": INSERT, "Parameters": [{"S": "o-3"}, {"S": "IN_PROGRESS"}]},
                {"Statement": INSERT, "Parameters": [{"S": "o-2"}, {"S": "IN_PROGRESS"}]}])
        reasons = cancelled.value.response["CancellationReasons"]
        assert [r["Code"] for r in reasons] == ["None", "DuplicateItem"]
        o3 = {"TableName": "idempotency", "Key": {"pk": {"S": "o-3"}}, "ConsistentRead": True}
        assert "Item" not in c.get_item(**o3)  # nothing applied
        c.execute_transaction(TransactStatements=[{"Statement": INSERT, "Parameters": [{"S": "o-3"}, {"S": "x"}]}])
        assert c.get_item(**o3)["Item"]["status"] == {"S": "x"}

        with pytest.raises(ClientError, match="Number of parameters"):
            c.execute_statement(Statement=INSERT, Parameters=[{"S": "o-4"}])
        # Statements that are not INSERTs are still moto's, parameters and all.
        found = c.execute_statement(Statement='SELECT * FROM "idempotency" WHERE pk = ?', Parameters=[{"S": "o-1"}])
        assert found["Items"] == [stored]

        # The history reads each INSERT as the PutItem it amounts to: its key, and the refusal.
        calls = [e for e in sb.history.of_type("aws") if e["op"] == "ExecuteStatement" and e["key"] == "o-1"]
        assert [(e["result"], e["detail"].get("as")) for e in calls[:2]] == [("ok", "PutItem"),
                                                                           ("DuplicateItem", "PutItem")]


# -- every parameter type ----------------------------------------------------------------------
_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=8)
_scalar = st.one_of(
    _text.map(lambda s: {"S": s}),
    st.integers(-10**12, 10**12).map(lambda n: {"N": str(n)}),
    st.binary(min_size=1, max_size=8).map(lambda b: {"B": b}),
    st.booleans().map(lambda b: {"BOOL": b}),
    st.just({"NULL": True}),
    st.sets(_text.filter(bool), min_size=1, max_size=3).map(lambda s: {"SS": sorted(s)}),
    st.sets(st.integers(-99, 99), min_size=1, max_size=3).map(lambda s: {"NS": sorted(map(str, s))}),
)
_value = st.recursive(_scalar, lambda inner: st.one_of(
    st.lists(inner, max_size=3).map(lambda v: {"L": v}),
    st.dictionaries(_text.filter(bool), inner, max_size=3).map(lambda v: {"M": v})), max_leaves=6)


def _same(value):
    """A value as compared after a round trip: sets in any order."""
    (kind, inner), = value.items()
    if kind in ("SS", "NS", "BS"):
        return kind, sorted(inner)
    if kind == "L":
        return kind, [_same(v) for v in inner]
    if kind == "M":
        return kind, {k: _same(v) for k, v in inner.items()}
    return kind, inner


@settings(max_examples=40, deadline=None)
@given(key=_text.filter(bool), values=st.lists(_value, min_size=1, max_size=4))
def test_insert_fills_every_parameter_type_as_dynamodb_does(key, values):
    names = [f"a{i}" for i in range(len(values))]
    statement = ("INSERT INTO \"idempotency\" VALUE {'pk': ?, 'lit': 'it''s', "
                 + ", ".join(f"'{n}': ?" for n in names) + "}")
    with Sandbox(seed=2) as sb:
        sb.dynamodb.execute_statement(Statement=statement, Parameters=[{"S": key}, *values])
        item = sb.dynamodb.get_item(TableName="idempotency", Key={"pk": {"S": key}}, ConsistentRead=True)["Item"]
        assert item.pop("lit") == {"S": "it's"} and item.pop("pk") == {"S": key}
        assert {n: _same(v) for n, v in item.items()} == {n: _same(v) for n, v in zip(names, values)}
        with pytest.raises(sb.dynamodb.exceptions.DuplicateItemException):
            sb.dynamodb.execute_statement(Statement=statement, Parameters=[{"S": key}, *values])


@pytest.mark.parametrize("statement, count", [
    ("INSERT INTO t VALUE {'pk': ?}", 0),
    ("INSERT INTO t VALUE {'pk': 'a'", 0),
    ("INSERT INTO t VALUE ['a']", 0),
    ("INSERT INTO t VALUE {'pk': ?} trailing", 1),
])
def test_a_malformed_insert_is_refused_before_any_write(statement, count):
    with pytest.raises(StatementError):
        parse_insert(statement, [{"S": "x"}] * count)


# -- the exhaustive search reads an INSERT as the PutItem it amounts to ---------------------------------
def test_the_search_sees_the_item_an_insert_touches_and_agrees_with_the_full_search():
    from sandbox.modes import dpor
    from sandbox.modes.explore import explore_scenario

    params = {"Statement": INSERT, "Parameters": [{"S": "o-1"}, {"S": "IN_PROGRESS"}]}
    assert dpor.request_resources("dynamodb", "ExecuteStatement", params, 200) == [
        ("dynamodb", "idempotency", "o-1", dpor.WRITE)]
    assert dpor.request_resources("dynamodb", "ExecuteStatement", params, 400) == [
        ("dynamodb", "idempotency", "o-1", dpor.READ)]  # refused: it only read the item
    select = {"Statement": 'SELECT * FROM "idempotency" WHERE pk = ?', "Parameters": [{"S": "o-1"}]}
    assert dpor.request_resources("dynamodb", "ExecuteStatement", select, 200) == [
        ("dynamodb", dpor.ANY, dpor.ANY, dpor.WRITE)]  # a statement it does not read: the whole table
    reduced = explore_scenario("concurrent-claims", CLAIM, settings={"copies": 2}, max_schedules=2000)
    full = explore_scenario("concurrent-claims", CLAIM, settings={"copies": 2}, max_schedules=2000, reduction=False)
    assert not reduced.truncated and not full.truncated
    assert reduced.status == full.status == "valid" and reduced.schedules <= full.schedules
