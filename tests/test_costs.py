"""What idempotency costs in DynamoDB: the calls one invocation makes on a first run, a duplicate and failed work."""
import pytest

from sandbox.analysis.campaign import STRATEGIES, strategy_handler
from sandbox.analysis.costs import DUPLICATE, FIRST_RUN, SITUATIONS, WORK_FAILS, cost_table, describe, measure

#: The spec. A duplicate after COMPLETED costs the improved run_once one call: its claim asks for the
#: old item back (ReturnValuesOnConditionCheckFailure=ALL_OLD); the article's reads it with a GetItem.
PINNED = {
    "improved": {FIRST_RUN: ("PutItem", "UpdateItem"), DUPLICATE: ("PutItem",), WORK_FAILS: ("PutItem", "DeleteItem")},
    "article": {FIRST_RUN: ("PutItem", "UpdateItem"), DUPLICATE: ("PutItem", "GetItem"),
                WORK_FAILS: ("PutItem", "DeleteItem")},
    # Measured on Powertools 3.37: save_inprogress is one conditional PutItem that returns the old item
    # when it fails (ReturnValuesOnConditionCheckFailure=ALL_OLD, for boto3 >= 1.26.164), so a duplicate
    # needs no GetItem; save_success is an UpdateItem; delete_record, when the work raises, a DeleteItem.
    # Both forms cost the same: the decorator claims the event once, the function each order once.
    "powertools-function": {FIRST_RUN: ("PutItem", "UpdateItem"), DUPLICATE: ("PutItem",),
                            WORK_FAILS: ("PutItem", "DeleteItem")},
    "powertools-decorator": {FIRST_RUN: ("PutItem", "UpdateItem"), DUPLICATE: ("PutItem",),
                             WORK_FAILS: ("PutItem", "DeleteItem")},
}


@pytest.mark.parametrize("strategy", PINNED)
def test_dynamodb_calls_per_invocation_are_pinned(strategy):
    assert measure(strategy_handler(strategy)) == PINNED[strategy]


def test_a_handler_without_idempotency_calls_nothing_and_the_count_is_per_invocation():
    assert measure(strategy_handler("naive")) == {s: () for s in SITUATIONS}
    # read-then-write reads before it works; on a duplicate it stops at the read.
    assert measure(strategy_handler("read-then-write"))[DUPLICATE] == ("GetItem",)


def test_the_same_seed_gives_the_same_counts():
    handler = strategy_handler("improved")
    assert measure(handler, seed=3) == measure(handler, seed=3)


def test_the_table_has_a_row_per_strategy_and_a_column_per_situation():
    rows = {name: PINNED[name] for name in ("article", "improved")}
    text = cost_table(rows)
    lines = text.splitlines()
    assert lines[0] == "DynamoDB calls per invocation"
    assert all(s in lines[1] for s in SITUATIONS)
    assert lines[2].split()[0] == "article" and "2 (PutItem, GetItem)" in lines[2]
    assert lines[3].split()[0] == "improved" and "1 (PutItem)" in lines[3]
    assert describe(()) == "0" and describe(("PutItem",)) == "1 (PutItem)"
    assert all(line == line.rstrip() for line in lines)


def test_every_strategy_is_measured_by_default():
    from sandbox.analysis.costs import cost_rows

    assert list(cost_rows()) == list(STRATEGIES)
