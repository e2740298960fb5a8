"""The SQS event source mapping, the producer, and the sqs-batch-failure, sqs-visibility-timeout
and producer-resend scenarios, against moto's real SQS and botocore's real retries."""
import json
import subprocess
import sys
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from moto.core import DEFAULT_ACCOUNT_ID
from moto.sqs.models import sqs_backends

from sandbox import BadInput, Sandbox, get_scenario, run_scenario
from sandbox.scenarios.sqs_batch_failure import max_depth
from sandbox.sources.sqs import SqsEventSourceMapping, SqsQueue

from conftest import ROOT, example, open_run

SQS_SCENARIOS = ("sqs-batch-failure", "sqs-visibility-timeout", "producer-resend")


def emails(result):
    return {key: counts["email"] for key, counts in result.verdict.effects_per_key.items()}


def deliveries(history, what):
    return [e for e in history.of_type("delivery") if e["what"] == what]


# -- exact effect counts of the naive handler under default settings -------------------------
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_naive_counts_sqs_batch_failure(seed):
    # Batch of 3 (BatchSize 10 takes the whole backlog in one receive). o-3's provider fails, the
    # handler raises, Lambda deletes nothing, and the whole batch returns after the 30 s visibility
    # timeout: o-1 and o-2 are emailed twice, o-3 once (its first call sent nothing): 5 emails, 3 orders.
    r = run_scenario("sqs-batch-failure", example("naive_email.py"), seed=seed)
    assert r.status == "invalid"
    assert emails(r) == {"o-1": 2, "o-2": 2, "o-3": 1}
    invs = r.history.invocations()
    assert [(v["cause"], v["prev"], v["keys"]) for v in invs.values()] == [
        ("first delivery", None, ["o-1", "o-2", "o-3"]), ("redelivery", "inv-1", ["o-1", "o-2", "o-3"])]
    assert invs["inv-2"]["t"] == pytest.approx(30.001)  # visibility counts from the receipt at t=0
    assert {d.key for d in r.verdict.duplicates} == {"o-1", "o-2"}
    assert all("redelivery" in d.text for d in r.verdict.duplicates)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_naive_counts_sqs_visibility_timeout(seed):
    # The 3 orders are received at t=0; the batch is not full, so the poller waits its 4 s window and
    # invokes at 4 s; emails take 0.6 s each, ending at 5.8 s. The 5 s visibility timeout runs out at
    # 5 s, while o-2 is being sent, so another poller receives all 3 again, waits its own window and
    # sends them again: 6 emails for 3 orders, with nothing failing.
    r = run_scenario("sqs-visibility-timeout", example("naive_email.py"), seed=seed)
    assert emails(r) == {"o-1": 2, "o-2": 2, "o-3": 2}
    invs = r.history.invocations()
    assert [(v["cause"], v["prev"], v["outcome"]) for v in invs.values()] == [
        ("first delivery", None, "ok"), ("redelivery", "inv-1", "ok")]
    (again,) = deliveries(r.history, "redelivery")
    # The second receive happened while inv-1 was still running.
    assert invs["inv-1"]["t"] < again["t"] < invs["inv-1"]["end"]
    assert all("redelivery" in d.text for d in r.verdict.duplicates)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_naive_counts_producer_resend(seed):
    # o-2's SendMessage is stored but the producer hears nothing; after its 60 s read timeout botocore's
    # legacy retry sends o-2 again, as a second message with a new MessageId. Each message is processed
    # once, so o-2 is emailed twice: 4 emails for 3 orders.
    r = run_scenario("producer-resend", example("naive_email.py"), seed=seed)
    assert emails(r) == {"o-1": 1, "o-2": 2, "o-3": 1}
    (resend,) = deliveries(r.history, "producer re-send")
    first, second = resend["detail"]["messageIds"]
    assert first != second and resend["keys"] == ["o-2"] and resend["detail"]["attempts"] == 2
    assert resend["t"] >= 61.0  # sent at 1 s, then the client waited out its 60 s read timeout
    invs = r.history.invocations()
    copy = next(v for v in invs.values() if v["cause"] == "producer re-send")
    original = next(v for v in invs.values() if v["cause"] == "first delivery" and "o-2" in v["keys"])
    assert copy["prev"] == original["inv"]
    sends = [e for e in r.history.of_type("aws") if e["op"] == "SendMessage"]
    assert [e["detail"].get("fault") for e in sends] == [None, "timeout-applied", None, None]


