"""An async Invoke whose 202 was lost, re-sent by the caller's SDK: the async-invoke-resend scenario.

Defaults: one order; a plain boto3 Lambda client (standard mode, 3 attempts, 60 s read timeout)
calls ``Invoke(InvocationType='Event')``. Lambda queues the event and answers 202, but the
answer is lost (the gateway's ``timeout-applied`` fault), so the caller's read times out at
60 s and botocore sends the Invoke again. Invoke takes no idempotency token
(https://docs.aws.amazon.com/lambda/latest/dg/API_Invoke.html), so Lambda queues a second
event: two events, two invocations, two request ids, and the naive handler emails twice.
"""
from __future__ import annotations

import json
import random
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import boto3
import botocore.endpoint
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError, ReadTimeoutError

from sandbox import BadInput, Sandbox, run_scenario
from sandbox.cli import main
from sandbox.core.faults import AwsFault
from sandbox.errors import RealAwsRefused
from sandbox.events import make_orders
from sandbox.present.timeline import plot_timeline
from sandbox.present.timeline.reading import read_history
from sandbox.scenarios import ORDER, SCENARIOS
from sandbox.sources.async_invoke import AsyncInvokeCaller
from sandbox.sources.base import run_sources
from sandbox.sources.sync_invoke import CallerConfig, SyncInvokeSource

from conftest import example, no_real_sleep

NAIVE = example("naive_email.py")
IDEMPOTENT = example("idempotent.py")
SCENARIO = "async-invoke-resend"


def run(handler=NAIVE, seed=0, **settings):
    return run_scenario(SCENARIO, handler, seed=seed, settings=settings)


def invoke_calls(history):
    return [e for e in history if e["type"] == "aws" and e["service"] == "lambda" and e["op"] == "Invoke"]


def resends(history):
    return [d for d in history.of_type("delivery") if d["what"] == "caller re-send"]


def _standard_backoff(seed: int, n: int) -> list[float]:
    # botocore's retries/standard.py for a non-throttling error (a read timeout): rand * min(0.05 * 2 ** (k-1), 20),
    # drawn from the random module a world seeds with "botocore-jitter:<seed>"
    rng = random.Random(f"botocore-jitter:{seed}")
    return [rng.random() * min(0.05 * 2 ** (k - 1), 20) for k in range(1, n + 1)]


# -- the story at the defaults ---------------------------------------------------------------------
def test_the_lost_202_makes_the_sdk_queue_the_order_twice_and_the_naive_handler_email_twice():
    result = run()
    assert result.status == "invalid"
    assert result.verdict.effects_per_key == {"o-1": {"email": 2}}
    invs = result.history.invocations()
    assert [(v["source"], v["cause"], v["prev"]) for v in invs.values()] == [
        ("async", "first delivery", None), ("async", "caller re-send", "inv-1")]
    # two queued events, two request ids: Lambda's own retries would have kept it
    starts = result.history.of_type("invoke_start")
    assert len({s["request_id"] for s in starts}) == 2
    (dup,) = result.verdict.duplicates
    assert dup.invocations == ["inv-1", "inv-2"] and "caller re-send" in dup.text
    assert not result.verdict.lost and result.errors() == []  # nothing failed, as far as Lambda can tell


def test_the_history_says_what_lambda_did_and_what_the_caller_heard():
    history = run().history
    first, second = invoke_calls(history)
    # attempt 1: queued at 0 s, its 202 lost; the caller's read times out after its 60 s read timeout
    assert (first["actor"], first["result"], first["t"]) == ("caller-o-1", "ReadTimeout", 60.0)
    assert first["detail"] | {"event": "?"} == {"attempt": 1, "invocation_type": "Event", "sent": 0.0, "event": "?",
                                                "status": 202, "fault": "timeout-applied", "read_timeout": 60.0}
    # attempt 2: botocore's backoff later, queued and answered 202
    assert second["result"] == "ok" and second["detail"]["attempt"] == 2 and second["detail"]["status"] == 202
    assert second["detail"]["sent"] == pytest.approx(60.0 + _standard_backoff(0, 1)[0], abs=2e-6)
    assert first["detail"]["event"] != second["detail"]["event"]
    # the second event is recorded as a re-send of the first, before it runs
    (resend,) = resends(history)
    assert resend["source"] == "async" and resend["keys"] == ["o-1"] and resend["inv"] is None
    assert (resend["detail"]["repeats"], resend["detail"]["event"]) == (first["detail"]["event"],
                                                                          second["detail"]["event"])
    assert "no idempotency token" in resend["detail"]["why"]
    assert resend["t"] == second["t"] <= history.invocations()["inv-2"]["t"]
    notes = [n["text"] for n in history.of_type("note")]
    assert "caller for o-1: Invoke answered 202 after 2 attempts; Lambda queued 2 events for it." in notes


