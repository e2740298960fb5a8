"""API Gateway in front of a function, and the HTTP client that retries what API Gateway gave up on.

AWS facts pinned here: API Gateway invokes synchronously and "does not retry any Lambda
invocations"; a function error is a 502 (https://docs.aws.amazon.com/lambda/latest/dg/services-apigateway-errors.html);
it waits at most the integration timeout, 29 s by default
(https://docs.aws.amazon.com/apigateway/latest/developerguide/limits.html), then answers 504
(INTEGRATION_TIMEOUT, supported-gateway-response-types.html) while the function runs on; every
request has its own requestContext.requestId.
"""
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sandbox import BadInput, Sandbox, make_orders, plot_timeline, run_scenario
from sandbox.sources.apigateway import ApiGatewayConfig, ApiGatewaySource
from sandbox.sources.base import run_sources

from conftest import ROOT, example, no_real_sleep

NAIVE, IDEMPOTENT = example("naive_email.py"), example("idempotent.py")
EVENT_ID_KEY = f"{ROOT / 'tests' / 'handlers' / 'event_id_key.py'}:handler"


def run_client(handler, seed=0, email_seconds=35.0, timeout=60.0, **client):
    """One order POSTed through API Gateway; returns (history, source's requests, the email outbox)."""
    with Sandbox(seed=seed) as sb:
        sb.services.timings.email = email_seconds
        fn = sb.function(handler, timeout=timeout)
        source = ApiGatewaySource(sb, fn, **client)
        source.call(make_orders(1, seed)[0])
        run_sources(sb, source)
        return sb.history, source.requests, list(sb.outbox)


def client_records(history):
    return [e for e in history.of_type("aws") if e["service"] == "execute-api"]


# -- the integration and the client ------------------------------------------------------------
@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 1000), retries=st.integers(0, 3), backoff=st.sampled_from([0.0, 1.0, 2.5]))
def test_every_request_times_out_at_29_s_and_every_invocation_still_finishes(seed, retries, backoff):
    history, requests, outbox = run_client(NAIVE, seed, client_retries=retries, client_backoff=backoff)
    assert len(requests) == retries + 1 == len(outbox)  # one email per request: API Gateway stopped nothing
    records = client_records(history)
    assert [r["result"] for r in records] == ["HTTP 504"] * (retries + 1)
    invs = history.invocations()
    for i, (req, rec) in enumerate(zip(requests, records)):
        assert rec["t"] - rec["detail"]["sent"] == pytest.approx(29.0)
        assert rec["detail"]["gatewayResponse"] == "INTEGRATION_TIMEOUT" and req.status == 504
        inv = invs[req.invocation.id]
        assert inv["outcome"] == "ok" and inv["end"] == pytest.approx(req.sent + 35.0, abs=0.01)
        if i:  # the client backs off (doubling) after each 504, then sends a new request
            assert req.sent - requests[i - 1].ended == pytest.approx(backoff * 2 ** (i - 1))
    assert [invs[r.invocation.id]["cause"] for r in requests] == ["first delivery"] + ["client retry"] * retries
    assert [invs[r.invocation.id]["prev"] for r in requests] == [None] + [r.invocation.id for r in requests[:-1]]


def test_each_request_is_a_new_event_with_a_new_request_id_but_the_same_idempotency_key():
    _, requests, _ = run_client(NAIVE)
    events = [r.invocation.event for r in requests]
    request_ids = [e["requestContext"]["requestId"] for e in events]
    assert len(set(request_ids)) == 3 and request_ids == [r.request_id for r in requests]
    assert len({e["headers"]["Idempotency-Key"] for e in events}) == 1
    assert {e["body"] for e in events} == {events[0]["body"]}  # the same order, byte for byte
    assert all(e["httpMethod"] == "POST" and e["resource"] == "/orders" for e in events)
    # a new aws_request_id for every invocation: each is its own synchronous invoke
    assert len({r.invocation.request_id for r in requests}) == 3


def test_without_the_header_the_client_sends_no_idempotency_key():
    history, requests, _ = run_client(NAIVE, idempotency_key=False)
    assert all("Idempotency-Key" not in r.invocation.event["headers"] for r in requests)
    assert all("idempotencyKey" not in r["detail"] for r in client_records(history))


def test_a_fast_function_answers_the_client_once():
    history, requests, outbox = run_client(NAIVE, email_seconds=0.2)
    assert len(requests) == 1 and requests[0].status == 200 and len(outbox) == 1
    (rec,) = client_records(history)
    assert rec["result"] == "ok" and rec["detail"]["statusCode"] == 200


