"""A function URL and an Application Load Balancer in front of a function, and the HTTP client that retries.

AWS facts pinned here:
- both invoke synchronously, once per request, and retry nothing (invocation-retries.html; services-alb.html);
- neither has API Gateway's 29 s cap: a function URL maps the response back whenever the function answers
  (urls-invocation.html), and a load balancer "waits until your Lambda function responds or times out"
  (elasticloadbalancing/latest/application/lambda-functions.html);
- a function URL's event is payload format 2.0 with a new requestContext.requestId per request; a failure is a
  5xx (urls-monitoring.html names no code: the sandbox answers 502); valid JSON without a statusCode is a 200;
- a load balancer's event has no request id, only an X-Amzn-Trace-Id header, new per request; a timeout or a
  malformed response is a 502 (load-balancer-troubleshooting.html).
"""
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sandbox import BadInput, Sandbox, make_orders, orders_in, run_scenario
from sandbox.core.faults import ProviderFault
from sandbox.sources.alb import AlbConfig, AlbSource
from sandbox.sources.base import run_sources
from sandbox.sources.function_url import FunctionUrlConfig, FunctionUrlSource
from sandbox.vocab import Effect

from conftest import example

NAIVE, IDEMPOTENT = example("naive_email.py"), example("idempotent.py")


def run_front(front, handler, seed=0, email_seconds=35.0, timeout=60.0, cart=1, hang_second=False, **client):
    """Orders POSTed through ``front``; returns (history, the source's requests, the email outbox)."""
    with Sandbox(seed=seed) as sb:
        sb.services.timings.email = email_seconds
        fn = sb.function(handler, timeout=timeout)
        orders = make_orders(cart, seed)
        if hang_second:
            sb.faults.add(ProviderFault(Effect.EMAIL, orders[1]["orderId"], hang=True, calls=1))
        source = front(sb, fn, **client)
        source.call(orders if cart > 1 else orders[0])
        run_sources(sb, source)
        return sb.history, source.requests, list(sb.outbox)


def records_of(history, service):
    return [e for e in history.of_type("aws") if e["service"] == service]


# -- function URLs -----------------------------------------------------------------------------
@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 1000), retries=st.integers(0, 3), read_timeout=st.sampled_from([5.0, 20.0, 30.0]))
def test_a_function_url_waits_for_the_function_and_only_the_clients_timeout_makes_it_retry(seed, retries,
                                                                                          read_timeout):
    history, requests, outbox = run_front(FunctionUrlSource, NAIVE, seed, client_retries=retries,
                                          client_timeout=read_timeout)
    assert len(requests) == retries + 1 == len(outbox)  # every invocation ran on and sent its email
    records = records_of(history, "lambda")
    assert [r["op"] for r in records] == ["InvokeFunctionUrl"] * (retries + 1)
    assert [r["result"] for r in records] == ["ReadTimeout"] * (retries + 1)
    invs = history.invocations()
    for req, rec in zip(requests, records):
        assert rec["t"] - rec["detail"]["sent"] == pytest.approx(read_timeout)  # the client's clock, not a cap
        assert "integration_timeout" not in rec["detail"]
        assert invs[req.invocation.id]["outcome"] == "ok"
        assert invs[req.invocation.id]["end"] == pytest.approx(req.sent + 35.0, abs=0.01)


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 1000), work=st.sampled_from([31.0, 45.0, 59.0]))
def test_past_29_s_a_function_url_still_answers_the_client(seed, work):
    """The cap that makes API Gateway answer 504 at 29 s is not there: a patient client gets the 200."""
    history, requests, outbox = run_front(FunctionUrlSource, NAIVE, seed, email_seconds=work, client_timeout=120.0)
    assert [r.status for r in requests] == [200] and len(outbox) == 1
    (rec,) = records_of(history, "lambda")
    assert rec["t"] - rec["detail"]["sent"] == pytest.approx(work, abs=0.05)


