"""The synchronous invoke source and the sync-sdk-retry scenario.

Defaults: the caller's read_timeout is botocore's 60 s, the email provider takes 75 s and the
function may run 120 s. So every attempt's read times out while its invocation goes on to
finish and send its email. Lambda never retries a synchronous invoke
(https://docs.aws.amazon.com/lambda/latest/dg/invocation-retries.html); every extra
invocation comes from botocore's retry handler in the caller.
"""
from __future__ import annotations

import json
import random

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError, ReadTimeoutError
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from sandbox import BadInput, Sandbox, run_scenario
from sandbox.cli import main
from sandbox.events import apigateway_event, make_orders
from sandbox.scenarios import SCENARIOS
from sandbox.sources.sync_invoke import CallerConfig, SyncInvokeSource

from conftest import example

NAIVE = example("naive_email.py")
IDEMPOTENT = example("idempotent.py")


def run(handler=NAIVE, seed=0, **settings):
    return run_scenario("sync-sdk-retry", handler, seed=seed, settings=settings)


def invoke_calls(result):
    return [e for e in result.history if e["type"] == "aws" and e["service"] == "lambda" and e["op"] == "Invoke"]


@pytest.mark.parametrize("settings, emails", [
    # legacy: _retry.json's __default__ max_attempts is 5 attempts in all, and ReadTimeoutError
    # is one of its "general socket errors". All 5 reads time out; all 5 invocations send.
    ({"retry_mode": "legacy"}, 5),
    # standard: DEFAULT_MAX_ATTEMPTS = 3, and ReadTimeoutError is an HTTPClientError, which
    # TransientRetryableChecker retries.
    ({"retry_mode": "standard"}, 3),
    # adaptive = standard's retry rules plus a client-side rate limiter that only engages on
    # throttling, so the same 3 attempts.
    ({"retry_mode": "adaptive"}, 3),
    # retries={'max_attempts': N} counts retries: N + 1 attempts.
    ({"retry_mode": "legacy", "max_attempts": 2}, 3),
    # total_max_attempts counts every attempt and wins over max_attempts.
    ({"retry_mode": "legacy", "max_attempts": 9, "total_max_attempts": 2}, 2),
    ({"retry_mode": "standard", "total_max_attempts": 4}, 4),
])
def test_naive_handler_sends_one_email_per_attempt(settings, emails):
    result = run(**settings)
    assert result.status == "invalid"
    assert result.verdict.effects_per_key == {"o-1": {"email": emails}}
    calls = invoke_calls(result)
    assert [c["result"] for c in calls] == ["ReadTimeout"] * emails
    assert [c["detail"]["attempt"] for c in calls] == list(range(1, emails + 1))
    invs = result.history.invocations()
    assert [v["cause"] for v in invs.values()] == ["first delivery"] + ["SDK retry"] * (emails - 1)
    assert all(v["source"] == "sync" and v["outcome"] == "ok" for v in invs.values())
    # the duplicates are explained by the caller's SDK retries
    (dup,) = result.verdict.duplicates
    assert dup.text.count("(sync, SDK retry)") == emails - 1


@hypothesis_settings(max_examples=25, deadline=None)
@given(mode=st.sampled_from(["legacy", "standard", "adaptive"]), retries=st.integers(-1, 6),
       total=st.integers(-1, 7).filter(lambda n: n != 0), read_timeout=st.floats(1.0, 70.0), seed=st.integers(0, 99))
def test_every_attempt_botocore_makes_is_one_invocation(mode, retries, total, read_timeout, seed):
    # Whatever the caller's settings, as long as the work (75 s) outlasts the read timeout,
    # botocore makes: total_max_attempts if set, else max_attempts + 1 if set, else the
    # mode's default (legacy 5, standard/adaptive 3). Each attempt is one invocation and,
    # for the naive handler, one email.
    result = run(seed=seed, retry_mode=mode, max_attempts=retries, total_max_attempts=total, read_timeout=read_timeout)
    expected = total if total > 0 else retries + 1 if retries >= 0 else {"legacy": 5}.get(mode, 3)
    assert len(invoke_calls(result)) == len(result.history.invocations()) == expected
    assert result.verdict.effects_per_key == {"o-1": {"email": expected}}
    assert result.status == ("valid" if expected == 1 else "invalid")


@pytest.mark.parametrize("settings", [{"total_max_attempts": 1}, {"max_attempts": 0},
                                      {"read_timeout": 100.0}])
def test_one_attempt_is_valid_even_for_the_naive_handler(settings):
    # One attempt (or a read timeout longer than the 75 s of work) means one invocation: one email.
    result = run(**settings)
    assert result.status == "valid", result.verdict.explain()
    assert len(result.history.invocations()) == 1


