"""SNS and S3 in front of Lambda's async queue: sns-delivery-retry and s3-notification-duplicate.

AWS facts pinned here: SNS and S3 invoke a function asynchronously
(https://docs.aws.amazon.com/lambda/latest/dg/with-sns.html,
https://docs.aws.amazon.com/lambda/latest/dg/with-s3.html); SNS's delivery policy for Lambda is
3 retries without delay, 2 one second apart, 10 with backoff from 1 s to 20 s, then 100,000
twenty seconds apart, "100,015 times, over 23 days"
(https://docs.aws.amazon.com/sns/latest/dg/sns-message-delivery-retries.html); an SNS record says
``EventSource`` (capital E) and carries the message as a string in ``Sns.Message``; S3 notifications
"are designed to be delivered at least once"
(https://docs.aws.amazon.com/AmazonS3/latest/userguide/EventNotifications.html) and name the object
with a URL-encoded key, its size, eTag and sequencer
(https://docs.aws.amazon.com/AmazonS3/latest/userguide/notification-content-structure.html).
"""
import hashlib
import json
import re
import uuid

import pytest

from sandbox import AwsFault, BadInput, Sandbox, make_orders, orders_in, plot_timeline, run_scenario
from sandbox.aws.adapter import shared_client
from sandbox.sources import sns as sns_module
from sandbox.sources.base import run_sources
from sandbox.sources.s3 import CONFIGURATION_ID, S3NotificationConfig, S3NotificationSource, S3Uploader
from sandbox.sources.sns import MAX_RETRIES, SnsConfig, SnsPublisher, SnsSource, retry_delay

from conftest import example

NAIVE, IDEMPOTENT = example("naive_email.py"), example("idempotent.py")
SNS, S3 = "sns-delivery-retry", "s3-notification-duplicate"
ISO_MILLIS = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"


def recording(seen):
    """A naive handler (a Python function: it runs in the world's process) that keeps every event and request id."""
    def handler(event, context):
        from sandbox import orders_in, send_confirmation_email

        seen.append((event, context.aws_request_id))
        for order in orders_in(event):
            send_confirmation_email(order)

    return handler


def run_topic(seed=0, orders=None, faults=(), **config):
    """Publish one message through a topic; returns (history, topic, events the function got, outbox, verdict)."""
    seen = []
    with Sandbox(seed=seed) as sb:
        topic = SnsSource(sb, sb.function(recording(seen)), SnsConfig(**config))
        sb.faults.add(list(faults))
        run_sources(sb, SnsPublisher(sb, [(0.0, orders or make_orders(1, seed))], topic.topic_arn), topic)
        return sb.history, topic, seen, list(sb.outbox), sb.check()


def run_bucket(seed=0, orders=None, faults=(), prefix="orders/", **config):
    """Upload orders (a second apart); returns (history, bucket, events the function got, outbox, verdict)."""
    seen = []
    with Sandbox(seed=seed) as sb:
        bucket = S3NotificationSource(sb, sb.function(recording(seen)), S3NotificationConfig(**config), prefix=prefix)
        sb.faults.add(list(faults))
        uploads = S3Uploader(sb, [(float(i), o) for i, o in enumerate(orders or make_orders(1, seed))], prefix=prefix)
        run_sources(sb, uploads, bucket)
        return sb.history, bucket, seen, list(sb.outbox), sb.check()


def deliveries(history, what):
    return [e for e in history.of_type("delivery") if e["what"] == what]


def by_start(history):
    return sorted(history.invocations().values(), key=lambda v: v["t"])


# -- SNS ----------------------------------------------------------------------------------------
def test_snss_delivery_policy_for_lambda_follows_awss_four_phases():
    delays = [retry_delay(n) for n in range(1, 18)]
    assert delays[:3] == [0.0] * 3 and delays[3:5] == [1.0, 1.0]
    backoff = delays[5:15]
    assert backoff[0] == 1.0 and backoff[-1] == 20.0 and backoff == sorted(backoff) and len(set(backoff)) == 10
    assert delays[15:] == [20.0, 20.0]
    assert MAX_RETRIES == 100_015 and retry_delay(MAX_RETRIES) == 20.0 and retry_delay(MAX_RETRIES + 1) is None
    assert 23 * 86400 < sum(retry_delay(n) for n in range(1, MAX_RETRIES + 1)) < 24 * 86400  # "over 23 days"


