"""The Lambda runtime model: context, timeouts, crashes, AWS faults, containers."""
import time

import pytest

from sandbox import AwsFault, CrashPlan, Sandbox, run_scenario, send_confirmation_email

from conftest import example

ORDER = {"orderId": "o-1", "email": "ana@example.com", "amount": 1200}


def test_context_has_lambdas_attributes_and_a_new_request_id_each_time():
    contexts = []
    with Sandbox() as sb:
        fn = sb.function(lambda event, context: contexts.append(context), timeout=7, memory_mb=256)
        fn.invoke({})
        fn.invoke({})
    a, b = contexts
    assert a.aws_request_id != b.aws_request_id
    assert a.function_name == "orders-handler" and a.function_version == "$LATEST"
    assert a.invoked_function_arn == "arn:aws:lambda:us-east-1:123456789012:function:orders-handler"
    assert a.memory_limit_in_mb == "256"  # a string in the Python runtime, read from its environment
    assert a.log_group_name == "/aws/lambda/orders-handler" and a.log_stream_name.endswith("c1")


def test_timeout_keeps_the_effect_done_before_it():
    readings = []

    def handler(event, context):
        readings.append(context.get_remaining_time_in_millis())
        send_confirmation_email(ORDER)
        time.sleep(2.8 - 0.2)  # right up to the deadline
        readings.append(context.get_remaining_time_in_millis())
        time.sleep(5)
        readings.append("never")

    with Sandbox() as sb:
        inv = sb.function(handler).invoke({})
        assert inv.outcome == "timeout" and inv.error_text == "Task timed out after 3.00 seconds"
        assert [m["orderId"] for m in sb.outbox] == ["o-1"]
        end = sb.history.of_type("invoke_end")[0]
        assert end["t"] == 3.0 and end["outcome"] == "timeout"
    assert readings[0] == 3000 and readings[1] == pytest.approx(200, abs=1)
    assert "never" not in readings


def test_timeout_cannot_be_swallowed_by_except_exception():
    def handler(event, context):
        try:
            time.sleep(10)
        except Exception:
            return "caught it"

    with Sandbox() as sb:
        assert sb.function(handler).invoke({}).outcome == "timeout"


def test_a_timeout_is_checked_at_the_end_too():
    def handler(event, context):
        try:
            time.sleep(10)
        except BaseException:
            return "swallowed even the timeout"

    with Sandbox() as sb:
        assert sb.function(handler).invoke({}).outcome == "timeout"


def put_three(event, context):
    import boto3

    table = boto3.resource("dynamodb").Table("idempotency")
    for i in range(3):
        table.put_item(Item={"pk": f"k{i}"})
    send_confirmation_email(ORDER)
    table.put_item(Item={"pk": "after-email"})


@pytest.mark.parametrize("plan, written, emailed", [
    (CrashPlan(after_aws_calls=2), ["k0", "k1"], False),
    (CrashPlan(before_call="dynamodb.PutItem"), [], False),
    (CrashPlan(after_effect="email"), ["k0", "k1", "k2"], True),
])
def test_crash_injection_stops_at_the_named_point(plan, written, emailed):
    with Sandbox() as sb:
        inv = sb.function(put_three).invoke({}, crash=plan)
        assert inv.outcome == "crashed" and "injected" in inv.error_text
        assert [i["pk"] for i in sb.items()] == written
        assert bool(sb.outbox) is emailed


def test_throttling_is_retried_by_botocore_itself():
    with Sandbox() as sb:
        sb.faults.add(AwsFault("throttle", "dynamodb", "PutItem", times=2))
        inv = sb.function(put_three).invoke({})
        assert inv.outcome == "ok"
        puts = [e["result"] for e in sb.history.of_type("aws") if e["op"] == "PutItem"]
        assert puts[:3] == ["ProvisionedThroughputExceeded", "ProvisionedThroughputExceeded", "ok"]
        assert sb.clock.elapsed() > 0  # botocore's backoff slept, on the virtual clock


def test_5xx_fault_surfaces_when_retries_run_out():
    with Sandbox() as sb:
        sb.faults.add(AwsFault("5xx", "dynamodb", "PutItem", times=100))
        inv = sb.function(put_three, timeout=900).invoke({})
        assert inv.outcome == "error" and "InternalServerError" in inv.error_text
        # botocore 1.44's default retry mode is "standard" (boto/botocore#3513), which gives
        # DynamoDB 4 attempts in all (retries/standard.py _SERVICE_MAX_ATTEMPTS), others 3.
        assert len([e for e in sb.history.of_type("aws") if e["op"] == "PutItem"]) == 4
        assert "reached max retries: 3" in inv.error_text