def test_a_read_timeout_longer_than_the_work_gets_the_answer():
    result = run(read_timeout=100.0)
    (call,) = invoke_calls(result)
    assert call["result"] == "ok" and call["detail"]["statusCode"] == 200 and call["t"] == 75.0


@pytest.mark.parametrize("mode", ["legacy", "standard", "adaptive"])
@pytest.mark.parametrize("seed", range(20))
def test_idempotent_handler_is_valid(mode, seed):
    result = run(IDEMPOTENT, seed=seed, retry_mode=mode)
    assert result.status == "valid", result.verdict.explain()
    assert result.verdict.effects_per_key == {"o-1": {"email": 1}}
    # attempt 1 times out after 60 s; attempt 2 finds the claim IN_PROGRESS and returns a 409
    # at once. That is HTTP 200 with the 409 inside the payload, so botocore stops retrying.
    first, second = invoke_calls(result)
    assert first["result"] == "ReadTimeout"
    assert second["result"] == "ok" and second["detail"]["statusCode"] == 409
    assert len(result.history.invocations()) == 2
    notes = [e["text"] for e in result.history.of_type("note")]
    assert any("after 2 attempts" in n and "statusCode 409" in n for n in notes)


@hypothesis_settings(max_examples=15, deadline=None)
@given(mode=st.sampled_from(["legacy", "standard", "adaptive"]), total=st.integers(1, 6),
       read_timeout=st.floats(1.0, 90.0), seed=st.integers(0, 99))
def test_idempotent_handler_is_valid_whatever_the_caller_does(mode, total, read_timeout, seed):
    # A retry that lands while the first invocation works gets 409; one that lands after it
    # finished gets the stored result replayed. Either way one email.
    result = run(IDEMPOTENT, seed=seed, retry_mode=mode, total_max_attempts=total, read_timeout=read_timeout)
    assert result.status == "valid", result.verdict.explain()


def test_attempts_overlap_in_time():
    result = run(retry_mode="legacy")
    invs = list(result.history.invocations().values())
    for earlier, later in zip(invs, invs[1:]):
        # the retry starts while the invocation it repeats is still running
        assert earlier["t"] < later["t"] < earlier["end"]
        assert later["prev"] == earlier["inv"]
        assert later["container"] != earlier["container"]  # the busy container cannot take it


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("mode", ["legacy", "standard"])
def test_backoff_between_attempts_is_botocores(seed, mode):
    # Each retry starts read_timeout after the previous attempt plus botocore's backoff. The
    # jitter comes from the random module, which the world seeds with "botocore-jitter:<seed>".
    # legacy (retryhandler.delay_exponential): rand * 2 ** (attempt - 1);
    # standard (ExponentialBackoff, non-throttling error): rand * min(0.05 * 2 ** (attempt - 1), 20).
    result = run(seed=seed, retry_mode=mode)
    starts = [v["t"] for v in result.history.invocations().values()]
    rng = random.Random(f"botocore-jitter:{seed}")
    scale = 1.0 if mode == "legacy" else 0.05
    expected, t = [0.0], 0.0
    for attempt in range(1, len(starts)):
        t += 60.0 + rng.random() * min(scale * 2 ** (attempt - 1), 20)
        expected.append(t)
    assert starts == pytest.approx(expected, abs=1e-5)


def test_same_seed_same_history_byte_for_byte():
    a, b = run(seed=3), run(seed=3)
    assert a.history.to_json() == b.history.to_json()
    c = run(seed=4)
    assert [v["t"] for v in c.history.invocations().values()] != [v["t"] for v in a.history.invocations().values()]


def test_function_error_is_not_retried_by_lambda_or_the_sdk():
    # The function times out at 3 s, before the 75 s email. Lambda answers the synchronous
    # invoke with a function error (HTTP 200, X-Amz-Function-Error), which botocore does not
    # retry, and Lambda never retries a synchronous invoke itself: the order is lost.
    result = run(function_timeout=3.0)
    (call,) = invoke_calls(result)
    assert call["result"] == "FunctionError" and call["detail"]["function_error"] == "Sandbox.Timedout"
    assert result.status == "invalid" and result.verdict.lost
    assert [v["outcome"] for v in result.history.invocations().values()] == ["timeout"]


@pytest.mark.parametrize("extra, emails", [([], 3), (["--set", "retry_mode=legacy"], 5)])
def test_cli_naive_exits_1_with_sdk_retry_duplicates(capsys, extra, emails):
    # A plain boto3 client of the pinned botocore retries in standard mode: 3 attempts; legacy makes 5.
    code = main(["run", "sync-sdk-retry", "--handler", NAIVE, "--json", *extra])
    report = json.loads(capsys.readouterr().out)
    assert code == 1 and report["verdict"] == "invalid"
    assert report["effects_per_key"] == {"o-1": {"email": emails}}
    (dup,) = report["duplicates"]
    causes = {i["id"]: i["cause"] for i in report["invocations"]}
    assert [causes[i] for i in dup["invocations"]] == ["first delivery"] + ["SDK retry"] * (emails - 1)
    assert "SDK retry" in dup["text"]