def test_the_sdk_resends_the_very_same_payload():
    # botocore sends the same bytes again, so the two queued events carry the same event: only Lambda's
    # request id (the delivery) is new, not anything the caller put in the payload.
    with Sandbox(seed=0) as sb:
        fn = sb.function(NAIVE)
        sb.faults.add(AwsFault("timeout-applied", "lambda", "Invoke"))
        caller = AsyncInvokeCaller(sb, fn)
        caller.call(make_orders(1, 0)[0])
        run_sources(sb, caller)
        first, second = caller.queue.events
    assert first.event == second.event and first.id != second.id
    assert second.cause == "caller re-send" and second.repeats is first
    assert [inv.request_id for inv in first.invocations] != [inv.request_id for inv in second.invocations]
    (outcome,) = caller.outcomes
    assert (outcome.status, outcome.attempts, outcome.error, outcome.events) == (202, 2, None, [first.id, second.id])


@pytest.mark.parametrize("seed", range(5))
def test_the_idempotent_handler_is_valid(seed):
    result = run(IDEMPOTENT, seed=seed)
    assert result.status == "valid", result.verdict.explain()
    assert len(result.history.invocations()) == 2  # the re-send still arrived; run_once replayed it


@pytest.mark.parametrize("settings", [
    {"lost_answers": 0}, {"lost_answers": 2}, {"lost_answers": 3}, {"retry_mode": "legacy", "lost_answers": 5},
    {"duplicate_probability": 1.0}, {"read_timeout": 1.0, "lost_answers": 2},
])
def test_the_idempotent_handler_is_valid_whatever_the_caller_and_queue_do(settings):
    result = run(IDEMPOTENT, **settings)
    assert result.status == "valid", result.verdict.explain()


# -- how many events: one per attempt that reached Lambda -------------------------------------------
@pytest.mark.parametrize("settings, emails, gave_up", [
    ({"lost_answers": 0}, 1, False),  # the 202 arrives: one event, nothing to retry
    ({"lost_answers": 1}, 2, False),
    ({"lost_answers": 2}, 3, False),
    # standard mode makes 3 attempts: every answer lost, the SDK gives up, yet all three events run
    ({"lost_answers": 3}, 3, True),
    ({"retry_mode": "legacy", "lost_answers": 4}, 5, False),  # legacy: 5 attempts in all
    ({"retry_mode": "legacy", "lost_answers": 9}, 5, True),
    ({"total_max_attempts": 1}, 1, True),  # no retry: one event, and the caller believes the Invoke failed
    ({"max_attempts": 1, "lost_answers": 2}, 2, True),  # one retry: two attempts
])
def test_each_attempt_that_reaches_lambda_queues_one_event(settings, emails, gave_up):
    result = run(**settings)
    calls = invoke_calls(result.history)
    assert len(calls) == emails == len(result.history.invocations())
    assert [c["detail"]["attempt"] for c in calls] == list(range(1, emails + 1))
    assert result.verdict.effects_per_key == {"o-1": {"email": emails}}
    assert result.status == ("valid" if emails == 1 else "invalid")
    assert len(resends(result.history)) == emails - 1
    causes = [v["cause"] for v in result.history.invocations().values()]
    assert causes == ["first delivery"] + ["caller re-send"] * (emails - 1)
    assert [c["result"] for c in calls][-1] == ("ReadTimeout" if gave_up else "ok")
    note = [n["text"] for n in result.history.of_type("note") if n["text"].startswith("caller for o-1")][0]
    if gave_up:
        assert "gave up with ReadTimeoutError" in note and "thinks the Invoke failed" in note
    else:
        assert "answered 202" in note