@pytest.mark.parametrize("scenario", SQS_SCENARIOS)
def test_idempotent_handler_is_valid_for_seeds_0_to_19(scenario):
    for seed in range(20):
        r = run_scenario(scenario, example("idempotent.py"), seed=seed)
        assert r.verdict.valid, (seed, r.verdict.explain())
        assert emails(r) == {"o-1": 1, "o-2": 1, "o-3": 1}


# -- partial batch responses -------------------------------------------------------------------
def test_report_batch_item_failures_redelivers_only_the_failed_record():
    r = run_scenario("sqs-batch-failure", example("partial_batch.py"), settings={"report_batch_item_failures": True})
    assert r.verdict.valid and emails(r) == {"o-1": 1, "o-2": 1, "o-3": 1}
    invs = list(r.history.invocations().values())
    assert [(v["cause"], v["keys"], v["outcome"]) for v in invs] == [
        ("first delivery", ["o-1", "o-2", "o-3"], "ok"), ("redelivery", ["o-3"], "ok")]
    assert [d["keys"] for d in deliveries(r.history, "deleted")] == [["o-1", "o-2"], ["o-3"]]
    (partial,) = deliveries(r.history, "batch failed")
    assert partial["keys"] == ["o-3"] and partial["detail"]["partial"] is True


def test_partial_response_is_ignored_unless_the_mapping_asks_for_it():
    # Without ReportBatchItemFailures Lambda reads no response: the batch "succeeded" and is deleted,
    # o-3's message included, so o-3 is never emailed.
    r = run_scenario("sqs-batch-failure", example("partial_batch.py"), settings={"report_batch_item_failures": False})
    assert r.status == "invalid"
    assert [f.key for f in r.verdict.lost] == ["o-3"]
    # the history says why, in Lambda's terms
    [note] = [n["text"] for n in r.history.of_type("note") if "batchItemFailures" in n["text"]]
    assert "without ReportBatchItemFailures, so Lambda ignored them" in note


def test_the_scenarios_deploy_the_mapping_with_partial_batch_responses():
    from sandbox import SCENARIOS

    for name in ("sqs-batch-failure", "sqs-visibility-timeout", "stream-batch-retry", "ddb-stream-batch-retry",
                 "kinesis-producer-resend", "ddb-stream-ttl-remove", "sqs-fifo-window"):
        assert SCENARIOS[name].all_settings()["report_batch_item_failures"].default is True, name


def test_an_unknown_item_identifier_fails_the_whole_batch():
    calls = []

    def handler(event, context):
        from sandbox import orders_in, send_confirmation_email

        calls.append(len(event["Records"]))
        for order in orders_in(event):
            send_confirmation_email(order)
        return {"batchItemFailures": [{"itemIdentifier": "not-a-message-id"}]} if len(calls) == 1 else None

    r = run_scenario("sqs-batch-failure", handler, settings={"report_batch_item_failures": True, "fail_order": 0})
    assert calls == [3, 3] and emails(r) == {"o-1": 2, "o-2": 2, "o-3": 2}
    (failed,) = deliveries(r.history, "batch failed")
    assert "not a messageId of this batch" in failed["detail"]["reason"]