def test_timeout_that_took_effect_makes_a_retried_claim_fail_against_itself():
    """The indefinite outcome: the put succeeded, the caller timed out, botocore re-sent it."""

    def claim(event, context):
        import boto3

        table = boto3.resource("dynamodb").Table("idempotency")
        table.put_item(Item={"pk": "order#o-1"}, ConditionExpression="attribute_not_exists(pk)")

    with Sandbox() as sb:
        sb.faults.add(AwsFault("timeout-applied", "dynamodb", "PutItem"))
        inv = sb.function(claim).invoke({})
        assert inv.outcome == "error" and "ConditionalCheckFailed" in inv.error_text
        results = [(e["result"], e["detail"].get("fault")) for e in sb.history.of_type("aws")]
        assert results == [("ok", "timeout-applied"), ("ConditionalCheckFailed", None)]


def test_module_state_lives_per_container():
    handler = example("module_set.py")
    one_container = run_scenario("concurrent-claims", handler, settings={"stagger": 5})
    two_containers = run_scenario("concurrent-claims", handler)
    assert one_container.status == "valid"
    assert {i["container"] for i in one_container.report()["invocations"]} == {"orders-handler/c1"}
    assert two_containers.status == "invalid"
    containers = {i["container"] for i in two_containers.report()["invocations"]}
    assert containers == {"orders-handler/c1", "orders-handler/c2"}


def test_containers_follow_concurrency():
    with Sandbox() as sb:
        fn = sb.function(lambda e, c: time.sleep(1))
        for _ in range(3):
            fn.start({})
        sb.run()
        fn.invoke({})  # all three are warm now: reuse the first
        assert len(fn.containers) == 3
        assert [c.invocations for c in fn.containers] == [2, 1, 1]


def test_factory_runs_once_per_cold_start():
    starts = []

    def factory():
        starts.append(1)
        return lambda e, c: time.sleep(1)

    with Sandbox() as sb:
        fn = sb.function(factory=factory)
        fn.invoke({})
        fn.invoke({})
        assert len(starts) == 1
        fn.start({})
        fn.start({})
        sb.run()
        assert len(starts) == 2


def test_handler_errors_are_function_errors_with_their_message():
    def boom(event, context):
        raise KeyError("orderId")

    with Sandbox() as sb:
        inv = sb.function(boom).invoke({})
        assert inv.outcome == "error" and inv.error_text == "KeyError: 'orderId'"


def test_a_cold_start_that_raises_is_a_recorded_function_error():
    starts = []

    def factory():
        starts.append(1)
        if len(starts) == 2:
            raise RuntimeError("config missing in the second container")
        return lambda e, c: time.sleep(1)

    with Sandbox() as sb:
        fn = sb.function(factory=factory)
        first, second = fn.start({}), fn.start({})
        sb.run()
        assert first.outcome == "ok"
        assert second.outcome == "error"
        assert second.error_text == "Runtime.InitError: RuntimeError: config missing in the second container"
        assert [e["inv"] for e in sb.history.of_type("invoke_end")] == [second.id, first.id]


def test_the_reserved_environment_names_the_function_its_version_and_its_logs(tmp_path):
    # Lambda's reserved variables (configuration-envvars.html#configuration-envvars-runtime) agree with the
    # context the same invocation receives, and each container writes to its own log stream.
    (tmp_path / "app.py").write_text(
        "import os\n"
        "NAMES = ('AWS_LAMBDA_FUNCTION_VERSION', 'AWS_LAMBDA_LOG_GROUP_NAME', 'AWS_LAMBDA_LOG_STREAM_NAME')\n"
        "def handler(event, context):\n"
        "    __import__('time').sleep(0.1)\n"
        "    return [[os.environ[n] for n in NAMES],\n"
        "            [context.function_version, context.log_group_name, context.log_stream_name]]\n")
    with Sandbox() as sb:
        fn = sb.function(f"{tmp_path / 'app.py'}:handler")
        first, second = fn.start({}), fn.start({})  # side by side: two containers
        sb.run()
    for inv in (first, second):
        env, context = inv.result
        assert env == context
        assert env[0] == "$LATEST" and env[1] == "/aws/lambda/orders-handler"
    streams = [inv.result[0][2] for inv in (first, second)]
    assert streams[0] != streams[1] and all("/[$LATEST]" in s for s in streams)
