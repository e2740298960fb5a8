"""Lambda's Kafka event source mapping: partitions in order, a failed batch retried whole, partial responses that
bring back only the records named, and the error handling controls of provisioned mode (sources/kafka.py)."""
from __future__ import annotations

import base64
import json
import textwrap

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sandbox import BadInput, Sandbox, run_scenario
from sandbox.events import make_orders, orders_in
from sandbox.present.timeline import plot_timeline
from sandbox.sources.kafka import (
    FAILURE_HEADERS,
    RETRIES_WITH_DESTINATION,
    KafkaMapping,
    KafkaSource,
    read_kafka_response,
)

from conftest import example

NAIVE, IMPROVED = example("naive_email.py"), example("idempotent.py")
ALL = ["o-1", "o-2", "o-3", "o-4"]


#: A handler with no idempotency that names each record whose email failed (a Kafka partial batch response).
NAMING_FAILURES = """
        import base64, json
        from sandbox import send_confirmation_email

        def handler(event, context):
            failures = []
            for name, records in event["records"].items():
                for r in records:
                    try:
                        send_confirmation_email(json.loads(base64.b64decode(r["value"])))
                    except Exception:
                        failures.append({"itemIdentifier": {"partition": name, "offset": r["offset"]}})
            return {"batchItemFailures": failures}
"""


def _handler(tmp_path, body: str) -> str:
    path = tmp_path / "kafka_handler.py"
    path.write_text(textwrap.dedent(body))
    return f"{path}:handler"


def _carried(result) -> list[list[str]]:
    """The orders each invocation was handed, in order."""
    return [list(inv["keys"]) for inv in result.history.invocations().values()]


def test_the_event_is_shaped_as_awss_sample_msk_event():
    """with-msk.html: records grouped by "topic-partition", each with its offset, a millisecond timestamp and a
    base64 key and value."""
    seen: list[dict] = []
    with Sandbox() as sb:
        fn = sb.function(lambda event, context: seen.append(event))
        source = KafkaSource(sb, fn, KafkaMapping())
        orders = make_orders(2, 0)
        for order in orders:
            source.put(order)
        source.start()
        sb.run(until=30, stop_when=source.idle)
    [event] = seen
    assert event["eventSource"] == "aws:kafka" and event["eventSourceArn"].startswith("arn:aws:kafka:us-east-1:")
    assert event["bootstrapServers"].endswith(":9092")
    [(name, records)] = event["records"].items()
    assert name == "orders-0"
    assert [r["offset"] for r in records] == [0, 1] and {r["partition"] for r in records} == {0}
    first = records[0]
    assert set(first) == {"topic", "partition", "offset", "timestamp", "timestampType", "key", "value", "headers"}
    assert first["timestampType"] == "CREATE_TIME" and isinstance(first["timestamp"], int)
    assert first["timestamp"] == round(sb.clock.epoch * 1000)  # produced at the run's start, in milliseconds
    assert base64.b64decode(first["key"]).decode() == orders[0]["orderId"]
    assert json.loads(base64.b64decode(first["value"])) == orders[0]
    assert list(orders_in(event)) == orders


def test_each_partition_is_read_in_order_by_its_own_poller():
    handled: list[tuple[str, int]] = []
    with Sandbox() as sb:
        fn = sb.function(lambda event, context: handled.extend(
            (name, r["offset"]) for name, rs in event["records"].items() for r in rs))
        source = KafkaSource(sb, fn, KafkaMapping(partitions=3, batch_size=2))
        for order in make_orders(12, 0):
            source.put(order)
        source.start()
        sb.run(until=60, stop_when=source.idle)
    for partition in ("orders-0", "orders-1", "orders-2"):
        offsets = [o for name, o in handled if name == partition]
        assert offsets == list(range(len(offsets)))  # every record once, in offset order
    assert len(handled) == 12 and len({name for name, _ in handled}) > 1


def test_a_failed_batch_comes_back_whole_and_the_improved_handler_replays_the_orders_already_done():
    naive = run_scenario("kafka-batch-retry", NAIVE)
    assert _carried(naive) == [ALL, ALL]
    assert naive.verdict.effects_per_key == {"o-1": {"email": 2}, "o-2": {"email": 2}, "o-3": {"email": 1},
                                             "o-4": {"email": 1}}
    assert run_scenario("kafka-batch-retry", IMPROVED).valid