def test_a_response_naming_an_order_id_is_invalid_even_when_nothing_is_repeated():
    """An entry naming no message of the batch fails the whole batch (AWS's "complete failure" list). A handler
    that claims each order first repeats no email on the redelivery, yet it broke the source's contract: the
    verdict says so, once, naming what it returned (what a replay of such a run must show)."""
    def handler(event, context):
        from sandbox import orders_in, send_confirmation_email

        failures = []
        for order in orders_in(event):
            if order["orderId"] in seen:
                continue  # an in-memory claim (a single container here), so nothing is emailed twice
            try:
                send_confirmation_email(order)
                seen.add(order["orderId"])
            except Exception:
                failures.append({"itemIdentifier": order["orderId"]})
        return {"batchItemFailures": failures}

    seen: set[str] = set()
    r = run_scenario("sqs-batch-failure", handler)
    assert emails(r) == {"o-1": 1, "o-2": 1, "o-3": 1} and r.status == "invalid"
    [bad] = r.verdict.findings
    assert bad.kind == "bad batch response" and bad.invocations == ["inv-1"]
    assert "'o-3', which is not the messageId of any record in the batch" in bad.text
    assert "services-sqs-batchfailurereporting" in bad.text
    # the same handler naming messageIds is a partial batch response: valid
    assert run_scenario("sqs-batch-failure", example("partial_batch.py")).valid


# -- dead-letter queue and message conservation ------------------------------------------------
def conservation(sb, queue):
    """Every message sent is deleted after success, in the DLQ, or still in the queue; never two."""
    sent = {e["key"] for e in sb.history.of_type("aws") if e["op"] == "SendMessage" and e["result"] == "ok"}
    deleted = {m for d in deliveries(sb.history, "deleted") for m in d["detail"]["messageIds"]}
    dead = {m["id"] for m in queue.dead_letters()}
    waiting = {m["id"] for m in queue.messages()}
    assert not (deleted & dead) and not (deleted & waiting) and not (dead & waiting)
    assert sent == deleted | dead | waiting
    # moto's own counters, through the real API, agree with what the sandbox saw.
    names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible",
             "ApproximateNumberOfMessagesDelayed"]
    with sb.gateway.unrecorded():
        in_queue = sb.sqs.get_queue_attributes(QueueUrl=queue.url, AttributeNames=names)["Attributes"]
        in_dlq = (sb.sqs.get_queue_attributes(QueueUrl=queue.dlq_url, AttributeNames=names)["Attributes"]
                  if queue.dlq_url else {n: "0" for n in names})
    assert sum(int(in_queue[n]) for n in names) == len(waiting)
    assert sum(int(in_dlq[n]) for n in names) == len(dead)
    return sent, deleted, dead, waiting


@pytest.mark.parametrize("handler", ["naive_email.py", "partial_batch.py"])
def test_poison_message_ends_in_the_dlq_after_max_receive_count(handler):
    with open_run("sqs-batch-failure", example(handler), poison=1, max_receive_count=3,
                  report_batch_item_failures=True) as (sb, queue, mapping, producer):
        history = sb.history
        sent, deleted, dead, waiting = conservation(sb, queue)
        assert len(sent) == 4 and len(deleted) == 3 and len(dead) == 1 and not waiting
        (poison_id,) = dead
        (letter,) = deliveries(history, "dead-lettered")
        assert letter["detail"]["messageId"] == poison_id and letter["keys"] == []
        reason = letter["detail"]["reason"]
        assert "received 3 times (maxReceiveCount 3)" in reason and "not JSON" in reason and "JSONDecodeError" in reason
        # Three receives, three failed invocations, then SQS moved it on the fourth receive.
        carried = [v for v in history.invocations().values() if v["keys"] == []]
        assert len(carried) == 3
        assert "o-??" not in {e["key"] for e in history.of_type("accept")}  # never an accepted order
    verdict = sb.check()
    if handler == "partial_batch.py":
        assert verdict.valid
    else:  # the naive handler raised on o-3, so o-1 and o-2 came back with it
        assert {d.key for d in verdict.duplicates} == {"o-1", "o-2"}


