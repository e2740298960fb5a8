"""More SQS duplicate sources: a delete that misses a stored copy (sqs-spontaneous-duplicate), a FIFO
queue's 5-minute deduplication window (sqs-fifo-window), and a DLQ redrive (sqs-dlq-redrive)."""
import json

import pytest
from botocore.exceptions import ClientError

from sandbox import BadInput, Sandbox, get_scenario, run_scenario
from sandbox.sources.fifo import FifoQueueConfig, deduplication_id
from sandbox.sources.redrive import MessageMoveTasks
from sandbox.sources.sqs import SqsEventSourceMapping, SqsQueue

from conftest import example, open_run

NAIVE, IDEMPOTENT = example("naive_email.py"), example("idempotent.py")
NEW_SCENARIOS = ("sqs-spontaneous-duplicate", "sqs-fifo-window", "sqs-dlq-redrive")


def emails(result):
    return {key: counts["email"] for key, counts in result.verdict.effects_per_key.items()}


def deliveries(history, what):
    return [e for e in history.of_type("delivery") if e["what"] == what]


def causes(result):
    return [(v["cause"], v["keys"]) for v in result.history.invocations().values()]


def test_the_new_settings_stay_out_of_the_older_sqs_scenarios():
    for name in ("sqs-batch-failure", "sqs-visibility-timeout", "producer-resend"):
        assert "duplicate_probability" not in get_scenario(name).all_settings()
    assert get_scenario("sqs-spontaneous-duplicate").all_settings()["duplicate_probability"].default == 1.0


# -- a delete that misses a stored copy ---------------------------------------------------------
@pytest.mark.parametrize("seed", range(6))
def test_every_handled_message_comes_back_once_at_probability_one(seed):
    r = run_scenario("sqs-spontaneous-duplicate", NAIVE, seed=seed)
    assert emails(r) == {"o-1": 2, "o-2": 2, "o-3": 2}
    assert causes(r) == [("first delivery", ["o-1", "o-2", "o-3"]), ("spontaneous duplicate", ["o-1", "o-2", "o-3"])]
    invs = r.history.invocations()
    assert all(v["outcome"] == "ok" for v in invs.values())  # nothing failed
    assert invs["inv-2"]["prev"] == "inv-1"
    assert invs["inv-2"]["t"] == pytest.approx(30.001)  # the copies were in flight since the receive at 0 s
    (deleted_first, deleted_again) = deliveries(r.history, "deleted")
    (stale,) = deliveries(r.history, "stale copy")
    (again,) = deliveries(r.history, "spontaneous duplicate")
    # Lambda's delete succeeded for every message; the copies come back under the same MessageIds.
    assert stale["detail"]["messageIds"] == deleted_first["detail"]["messageIds"] == again["detail"]["messageIds"]
    assert deleted_again["detail"]["messageIds"] == deleted_first["detail"]["messageIds"]
    assert again["detail"]["receiveCounts"] == [2, 2, 2] and stale["inv"] == again["inv"] == "inv-1"
    assert deliveries(r.history, "redelivery") == []  # not a visibility-timeout redelivery
    deletes = [e for e in r.history.of_type("aws") if e["op"] == "DeleteMessageBatch"]
    assert [e["result"] for e in deletes] == ["ok", "ok"]


def test_the_duplicate_event_carries_the_same_message_ids():
    seen = []

    def handler(event, context):
        from sandbox import orders_in, send_confirmation_email

        seen.append([(r["messageId"], r["attributes"]["ApproximateReceiveCount"]) for r in event["Records"]])
        for order in orders_in(event):
            send_confirmation_email(order)

    run_scenario("sqs-spontaneous-duplicate", handler, seed=2)
    first, second = seen
    assert [m for m, _ in first] == [m for m, _ in second]  # a messageId key would catch this one
    assert [c for _, c in first] == ["1"] * 3 and [c for _, c in second] == ["2"] * 3