class Boom(Exception):
    pass


def failing(event, context):
    raise Boom("no")


def not_a_proxy_response(event, context):
    return "hello"


@pytest.mark.parametrize("handler, flag", [(failing, "function_error"), (not_a_proxy_response, "malformed")])
def test_a_function_error_or_a_bad_response_is_a_502_that_the_client_retries(handler, flag):
    history, requests, _ = run_client(handler)
    assert [r.status for r in requests] == [502, 502, 502]
    assert all(r.body == {"message": "Internal server error"} for r in requests)
    assert all(rec["result"] == "HTTP 502" and flag in rec["detail"] for rec in client_records(history))


def test_a_client_that_gives_up_before_api_gateway_hears_nothing():
    history, requests, outbox = run_client(NAIVE, client_timeout=10.0, client_retries=1)
    assert [r.status for r in requests] == [None, None] and len(outbox) == 2
    assert [rec["result"] for rec in client_records(history)] == ["ReadTimeout", "ReadTimeout"]
    assert all(rec["t"] - rec["detail"]["sent"] == pytest.approx(10.0) for rec in client_records(history))


def test_the_idempotent_example_answers_409_then_replays_the_stored_result():
    # The client also retries a 409 and waits long enough for the first invocation to finish.
    _, requests, outbox = run_client(IDEMPOTENT, retry_conflict=True, client_backoff=4.0)
    assert [r.status for r in requests] == [504, 409, 200] and len(outbox) == 1
    first = requests[0].invocation.result
    assert first["statusCode"] == 200 and requests[2].body == first["body"]  # the stored result, replayed
    assert "being processed" in json.loads(requests[1].body)["message"]


@pytest.mark.parametrize("bad", [{"integration_timeout": 0.01}, {"client_retries": -1}, {"client_timeout": 0}])
def test_settings_are_checked(bad):
    with pytest.raises(BadInput):
        ApiGatewayConfig(**bad)


# -- the scenario ------------------------------------------------------------------------------
def test_scenario_defaults_are_aws_defaults():
    cfg = ApiGatewayConfig()
    assert cfg.integration_timeout == 29.0 and cfg.idempotency_key and cfg.client_retries == 2
    assert not cfg.retryable(409) and cfg.retryable(504) and cfg.retryable(None) and not cfg.retryable(200)


@pytest.mark.parametrize("seed", range(3))
def test_a_handler_keyed_on_the_request_id_sends_three_times(seed):
    result = run_scenario("apigw-client-retry", EVENT_ID_KEY, seed=seed)
    assert result.verdict.effects_per_key == {"o-1": {"email": 3}}


@pytest.mark.parametrize("header", [True, False])
def test_the_idempotent_example_is_valid_with_or_without_the_header(header):
    result = run_scenario("apigw-client-retry", IDEMPOTENT, settings={"idempotency_key": header})
    assert result.valid, result.verdict.explain()
    keys = {e["key"] for e in result.history.of_type("aws") if e["service"] == "dynamodb" and e["op"] == "PutItem"}
    if header:  # keyed on the client's header, which names the request
        (key,) = keys
        assert key != "order-confirmation#o-1" and key.startswith("order-confirmation#")
    else:
        assert keys == {"order-confirmation#o-1"}


def test_the_timeline_shows_what_the_client_saw():
    result = run_scenario("apigw-client-retry", NAIVE)
    ax = plot_timeline(result.history).axes[0]
    texts = [t.get_text() for t in ax.texts] + [t.get_text() for t in ax.get_yticklabels()]
    assert "HTTP client → API Gateway\n(client retries)" in texts  # a long source name takes two lines
    # on two lines, over its own 504 (on one it stood over the others too)
    assert "gave up after 504 Gateway Timeout" in [t.replace("\n", " ") for t in texts]
    (marks,) = [ln for ln in ax.lines if ln.get_gid() == "marker:gateway_timeout"]
    assert len(marks.get_xdata()) == 3
    waits = [ln for ln in ax.lines if (ln.get_gid() or "").startswith("caller-wait:")]
    assert len(waits) == 3


def test_long_waits_are_virtual():
    with no_real_sleep() as slept:
        run_client(NAIVE, email_seconds=600.0, timeout=900.0, client_timeout=900.0, integration_timeout=900.0)
    assert slept == []
