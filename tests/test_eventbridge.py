"""EventBridge: moto's bus and rule, a producer's PutEvents re-send, and EventBridge's target retries.

AWS facts pinned here: each event's ``id`` is "A Version 4 UUID that's generated for every
event" (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-events-structure.html), so a
re-sent PutEvents is a second event with a new id; a refused delivery is retried "for 24 hours
and up to 185 times with an exponential back off and jitter"
(https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-rule-retry-policy.html); a Lambda
target is invoked asynchronously, so a function error is retried by Lambda's async queue.
"""
import json
import re
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sandbox import AwsFault, ProviderFault, Sandbox, make_orders, plot_timeline, run_scenario
from sandbox.aws.adapter import shared_client
from sandbox.sources.base import run_sources
from sandbox.sources.eventbridge import BUS, RULE, SERVICE, EventBridgeConfig, EventBridgeSource, EventProducer

from conftest import ROOT, example

NAIVE, IDEMPOTENT = example("naive_email.py"), example("idempotent.py")
EVENT_ID_KEY = f"{ROOT / 'tests' / 'handlers' / 'event_id_key.py'}:handler"
EVENT_FIELDS = {"version", "id", "detail-type", "source", "account", "time", "region", "resources", "detail"}


def run_bus(handler=NAIVE, seed=0, schedule=None, faults=(), **config):
    """A producer sends ``schedule`` through the bus; returns (history, bus, producer, outbox)."""
    with Sandbox(seed=seed) as sb:
        fn = sb.function(handler)
        bus = EventBridgeSource(sb, fn, EventBridgeConfig(**config))
        sb.faults.add(list(faults))
        orders = make_orders(3, seed)
        producer = EventProducer(sb, schedule or [(float(i), [o]) for i, o in enumerate(orders)], bus=bus.bus)
        run_sources(sb, producer, bus)
        return sb.history, bus, producer, list(sb.outbox)


# -- moto's EventBridge through the gateway ---------------------------------------------------
def test_bus_rule_and_target_live_in_moto_with_the_retry_policy():
    with Sandbox(seed=0) as sb:
        bus = EventBridgeSource(sb, sb.function(lambda e, c: None), EventBridgeConfig(target_retry_attempts=7))
        assert sb.history.of_type("aws") == []  # the setup is not part of the story
        events = shared_client(sb.region, "events")
        (target,) = events.list_targets_by_rule(Rule=RULE, EventBusName=BUS)["Targets"]
        assert target["Arn"] == bus.function.config.arn
        assert target["RetryPolicy"] == {"MaximumRetryAttempts": 7, "MaximumEventAgeInSeconds": 86400}
        assert json.loads(events.describe_rule(Name=RULE, EventBusName=BUS)["EventPattern"]) == {
            "source": ["shop.orders"], "detail-type": ["OrderPlaced"]}


def test_every_put_events_is_recorded_with_the_event_id_and_the_target_gets_aws_shaped_events():
    history, bus, producer, _ = run_bus()
    puts = [e for e in history.of_type("aws") if e["op"] == "PutEvents"]
    assert [p["service"] for p in puts] == [SERVICE] * 3 and {p["target"] for p in puts} == {BUS}
    assert [p["key"] for p in puts] == [e["id"] for e in bus.events]
    for event in bus.events:
        assert set(event) == EVENT_FIELDS  # no moto-only fields such as ingestion-time
        assert uuid.UUID(event["id"]).version == 4
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", event["time"])
        assert event["source"] == "shop.orders" and event["detail-type"] == "OrderPlaced"
    # the target is invoked asynchronously: the invocations are the async queue's
    assert {v["source"] for v in history.invocations().values()} == {"async"}


def test_the_route_to_lambda_targets_is_gone_when_the_world_closes():
    from moto.events.models import Rule

    before = Rule.send_to_targets
    run_bus()
    assert Rule.send_to_targets is before


# -- a producer's re-send ----------------------------------------------------------------------
@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 1000), nth=st.integers(1, 3))
def test_a_re_sent_put_events_is_a_second_event_with_a_new_id(seed, nth):
    history, bus, producer, outbox = run_bus(seed=seed, faults=[AwsFault("timeout-applied", SERVICE, "PutEvents",
                                                                         nth=nth)])
    resent = f"o-{nth}"
    copies = [e for e in bus.events if e["detail"]["orders"][0]["orderId"] == resent]
    assert len(copies) == 2 and copies[0]["id"] != copies[1]["id"]
    assert copies[0]["detail"] == copies[1]["detail"]
    (record,) = [e for e in history.of_type("delivery") if e["what"] == "producer re-send"]
    assert record["keys"] == [resent] and record["detail"]["eventIds"] == [c["id"] for c in copies]
    # the copy arrives after the producer's SDK waited out its 60 s read timeout
    assert record["t"] >= nth - 1 + 60.0
    assert sorted(m["orderId"] for m in outbox) == sorted(["o-1", "o-2", "o-3", resent])
    invs = history.invocations()
    (repeat,) = [v for v in invs.values() if v["cause"] == "producer re-send"]
    assert repeat["keys"] == [resent] and invs[repeat["prev"]]["keys"] == [resent]