def test_duplicate_counts_over_seeds_follow_the_probability():
    extra, missed = 0, 0
    for seed in range(20):
        r = run_scenario("sqs-spontaneous-duplicate", NAIVE, seed=seed, settings={"duplicate_probability": 0.5})
        counts = emails(r)
        assert set(counts.values()) <= {1, 2}
        stale = [m for d in deliveries(r.history, "stale copy") for m in d["detail"]["messageIds"]]
        assert len(stale) == len(set(stale))  # each message misses at most once
        assert sum(counts.values()) - 3 == len(stale)  # every missed copy is one more email
        extra += len(stale)
        missed += bool(stale)
    assert 15 <= extra <= 45  # 60 draws at p = 0.5
    assert 0 < missed < 20


def test_probability_zero_draws_nothing_and_duplicates_nothing():
    r = run_scenario("sqs-spontaneous-duplicate", NAIVE, seed=1, settings={"duplicate_probability": 0})
    assert r.verdict.valid and emails(r) == {"o-1": 1, "o-2": 1, "o-3": 1}
    assert deliveries(r.history, "stale copy") == [] and len(r.history.invocations()) == 1


@pytest.mark.parametrize("seed", range(10))
def test_idempotent_handler_survives_the_stale_copies(seed):
    r = run_scenario("sqs-spontaneous-duplicate", IDEMPOTENT, seed=seed, settings={"orders": 12, "batch_size": 4})
    assert r.verdict.valid, r.verdict.explain()


# -- FIFO: the 5-minute deduplication interval ------------------------------------------------------
@pytest.mark.parametrize("after, stored", [(299, False), (299.999, False), (300, True), (301, True)])
def test_fifo_window_edges(after, stored):
    r = run_scenario("sqs-fifo-window", NAIVE, settings={"resend_after": after})
    sends = [e for e in r.history.of_type("aws") if e["op"] == "SendMessage"]
    assert len(sends) == 4 and all(e["result"] == "ok" for e in sends)
    if stored:
        assert emails(r)["o-2"] == 2 and r.status == "invalid"
        assert sends[3]["key"] != sends[1]["key"]  # a new MessageId
        (resend,) = deliveries(r.history, "producer re-send")
        assert resend["detail"]["messageIds"] == [sends[1]["key"], sends[3]["key"]]
        assert "outside the FIFO queue's 5-minute deduplication interval" in resend["detail"]["why"]
        assert deliveries(r.history, "send deduplicated") == []
        assert causes(r)[-1] == ("producer re-send", ["o-2"])
    else:
        # Accepted, answered with the original MessageId, and nothing stored: o-2 was long deleted by
        # then, which moto alone would have forgotten.
        assert r.verdict.valid and emails(r) == {"o-1": 1, "o-2": 1, "o-3": 1}
        assert sends[3]["key"] == sends[1]["key"]
        (dedup,) = deliveries(r.history, "send deduplicated")
        assert dedup["keys"] == ["o-2"] and dedup["detail"]["messageId"] == sends[1]["key"]
        assert dedup["detail"]["deduplicationId"] == "o-2"
        assert deliveries(r.history, "producer re-send") == [] and len(r.history.invocations()) == 1


@pytest.mark.parametrize("seed", range(3))
def test_fifo_naive_counts(seed):
    r = run_scenario("sqs-fifo-window", NAIVE, seed=seed)
    assert emails(r) == {"o-1": 1, "o-2": 2, "o-3": 1}
    assert causes(r) == [("first delivery", ["o-1", "o-2", "o-3"]), ("producer re-send", ["o-2"])]
    assert r.history.invocations()["inv-2"]["prev"] == "inv-1"


def test_content_based_deduplication_hashes_the_body_only():
    settings = {"content_based_deduplication": True, "send_deduplication_id": False}
    assert run_scenario("sqs-fifo-window", NAIVE, settings={**settings, "resend_after": 120}).verdict.valid
    assert emails(run_scenario("sqs-fifo-window", NAIVE, settings=settings))["o-2"] == 2
    body = json.dumps({"orderId": "o-2"})
    assert deduplication_id({"MessageBody": body}, True) == __import__("hashlib").sha256(body.encode()).hexdigest()
    assert deduplication_id({"MessageBody": body, "MessageDeduplicationId": "x"}, True) == "x"  # explicit wins
    assert deduplication_id({"MessageBody": body}, False) is None