def test_attempts_are_a_read_timeout_apart_plus_botocores_backoff():
    result = run(lost_answers=2, read_timeout=30.0, seed=3)
    sent = [c["detail"]["sent"] for c in invoke_calls(result.history)]
    gaps = [b - a - 30.0 for a, b in zip(sent, sent[1:])]
    assert gaps == pytest.approx(_standard_backoff(3, 2), abs=2e-6)


def test_long_waits_are_virtual():
    with no_real_sleep() as slept:
        run(lost_answers=2, read_timeout=900.0)
    assert slept == []


def test_same_seed_same_history():
    assert run(seed=7).history.to_json() == run(seed=7).history.to_json()


# -- the timeline ------------------------------------------------------------------------------------
def test_the_timeline_draws_the_caller_on_the_async_queues_row():
    history = run().history
    model = read_history(history)
    assert [(a.source, a.attempt, a.result, a.status) for a in model.attempts] == [
        ("async", 1, "ReadTimeout", None), ("async", 2, "ok", 202)]
    assert model.attempts[0].sent == 0.0 and model.attempts[0].t == 60.0
    (event,) = [e for e in model.events if e.style == "caller_resend"]
    assert event.source == "async" and event.label == "o-1 queued again (Invoke re-sent)"
    assert (model.invs["inv-2"].cause, model.invs["inv-2"].prev) == ("caller re-send", "inv-1")

    ax = plot_timeline(history).axes[0]
    texts = [t.get_text() for t in ax.texts] + [t.get_text() for t in ax.get_yticklabels()]
    assert "Caller → async event queue\n(SDK retries)" in texts and "got 202" in texts
    texts = [t.replace("\n(Invoke", " (Invoke") for t in texts]  # a label may take two lines where marks stack
    assert "o-1 queued again (Invoke re-sent)" in texts and "2nd email o-1" in texts
    gids = {ln.get_gid() for ln in ax.lines}
    assert {"marker:call_send", "marker:call_timeout", "marker:call_answer", "marker:caller_resend"} <= gids
    # the 60 s the caller waited for a lost 202 is idle time: squeezed like any other
    assert any("skipped" in t for t in texts)


def test_a_caller_that_gives_up_is_labelled_with_its_read_timeout():
    ax = plot_timeline(run(lost_answers=3).history).axes[0]
    # on two lines, over its own ✖ (on one it covered the ✖ before it)
    assert "gave up: ReadTimeoutError" in [t.get_text().replace("\n", " ") for t in ax.texts]


# -- the endpoint, with a learner's own boto3 client ---------------------------------------------------
def _in_task(sb, work):
    out = {}

    def body():
        try:
            out["value"] = work()
        except Exception as exc:  # noqa: BLE001 - the test inspects it
            out["error"] = exc

    sb.scheduler.spawn(body, name="learner")
    sb.run()
    return out


def test_a_learners_event_invoke_is_queued_and_answered_202():
    with Sandbox(seed=1) as sb:
        fn = sb.function(NAIVE)
        caller = AsyncInvokeCaller(sb, fn)
        event = sb.order_event(make_orders(1, 1))

        def work():
            client = boto3.client("lambda", config=Config(retries={"mode": "standard"}))
            response = client.invoke(FunctionName=fn.config.arn, InvocationType="Event", Payload=json.dumps(event))
            return response, response["Payload"].read()

        response, payload = _in_task(sb, work)["value"]
        assert response["StatusCode"] == 202 and payload == b"" and "FunctionError" not in response
        assert response["ResponseMetadata"]["RetryAttempts"] == 0
        (entry,) = caller.queue.events
        assert entry.event == event and entry.state == "succeeded" and entry.cause == "first delivery"
        assert [c["result"] for c in invoke_calls(sb.history)] == ["ok"]
        assert [v["source"] for v in sb.history.invocations().values()] == ["async"]
        assert sb.outbox and sb.outbox[0]["orderId"] == "o-1"


def test_a_5xx_before_anything_is_queued_is_retried_harmlessly():
    # The contrast: a request that failed did not take effect. botocore retries the 500, Lambda queues the
    # event once, and even the naive handler sends one email.
    with Sandbox(seed=0) as sb:
        fn = sb.function(NAIVE)
        sb.faults.add(AwsFault("5xx", "lambda", "Invoke"))
        caller = AsyncInvokeCaller(sb, fn)
        caller.call(make_orders(1, 0)[0])
        run_sources(sb, caller)
        assert [(c["result"], c["detail"].get("status")) for c in invoke_calls(sb.history)] == [
            ("Service", 500), ("ok", 202)]
        assert invoke_calls(sb.history)[0]["detail"]["error"] == "ServiceException"
        (entry,) = caller.queue.events
        assert entry.cause == "first delivery" and resends(sb.history) == []
        assert sb.check().status == "valid"