@pytest.mark.parametrize("seed", range(3))
def test_the_event_id_does_not_catch_a_producer_re_send(seed):
    keyed_on_id = run_scenario("eventbridge-producer-resend", EVENT_ID_KEY, seed=seed)
    assert keyed_on_id.verdict.effects_per_key["o-2"] == {"email": 2}
    assert run_scenario("eventbridge-producer-resend", IDEMPOTENT, seed=seed).valid


# -- EventBridge's retries of a failed hand-off ----------------------------------------------
@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 1000), refused=st.integers(0, 6), base=st.sampled_from([0.5, 1.0, 30.0]))
def test_failed_hand_offs_are_retried_with_back_off_and_repeat_nothing(seed, refused, base):
    faults = [AwsFault("5xx", "lambda", "Invoke", times=refused)] if refused else []
    history, bus, _, outbox = run_bus(seed=seed, schedule=[(0.0, make_orders(2, seed))], retry_base_delay=base,
                                      faults=faults)
    failed = [e for e in history.of_type("delivery") if e["what"] == "delivery failed"]
    assert [f["detail"]["attempt"] for f in failed] == list(range(1, refused + 1))
    assert all(f["detail"]["status"] == 500 and f["detail"]["error"] == "ServiceException" for f in failed)
    for f in failed:  # between half and all of the doubled base delay
        ceiling = min(600.0, base * 2 ** (f["detail"]["attempt"] - 1))
        assert ceiling / 2 <= f["detail"]["retry_in"] <= ceiling
    (inv,) = history.invocations().values()  # the function ran once: the refused deliveries ran nothing
    assert inv["t"] == pytest.approx(sum(f["detail"]["retry_in"] for f in failed), abs=1e-5)
    assert sorted(m["orderId"] for m in outbox) == ["o-1", "o-2"]


@pytest.mark.parametrize("config, refused, limit", [
    ({"target_retry_attempts": 2}, 5, "MaximumRetryAttempts"),
    ({"target_event_age": 60, "retry_base_delay": 20.0}, 50, "MaximumEventAgeInSeconds"),
])
def test_an_event_out_of_retries_is_dropped_and_its_orders_lost(config, refused, limit):
    with Sandbox(seed=0) as sb:
        fn = sb.function(NAIVE)
        bus = EventBridgeSource(sb, fn, EventBridgeConfig(**config))
        sb.faults.add(AwsFault("5xx", "lambda", "Invoke", times=refused))
        run_sources(sb, EventProducer(sb, [(0.0, make_orders(1))], bus=bus.bus), bus)
        history, verdict = sb.history, sb.check()
    (dropped,) = [e for e in history.of_type("delivery") if e["what"] == "discarded"]
    assert dropped["detail"]["limit"] == limit and "dropped" in dropped["detail"]["reason"]
    assert history.invocations() == {}
    assert verdict.status == "invalid" and [f.key for f in verdict.lost] == ["o-1"]
    if limit == "MaximumRetryAttempts":
        assert dropped["detail"]["attempt"] == config["target_retry_attempts"] + 1


def test_a_function_error_is_retried_by_lambda_not_by_eventbridge():
    history, bus, _, outbox = run_bus(schedule=[(0.0, make_orders(2))],
                                      faults=[ProviderFault("email", "o-2", fail=1)])
    assert [e for e in history.of_type("delivery") if e["what"] == "delivery failed"] == []
    first, retry = sorted(history.invocations().values(), key=lambda v: v["t"])
    assert (first["source"], retry["source"], retry["cause"]) == ("async", "async", "retry 1")
    assert retry["t"] == pytest.approx(first["end"] + 60.0)
    assert len(bus.events) == 1  # EventBridge delivered the event once
    assert sorted(m["orderId"] for m in outbox) == ["o-1", "o-1", "o-2"]


def test_target_retry_scenario_without_a_function_error_repeats_nothing():
    result = run_scenario("eventbridge-target-retry", NAIVE, settings={"provider_failures": 0})
    assert result.valid
    assert len([e for e in result.history.of_type("delivery") if e["what"] == "delivery failed"]) == 2


def test_the_timeline_puts_eventbridge_above_the_queue_it_feeds():
    result = run_scenario("eventbridge-target-retry", NAIVE)
    ax = plot_timeline(result.history).axes[0]
    names = [t.get_text() for t in ax.get_yticklabels()]
    assert names.index("EventBridge rule → Lambda") < names.index("Async event queue")
    (marks,) = [ln for ln in ax.lines if ln.get_gid() == "marker:delivery failed"]
    assert len(marks.get_xdata()) == 2
    # the two 500s are EventBridge's failed hand-offs (its legend says so), then the accepted one (202)
    legend = [t.get_text() for legend in ax.figure.legends for t in legend.get_texts()]
    assert "hand-off failed (500): EventBridge retries" in legend and "hand-off accepted (202)" in legend
    assert "o-1, o-2 handed off (202)" in [t.get_text() for t in ax.texts]