def test_cli_idempotent_exits_0(capsys):
    assert main(["run", "sync-sdk-retry", "--handler", IDEMPOTENT, "--set", "retry_mode=standard"]) == 0


@pytest.mark.parametrize("settings, message", [
    ({"total_max_attempts": 0}, "total_max_attempts counts every attempt"),
    ({"retry_mode": "aggressive"}, "retry_mode must be one of legacy, standard, adaptive"),
    ({"max_attempts": -2}, "max_attempts must be at least -1"),
    ({"read_timeout": 0}, "read_timeout must be at least 0.01"),
])
def test_bad_settings_are_named(settings, message):
    with pytest.raises(BadInput, match=message):
        run(**settings)


def test_scenario_is_listed_with_its_doc_pages():
    sc = SCENARIOS["sync-sdk-retry"]
    assert sc.kind == "duplicate source"
    settings = sc.all_settings()
    assert settings["read_timeout"].default == 60.0 and "config.html" in settings["read_timeout"].doc
    assert settings["retry_mode"].default == "standard" and "retries.html" in settings["retry_mode"].doc


# -- the source and endpoint directly, with a learner's own boto3 client ------------------------
def _world_with_source(handler, read_timeout=5.0, **fn_kw):
    sb = Sandbox(seed=1).open()
    fn = sb.function(handler, **fn_kw)
    SyncInvokeSource(sb, fn, CallerConfig(read_timeout=read_timeout))
    return sb, fn


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


def test_a_learners_client_gets_lambdas_response_shape():
    def handler(event, context):
        if json.loads(event["body"])["orderId"] == "o-2":
            raise ValueError("no such product")
        return {"statusCode": 201, "body": "created"}

    sb, fn = _world_with_source(handler)
    try:
        orders = make_orders(2, 1)

        def work():
            client = boto3.client("lambda", config=Config(retries={"mode": "standard"}, read_timeout=5))
            ok = client.invoke(FunctionName=fn.config.name, Payload=json.dumps(apigateway_event(orders[0], "r-1")))
            bad = client.invoke(FunctionName=fn.config.arn, Payload=json.dumps(apigateway_event(orders[1], "r-2")))
            return ok, json.loads(ok["Payload"].read()), bad, json.loads(bad["Payload"].read())

        ok, ok_payload, bad, bad_payload = _in_task(sb, work)["value"]
        assert ok["StatusCode"] == 200 and ok["ExecutedVersion"] == "$LATEST" and "FunctionError" not in ok
        assert ok_payload == {"statusCode": 201, "body": "created"}
        assert bad["StatusCode"] == 200 and bad["FunctionError"] == "Unhandled"
        assert bad_payload["errorType"] == "ValueError" and bad_payload["errorMessage"] == "no such product"
        assert bad["ResponseMetadata"]["RetryAttempts"] == 0  # a function error is not retried
        assert [c["result"] for c in invoke_calls(sb)] == ["ok", "FunctionError"]
    finally:
        sb.close()


def test_the_endpoint_uses_the_calling_clients_read_timeout():
    def slow(event, context):
        import time

        time.sleep(4.0)  # virtual
        return {"statusCode": 200}

    sb, fn = _world_with_source(slow, timeout=10)
    try:
        def work():
            client = boto3.client("lambda", config=Config(retries={"total_max_attempts": 2, "mode": "standard"},
                                                          read_timeout=3))
            client.invoke(FunctionName=fn.config.name, Payload=b"{}")

        error = _in_task(sb, work)["error"]
        assert isinstance(error, ReadTimeoutError)
        calls = invoke_calls(sb)
        assert [(c["result"], c["detail"]["read_timeout"]) for c in calls] == [("ReadTimeout", 3.0)] * 2
    finally:
        sb.close()


def test_unknown_function_and_bad_payload_get_lambdas_errors():
    sb, fn = _world_with_source(lambda e, c: None)
    try:
        def work():
            client = boto3.client("lambda")
            errors = []
            for name, payload in (("nope", b"{}"), (fn.config.name, b"not json")):
                try:
                    client.invoke(FunctionName=name, Payload=payload)
                except ClientError as exc:
                    errors.append(exc.response["Error"]["Code"])
            return errors

        assert _in_task(sb, work)["value"] == ["ResourceNotFoundException", "InvalidRequestContentException"]
        assert sb.history.invocations() == {}
        assert [c["result"] for c in invoke_calls(sb)] == ["ResourceNotFound", "InvalidRequestContent"]
    finally:
        sb.close()