def test_fifo_needs_a_deduplication_id_or_content_based_deduplication():
    with pytest.raises(BadInput, match="ContentBasedDeduplication"):
        run_scenario("sqs-fifo-window", NAIVE, settings={"send_deduplication_id": False})


def test_an_sdk_retry_of_a_timed_out_send_is_deduplicated_on_a_fifo_queue():
    from sandbox.core.faults import AwsFault

    with Sandbox(seed=0) as sb:
        queue = SqsQueue(sb, "orders.fifo", fifo=FifoQueueConfig(), max_receive_count=0)
        sb.faults.add(AwsFault("timeout-applied", "sqs", "SendMessage", nth=1))
        import boto3

        client = boto3.client("sqs", region_name=sb.region)
        answer = client.send_message(QueueUrl=queue.url, MessageBody="{}", MessageGroupId="g",
                                     MessageDeduplicationId="o-1")
        assert answer["ResponseMetadata"]["RetryAttempts"] == 1
        sends = [e for e in sb.history.of_type("aws") if e["op"] == "SendMessage"]
        assert [e["detail"].get("fault") for e in sends] == ["timeout-applied", None]
        assert sends[0]["key"] == sends[1]["key"] == answer["MessageId"]
        assert queue.depth() == 1


def test_moto_alone_forgets_a_deleted_messages_deduplication_id():
    """Why the sandbox keeps the window itself: a canary for moto's behaviour (FIFO-key-terms.html says otherwise)."""
    with Sandbox(seed=0) as sb:
        sqs = sb.sqs
        url = sqs.create_queue(QueueName="plain.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
        first = sqs.send_message(QueueUrl=url, MessageBody="a", MessageGroupId="g", MessageDeduplicationId="d")
        (m,) = sqs.receive_message(QueueUrl=url)["Messages"]
        sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
        again = sqs.send_message(QueueUrl=url, MessageBody="a", MessageGroupId="g", MessageDeduplicationId="d")
        assert again["MessageId"] != first["MessageId"]
        assert len(sqs.receive_message(QueueUrl=url).get("Messages", [])) == 1  # moto stored it again


def test_a_failed_fifo_batch_comes_back_whole_and_in_order():
    seen = []

    def handler(event, context):
        from sandbox import orders_in, send_confirmation_email

        seen.append([(r["attributes"]["MessageGroupId"], r["attributes"]["MessageDeduplicationId"])
                     for r in event["Records"]])
        for order in orders_in(event):
            send_confirmation_email(order)

    r = run_scenario("sqs-fifo-window", handler, settings={"fail_order": 2, "resend_order": 0, "orders": 4})
    assert emails(r) == {"o-1": 2, "o-2": 1, "o-3": 1, "o-4": 1}  # at-least-once on a FIFO queue too
    assert causes(r) == [("first delivery", ["o-1", "o-2", "o-3", "o-4"]),
                         ("redelivery", ["o-1", "o-2", "o-3", "o-4"])]
    assert seen[0] == seen[1] == [("customers-1", f"o-{i}") for i in range(1, 5)]


def test_message_groups_keep_their_own_order():
    r = run_scenario("sqs-fifo-window", IDEMPOTENT, settings={"message_groups": 2, "orders": 6, "fail_order": 3})
    assert r.verdict.valid, r.verdict.explain()
    received = [e["detail"]["received"] for e in r.history.of_type("aws")
                if e["op"] == "ReceiveMessage" and e["detail"].get("received")]
    sent = {e["key"]: i for i, e in enumerate(e for e in r.history.of_type("aws") if e["op"] == "SendMessage")}
    for ids in received:
        for group in (0, 1):
            mine = [sent[m] for m in ids if sent[m] % 2 == group]
            assert mine == sorted(mine)


@pytest.mark.parametrize("overrides, message", [
    ({"batch_size": 11, "batching_window": 1}, "BatchSize for a FIFO queue is at most 10"),
    ({"batching_window": 2}, "Batching window is not supported for FIFO queues"),
])
def test_fifo_mapping_rules(overrides, message):
    with pytest.raises(BadInput, match=message):
        run_scenario("sqs-fifo-window", NAIVE, settings=overrides)


def test_fifo_queue_names_and_duplicate_probability_are_checked():
    with Sandbox(seed=0) as sb:
        with pytest.raises(BadInput, match="must end in .fifo"):
            SqsQueue(sb, "orders", fifo=FifoQueueConfig())
        with pytest.raises(BadInput, match="FIFO queue"):
            SqsQueue(sb, "orders.fifo")
        with pytest.raises(BadInput, match="duplicate_probability"):
            SqsQueue(sb, "orders.fifo", fifo=FifoQueueConfig(), duplicate_probability=0.5)
        queue = SqsQueue(sb, "orders.fifo", fifo=FifoQueueConfig())
        assert queue.dlq_name == "orders-dlq.fifo"
        fn = sb.function(lambda event, context: None)
        with pytest.raises(BadInput, match="at most 10"):
            SqsEventSourceMapping(sb, fn, queue, batch_size=20, batching_window=1)


# -- DLQ redrive ------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(3))
def test_redrive_replays_the_half_done_batch(seed):
    with open_run("sqs-dlq-redrive", NAIVE, seed=seed) as (sb, queue, mapping, producer):
        r_history = sb.history
        assert queue.dead_letters() == [] and queue.depth() == 0
        redriven = deliveries(r_history, "redriven")
        letters = deliveries(r_history, "dead-lettered")
        assert [d["keys"] for d in redriven] == [["o-1"], ["o-2"]]
        assert [d["detail"]["deadLetterMessageId"] for d in redriven] == [d["detail"]["messageId"] for d in letters]
        new_ids = [d["detail"]["messageId"] for d in redriven]
        assert not set(new_ids) & {d["detail"]["messageId"] for d in letters}  # new MessageIds
        assert {queue.redriven[i] for i in new_ids} == {d["detail"]["messageId"] for d in letters}
        # The batch came back (and moto moved it to the DLQ) at the receive at 30.001 s; the operator
        # redrove 90 s after that alarm.
        assert letters[0]["t"] == pytest.approx(30.001) and redriven[0]["t"] == pytest.approx(120.001)
        (start,) = [e for e in r_history.of_type("aws") if e["op"] == "StartMessageMoveTask"]
        assert start["actor"] == "operator" and start["result"] == "ok"
    verdict = sb.check()
    assert verdict.effects_per_key == {"o-1": {"email": 2}, "o-2": {"email": 1}}
    invs = sb.history.invocations()
    assert [(v["cause"], v["prev"]) for v in invs.values()] == [("first delivery", None), ("DLQ redrive", "inv-1")]


def test_a_redriven_message_is_new_to_the_function():
    seen = []

    def handler(event, context):
        from sandbox import orders_in, send_confirmation_email

        seen.append([(r["messageId"], r["attributes"]["ApproximateReceiveCount"]) for r in event["Records"]])
        for order in orders_in(event):
            send_confirmation_email(order)

    run_scenario("sqs-dlq-redrive", handler)
    first, redriven = seen
    assert not {m for m, _ in first} & {m for m, _ in redriven}  # a messageId key misses the redrive
    assert [c for _, c in redriven] == ["1", "1"]


@pytest.mark.parametrize("max_receive_count", [1, 2, 5])
def test_redrive_counts_with_more_receives_before_the_dlq(max_receive_count):
    r = run_scenario("sqs-dlq-redrive", NAIVE, settings={"max_receive_count": max_receive_count})
    assert emails(r) == {"o-1": max_receive_count + 1, "o-2": 1}
    assert [c for c, _ in causes(r)] == (["first delivery"] + ["redelivery"] * (max_receive_count - 1)
                                         + ["DLQ redrive"])
    (letter, _) = deliveries(r.history, "dead-lettered")
    assert letter["t"] == pytest.approx(30 * max_receive_count, abs=0.01)  # the operator waited for it


def test_with_a_partial_batch_response_only_the_failed_order_is_redriven():
    r = run_scenario("sqs-dlq-redrive", example("partial_batch.py"), settings={"report_batch_item_failures": True})
    assert r.verdict.valid and emails(r) == {"o-1": 1, "o-2": 1}
    assert [d["keys"] for d in deliveries(r.history, "redriven")] == [["o-2"]]


def test_no_dead_letter_no_redrive():
    # Nothing fails, so nothing reaches the DLQ: the operator is never alerted, and the run still ends.
    r = run_scenario("sqs-dlq-redrive", NAIVE, settings={"fail_order": 0, "max_receive_count": 3})
    assert r.verdict.valid and emails(r) == {"o-1": 1, "o-2": 1} and r.history.end_time() < 10
    assert [e for e in r.history.of_type("aws") if e["op"] == "StartMessageMoveTask"] == []


def test_a_redrive_rate_spreads_the_moves():
    # the naive handler fails its whole batch, so all three messages reach the dead-letter queue
    r = run_scenario("sqs-dlq-redrive", NAIVE, settings={"orders": 3, "fail_order": 3, "redrive_rate": 1})
    assert [round(d["t"], 3) for d in deliveries(r.history, "redriven")] == [120.001, 121.001, 122.001]


@pytest.mark.parametrize("seed", range(10))
def test_idempotent_handler_survives_the_redrive(seed):
    r = run_scenario("sqs-dlq-redrive", IDEMPOTENT, seed=seed, settings={"orders": 5, "fail_order": 4,
                                                                          "max_receive_count": 2})
    assert r.verdict.valid, r.verdict.explain()


def _dead_letters(sb, queue, n):
    with sb.gateway.unrecorded():
        for i in range(n):
            sb.sqs.send_message(QueueUrl=queue.dlq_url, MessageBody=json.dumps({"orderId": f"o-{i + 1}"}))


def test_message_move_task_api():
    import boto3

    with Sandbox(seed=0) as sb:
        queue = SqsQueue(sb, "orders", max_receive_count=1)
        moves = MessageMoveTasks(sb, queue)
        _dead_letters(sb, queue, 3)
        client = boto3.client("sqs", region_name=sb.region)
        with pytest.raises(ClientError, match="UnsupportedOperation"):
            client.start_message_move_task(SourceArn=queue.arn)  # not a dead-letter queue
        with pytest.raises(ClientError, match="InvalidParameterValue"):
            client.start_message_move_task(SourceArn=queue.dlq_arn, MaxNumberOfMessagesPerSecond=501)
        handle = client.start_message_move_task(SourceArn=queue.dlq_arn, MaxNumberOfMessagesPerSecond=1)["TaskHandle"]
        with pytest.raises(ClientError, match="UnsupportedOperation"):
            client.start_message_move_task(SourceArn=queue.dlq_arn)  # one active task per queue
        (running,) = client.list_message_move_tasks(SourceArn=queue.dlq_arn)["Results"]
        assert running["Status"] == "RUNNING" and running["ApproximateNumberOfMessagesToMove"] == 3
        sb.run(until=1.5)  # asynchronous: the task moves one message a second
        assert moves.tasks[0].moved == 2
        assert client.cancel_message_move_task(TaskHandle=handle)["ApproximateNumberOfMessagesMoved"] == 2
        sb.run(until=5)
        assert len(queue.dead_letters()) == 1 and queue.depth() == 2
        (cancelled,) = client.list_message_move_tasks(SourceArn=queue.dlq_arn, MaxResults=10)["Results"]
        assert cancelled["Status"] == "CANCELLED" and "ApproximateNumberOfMessagesToMove" not in cancelled
        client.start_message_move_task(SourceArn=queue.dlq_arn)  # the last one, at system-optimized speed
        sb.run(until=6)
        latest, older = client.list_message_move_tasks(SourceArn=queue.dlq_arn, MaxResults=10)["Results"]
        assert latest["Status"] == "COMPLETED" and latest["ApproximateNumberOfMessagesMoved"] == 1
        assert queue.dead_letters() == [] and queue.depth() == 3 and len(queue.redriven) == 3
        assert {o for d in deliveries(sb.history, "redriven") for o in d["keys"]} == {"o-1", "o-2", "o-3"}


def test_moto_has_no_message_move_task():
    """A canary: if moto gains StartMessageMoveTask, the sandbox's own may be retired."""
    with Sandbox(seed=0) as sb:
        queue = SqsQueue(sb, "orders", max_receive_count=1)
        with pytest.raises(NotImplementedError):
            sb.sqs.start_message_move_task(SourceArn=queue.dlq_arn)


@pytest.mark.parametrize("name", NEW_SCENARIOS)
def test_new_scenarios_draw(name, tmp_path):
    for handler in (NAIVE, IDEMPOTENT):
        path = tmp_path / f"{name}.png"
        run_scenario(name, handler).save_plot(path)
        assert path.stat().st_size > 10_000


def test_fifo_queue_config_follows_the_house_config_style():
    import dataclasses

    from sandbox.settings import Config

    assert issubclass(FifoQueueConfig, Config) and FifoQueueConfig.__dataclass_params__.frozen
    (setting,) = FifoQueueConfig.settings()
    assert setting.aws == "ContentBasedDeduplication" and setting.default is False
    with pytest.raises(dataclasses.FrozenInstanceError):
        FifoQueueConfig().content_based_deduplication = True
    with pytest.raises(BadInput):
        FifoQueueConfig(content_based_deduplication="yes")


# -- the visibility advice: six times the function timeout plus the batching window ---------------
@pytest.mark.parametrize("visibility, window, advised", [(18, 0, None), (18, 2, 20), (19, 2, 20), (20, 2, None)])
def test_the_visibility_advice_adds_the_batching_window_to_six_function_timeouts(visibility, window, advised):
    # services-sqs-configure.html advises six times the function timeout (3 s here); the sandbox adds
    # MaximumBatchingWindowInSeconds, since visibility runs while the poller gathers its batch.
    r = run_scenario("sqs-batch-failure", IDEMPOTENT, seed=0,
                     settings={"visibility_timeout": visibility, "batching_window": window})
    notes = [e["text"] for e in r.history if e["type"] == "note" and "six times" in e["text"]]
    assert notes == ([] if advised is None else
                     [f"the queue's visibility timeout ({visibility} s) is below six times the function timeout "
                      f"(AWS's advice) plus the batching window ({advised} s): a batch can come back while it "
                      f"is still being processed"])


@pytest.mark.parametrize("in_dlq, kept", [(10, True), (30, False)])
def test_a_standard_queues_dead_letter_keeps_its_first_enqueue_time_so_its_retention_runs_on(in_dlq, kept):
    """"For standard queues, the expiration of a message is always based on its original enqueue timestamp"
    (setting-up-dead-letter-queue-retention.html): 102 s in the source queue and 10 s in a 120 s dead-letter queue
    leave it there; 30 s more and it is gone, though it spent only 30 s in the dead-letter queue."""
    with Sandbox() as sb:
        sqs = sb.sqs
        dlq = sqs.create_queue(QueueName="dlq", Attributes={"MessageRetentionPeriod": "120"})["QueueUrl"]
        dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        source = sqs.create_queue(QueueName="orders", Attributes={
            "MessageRetentionPeriod": "600", "VisibilityTimeout": "1",
            "RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": 1})})["QueueUrl"]
        sqs.send_message(QueueUrl=source, MessageBody="o-1")
        sb.advance(100)
        assert len(sqs.receive_message(QueueUrl=source).get("Messages", [])) == 1  # received, never deleted
        sb.advance(2)
        assert sqs.receive_message(QueueUrl=source).get("Messages", []) == []  # moved to the dead-letter queue
        sb.advance(in_dlq)
        assert len(sqs.receive_message(QueueUrl=dlq).get("Messages", [])) == (1 if kept else 0)


def test_the_improved_handler_holds_back_only_the_failed_messages_group():
    """A FIFO queue keeps order within each message group: after o-1 fails, o-3 (its group) waits, unprocessed,
    and o-2 (another group) goes on in the same invocation (Powertools' skip_group_on_error does the same)."""
    result = run_scenario("sqs-fifo-window", example("idempotent.py"), seed=0,
                          settings={"message_groups": 2, "fail_order": 1})
    assert result.valid, result.verdict.explain()
    first = next(iter(result.history.invocations()))
    sent_first = {e["key"] for e in result.history.effects() if e["inv"] == first and e.get("status") == "done"}
    assert sent_first == {"o-2"}  # o-1 failed, o-3 waited behind it; o-2's group went on