def test_a_function_url_event_is_payload_format_2_with_a_new_request_id_per_request():
    _, requests, _ = run_front(FunctionUrlSource, NAIVE)
    events = [r.invocation.event for r in requests]
    assert all(e["version"] == "2.0" and e["routeKey"] == "$default" and e["requestContext"]["stage"] == "$default"
               for e in events)
    assert all(e["requestContext"]["http"]["method"] == "POST" and e["rawPath"] == "/orders" for e in events)
    ids = [e["requestContext"]["requestId"] for e in events]
    assert len(set(ids)) == 3 and ids == [r.request_id for r in requests]
    assert len({e["headers"]["idempotency-key"] for e in events}) == 1  # lower case, the same on every retry
    assert all(name == name.lower() for e in events for name in e["headers"])
    assert [list(orders_in(e)) for e in events] == [[make_orders(1, 0)[0]]] * 3


def _plain_json(event, context):
    return {"processed": True}


def _bad_status(event, context):
    return {"statusCode": "two hundred"}


def _failing(event, context):
    raise RuntimeError("no")


@pytest.mark.parametrize("handler, status, flag", [(_plain_json, 200, None), (_bad_status, 502, "malformed"),
                                                   (_failing, 502, "function_error")])
def test_what_a_function_url_answers(handler, status, flag):
    history, requests, _ = run_front(FunctionUrlSource, handler, client_retries=0)
    (req,), (rec,) = requests, records_of(history, "lambda")
    assert req.status == status
    if flag is None:  # valid JSON with no statusCode: Lambda infers 200 and the response is the body
        assert req.body == {"processed": True} and rec["result"] == "ok"
    else:
        assert rec["result"] == "HTTP 502" and flag in rec["detail"]


def test_behind_a_function_url_the_idempotent_example_answers_409_and_sends_once():
    _, requests, outbox = run_front(FunctionUrlSource, IDEMPOTENT)
    assert [r.status for r in requests] == [None, 409] and len(outbox) == 1
    assert requests[0].invocation.result["statusCode"] == 200  # the first invocation finished, unheard


# -- Application Load Balancer -----------------------------------------------------------------
@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 1000), timeout=st.sampled_from([10.0, 30.0, 45.0]))
def test_a_load_balancer_waits_for_the_functions_timeout_and_answers_502(seed, timeout):
    history, requests, outbox = run_front(AlbSource, NAIVE, seed, email_seconds=0.2, timeout=timeout, cart=2,
                                          hang_second=True)
    first, second = records_of(history, "elasticloadbalancing")
    assert first["result"] == "HTTP 502" and first["detail"]["reason"] == "the Lambda function timed out"
    assert first["t"] - first["detail"]["sent"] == pytest.approx(timeout, abs=0.01)  # the function's timeout
    assert second["result"] == "ok" and [r.status for r in requests] == [502, 200]
    o1, o2 = (o["orderId"] for o in make_orders(2, seed))
    assert sorted(e["orderId"] for e in outbox) == sorted([o1, o1, o2])  # the retry sends the whole cart again


def test_a_load_balancer_event_has_no_request_id_only_a_new_trace_header_per_request():
    _, requests, _ = run_front(AlbSource, NAIVE, email_seconds=0.2, timeout=30.0, cart=2, hang_second=True)
    events = [r.invocation.event for r in requests]
    assert all("requestId" not in json.dumps(e["requestContext"]) for e in events)
    traces = [e["headers"]["x-amzn-trace-id"] for e in events]
    assert len(set(traces)) == 2 and all(t.startswith("Root=1-") for t in traces)
    assert all(e["requestContext"]["elb"]["targetGroupArn"].startswith("arn:aws:elasticloadbalancing:")
               for e in events)
    assert [len(list(orders_in(e))) for e in events] == [2, 2]


def _no_status(event, context):
    return {"body": "hi"}