@pytest.mark.parametrize("scenario", SQS_SCENARIOS)
def test_messages_are_conserved_in_every_scenario(scenario):
    with open_run(scenario, example("idempotent.py"), seed=3) as (sb, queue, mapping, producer):
        sent, deleted, dead, waiting = conservation(sb, queue)
        assert not dead and not waiting
        assert len(sent) == (4 if scenario == "producer-resend" else 3)


def test_orders_still_in_flight_at_the_horizon_are_pending():
    # Without a DLQ the poisoned batch can never leave the queue; at the horizon it is still there.
    r = run_scenario("sqs-batch-failure", example("naive_email.py"),
                     settings={"failures": 1000, "max_receive_count": 0, "horizon": 100})
    assert r.status == "invalid"  # o-1, o-2 were emailed again on every redelivery
    assert {k for d in deliveries(r.history, "pending") for k in d["keys"]} == {"o-1", "o-2", "o-3"}
    assert [f.kind for f in r.verdict.findings if f.key == "o-3"] == ["pending"]


# -- what the handler sees ---------------------------------------------------------------------
def test_approximate_receive_count_grows_on_redelivery():
    seen = []

    def handler(event, context):
        from sandbox import orders_in, send_confirmation_email

        for record in event["Records"]:
            seen.append((json.loads(record["body"])["orderId"], record["attributes"]["ApproximateReceiveCount"],
                         record["messageId"], record["eventSource"]))
        for order in orders_in(event):
            send_confirmation_email(order)

    run_scenario("sqs-batch-failure", handler)
    assert [(o, n) for o, n, _, _ in seen] == [("o-1", "1"), ("o-2", "1"), ("o-3", "1"),
                                               ("o-1", "2"), ("o-2", "2"), ("o-3", "2")]
    assert {s[3] for s in seen} == {"aws:sqs"}
    assert [s[2] for s in seen[:3]] == [s[2] for s in seen[3:]]  # a redelivery keeps its messageId


def test_a_message_id_key_misses_the_producer_resend(tmp_path):
    handler = tmp_path / "message_id_key.py"
    handler.write_text(
        "import os, boto3\n"
        "from sandbox import orders_in, send_confirmation_email\n"
        "table = boto3.resource('dynamodb').Table(os.environ['IDEMPOTENCY_TABLE'])\n"
        "def handler(event, context):\n"
        "    for record in event['Records']:\n"
        "        try:\n"
        "            table.put_item(Item={'pk': 'sqs#' + record['messageId']},\n"
        "                           ConditionExpression='attribute_not_exists(pk)')\n"
        "        except table.meta.client.exceptions.ConditionalCheckFailedException:\n"
        "            continue\n"
        "        for order in orders_in({'Records': [record]}):\n"
        "            send_confirmation_email(order)\n")
    r = run_scenario("producer-resend", f"{handler}:handler")
    assert emails(r) == {"o-1": 1, "o-2": 2, "o-3": 1}
    (dup,) = r.verdict.duplicates
    assert "producer re-send" in dup.text


# -- the mapping's rules ---------------------------------------------------------------------------
def test_function_timeout_longer_than_visibility_is_rejected_with_aws_message():
    with pytest.raises(BadInput) as err:
        run_scenario("sqs-batch-failure", example("naive_email.py"),
                     settings={"visibility_timeout": 5, "function_timeout": 10})
    assert str(err.value) == "Queue visibility timeout: 5 seconds is less than Function timeout: 10 seconds"
    with Sandbox() as sb:
        fn = sb.function(example("naive_email.py"), timeout=3)
        queue = SqsQueue(sb, "q", visibility_timeout=3)
        SqsEventSourceMapping(sb, fn, queue)  # equal is accepted
        with pytest.raises(BadInput, match=r"^Queue visibility timeout: 2 seconds is less than Function timeout: "
                                           r"3 seconds$"):
            SqsEventSourceMapping(sb, fn, SqsQueue(sb, "q2", visibility_timeout=2))