def test_a_re_send_after_a_5xx_still_repeats_the_event_the_lost_answer_had_queued():
    with Sandbox(seed=0) as sb:
        fn = sb.function(NAIVE)
        # the first request's 202 is lost; the second fails with a 500 (a fault armed behind the first one
        # meets only the requests the first lets through)
        sb.faults.add(AwsFault("timeout-applied", "lambda", "Invoke"), AwsFault("5xx", "lambda", "Invoke"))
        caller = AsyncInvokeCaller(sb, fn)
        caller.call(make_orders(1, 0)[0])
        run_sources(sb, caller)
        assert [c["result"] for c in invoke_calls(sb.history)] == ["ReadTimeout", "Service", "ok"]
        first, second = caller.queue.events
        (resend,) = resends(sb.history)
        assert resend["detail"]["attempt"] == 3 and second.repeats is first
        assert "attempt 3 of the same SDK call" in resend["detail"]["why"] and "attempt 1's event" in \
            resend["detail"]["why"]


def test_a_throttle_fault_on_an_event_invoke_is_refused_with_the_reason():
    with Sandbox(seed=0) as sb:
        fn = sb.function(NAIVE)
        sb.faults.add(AwsFault("throttle", "lambda", "Invoke"))
        caller = AsyncInvokeCaller(sb, fn)
        caller.call(make_orders(1, 0)[0])
        with pytest.raises(BadInput, match="queues an asynchronous request even while the function is throttled"):
            run_sources(sb, caller)


def test_an_event_invoke_needs_the_functions_async_queue():
    with Sandbox(seed=0) as sb:
        fn = sb.function(NAIVE)
        SyncInvokeSource(sb, fn)  # the endpoint serves fn synchronously only

        def work():
            boto3.client("lambda").invoke(FunctionName=fn.config.name, InvocationType="Event", Payload=b"{}")

        error = _in_task(sb, work)["error"]
        assert isinstance(error, RealAwsRefused) and "has no async queue" in str(error)
        assert sb.history.invocations() == {}


def test_one_world_serves_a_synchronous_caller_and_an_event_caller():
    with Sandbox(seed=0) as sb:
        fn = sb.function(NAIVE)
        sync = SyncInvokeSource(sb, fn, CallerConfig(read_timeout=5.0))
        caller = AsyncInvokeCaller(sb, fn)
        assert caller.endpoint is sync.endpoint
        orders = make_orders(2, 0)
        sync.call(orders[0])
        caller.call(orders[1], at=1.0)
        run_sources(sb, sync, caller)
        invs = sb.history.invocations()
        assert sorted((v["source"], v["keys"][0]) for v in invs.values()) == [("async", "o-2"), ("sync", "o-1")]
        assert sb.check().status == "valid"


def test_bad_json_gets_lambdas_error_and_queues_nothing():
    with Sandbox(seed=0) as sb:
        fn = sb.function(NAIVE)
        caller = AsyncInvokeCaller(sb, fn)

        def work():
            try:
                boto3.client("lambda").invoke(FunctionName=fn.config.name, InvocationType="Event", Payload=b"{")
            except ClientError as exc:
                return exc.response["Error"]["Code"]

        assert _in_task(sb, work)["value"] == "InvalidRequestContentException"
        assert caller.queue.events == []


# -- the scenario in the catalogue and the CLI --------------------------------------------------------
def test_the_scenario_is_an_async_duplicate_source_placed_with_the_other_async_invokes():
    sc = SCENARIOS[SCENARIO]
    assert (sc.kind, sc.source) == ("duplicate source", "async invoke")
    assert ORDER.index(SCENARIO) == ORDER.index("async-late-retry") + 1
    settings = sc.all_settings()
    assert settings["lost_answers"].default == 1 and "API_Invoke.html" in settings["lost_answers"].doc
    assert settings["retry_mode"].default == "standard" and settings["read_timeout"].default == 60.0
    assert settings["maximum_retry_attempts"].default == 2  # the queue's own settings, AWS's defaults


