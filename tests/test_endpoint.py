"""Endpoint mode against a moto server on localhost, standing in for LocalStack or AWS.

The server runs in a process of its own, so nothing the sandbox does in-process (resetting moto's
backends when a world opens or closes) can hide a resource left behind. Every request uses fake
credentials and 127.0.0.1; real AWS is only ever refused, before any connection is made.
"""
from __future__ import annotations

import functools
import os
import signal
import socket
import subprocess
import sys
import time

import boto3
import pytest

from sandbox import BadInput, RealAwsRefused
from sandbox.cli import main
from sandbox.modes.endpoint import ENDPOINT_SCENARIOS, REAL_AWS_FLAG, leftovers, parse_endpoint, run_on_endpoint
from sandbox.modes.realthreads import compare_modes
from tests.conftest import ROOT, example

NAIVE, IDEMPOTENT = example("naive_email.py"), example("idempotent.py")
AGREE_ON = ("no-fault", "concurrent-claims", "async-duplicate", "async-retry")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env() -> dict[str, str]:
    """This environment without any AWS setting, plus fake credentials: nothing can point at AWS."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    return {**env, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}


@pytest.fixture(scope="module")
def endpoint():
    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                              env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
        except OSError:
            if time.monotonic() > deadline or server.poll() is not None:
                server.kill()
                pytest.fail("the moto server did not start")
            time.sleep(0.1)
    yield url
    server.terminate()
    server.wait(timeout=10)


def test_verdicts_agree_with_the_in_process_world(endpoint):
    run = functools.partial(run_on_endpoint, endpoint=endpoint)
    rows = compare_modes(NAIVE, AGREE_ON, run=run, mode="endpoint")
    rows += compare_modes(IDEMPOTENT, AGREE_ON, run=run, mode="endpoint")
    assert len(AGREE_ON) >= 3
    assert [r for r in rows if not r["agree"] or r["effects_deterministic"] != r["effects_endpoint"]] == []
    assert [r["endpoint"] for r in rows] == ["valid", "invalid", "invalid", "invalid"] + ["valid"] * 4
    assert leftovers(endpoint) == []


def test_resources_are_namespaced_while_the_run_lasts_and_deleted_after(endpoint):
    seen: dict[str, list[str]] = {}

    def looking_handler(event, context):
        # Inside the world: plain clients, the world's fake credentials, requests through the gateway.
        seen["tables"] = boto3.client("dynamodb").list_tables()["TableNames"]
        seen["queues"] = [u.rsplit("/", 1)[-1] for u in boto3.client("sqs").list_queues().get("QueueUrls", [])]
        seen["env"] = [os.environ["IDEMPOTENCY_TABLE"]]

    result = run_on_endpoint("async-retry", looking_handler, endpoint=endpoint)
    prefix = result.history.meta["namespace"]
    assert prefix.startswith(f"rwh-{os.getpid()}-")
    assert seen == {"tables": [f"{prefix}-idempotency"], "queues": [f"{prefix}-orders-on-failure"],
                    "env": [f"{prefix}-idempotency"]}
    assert leftovers(endpoint) == []


def test_a_run_that_fails_half_way_still_deletes_its_resources(endpoint):
    with pytest.raises(BadInput, match="wall-clock time"):
        run_on_endpoint("async-retry", NAIVE, endpoint=endpoint, settings={"first_retry_delay": 30}, budget=1.0)
    assert leftovers(endpoint) == []


def test_sigterm_mid_run_deletes_its_resources(endpoint):
    run = subprocess.Popen(
        [sys.executable, "-m", "sandbox", "run", "no-fault", "--handler", NAIVE, "--endpoint", endpoint,
         "--set", "orders=50", "--set", "interval=0.5"],
        cwd=ROOT, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not leftovers(endpoint):  # wait until the run has made its table
            assert run.poll() is None and time.monotonic() < deadline, run.stderr.read() if run.stderr else ""
            time.sleep(0.1)
        made = leftovers(endpoint)
        run.send_signal(signal.SIGTERM)
        code = run.wait(timeout=30)
        assert code == 128 + signal.SIGTERM, (code, run.stderr.read() if run.stderr else "")
    finally:
        if run.poll() is None:
            run.kill()
    assert made and all(name.startswith(f"rwh-{run.pid}-") for name in made)
    assert leftovers(endpoint) == []


@pytest.mark.parametrize("url", ["aws", "https://dynamodb.us-east-1.amazonaws.com", "https://sqs.eu-west-1.amazonaws.com/",
                                 "https://dynamodb.cn-north-1.amazonaws.com.cn", "https://sqs.us-east-1.api.aws"])
def test_real_aws_is_refused_before_any_connection(url, monkeypatch):
    def no_network(*args, **kwargs):
        raise AssertionError("a connection was attempted")

    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(socket.socket, "connect", no_network)
    with pytest.raises(RealAwsRefused, match=REAL_AWS_FLAG) as refused:
        run_on_endpoint("no-fault", NAIVE, endpoint=url)
    assert isinstance(refused.value, BadInput)  # the CLI's one-line error, exit 2
    assert parse_endpoint(url, allow_real_aws=True).real_aws  # the flag is what allows it


def test_cli_refuses_real_aws_and_needs_the_endpoint_for_the_flag(capsys):
    assert main(["run", "no-fault", "--handler", NAIVE, "--endpoint", "aws"]) == 2
    assert REAL_AWS_FLAG in capsys.readouterr().err
    assert main(["run", "no-fault", "--handler", NAIVE, REAL_AWS_FLAG]) == 2
    assert "goes with --endpoint" in capsys.readouterr().err


def test_local_endpoints_are_not_taken_for_aws():
    for url in ("http://localhost:4566", "http://localstack:4566", "http://127.0.0.1:5000/"):
        assert not parse_endpoint(url).real_aws


def test_bad_endpoints_are_bad_input():
    with pytest.raises(BadInput, match="cannot reach the endpoint http://127.0.0.1:.*refused"):
        run_on_endpoint("no-fault", NAIVE, endpoint=f"http://127.0.0.1:{_free_port()}")
    with pytest.raises(BadInput, match="takes a URL such as http://localhost:4566"):
        run_on_endpoint("no-fault", NAIVE, endpoint="localhost:4566")
    with pytest.raises(BadInput, match="endpoint mode cannot run sqs-batch-failure"):
        run_on_endpoint("sqs-batch-failure", NAIVE, endpoint="http://localhost:4566")
    assert "sqs-batch-failure" not in ENDPOINT_SCENARIOS