def test_the_topic_and_the_lambda_subscription_live_in_moto_and_are_not_part_of_the_story():
    with Sandbox(seed=0) as sb:
        topic = SnsSource(sb, sb.function(lambda e, c: None))
        assert sb.history.of_type("aws") == []
        (sub,) = shared_client(sb.region, "sns").list_subscriptions_by_topic(TopicArn=topic.topic_arn)["Subscriptions"]
        assert (sub["Protocol"], sub["Endpoint"], sub["SubscriptionArn"]) == (
            "lambda", topic.function.config.arn, topic.subscription_arn)


def test_the_function_gets_an_sns_record_with_the_message_as_a_string():
    order = make_orders(1)[0]
    history, topic, seen, outbox, verdict = run_topic(orders=[order])
    assert verdict.status == "valid" and [m["orderId"] for m in outbox] == ["o-1"]
    ((event, _),) = seen
    (record,) = event["Records"]
    assert record["EventSource"] == "aws:sns" and "eventSource" not in record  # SNS capitalises its keys
    assert record["EventVersion"] == "1.0" and record["EventSubscriptionArn"] == topic.subscription_arn
    sns = record["Sns"]
    assert sns["Type"] == "Notification" and sns["TopicArn"] == topic.topic_arn
    assert isinstance(sns["Message"], str) and json.loads(sns["Message"]) == order
    (publish,) = [r for r in history.of_type("aws") if r["op"] == "Publish"]
    assert publish["service"] == "sns" and publish["target"] == "orders" and publish["actor"] == "publisher"
    assert sns["MessageId"] == publish["key"] and uuid.UUID(sns["MessageId"])
    assert re.fullmatch(ISO_MILLIS, sns["Timestamp"]) and sns["MessageAttributes"] == {}
    # the invocation is the async queue's: SNS handed the message to Lambda's queue
    assert [v["source"] for v in history.invocations().values()] == ["async"]


def test_two_topics_in_one_world_each_deliver_to_their_own_function():
    got = {"a": [], "b": []}
    with Sandbox(seed=0) as sb:
        topics = {name: SnsSource(sb, sb.function(recording(seen), name=f"fn-{name}"), topic=f"topic-{name}")
                  for name, seen in got.items()}
        one, two = make_orders(2)
        run_sources(sb, SnsPublisher(sb, [(0.0, [one])], topics["a"].topic_arn, name="pub-a"),
                    SnsPublisher(sb, [(0.0, [two])], topics["b"].topic_arn, name="pub-b"), *topics.values())
    assert [json.loads(e["Records"][0]["Sns"]["Message"]) for e, _ in got["a"]] == [one]
    assert [json.loads(e["Records"][0]["Sns"]["Message"]) for e, _ in got["b"]] == [two]


def test_moto_delivers_as_before_once_the_world_closes():
    from moto.s3 import notifications
    from moto.sns.models import Subscription

    before = Subscription.publish, notifications._invoke_awslambda
    run_topic()
    run_bucket()
    assert (Subscription.publish, notifications._invoke_awslambda) == before


def test_message_attributes_reach_the_function_as_sns_writes_them():
    seen = []
    with Sandbox(seed=0) as sb:
        topic = SnsSource(sb, sb.function(recording(seen)))
        shared_client(sb.region, "sns").publish(
            TopicArn=topic.topic_arn, Message=json.dumps(make_orders(1)[0]), Subject="order",
            MessageAttributes={"kind": {"DataType": "String", "StringValue": "order"}})
        run_sources(sb, topic)
    ((event, _),) = seen
    assert event["Records"][0]["Sns"]["MessageAttributes"] == {"kind": {"Type": "String", "Value": "order"}}
    assert event["Records"][0]["Sns"]["Subject"] == "order"


