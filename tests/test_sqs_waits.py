"""Waits that spend an SQS message's visibility before the invocation ends: a throttled invoke retried
until the visibility timeout (sqs-throttled-batch), and the up-to-20 s wait on a quiet queue
(sqs-low-traffic-wait)."""
import pytest

from sandbox import BadInput, get_scenario, run_scenario
from sandbox.present.timeline.reading import read_history
from sandbox.sources.sqs import OPT_IN_MAPPING_SETTINGS, SqsMappingConfig
from sandbox.vocab import Cause, Delivery, FindingKind, Outcome, RecordType

from conftest import example

NAIVE, IDEMPOTENT = example("naive_email.py"), example("idempotent.py")
THROTTLED, QUIET = "sqs-throttled-batch", "sqs-low-traffic-wait"


def emails(result):
    return {key: counts["email"] for key, counts in result.verdict.effects_per_key.items()}


def deliveries(result, what):
    return [e for e in result.history.of_type(RecordType.DELIVERY) if e["what"] == what]


def invocations(result):
    return list(result.history.invocations().values())


# -- the settings are the mapping's, off unless a scenario sets them ------------------------------
def test_the_waits_are_off_by_default_and_offered_only_by_their_scenarios():
    config = SqsMappingConfig()
    assert (config.throttled_for, config.quiet_queue_wait) == (0.0, 0.0)
    assert not config.throttled_at(0.0) and config.gathers_for() == 0.0
    for name in ("sqs-batch-failure", "sqs-visibility-timeout", "sqs-spontaneous-duplicate", "sqs-fifo-window",
                 "sqs-dlq-redrive", "producer-resend"):
        assert not set(OPT_IN_MAPPING_SETTINGS) & set(get_scenario(name).all_settings()), name
    throttled = get_scenario(THROTTLED).all_settings()
    assert (throttled["throttled_from"].default, throttled["throttled_for"].default) == (0.0, 6.0)
    assert "quiet_queue_wait" not in throttled
    quiet = get_scenario(QUIET).all_settings()
    assert quiet["quiet_queue_wait"].default == 20.0 and "throttled_for" not in quiet
    assert quiet["quiet_queue_wait"].doc == "https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html"


@pytest.mark.parametrize("name, settings, words", [
    (QUIET, {"quiet_queue_wait": 21}, "quiet_queue_wait"),
    (QUIET, {"quiet_queue_wait": -1}, "quiet_queue_wait"),
    (THROTTLED, {"throttled_for": -1}, "throttled_for"),
    (THROTTLED, {"throttled_from": "soon"}, "throttled_from"),
])
def test_bad_wait_settings_are_named(name, settings, words):
    with pytest.raises(BadInput, match=words):
        run_scenario(name, NAIVE, settings=settings)


# -- sqs-throttled-batch ----------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(5))
def test_a_throttled_batch_outlasts_its_visibility_and_is_processed_twice(seed):
    r = run_scenario(THROTTLED, NAIVE, seed=seed)
    assert r.status == "invalid" and emails(r) == {"o-1": 2, "o-2": 2, "o-3": 2}
    first, second = invocations(r)
    assert (first["cause"], second["cause"], second["prev"]) == (Cause.FIRST_DELIVERY, Cause.REDELIVERY, "inv-1")
    assert first["t"] == pytest.approx(7.0)  # tries at 0, 1 and 3 s refused; the one at 7 s got through
    assert second["t"] == pytest.approx(8.001) and second["t"] < first["end"]  # while inv-1 still sends
    (throttled,) = deliveries(r, Delivery.THROTTLED)
    detail = throttled["detail"]
    assert (throttled["t"], detail["from"], detail["tries"], detail["status"]) == (7.0, 0.0, 3, 429)
    assert detail["dropped"] is False and detail["invocation"] == "inv-1"
    (again,) = deliveries(r, Delivery.REDELIVERY)
    assert again["detail"]["receiveCounts"] == [2, 2, 2] and again["detail"]["messageIds"] == detail["messageIds"]
    invs = r.history.invocations()
    for dup in r.verdict.duplicates:  # what the catalogue checks: the repeat's cause, named in the finding
        assert Cause.REDELIVERY in {invs[i]["cause"] for i in dup.invocations if i} and Cause.REDELIVERY in dup.text