@pytest.mark.parametrize("settings, message", [
    ({"lost_answers": -1}, "lost_answers must be at least 0"),
    ({"total_max_attempts": 0}, "total_max_attempts counts every attempt"),
])
def test_bad_settings_are_named(settings, message):
    with pytest.raises(BadInput, match=message):
        run(**settings)


def test_cli_exit_codes(capsys):
    assert main(["run", SCENARIO, "--handler", NAIVE, "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["effects_per_key"] == {"o-1": {"email": 2}}
    assert [i["cause"] for i in report["invocations"]] == ["first delivery", "caller re-send"]
    assert main(["run", SCENARIO, "--handler", IDEMPOTENT]) == 0


# -- fidelity: a real botocore against a real HTTP endpoint retries an Event invoke the same way ----------
READ_TIMEOUT = 0.1  # real seconds


class _LateEventServer:
    """Answers every Lambda Invoke with 202 and no body, ``delay`` seconds late (None: at once)."""

    def __init__(self, delay: float | None):
        self.requests: list[dict] = []
        self.release = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                outer.requests.append({"type": self.headers.get("X-Amz-Invocation-Type"), "body": body,
                                       "call": self.headers.get("amz-sdk-invocation-id"),
                                       "attempt": self.headers.get("amz-sdk-request")})
                if delay is not None:
                    outer.release.wait(delay)
                try:
                    self.send_response(202)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def client(self, retries: dict):
        return boto3.client("lambda", endpoint_url=f"http://127.0.0.1:{self.httpd.server_address[1]}",
                            region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing",
                            config=Config(retries=retries, read_timeout=READ_TIMEOUT, connect_timeout=2.0))

    def seen(self, at_least: int, within: float = 3.0) -> list[dict]:
        deadline = time.monotonic() + within
        while len(self.requests) < at_least and time.monotonic() < deadline:
            time.sleep(0.01)
        return list(self.requests)


@pytest.fixture
def real_env(monkeypatch):
    for var in ("AWS_RETRY_MODE", "AWS_MAX_ATTEMPTS", "AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_LAMBDA",
                "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


@pytest.fixture
def no_backoff(monkeypatch):
    """botocore's backoff sleeps on this thread are skipped (the server's threads still sleep for real)."""
    me, real_sleep = threading.get_ident(), time.sleep
    monkeypatch.setattr(botocore.endpoint.time, "sleep", lambda s: None if threading.get_ident() == me
                        else real_sleep(s))


@pytest.mark.parametrize("retries, settings, attempts", [
    ({"mode": "standard"}, {}, 3),
    ({"mode": "legacy"}, {"retry_mode": "legacy"}, 5),
    ({"mode": "standard", "total_max_attempts": 2}, {"total_max_attempts": 2}, 2),
])
def test_real_botocore_resends_a_timed_out_event_invoke_as_the_sandbox_does(real_env, no_backoff, retries, settings,
                                                                           attempts):
    with _LateEventServer(delay=2.0) as server:
        with pytest.raises(ReadTimeoutError):
            server.client(retries).invoke(FunctionName="orders-handler", InvocationType="Event", Payload=b'{"a": 1}')
        requests = server.seen(attempts)
    assert len(requests) == attempts
    assert {r["type"] for r in requests} == {"Event"} and len({r["call"] for r in requests}) == 1
    assert len({r["body"] for r in requests}) == 1  # the same payload every time
    # the sandbox, same client, every answer lost: as many attempts, each one a queued event
    result = run(lost_answers=attempts, read_timeout=READ_TIMEOUT, **settings)
    assert len(invoke_calls(result.history)) == attempts == len(result.history.invocations())


def test_real_botocore_takes_a_202_without_retrying_as_the_sandboxs_caller_does(real_env, no_backoff):
    with _LateEventServer(delay=None) as server:
        response = server.client({"mode": "standard"}).invoke(FunctionName="orders-handler", InvocationType="Event",
                                                               Payload=b"{}")
        assert len(server.seen(1)) == 1
    assert response["StatusCode"] == 202 and response["Payload"].read() == b""
    assert response["ResponseMetadata"]["RetryAttempts"] == 0
    caller_note = [n["text"] for n in run(lost_answers=0).history.of_type("note") if n["text"].startswith("caller for")]
    assert caller_note == ["caller for o-1: Invoke answered 202 after 1 attempt; Lambda queued 1 event for it."]