def test_a_partial_response_brings_back_only_the_records_it_names(tmp_path):
    """kafka-retry-configurations.html: "allowing Lambda to retry just those specific items"."""
    handler = _handler(tmp_path, NAMING_FAILURES)
    result = run_scenario("kafka-partial-batch", handler)
    assert _carried(result) == [ALL, ["o-2"]]  # o-2 alone comes again
    assert result.valid  # its first email sent nothing: every order is emailed once


def test_a_partial_response_on_a_mapping_without_the_setting_is_ignored_and_the_record_is_lost(tmp_path):
    """A mapping without ReportBatchItemFailures (as every mapping without provisioned mode) ignores the answer:
    the batch counts as a success, and the record the handler named is committed unprocessed."""
    handler = _handler(tmp_path, NAMING_FAILURES)
    result = run_scenario("kafka-batch-retry", handler)
    assert _carried(result) == [ALL]
    assert [f.key for f in result.verdict.lost] == ["o-3"]
    assert any("ignored them" in n.get("text", "") for n in result.history.of_type("note"))


BAD_IDENTIFIERS = st.one_of(
    st.just("orders-0@1"), st.just(1), st.none(),
    st.fixed_dictionaries({"partition": st.just("orders-1"), "offset": st.just(1)}),  # no such partition
    st.fixed_dictionaries({"partition": st.just("orders-0"), "offset": st.integers(4, 10**6)}),  # not in the batch
    st.fixed_dictionaries({"partition": st.just("orders-0"), "offset": st.just("1")}),  # a string offset
    st.fixed_dictionaries({"partition": st.just("orders-0")}),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(BAD_IDENTIFIERS)
def test_an_identifier_that_names_no_record_of_the_batch_fails_it_whole(ident):
    """"Any invalid topic-partition_number or offset returned that was not present in the invoked event will be
    treated as failure and entire batch will be retried" (kafka-retry-configurations.html)."""
    named, bad = read_kafka_response({"batchItemFailures": [{"itemIdentifier": ident}]}, "orders-0", [0, 1, 2, 3])
    assert named == set() and bad is not None and "whole batch" in bad["reason"]


@pytest.mark.parametrize("answer", [None, {}, {"batchItemFailures": None}, {"batchItemFailures": []}])
def test_an_empty_or_null_answer_is_a_success(answer):
    assert read_kafka_response(answer, "orders-0", [0, 1]) == (set(), None)


def test_the_error_handling_controls_need_provisioned_mode():
    with pytest.raises(BadInput, match="provisioned mode"):
        KafkaMapping(report_batch_item_failures=True).check()
    with pytest.raises(BadInput, match="maximum_retry_attempts"):
        KafkaMapping(maximum_retry_attempts=2).check()
    KafkaMapping(provisioned_mode=True, maximum_retry_attempts=2, report_batch_item_failures=True).check()


def test_infinite_retries_with_an_on_failure_destination_stop_after_ten():
    """kafka-on-failure-destination.html: "Lambda automatically applies a maximum of 10 retry attempts"; the
    discarded batch is described, offsets and timestamps, never the data."""
    def always_fails(event, context):
        raise RuntimeError("poison")

    with Sandbox() as sb:
        fn = sb.function(always_fails)
        source = KafkaSource(sb, fn, KafkaMapping(provisioned_mode=True, on_failure_destination=True,
                                                  retry_backoff=1.0))
        source.put(make_orders(1, 0)[0])
        source.start()
        sb.run(until=600, stop_when=source.idle)
        assert len(sb.history.invocations()) == 1 + RETRIES_WITH_DESTINATION
        [record] = source.failure_records()
    info = record["KafkaBatchInfo"]
    assert record["requestContext"]["condition"] == "RetryAttemptsExhausted"
    assert record["requestContext"]["approximateInvokeCount"] == 11
    assert info["batchSize"] == 1 and set(info["recordsInfo"]) == {"orders-0"}
    assert info["recordsInfo"]["orders-0"]["firstRecordOffset"] == "0"
    assert "orderId" not in json.dumps(record)


def test_the_timeline_shows_the_retry_and_the_second_emails_as_the_lesson_says():
    fig = plot_timeline(run_scenario("kafka-batch-retry", NAIVE).history)
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    labels = [t.get_text() for ax in fig.axes for t in ax.get_yticklabels()] + texts
    assert any(t == "Kafka partition poller" for t in labels)
    assert any("2nd email o-1" in t and "o-2" in t for t in texts)
    assert any(t.startswith("retry 1 at") for t in texts)


@pytest.mark.parametrize("idempotence, after", [(True, 120.0), (False, 30.0)])
def test_a_producers_resend_is_a_second_record_whose_offset_is_new(idempotence, after, tmp_path):
    """Kafka's idempotent producer drops only its library's own resend; an application's resend after
    delivery.timeout.ms (or, with idempotence off, the library's after request.timeout.ms) is a new record."""
    keyed_on_offset = _handler(tmp_path, """
        from sandbox import orders_in, send_confirmation_email

        DONE = set()  # the records handled, named by topic-partition and offset

        def handler(event, context):
            for name, records in event["records"].items():
                for r in records:
                    if f"{name}@{r['offset']}" not in DONE:
                        [order] = orders_in({"eventSource": "aws:kafka", "records": {name: [r]}})
                        send_confirmation_email(order)
                        DONE.add(f"{name}@{r['offset']}")
    """)
    settings = {"enable_idempotence": idempotence}
    naive = run_scenario("kafka-producer-resend", NAIVE, settings=settings)
    [dup] = naive.verdict.duplicates
    assert dup.key == "o-2" and naive.verdict.effects_per_key["o-2"] == {"email": 2}
    resent = [n for n in naive.history.of_type("note") if "sent again" in n.get("text", "")]
    assert len(resent) == 1 and resent[0]["t"] == pytest.approx(0.25 + 1.0 + after)
    assert run_scenario("kafka-producer-resend", keyed_on_offset, settings=settings).status == "invalid"
    assert run_scenario("kafka-producer-resend", IMPROVED, settings=settings).valid


# -- a Kafka topic as the on-failure destination (kafka-on-failure-destination.html) --------------------------------
def _poison(event, context):
    raise RuntimeError("poison")


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(retries=st.integers(-1, 3), orders=st.integers(1, 5), batch_size=st.integers(1, 5), partitions=st.integers(1, 3))
def test_failed_records_land_on_the_destination_topic_once_per_batch_after_the_retries(retries, orders, batch_size,
                                                                                        partitions):
    """ "When Lambda can't process records after exhausting retry attempts ... Lambda sends the failed records to
    the specified Kafka topic": each record once, when its batch's last retry failed (-1: 10 retries with a
    destination), its key and value unchanged, at new offsets counted from 0 in each destination partition."""
    with Sandbox() as sb:
        fn = sb.function(_poison)
        mapping = KafkaMapping(provisioned_mode=True, maximum_retry_attempts=retries, batch_size=batch_size,
                               partitions=partitions, on_failure_topic="orders-failures")
        source = KafkaSource(sb, fn, mapping)
        for order in make_orders(orders, 0):
            source.put(order)
        source.start()
        sb.run(until=3600, stop_when=source.idle)
        dead = source.cluster.topics["orders-failures"]
        discards = [d for d in sb.history.of_type("delivery") if d["what"] == "discarded"]
        invocations = sb.history.invocations()
    per_batch = 1 + (RETRIES_WITH_DESTINATION if retries == -1 else retries)
    assert len(invocations) == per_batch * len(discards)
    for d in discards:  # one write per failed batch, after its last attempt (partitions' pollers interleave)
        carried = [inv for inv in invocations.values() if list(inv["keys"]) == d["keys"]]
        assert len(carried) == per_batch and d["t"] >= max(inv["end"] for inv in carried)
    written = sorted((r["key"], r["value"]) for log in dead for r in log)
    produced = sorted((r["key"], r["value"]) for log in source.logs for r in log)
    assert written == produced  # every record once: the records themselves, not a description
    assert all([r["offset"] for r in log] == list(range(len(log))) for log in dead)
    assert sum(len(d["detail"]["written"]) for d in discards) == orders
    assert all(d["detail"]["destination"] == "kafka://orders-failures" for d in discards)


def test_a_dead_letter_topics_record_is_a_new_record_whose_metadata_the_sandbox_names():
    """The reader of the destination gets the same key and value under another topic-partition and a new offset;
    the failure metadata is in headers named sandbox-... (AWS does not document its form)."""
    seen: list[dict] = []
    with Sandbox() as sb:
        source = KafkaSource(sb, sb.function(_poison), KafkaMapping(
            provisioned_mode=True, maximum_retry_attempts=0, on_failure_topic="orders-failures"))
        reader = KafkaSource(sb, sb.function(lambda event, context: seen.append(event)),
                             KafkaMapping(topic="orders-failures"), cluster=source.cluster)
        orders = make_orders(2, 0)
        for order in orders:
            source.put(order)
        source.start(), reader.start()
        sb.run(until=60, stop_when=lambda: source.idle() and reader.idle() and seen)
        causes = [(v["cause"], v["prev"]) for v in sb.history.invocations().values()]
    [event] = seen
    assert event["eventSourceArn"] == source.stream_arn  # the same cluster
    [(name, records)] = event["records"].items()
    assert name == "orders-failures-0" and [r["offset"] for r in records] == [0, 1]
    assert list(orders_in(event)) == orders
    names = [next(iter(h)) for h in records[0]["headers"]]
    assert names == list(FAILURE_HEADERS) and all(n.startswith("sandbox-") for n in names)
    meta = {k: bytes(v).decode() for h in records[1]["headers"] for k, v in h.items()}
    assert meta == {"sandbox-failure-condition": "RetryAttemptsExhausted", "sandbox-source-topic-partition": "orders-0",
                    "sandbox-source-offset": "1", "sandbox-approximate-invoke-count": "1"}
    assert causes == [("first delivery", None), ("dead-letter topic", "inv-1")]


@pytest.mark.parametrize("settings, message", [
    ({"on_failure_topic": "orders"}, "InvalidParameterValueException: the on-failure destination kafka://orders is "
                                     "the mapping's source topic"),
    ({"on_failure_topic": "orders-failures", "on_failure_destination": True}, "one on-failure destination"),
    ({"on_failure_topic": ".hidden"}, "topic name"),
    ({"on_failure_topic": "orders failures"}, "topic name"),
])
def test_a_kafka_destination_is_refused_where_aws_refuses_it(settings, message):
    """Recursion prevention: "blocking configurations where the source and destination topics are the same"; the
    API's DestinationConfig has one OnFailure destination, and kafka:// takes a Kafka topic name."""
    with pytest.raises(BadInput, match=message):
        KafkaMapping(**settings)
    with pytest.raises(BadInput, match=message):
        run_scenario("kafka-topic-destination", NAIVE, settings=settings)


def test_kafka_topic_destination_reads_as_the_lesson_says():
    """Lesson 06's reading of the scenario's timeline: the batch is discarded to kafka://orders-failures, the second
    mapping's invocation is linked to it as 'dead-letter topic', and o-1 and o-2 get a second email; the improved
    handler's orderId key holds, and Powertools' per-record function does too, while its decorator, keyed on the
    whole event, sees the dead-letter topic's event as new."""
    naive = run_scenario("kafka-topic-destination", NAIVE)
    texts = [t.get_text() for ax in plot_timeline(naive.history).axes for t in ax.texts]
    assert any("discarded" in t and "→ kafka://orders-failures" in t and "o-1, o-2, o-3, o-4" in t for t in texts)
    assert any(t.startswith("dead-letter topic at") for t in texts)
    assert any("2nd email o-1, o-2" in t for t in texts)
    assert naive.verdict.effects_per_key == {"o-1": {"email": 2}, "o-2": {"email": 2}, "o-3": {"email": 1},
                                             "o-4": {"email": 1}}
    assert run_scenario("kafka-topic-destination", IMPROVED).valid
    assert run_scenario("kafka-topic-destination", example("powertools_function.py")).valid
    decorator = run_scenario("kafka-topic-destination", example("powertools_decorator.py"))
    assert decorator.status == "invalid" and [d.key for d in decorator.verdict.duplicates] == ["o-1", "o-2"]