@pytest.mark.parametrize("seed", range(5))
def test_the_improved_handler_survives_the_throttled_batch(seed):
    r = run_scenario(THROTTLED, IDEMPOTENT, seed=seed)
    assert r.status == "valid", r.verdict.explain()
    assert emails(r) == {"o-1": 1, "o-2": 1, "o-3": 1}


def test_without_throttling_the_same_batch_is_processed_once():
    r = run_scenario(THROTTLED, NAIVE, settings={"throttled_for": 0})
    assert r.status == "valid" and len(invocations(r)) == 1
    assert deliveries(r, Delivery.THROTTLED) == []


@pytest.mark.parametrize("stretch", [1.0, 6.0, 14.9, 40.0])
def test_six_times_the_function_timeout_leaves_room_for_the_retries(stretch):
    # AWS's advice: a visibility timeout of at least six times the 3 s function timeout.
    r = run_scenario(THROTTLED, NAIVE, settings={"visibility_timeout": 18, "throttled_for": stretch})
    assert r.status == "valid", r.verdict.explain()
    assert emails(r) == {"o-1": 1, "o-2": 1, "o-3": 1}
    # a batch still refused is dropped only when its 18 s are spent, and then comes back
    assert all(e["t"] == pytest.approx(e["detail"]["from"] + 18)
               for e in deliveries(r, Delivery.THROTTLED) if e["detail"]["dropped"])


def test_at_six_times_the_timeout_the_default_stretch_runs_once_with_the_messages_hidden():
    r = run_scenario(THROTTLED, NAIVE, settings={"visibility_timeout": 18})
    assert r.status == "valid" and [(v["cause"], v["t"]) for v in invocations(r)] == [(Cause.FIRST_DELIVERY, 7.0)]
    assert deliveries(r, Delivery.REDELIVERY) == [] and deliveries(r, Delivery.THROTTLED)[0]["detail"]["tries"] == 3


def test_a_batch_still_throttled_at_its_visibility_timeout_is_dropped_and_comes_back():
    r = run_scenario(THROTTLED, NAIVE, settings={"throttled_for": 10})
    dropped, through = deliveries(r, Delivery.THROTTLED)
    # 429 at 0, 1, 3 and 7 s; the next try (15 s) would come after the 8 s visibility timeout
    assert (dropped["t"], dropped["detail"]["tries"], dropped["detail"]["dropped"]) == (8.0, 4, True)
    assert "invocation" not in dropped["detail"] and dropped["inv"] is None
    # received again (one receive spent), refused twice more, through at 11 s: run once, nothing doubled
    assert through["detail"]["tries"] == 2 and through["detail"]["from"] == pytest.approx(8.001)
    assert [(v["cause"], v["t"]) for v in invocations(r)] == [(Cause.REDELIVERY, pytest.approx(11.001))]
    assert r.status == "valid"


def test_a_low_max_receive_count_dead_letters_the_throttled_batch_unrun():
    r = run_scenario(THROTTLED, NAIVE, settings={"max_receive_count": 1, "throttled_for": 20})
    assert invocations(r) == [] and r.status == "invalid"
    assert {f.key for f in r.verdict.lost} == {"o-1", "o-2", "o-3"}
    assert all(f.kind == FindingKind.LOST for f in r.verdict.lost)
    dead = deliveries(r, Delivery.DEAD_LETTERED)
    assert len(dead) == 3 and all("throttled (429)" in e["detail"]["reason"] for e in dead)


def test_the_timeline_shows_the_429s_on_the_lane_not_a_batching_window():
    model = read_history(run_scenario(THROTTLED, NAIVE).history)
    (held,) = model.batching
    assert (held.inv, held.start, held.end, held.kind, held.note) == ("inv-1", 0.0, 7.0, Delivery.THROTTLED, "3 tries")
    (marker,) = [e for e in model.events if e.style == Delivery.THROTTLED]
    assert marker.t0 is None  # no band on the poller's row: the lane shows the wait