@pytest.mark.parametrize("answer_timeout", [0.5, 2.0])
def test_a_lost_answer_is_retried_at_once_and_the_function_runs_the_same_message_twice(answer_timeout):
    history, topic, seen, outbox, verdict = run_topic(
        faults=[AwsFault("timeout-applied", "lambda", "Invoke")], answer_timeout=answer_timeout)
    (first, request_1), (again, request_2) = seen
    assert first == again and request_1 != request_2  # same MessageId, a new async invocation
    (lost,) = deliveries(history, "answer lost")
    assert lost["source"] == "sns" and lost["t"] == pytest.approx(answer_timeout)
    assert lost["detail"]["accepted"] is True and lost["detail"]["retry_in"] == 0.0 and lost["detail"]["attempt"] == 1
    inv_1, inv_2 = by_start(history)
    assert (inv_1["cause"], inv_2["cause"], inv_2["prev"]) == ("first delivery", "delivery retry", "inv-1")
    assert (inv_1["t"], inv_2["t"]) == (0.0, pytest.approx(answer_timeout))
    assert [m["orderId"] for m in outbox] == ["o-1", "o-1"] and verdict.status == "invalid"


def test_failed_hand_offs_follow_the_policy_and_run_nothing():
    history, _, seen, outbox, verdict = run_topic(faults=[AwsFault("5xx", "lambda", "Invoke", times=7)])
    failed = deliveries(history, "delivery failed")
    assert [f["detail"]["attempt"] for f in failed] == list(range(1, 8))
    assert [f["detail"]["retry_in"] for f in failed] == [retry_delay(n) for n in range(1, 8)]
    assert all(f["detail"]["status"] == 500 for f in failed)
    (inv,) = history.invocations().values()
    assert inv["cause"] == "first delivery" and inv["t"] == pytest.approx(sum(retry_delay(n) for n in range(1, 8)))
    assert len(seen) == 1 and verdict.status == "valid"


def test_a_message_is_discarded_once_the_policy_is_spent(monkeypatch):
    monkeypatch.setattr(sns_module, "retry_delay", lambda n: 1.0 if n <= 2 else None)
    history, topic, seen, _, verdict = run_topic(faults=[AwsFault("5xx", "lambda", "Invoke", times=5)])
    (dropped,) = deliveries(history, "discarded")
    assert dropped["detail"]["attempt"] == 3 and "discarded" in dropped["detail"]["reason"]
    assert seen == [] and len(topic.dropped) == 1
    assert verdict.status == "invalid" and [f.key for f in verdict.lost] == ["o-1"]


def test_the_standard_topics_at_least_once_copy_comes_with_nothing_failed():
    history, _, seen, _, _ = run_topic(duplicate_deliveries=1.0, duplicate_delivery_delay=0.5)
    (copy,) = deliveries(history, "spontaneous duplicate")
    assert copy["source"] == "sns" and copy["t"] == 0.5
    assert [(v["cause"], v["prev"], v["t"]) for v in by_start(history)] == [
        ("first delivery", None, 0.0), ("spontaneous duplicate", "inv-1", 0.5)]
    assert seen[0][0] == seen[1][0] and deliveries(history, "answer lost") == []


def test_a_re_sent_publish_is_a_second_message_with_a_new_message_id():
    history, topic, seen, outbox, _ = run_topic(faults=[AwsFault("timeout-applied", "sns", "Publish")])
    (resend,) = deliveries(history, "producer re-send")
    ids = resend["detail"]["messageIds"]
    assert len(ids) == 2 and len(set(ids)) == 2
    assert [e["Records"][0]["Sns"]["MessageId"] for e, _ in seen] == ids
    assert [v["cause"] for v in by_start(history)] == ["first delivery", "producer re-send"]
    assert by_start(history)[1]["t"] >= 60.0  # after the publisher's SDK waited out its read timeout


def test_throttling_a_services_hand_off_is_refused():
    for source in (SnsSource, S3NotificationSource):
        with Sandbox(seed=0) as sb:
            front = source(sb, sb.function(lambda e, c: None))
            sb.faults.add(AwsFault("throttle", "lambda", "Invoke"))
            with pytest.raises(BadInput, match="throttled_for"):
                front.start()