@pytest.mark.parametrize("handler, reason", [(_failing, "LambdaUnhandled"), (_no_status, "LambdaInvalidResponse")])
def test_what_a_load_balancer_answers_for_an_error_or_a_bad_response(handler, reason):
    history, requests, _ = run_front(AlbSource, handler, client_retries=1)
    assert [r.status for r in requests] == [502, 502]
    assert [rec["detail"]["reason"] for rec in records_of(history, "elasticloadbalancing")] == [reason] * 2


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 1000))
def test_behind_a_load_balancer_the_idempotent_example_replays_the_cart_order_by_order(seed):
    _, requests, outbox = run_front(AlbSource, IDEMPOTENT, seed, email_seconds=0.2, timeout=30.0, cart=2,
                                    hang_second=True)
    assert [r.status for r in requests] == [502, 200]
    assert sorted(e["orderId"] for e in outbox) == sorted(o["orderId"] for o in make_orders(2, seed))


@pytest.mark.parametrize("config, bad", [(FunctionUrlConfig, {"client_timeout": 0}),
                                         (AlbConfig, {"client_retries": 11})])
def test_settings_are_checked(config, bad):
    with pytest.raises(BadInput):
        config(**bad)


# -- the scenarios -----------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["function-url-client-retry", "alb-client-retry"])
def test_the_scenarios_show_the_naive_duplicate_and_the_idempotent_example_holds(name):
    assert run_scenario(name, NAIVE, seed=0).status == "invalid"
    assert run_scenario(name, IDEMPOTENT, seed=0).status == "valid"


@pytest.mark.parametrize("name, decorator", [("function-url-client-retry", "valid"), ("alb-client-retry", "invalid")])
def test_powertools_behind_a_function_url_and_a_load_balancer(name, decorator):
    """``idempotent_function`` keys each order: valid behind both fronts. The ``@idempotent`` decorator keys the
    whole request (its body): behind the function URL the retry finds it in progress and gets 409, but the load
    balancer's cart times out half done, Powertools deletes the record of a handler that did not return, and the
    retry emails o-1 again (the same reason it fails sqs-batch-failure)."""
    assert run_scenario(name, example("powertools_function.py"), seed=0).status == "valid"
    result = run_scenario(name, example("powertools_decorator.py"), seed=0)
    assert result.status == decorator
    if decorator == "invalid":
        assert result.verdict.effects_per_key == {"o-1": {"email": 2}, "o-2": {"email": 1}}


# -- the timelines, read as the lessons read them ----------------------------------------------
def _texts(history):
    from sandbox import plot_timeline

    ax = plot_timeline(history).axes[0]
    return [t.get_text() for t in ax.texts] + [t.get_text() for t in ax.get_yticklabels()], ax


def test_lesson_01s_function_url_timeline_shows_three_read_timeouts_at_30_s_and_no_504():
    from sandbox.present.timeline.reading import read_history

    history = run_scenario("function-url-client-retry", NAIVE, seed=0).history
    model = read_history(history)
    assert [(a.source, a.result) for a in model.attempts] == [("function-url", "ReadTimeout")] * 3
    assert all(a.t - a.sent == pytest.approx(30.0) for a in model.attempts)  # "each ✕ ... at 30 s"
    texts, ax = _texts(history)
    assert "HTTP client → function URL\n(client retries)" in texts
    assert "2nd email o-1" in texts and not any("504" in t for t in texts)
    assert "marker:call_timeout" in {ln.get_gid() for ln in ax.lines}


def test_lesson_01s_load_balancer_timeline_shows_the_502_at_the_functions_timeout_then_the_retry():
    from sandbox.present.timeline.reading import read_history

    history = run_scenario("alb-client-retry", NAIVE, seed=0).history
    model = read_history(history)
    assert [(a.source, a.http_status) for a in model.attempts] == [("alb", 502), ("alb", None)]
    assert model.attempts[0].t == pytest.approx(30.0, abs=0.01)  # "stopped at its 30 s timeout"
    assert model.invs["inv-1"].outcome == "timeout" and model.invs["inv-2"].cause == "client retry"
    texts, _ = _texts(history)
    assert "HTTP client → load balancer\n(client retries)" in texts and "2nd email o-1" in texts