@pytest.mark.parametrize("config, message", [
    ({"batch_size": 0}, r"batch_size \(BatchSize\) must be at least 1"),
    ({"batch_size": 11}, "needs MaximumBatchingWindowInSeconds of at least 1 second"),
    ({"batching_window": 301}, r"batching_window \(MaximumBatchingWindowInSeconds\) must be at most 300"),
    ({"max_concurrency": 1}, "MaximumConcurrency must be 2 to 1000"),
])
def test_bad_mapping_settings_are_named(config, message):
    with Sandbox() as sb:
        fn = sb.function(example("naive_email.py"))
        with pytest.raises(BadInput, match=message):
            SqsEventSourceMapping(sb, fn, SqsQueue(sb), **config)


def test_cli_reports_redelivery_duplicates_and_exits_1():
    proc = subprocess.run([sys.executable, "-m", "sandbox", "run", "sqs-batch-failure", "--handler",
                           "examples/naive_email.py:handler", "--json"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    assert report["verdict"] == "invalid" and len(report["duplicates"]) == 2
    assert all("redelivery" in d["text"] for d in report["duplicates"])
    assert [i["cause"] for i in report["invocations"]] == ["first delivery", "redelivery"]


def test_cli_names_a_rejected_mapping():
    proc = subprocess.run([sys.executable, "-m", "sandbox", "run", "sqs-visibility-timeout", "--handler",
                           "examples/naive_email.py:handler", "--set", "visibility_timeout=2"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip() == ("error: Queue visibility timeout: 2 seconds is less than Function timeout: "
                                   "3 seconds")


# -- determinism and scale ---------------------------------------------------------------------
@pytest.mark.parametrize("scenario", SQS_SCENARIOS)
def test_same_seed_gives_byte_identical_history(scenario):
    a = run_scenario(scenario, example("idempotent.py"), seed=7, settings={"payment": "card"})
    b = run_scenario(scenario, example("idempotent.py"), seed=7, settings={"payment": "card"})
    assert a.history.to_json() == b.history.to_json()
    assert a.verdict.valid


def test_producer_keeps_the_queue_shallow():
    # moto's SQS slows down with depth, so the producer waits while about two batches are queued.
    depths = []
    with Sandbox(seed=1) as sb:
        sc = get_scenario("sqs-batch-failure")
        fn = sb.function(example("naive_email.py"))

        def watch(service, op, params, status):
            if op == "SendMessage":
                depths.append(len(sqs_backends[DEFAULT_ACCOUNT_ID][sb.region].get_queue("orders")._messages))

        sb.on_aws(watch)
        sc.drive(sb, fn, sc.resolve({"orders": 120, "fail_order": 0}))
        verdict = sb.check()
    assert len(depths) == 120 and max(depths) <= max_depth(10) == 20
    assert verdict.valid


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario=st.sampled_from(SQS_SCENARIOS), seed=st.integers(0, 10_000), batch_size=st.integers(1, 10),
       visibility_timeout=st.integers(3, 60), batching_window=st.integers(0, 6), pollers=st.integers(1, 5),
       orders=st.integers(1, 6), payment=st.sampled_from(["none", "card"]))
def test_idempotent_handler_stays_valid_whatever_the_mapping_settings(scenario, seed, batch_size, visibility_timeout,
                                                                      batching_window, pollers, orders, payment):
    overrides = {"batch_size": batch_size, "visibility_timeout": visibility_timeout, "batching_window": batching_window,
                 "pollers": pollers, "orders": orders, "payment": payment}
    if scenario == "sqs-batch-failure":
        overrides["fail_order"] = orders
    elif scenario == "producer-resend":
        overrides["resend_order"] = min(2, orders)
    r = run_scenario(scenario, example("idempotent.py"), seed=seed, settings=overrides)
    assert r.verdict.valid, r.verdict.explain()
    owed = Counter({"email": orders, "charge": orders if payment == "card" else 0})
    done = Counter()
    for counts in r.verdict.effects_per_key.values():
        done.update(counts)
    assert +done == +owed