# -- sqs-low-traffic-wait ---------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(5))
def test_a_quiet_queue_holds_the_message_past_its_visibility_timeout(seed):
    r = run_scenario(QUIET, NAIVE, seed=seed)
    assert r.status == "invalid" and emails(r) == {"o-1": 2}
    first, second = invocations(r)
    assert [(v["cause"], v["t"]) for v in (first, second)] == [(Cause.FIRST_DELIVERY, 20.0),
                                                              (Cause.REDELIVERY, pytest.approx(35.001))]
    assert first["outcome"] == second["outcome"] == Outcome.OK  # nothing failed
    (again,) = deliveries(r, Delivery.REDELIVERY)
    assert again["t"] == pytest.approx(15.001) and again["detail"]["receiveCounts"] == [2]
    waits = deliveries(r, Delivery.QUIET_QUEUE_WAIT)
    assert [(w["inv"], w["detail"]["from"], w["detail"]["waited"]) for w in waits] == [
        ("inv-1", 0.0, 20.0), ("inv-2", pytest.approx(15.001), 20.0)]
    assert all(w["detail"]["batchingWindow"] == 3 for w in waits)
    # the mapping follows AWS's advice (6 x 2 s + 3 s = 15 s), so only the quiet-queue wait is noted
    (note,) = r.history.of_type(RecordType.NOTE)
    assert "20 s" in note["text"] and "32 s" in note["text"]


@pytest.mark.parametrize("seed", range(5))
def test_the_improved_handler_survives_the_quiet_queue(seed):
    r = run_scenario(QUIET, IDEMPOTENT, seed=seed)
    assert r.status == "valid", r.verdict.explain()
    assert emails(r) == {"o-1": 1}


@pytest.mark.parametrize("settings, invoked_at", [
    ({"quiet_queue_wait": 0}, 3.0),  # the batching window alone
    ({"quiet_queue_wait": 2}, 3.0),  # a wait shorter than the window changes nothing
    ({"batching_window": 0}, 0.0),  # AWS's note is about a batch window: no window, no wait
    ({"orders": 3, "batch_size": 3}, 0.0),  # traffic that fills the batch: invoked at once
])
def test_no_quiet_wait_no_duplicate(settings, invoked_at):
    r = run_scenario(QUIET, NAIVE, settings=settings)
    assert r.status == "valid"
    assert [v["t"] for v in invocations(r)] == [invoked_at]
    assert deliveries(r, Delivery.QUIET_QUEUE_WAIT) == []


@pytest.mark.parametrize("visibility, sent", [(10, 3), (11, 2), (20, 2), (21, 1)])
def test_each_visibility_timeout_spent_waiting_hands_the_message_to_one_more_poller(visibility, sent):
    # 20 s of waiting plus 0.2 s of work: covered from 21 s on; at 10 s or less a third poller takes it
    r = run_scenario(QUIET, NAIVE, settings={"visibility_timeout": visibility})
    assert emails(r) == {"o-1": sent}


def test_the_timeline_shows_each_poller_holding_the_quiet_batch():
    model = read_history(run_scenario(QUIET, NAIVE).history)
    assert [(b.inv, b.start, b.end, b.kind, b.note) for b in model.batching] == [
        ("inv-1", 0.0, 20.0, Delivery.QUIET_QUEUE_WAIT, "window 3 s"),
        ("inv-2", 15.001, 35.001, Delivery.QUIET_QUEUE_WAIT, "window 3 s")]
    (again,) = [e for e in model.events if e.style == Delivery.REDELIVERY]
    assert again.label == "o-1 received again while a poller still holds it"


# -- both -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", [THROTTLED, QUIET])
def test_same_seed_same_history(name):
    assert run_scenario(name, NAIVE, seed=3).history.to_json() == run_scenario(name, NAIVE, seed=3).history.to_json()
