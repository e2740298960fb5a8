"""Every AWS request is atomic, even from free-running OS threads.

moto's conditional put reads, checks and writes with no lock (its FAQ says it is not
thread safe). This file keeps the demonstration of why the sandbox serialises requests:
the same race, with and without the sandbox.
"""
import sys
import threading

import boto3
import pytest
from moto import mock_aws

from sandbox import Sandbox

THREADS, TRIALS = 16, 200


def race(table, trials, stop_at_double=False):
    """Per trial: THREADS threads released together, each claiming the same key once."""
    winners_per_trial = []
    # botocore makes a client's exception classes on first use, unguarded: threads that race to it can each make
    #   their own, and a claim raised with one class escapes an except naming the other (a warning, a lost thread)
    lost_claim = table.meta.client.exceptions.ConditionalCheckFailedException
    for trial in range(trials):
        if stop_at_double and winners_per_trial and winners_per_trial[-1] > 1:
            break
        key = f"order#{trial}"
        barrier = threading.Barrier(THREADS)
        wins = []

        def claim(barrier=barrier, key=key, wins=wins):
            barrier.wait()
            try:
                table.put_item(Item={"pk": key, "status": "IN_PROGRESS"},
                               ConditionExpression="attribute_not_exists(pk)")
                wins.append(1)
            except lost_claim:
                pass

        threads = [threading.Thread(target=claim) for _ in range(THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        winners_per_trial.append(len(wins))
    return winners_per_trial


@pytest.fixture
def tiny_switch_interval():
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(old)


@pytest.mark.slow
def test_exactly_one_winner_in_every_trial_inside_the_sandbox(tiny_switch_interval):
    with Sandbox() as sb:
        winners = race(sb.table, TRIALS)
        assert winners == [1] * TRIALS
        puts = [e for e in sb.history.of_type("aws") if e["op"] == "PutItem"]
        assert len(puts) == THREADS * TRIALS
        assert sum(e["result"] == "ok" for e in puts) == TRIALS
        assert [e["seq"] for e in sb.history] == list(range(len(sb.history)))


def test_bare_moto_lets_several_threads_win(tiny_switch_interval):
    """The demonstration: without the sandbox's lock, moto hands out several winners.

    It is a race, so a single trial rarely shows it: here 1 to 3 % of trials had 2 or 3
    winners (DESIGN.md measured about a third on another machine). So the demonstration runs
    trials until the first double win, up to 3,000: with a 1 % rate, missing it every time
    has odds of about 1 in 10^13.
    """
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1", aws_access_key_id="testing",
                              aws_secret_access_key="testing")
        client.create_table(TableName="bare", BillingMode="PAY_PER_REQUEST",
                            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}])
        table = boto3.resource("dynamodb", region_name="us-east-1", aws_access_key_id="testing",
                               aws_secret_access_key="testing").Table("bare")
        winners = race(table, 3000, stop_at_double=True)
    assert max(winners) >= 2, "bare moto happened to serialise every trial this time"
    assert min(winners) >= 1