def test_orders_in_reads_the_order_or_orders_in_an_sns_message():
    def record(message, message_id="m-1"):
        return {"Records": [{"EventSource": "aws:sns", "Sns": {"MessageId": message_id, "Message": message}}]}

    one, two = make_orders(2)
    assert list(orders_in(record(json.dumps(one)))) == [one]
    assert list(orders_in(record(json.dumps({"orders": [one, two]})))) == [one, two]
    with pytest.raises(BadInput, match="SNS message m-1 is not JSON"):
        list(orders_in(record("hello")))
    with pytest.raises(BadInput, match="SNS message m-2 does not hold an order"):
        list(orders_in(record(json.dumps({"hello": 1}), "m-2")))


# -- S3 -------------------------------------------------------------------------------------------
def test_the_bucket_and_its_lambda_notification_live_in_moto_and_are_not_part_of_the_story():
    with Sandbox(seed=0) as sb:
        bucket = S3NotificationSource(sb, sb.function(lambda e, c: None))
        assert sb.history.of_type("aws") == []
        config = shared_client(sb.region, "s3").get_bucket_notification_configuration(Bucket=bucket.bucket)
        (rule,) = config["LambdaFunctionConfigurations"]
        assert (rule["Id"], rule["LambdaFunctionArn"], rule["Events"]) == (
            CONFIGURATION_ID, bucket.function.config.arn, ["s3:ObjectCreated:*"])
        rules = rule["Filter"]["Key"]["FilterRules"]
        assert [(r["Name"].lower(), r["Value"]) for r in rules] == [("prefix", "orders/")]


def test_the_function_gets_an_s3_record_naming_the_object_and_reads_it_itself():
    order = make_orders(1)[0]
    body = json.dumps(order, sort_keys=True).encode()
    history, bucket, seen, outbox, _ = run_bucket(orders=[order], prefix="in box/", duplicate_deliveries=1.0)
    (first, _), (again, _) = seen
    assert first == again  # the same notification twice: same object, same sequencer
    (record,) = first["Records"]
    assert (record["eventSource"], record["eventName"], record["eventVersion"]) == (
        "aws:s3", "ObjectCreated:Put", "2.1")
    assert re.fullmatch(ISO_MILLIS, record["eventTime"])
    s3 = record["s3"]
    assert s3["bucket"]["name"] == bucket.bucket and s3["configurationId"] == CONFIGURATION_ID
    assert s3["object"]["key"] == "in+box/o-1.json"  # URL-encoded, as on AWS
    assert s3["object"]["size"] == len(body) and s3["object"]["eTag"] == hashlib.md5(body).hexdigest()
    assert re.fullmatch(r"[0-9A-F]{18}", s3["object"]["sequencer"])
    # each invocation read the object with GetObject, a request of its own in the history
    reads = [r for r in history.of_type("aws") if r["op"] == "GetObject"]
    assert [(r["inv"], r["target"], r["key"]) for r in reads] == [
        ("inv-1", bucket.bucket, "in box/o-1.json"), ("inv-2", bucket.bucket, "in box/o-1.json")]
    assert [m["orderId"] for m in outbox] == ["o-1", "o-1"]


def test_s3_delivers_after_its_delay_and_the_copy_after_its_own():
    history, _, seen, _, _ = run_bucket(duplicate_deliveries=1.0, delivery_delay=3.0, duplicate_delivery_delay=7.0)
    (copy,) = deliveries(history, "spontaneous duplicate")
    assert copy["source"] == "s3" and copy["keys"] == ["o-1"]
    inv_1, inv_2 = by_start(history)
    assert (inv_1["t"], inv_1["cause"]) == (3.0, "first delivery")
    assert (inv_2["t"], inv_2["cause"], inv_2["prev"]) == (10.0, "spontaneous duplicate", "inv-1")
    assert seen[0][1] != seen[1][1]  # a second async invocation: a new request id


def test_a_re_sent_put_object_writes_the_object_twice_and_s3_notifies_twice():
    history, bucket, seen, _, _ = run_bucket(faults=[AwsFault("timeout-applied", "s3", "PutObject")])
    (resend,) = deliveries(history, "producer re-send")
    assert resend["detail"]["objectKeys"] == ["orders/o-1.json"] * 2
    sequencers = [e["Records"][0]["s3"]["object"]["sequencer"] for e, _ in seen]
    assert len(sequencers) == 2 and sequencers[0] < sequencers[1]  # the later write has the greater sequencer
    assert [v["cause"] for v in by_start(history)] == ["first delivery", "producer re-send"]


