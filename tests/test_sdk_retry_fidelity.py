"""Fidelity: real botocore against a real local HTTP Invoke endpoint agrees with the sandbox.

Outside any world, a real boto3 Lambda client calls a real HTTP server on 127.0.0.1 that
answers too late, so every read times out for real (read_timeout 0.2 s). The server counts
the Invoke requests it receives. The same client configuration then runs through the
``sync-sdk-retry`` scenario, and the number of Invoke attempts in the history must equal the
number of requests the real server counted.

Nothing here mocks botocore's retry decision. The one thing patched is the backoff sleep
(``botocore.endpoint`` calls ``time.sleep``): it records the delay instead of waiting, which
keeps the test short, and the recorded delays are then checked against botocore's formulas
and against the gaps the sandbox left between attempts. This is the only test that uses
real time; it finishes in about three seconds.
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
from botocore.exceptions import ReadTimeoutError

from sandbox import run_scenario

from conftest import example

READ_TIMEOUT = 0.1  # real seconds the client waits for each response
SERVER_DELAY = 2.0  # the server answers after this long: always too late
JITTER_SEED = "botocore-jitter:0"  # what a world with seed 0 seeds the random module with


class _InvokeServer:
    """A tiny Lambda Invoke endpoint: counts POST .../invocations and answers after ``delay``."""

    def __init__(self, delay: float | None, status: int = 200, headers: dict | None = None, payload: bytes = b"{}"):
        self.requests: list[dict] = []
        self.release = threading.Event()  # set at teardown so late handlers stop waiting
        self.arrived = threading.Condition()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                with outer.arrived:
                    outer.requests.append({"path": self.path, "sdk_request": self.headers.get("amz-sdk-request"),
                                           "call": self.headers.get("amz-sdk-invocation-id"), "body": body})
                    outer.arrived.notify_all()
                if delay is not None:
                    outer.release.wait(delay)  # an Event wait, so a patched time.sleep cannot shorten it
                try:
                    self.send_response(status)
                    for k, v in {"Content-Type": "application/json", **(headers or {})}.items():
                        self.send_header(k, v)
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up on this attempt long ago

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def seen(self, at_least: int, within: float = 3.0) -> list[dict]:
        """The requests so far, after giving a slow server thread up to ``within`` s to log its request.

        A request the client already gave up on may still sit in a socket buffer on a busy
        machine; waiting for it keeps the count honest without waiting when nothing is late.
        """
        with self.arrived:
            self.arrived.wait_for(lambda: len(self.requests) >= at_least, timeout=within)
            return list(self.requests)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def real_env(monkeypatch):
    """No profile, proxy or retry settings from the machine running the tests."""
    for var in ("AWS_RETRY_MODE", "AWS_MAX_ATTEMPTS", "AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_LAMBDA",
                "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


@pytest.fixture
def backoffs(monkeypatch):
    """Record botocore's backoff sleeps on this thread instead of waiting them out.

    ``botocore.endpoint.time`` is the ``time`` module itself, so the patch is process-wide;
    other threads (the HTTP server's) still sleep for real.
    """
    delays: list[float] = []
    me = threading.get_ident()
    real_sleep = time.sleep

    def sleep(seconds):
        if threading.get_ident() == me:
            delays.append(seconds)
        else:
            real_sleep(seconds)

    monkeypatch.setattr(botocore.endpoint.time, "sleep", sleep)
    return delays


def _client(url: str, retries: dict):
    return boto3.client("lambda", endpoint_url=url, region_name="us-east-1", aws_access_key_id="testing",
                        aws_secret_access_key="testing",
                        config=Config(retries=retries, read_timeout=READ_TIMEOUT, connect_timeout=2.0))


def _real_attempts(retries: dict, expected: int) -> list[dict]:
    """Invoke for real until botocore gives up; return the requests the server saw."""
    state = random.getstate()
    random.seed(JITTER_SEED)  # the same jitter draws the sandbox makes with seed 0
    try:
        with _InvokeServer(SERVER_DELAY) as server:
            client = _client(server.url, retries)
            with pytest.raises(ReadTimeoutError):
                client.invoke(FunctionName="orders-handler", Payload=json.dumps({"orderId": "o-1"}))
            return server.seen(expected)
    finally:
        random.setstate(state)


def _sandbox(settings: dict):
    """The same caller through the scenario (the naive handler, work slower than the read timeout)."""
    result = run_scenario("sync-sdk-retry", example("naive_email.py"), seed=0,
                          settings={**settings, "read_timeout": READ_TIMEOUT, "email_seconds": 1.0,
                                    "function_timeout": 3.0})
    calls = [e for e in result.history if e["type"] == "aws" and e["service"] == "lambda" and e["op"] == "Invoke"]
    starts = {e["inv"]: e["t"] for e in result.history.of_type("invoke_start")}
    # the backoff is the virtual time between one attempt's read timeout and the next attempt's start
    gaps = [starts[b["detail"]["invocation"]] - a["t"] for a, b in zip(calls, calls[1:])]
    return result, calls, gaps


def _legacy_delays(n):
    # retryhandler.delay_exponential with _retry.json's base "rand" and growth_factor 2:
    # rand * 2 ** (attempt - 1)
    rng = random.Random(JITTER_SEED)
    return [rng.random() * 2 ** (attempt - 1) for attempt in range(1, n + 1)]


def _standard_delays(n):
    # retries/standard.py ExponentialBackoff for a non-throttling error (a read timeout):
    # rand * min(0.05 * 2 ** (attempt - 1), 20)
    rng = random.Random(JITTER_SEED)
    return [rng.random() * min(0.05 * 2 ** (attempt - 1), 20) for attempt in range(1, n + 1)]


CASES = [
    # (botocore retries config, scenario settings, attempts in all, backoff formula)
    ({"mode": "legacy"}, {"retry_mode": "legacy"}, 5, _legacy_delays),  # _retry.json: max_attempts 5
    ({"mode": "standard"}, {"retry_mode": "standard"}, 3, _standard_delays),  # DEFAULT_MAX_ATTEMPTS = 3
    ({"mode": "adaptive"}, {"retry_mode": "adaptive"}, 3, _standard_delays),  # standard plus a rate limiter
    ({"mode": "legacy", "total_max_attempts": 1}, {"retry_mode": "legacy", "total_max_attempts": 1}, 1, _legacy_delays),
    # max_attempts counts retries: one retry, two attempts in all
    ({"mode": "legacy", "max_attempts": 1}, {"retry_mode": "legacy", "max_attempts": 1}, 2, _legacy_delays),
]


@pytest.mark.parametrize("retries, settings, attempts, formula", CASES,
                         ids=["legacy", "standard", "adaptive", "total_max_attempts=1", "max_attempts=1"])
def test_real_botocore_matches_the_sandbox(real_env, backoffs, retries, settings, attempts, formula):
    requests = _real_attempts(dict(retries), attempts)
    delays = list(backoffs)  # taken before the sandbox runs: a world swaps time.sleep while open

    # what the real server saw: `attempts` Invoke requests of one SDK call, numbered 1..n
    assert len(requests) == attempts
    assert all(r["path"] == "/2015-03-31/functions/orders-handler/invocations" for r in requests)
    assert len({r["call"] for r in requests}) == 1
    numbers = sorted(int(r["sdk_request"].split(";")[0].removeprefix("attempt=")) for r in requests)
    assert numbers == list(range(1, attempts + 1))
    assert len({r["body"] for r in requests}) == 1  # a retry resends the very same payload

    # botocore's backoffs follow its formula, drawn from the seeded random module
    assert delays == pytest.approx(formula(attempts - 1), abs=1e-12)

    # the sandbox, same configuration: same number of attempts, same backoffs
    result, calls, gaps = _sandbox(settings)
    assert len(calls) == len(requests)
    assert [c["detail"]["attempt"] for c in calls] == list(range(1, attempts + 1))
    assert [c["result"] for c in calls] == ["ReadTimeout"] * attempts
    assert gaps == pytest.approx(delays, abs=2e-6)  # the history keeps 6 decimals
    # and each attempt became an invocation that finished its work: one email each
    assert result.verdict.effects_per_key == {"o-1": {"email": attempts}}


@pytest.mark.parametrize("headers, payload", [
    ({}, json.dumps({"statusCode": 409, "body": "{\"message\": \"in progress\"}"}).encode()),
    ({"X-Amz-Function-Error": "Unhandled"}, json.dumps({"errorMessage": "boom", "errorType": "ValueError"}).encode()),
])
def test_real_botocore_does_not_retry_an_answered_invoke(real_env, backoffs, headers, payload):
    # A 409 inside the payload, or a function error, still arrives as HTTP 200: botocore has
    # nothing to retry. That is why the idempotent handler's 409 ends the caller's retries.
    with _InvokeServer(None, 200, headers, payload) as server:
        response = _client(server.url, {"mode": "legacy"}).invoke(FunctionName="orders-handler", Payload=b"{}")
        assert len(server.seen(1)) == 1
    assert backoffs == []
    assert response["StatusCode"] == 200 and response["ResponseMetadata"]["RetryAttempts"] == 0
    assert response.get("FunctionError") == headers.get("X-Amz-Function-Error")
    assert json.loads(response["Payload"].read()) == json.loads(payload)