def test_orders_in_says_what_is_wrong_with_an_object():
    with Sandbox(seed=0) as sb:
        s3 = shared_client(sb.region, "s3")
        s3.create_bucket(Bucket="bkt")
        s3.put_object(Bucket="bkt", Key="text.json", Body=b"hello")
        s3.put_object(Bucket="bkt", Key="greeting.json", Body=b'{"hello": 1}')

        def event(key):
            return {"Records": [{"eventSource": "aws:s3", "awsRegion": sb.region,
                                 "s3": {"bucket": {"name": "bkt"}, "object": {"key": key}}}]}

        with pytest.raises(BadInput, match=r"S3 object s3://bkt/text.json is not JSON"):
            list(orders_in(event("text.json")))
        with pytest.raises(BadInput, match=r"S3 object s3://bkt/greeting.json does not hold an order"):
            list(orders_in(event("greeting.json")))
        with pytest.raises(BadInput, match=r"s3://bkt/gone.json does not exist.*NoSuchKey"):
            list(orders_in(event("gone.json")))
        with pytest.raises(BadInput, match="names no object"):
            list(orders_in({"Records": [{"eventSource": "aws:s3", "s3": {}}]}))


def test_a_fault_on_s3s_hand_off_is_refused_aws_documents_no_retry_for_it():
    with Sandbox(seed=0) as sb:
        bucket = S3NotificationSource(sb, sb.function(lambda e, c: None))
        sb.faults.add(AwsFault("5xx", "lambda", "Invoke"))
        with pytest.raises(BadInput, match="no retry policy"):
            bucket.start()


# -- the scenarios ----------------------------------------------------------------------------------
@pytest.mark.parametrize("name, cause", [(SNS, "delivery retry"), (S3, "spontaneous duplicate")])
def test_the_naive_handler_emails_twice_and_the_improved_one_once(name, cause):
    naive = run_scenario(name, NAIVE, seed=0)
    assert naive.status == "invalid" and naive.verdict.effects_per_key == {"o-1": {"email": 2}}
    (dup,) = naive.verdict.duplicates
    assert cause in dup.text and naive.errors() == []
    for seed in range(5):
        result = run_scenario(name, IDEMPOTENT, seed=seed)
        assert result.valid, result.verdict.explain()


@pytest.mark.parametrize("name, quiet", [(SNS, {"lost_answers": 0}), (S3, {"duplicate_deliveries": 0.0})])
def test_without_the_duplicate_the_naive_handler_is_fine(name, quiet):
    assert run_scenario(name, NAIVE, seed=1, settings=quiet).valid


@pytest.mark.parametrize("name", [SNS, S3])
def test_same_seed_same_history(name):
    settings = {"orders": 2}
    a = run_scenario(name, NAIVE, seed=3, settings=settings).history.to_json()
    assert a == run_scenario(name, NAIVE, seed=3, settings=settings).history.to_json()


@pytest.mark.parametrize("name, bad", [(SNS, {"lost_answers": 11}), (SNS, {"answer_timeout": 0}),
                                       (S3, {"duplicate_deliveries": 2}), (S3, {"delivery_delay": -1})])
def test_bad_settings_say_what_to_change(name, bad):
    (setting,) = bad
    with pytest.raises(BadInput, match=setting):
        run_scenario(name, NAIVE, settings=bad)


@pytest.mark.parametrize("name, row", [(SNS, "SNS topic → Lambda"), (S3, "S3 bucket notification → Lambda")])
def test_the_timeline_puts_the_service_above_the_queue_it_feeds(name, row):
    ax = plot_timeline(run_scenario(name, NAIVE).history).axes[0]
    names = [t.get_text() for t in ax.get_yticklabels()]
    assert names[0] == row  # its lanes under it: the queue it feeds shows nothing of its own, so it has no row
    assert "Async event queue" not in names
    labels = [t.get_text() for t in ax.texts]
    if name == SNS:
        assert [ln for ln in ax.lines if ln.get_gid() == "marker:answer_lost"]
        assert "o-1 accepted, no answer in 1 s → delivered again" in labels
    else:
        assert "o-1 delivered again" in labels
