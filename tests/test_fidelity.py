"""No false verdicts: the runtime behaves like Lambda whatever the handler does.

Each test runs a handler written the way users write them (``tests/handlers/``) where a
sandbox that did not behave like Lambda would give the wrong verdict, and pins the right one.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sandbox import Sandbox, make_orders, run_scenario
from sandbox.sources.async_invoke import AsyncInvokeSource, run_until_idle

from conftest import EXAMPLES, ROOT

HANDLERS = ROOT / "tests" / "handlers"


def handler(name: str) -> str:
    return f"{HANDLERS / name}:handler"


def invocations(result):
    return result.report()["invocations"]


# -- 1. a timeout or a crash ends the invocation's code and resets its environment ---------------
def test_a_finally_block_does_not_run_after_the_deadline_so_a_claim_without_expiry_stays():
    # The claim has no expiry; the `finally` that would delete it never runs on Lambda.
    result = run_scenario("ttl-lag", handler("finally_delete.py"))
    assert result.status == "invalid" and [f.key for f in result.verdict.lost] == ["o-1"]
    deletes = [e for e in result.history.of_type("aws") if e["op"] == "DeleteItem" and e["inv"]]
    assert deletes == []


def test_a_finally_block_cannot_mark_unsent_work_done_after_the_deadline():
    result = run_scenario("ttl-lag", handler("finally_done.py"))
    assert result.valid, result.verdict.explain()
    first = [e for e in result.history.of_type("aws") if e["inv"] == "inv-1"]
    assert [e["op"] for e in first] == ["PutItem"]  # nothing after the deadline reached DynamoDB


def test_a_timeout_resets_the_container_so_module_state_is_gone():
    result = run_scenario("timeout-after-effect", f"{EXAMPLES / 'module_set.py'}:handler")
    assert result.status == "invalid"
    assert result.verdict.effects_per_key["o-1"] == {"email": 2}
    first, retry = invocations(result)
    assert first["outcome"] == "timeout" and first["container"] != retry["container"]
    starts = {e["inv"]: e for e in result.history.of_type("invoke_start")}
    assert starts["inv-2"].get("cold_start") is True  # drawn on the timeline as a cold start


def test_a_crash_resets_the_container_but_a_handled_error_keeps_it():
    crashed = run_scenario("crash-mid-work", f"{EXAMPLES / 'idempotent.py'}:handler")
    assert [i["container"] for i in invocations(crashed)] == ["orders-handler/c1", "orders-handler/c2"]
    errored = run_scenario("async-retry", f"{EXAMPLES / 'naive_email.py'}:handler")
    assert {i["container"] for i in invocations(errored)} == {"orders-handler/c1"}


def test_nothing_of_a_stopped_invocation_reaches_aws_a_service_or_the_clock():
    seen = []

    def stubborn(event, context):
        try:
            while True:
                __import__("time").sleep(1)
        except BaseException:
            pass  # swallows the timeout, and tries to carry on
        for what in (lambda: __import__("time").sleep(5),
                     lambda: __import__("boto3").client("sqs").list_queues(),
                     lambda: __import__("sandbox").send_confirmation_email(event)):
            try:
                what()
            except BaseException as exc:
                seen.append(type(exc).__name__)

    with Sandbox() as sb:
        sb.accept({"orderId": "o-1", "email": "a@example.com", "amount": 1})
        inv = sb.function(stubborn, timeout=3).invoke({"orderId": "o-1", "email": "a@example.com", "amount": 1})
        assert inv.outcome == "timeout" and sb.clock.elapsed() == 3.0
        assert seen == ["LambdaTimeout"] * 3
        assert sb.history.of_type("aws") == [] and sb.outbox == []


# -- 2. each delivery gets its own event -----------------------------------------------------------
@pytest.mark.parametrize("scenario", ["concurrent-claims", "async-duplicate", "async-retry"])
def test_marking_the_event_does_not_stop_the_next_delivery(scenario):
    result = run_scenario(scenario, handler("mark_event.py"))
    assert result.status == "invalid" and result.verdict.duplicates


# -- 3. a container is a process -------------------------------------------------------------------
@pytest.mark.parametrize("name", ["sibling_state.py", "env_state.py"])
def test_state_in_a_sibling_module_or_the_environment_is_per_container(name):
    concurrent = run_scenario("concurrent-claims", handler(name))
    assert concurrent.status == "invalid"  # two containers: neither sees the other's state
    warm = run_scenario("async-duplicate", handler(name), settings={"orders": 1})
    assert warm.valid  # the duplicate lands in the same warm container, which remembers
    assert os.environ.get("SENT_o_1") is None  # and nothing leaked into this process


def test_a_lazy_sibling_import_works_from_any_folder(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "sandbox", "run", "no-fault", "--handler",
                           handler("sibling_state.py"), "--json"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    report = json.loads(proc.stdout)
    assert proc.returncode == 0 and report["verdict"] == "valid", proc.stderr


# -- 4. the handler's module has the name Lambda gives it -------------------------------------------
def test_the_handler_module_is_named_after_its_file_in_every_container(tmp_path):
    (tmp_path / "app.py").write_text(
        "import os\n"
        "from sandbox import orders_in\n"
        "SEEN = []\n"
        "def handler(event, context):\n"
        "    __import__('time').sleep(0.1)\n"
        "    SEEN.append((__name__, handler.__module__, os.environ['_HANDLER'], os.environ['LAMBDA_TASK_ROOT'],\n"
        "                 os.environ['AWS_LAMBDA_FUNCTION_NAME'], os.environ['AWS_EXECUTION_ENV'],\n"
        "                 os.environ['AWS_LAMBDA_FUNCTION_MEMORY_SIZE'], context.memory_limit_in_mb))\n"
        "    return SEEN\n")
    with Sandbox() as sb:
        fn = sb.function(f"{tmp_path / 'app.py'}:handler")
        first, second = fn.start({}), fn.start({})  # side by side: two containers, two copies of `app`
        sb.run()
        assert {first.container.id, second.container.id} == {"orders-handler/c1", "orders-handler/c2"}
        assert first.result[0][:2] == second.result[0][:2] == ["app", "app"] and first.result is not second.result
    with Sandbox() as sb:
        fn = sb.function(f"{tmp_path / 'app.py'}:handler", memory_mb=512)
        (name, module, handler_env, root, fname, runtime, memory, context_memory), = fn.invoke({}).result
    # The task root is a read-only copy of the handler's folder (Lambda's /var/task), never the folder itself.
    assert name == module == "app" and handler_env == "app.handler" and root != str(tmp_path)
    assert Path(root).name == tmp_path.name and not os.stat(root).st_mode & 0o222
    assert fname == "orders-handler" and runtime.startswith("AWS_Lambda_python3.") and memory == "512"
    assert context_memory == "512"


@pytest.mark.parametrize("scenario", ["concurrent-claims", "sync-sdk-retry", "async-duplicate"])
def test_powertools_keys_agree_across_containers_so_its_idempotency_holds(scenario):
    # Powertools keys on the function's module: named after the file, in every container.
    result = run_scenario(scenario, handler("powertools_email.py"))
    assert result.valid, result.verdict.explain()
    keys = {e["key"] for e in result.history.of_type("aws") if e["op"] == "PutItem"}
    assert len(keys) == len(result.verdict.effects_per_key)  # one key per order, whichever container
    assert all(".powertools_email.confirm#" in k for k in keys)


# -- 5. sys.exit and os._exit are crashes -----------------------------------------------------------
@pytest.mark.parametrize("how", ["sys.exit", "os._exit"])
def test_exiting_the_process_is_a_crash_that_lambda_retries(monkeypatch, how):
    monkeypatch.setenv("EXIT_HOW", how)
    with Sandbox() as sb:
        fn = sb.function(handler("exits_once.py"))
        source = AsyncInvokeSource(sb, fn)
        source.invoke(sb.order_event(make_orders(1, 0)))
        run_until_idle(sb, source)
        outcomes = [(v["outcome"], v["error"]) for v in sb.history.invocations().values()]
        assert outcomes[0] == ("crashed", "Runtime.ExitError: Runtime exited with error: exit status 0")
        assert [o for o, _ in outcomes] == ["crashed", "ok"] and sb.check().valid


def test_the_cli_exit_code_is_the_verdicts_even_when_the_handler_exits_the_process():
    env = {**os.environ, "EXIT_HOW": "os._exit"}
    proc = subprocess.run([sys.executable, "-m", "sandbox", "run", "no-fault", "--handler",
                           handler("exits_once.py")], cwd=ROOT, capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 1 and "invalid" in proc.stdout  # each order's only delivery exits: all lost
    proc = subprocess.run([sys.executable, "-m", "sandbox", "run", "no-fault", "--handler",
                           handler("exits_at_import.py")], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "invalid: 3 findings" in proc.stdout
    assert "Runtime.InitError: Runtime exited with error: exit status 0 (" in proc.stdout
    assert "exits_at_import.py:6 in <module>)" in proc.stdout


# -- 6. eventually consistent reads ------------------------------------------------------------------
def test_an_eventually_consistent_read_misses_a_recent_claim_on_some_seed(monkeypatch):
    settings = {"stagger": 0.3}  # the second copy reads 0.3 s after the first one's write
    eventual = [run_scenario("concurrent-claims", handler("eventual_read.py"), seed=s, settings=settings).status
                for s in range(10)]
    assert "invalid" in eventual
    monkeypatch.setenv("CONSISTENT", "1")
    consistent = [run_scenario("concurrent-claims", handler("eventual_read.py"), seed=s, settings=settings).status
                  for s in range(10)]
    assert consistent == ["valid"] * 10
    stale = run_scenario("concurrent-claims", handler("eventual_read.py"), seed=0,
                         settings={**settings, "replica_lag": 0.0})
    assert stale.valid  # with no replica lag every read is current


# -- 7. every write counts the same --------------------------------------------------------------------
def test_a_transactional_claim_is_judged_like_a_put():
    assert run_scenario("ttl-lag", handler("transact_claim.py")).valid
    window = run_scenario("crash-mid-work", handler("transact_claim.py"), settings={"crash_after": "email"})
    assert any(f.remaining_window for f in window.verdict.duplicates)


@pytest.mark.parametrize("write", ["transact", "batch"])
def test_the_ttl_sweeper_sees_expiries_written_in_transactions_and_batches(write):
    with Sandbox(ttl_lag=5) as sb:
        item = {"pk": {"S": "k"}, "expiresAt": {"N": str(int(sb.clock.now()) + 10)}}
        if write == "transact":
            sb.dynamodb.transact_write_items(TransactItems=[{"Put": {"TableName": sb.table_name, "Item": item}}])
        else:
            sb.dynamodb.batch_write_item(RequestItems={sb.table_name: [{"PutRequest": {"Item": item}}]})
        sb.advance(14)
        assert len(sb.items()) == 1  # expired at 10 s, but TTL has not come round yet
        sb.advance(2)
        assert sb.items() == [] and [e["key"] for e in sb.history.of_type("sweep")] == ["k"]


# -- 8. threads a handler starts are part of its invocation -----------------------------------------
def test_a_thread_pool_around_a_correct_claim_is_valid():
    for scenario in ("concurrent-claims", "no-fault", "async-duplicate"):
        result = run_scenario(scenario, handler("pooled.py"))
        assert result.valid, (scenario, result.verdict.explain())


def test_a_thread_that_sends_an_email_is_attributed_to_its_invocation():
    result = run_scenario("no-fault", handler("background_email.py"))
    assert result.valid
    assert {e["inv"] for e in result.history.effects()} == {"inv-1", "inv-2", "inv-3"}


def test_threads_stop_with_their_invocation_at_a_timeout():
    def slow_thread(event, context):
        import threading
        import time

        from sandbox import send_confirmation_email

        worker = threading.Thread(target=lambda: (time.sleep(10), send_confirmation_email(event)))
        worker.start()
        worker.join()

    with Sandbox() as sb:
        order = {"orderId": "o-1", "email": "a@example.com", "amount": 1}
        inv = sb.function(slow_thread, timeout=3).invoke(order)
        sb.run()
        assert inv.outcome == "timeout" and sb.outbox == [] and sb.clock.elapsed() == 3.0


# -- logs, and errors that point at the learner's line ------------------------------------------------
def test_prints_and_logging_go_to_the_history_not_the_terminal(capfd):
    result = run_scenario("no-fault", handler("chatty.py"))
    out, err = capfd.readouterr()
    assert "sending the confirmation" not in out + err
    lines = result.history.logs("inv-1")
    # A log record as AWS's runtime client writes it to CloudWatch: level, time, request id, message.
    request_id = result.history.invocations()["inv-1"]["request_id"]
    assert [(r["stream"], r["text"]) for r in lines] == [
        ("stdout", "sending the confirmation for o-1"),
        ("stdout", f"[WARNING]\t2026-01-05T09:00:00.000Z\t{request_id}\torder o-1: email on its way")]
    assert "logs" not in result.report()


def test_the_cli_json_stays_parseable_when_the_handler_prints():
    proc = subprocess.run([sys.executable, "-m", "sandbox", "run", "no-fault", "--handler", handler("chatty.py"),
                           "--json"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and json.loads(proc.stdout)["verdict"] == "valid"


def test_the_text_report_shows_the_first_log_lines_and_logs_shows_them_all():
    def cli(*extra):
        return subprocess.run([sys.executable, "-m", "sandbox", "run", "no-fault", "--handler", handler("chatty.py"),
                               "--set", "orders=8", *extra], cwd=ROOT, capture_output=True, text=True, timeout=120)

    brief, full = cli().stdout, cli("--logs").stdout
    assert "inv-1 | sending the confirmation for o-1" in brief
    assert "... and 6 more lines (--logs shows them all)" in brief
    assert full.count(" | ") == 16 and "more lines" not in full
    report = json.loads(cli("--json", "--logs").stdout)
    assert report["logs"][1].startswith("inv-1 | [WARNING]\t2026-01-05T09:00:00.000Z\t")
    assert report["logs"][1].endswith("\torder o-1: email on its way")


def test_a_handler_error_names_the_line_in_the_learners_file():
    result = run_scenario("no-fault", handler("typo.py"))
    end = result.history.of_type("invoke_end")[0]
    assert end["error"] == "KeyError: 'ordr'" and end["where"].endswith("typo.py:7 in handler")
    proc = subprocess.run([sys.executable, "-m", "sandbox", "run", "no-fault", "--handler", handler("typo.py")],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert "inv-1 error: KeyError: 'ordr' (tests/handlers/typo.py:7 in handler)" in proc.stdout


# -- facts: request ids --------------------------------------------------------------------------------
@pytest.mark.parametrize("scenario, valid", [
    ("async-retry", True),  # Lambda's retries of one event keep its request id
    ("timeout-after-effect", True),
    ("async-duplicate", False),  # the queue's own duplicate: a new id (AWS does not document it)
    ("concurrent-claims", False),
    ("sqs-batch-failure", False),  # a redelivered batch is a new invocation
    ("sync-sdk-retry", False),  # each SDK attempt is a new Invoke
    ("producer-resend", False),
])
def test_keying_on_the_request_id_dedupes_async_retries_and_nothing_else(scenario, valid):
    result = run_scenario(scenario, handler("request_id_key.py"))
    assert result.valid is valid, result.verdict.explain()


def test_async_retries_keep_the_request_id_and_a_duplicate_may_or_may_not():
    retry = run_scenario("async-retry", f"{EXAMPLES / 'naive_email.py'}:handler")
    ids = [v["request_id"] for v in retry.history.invocations().values()]
    assert len(ids) == 2 and len(set(ids)) == 1
    for choice, same in (("new", False), ("same", True)):
        dup = run_scenario("async-duplicate", f"{EXAMPLES / 'naive_email.py'}:handler",
                           settings={"orders": 1, "duplicate_request_id": choice})
        ids = [v["request_id"] for v in dup.history.invocations().values()]
        assert (ids[0] == ids[1]) is same


# -- a world that cannot be knocked over ------------------------------------------------------------------
@pytest.mark.parametrize("setting", ["interval=nan", "horizon=nan", "interval=inf", "ttl_lag=-inf"])
def test_nan_and_infinity_are_refused_for_every_number(setting):
    scenario = "sqs-batch-failure" if setting.startswith("horizon") else "no-fault"
    proc = subprocess.run([sys.executable, "-m", "sandbox", "run", scenario, "--handler",
                           f"{EXAMPLES / 'naive_email.py'}:handler", "--set", setting],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "must be a finite number" in proc.stderr or "must be at least" in proc.stderr


def test_endpoint_and_transport_settings_in_the_environment_are_ignored(monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", "http://localhost:4566")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://localhost:4566")
    monkeypatch.setenv("AWS_USE_FIPS_ENDPOINT", "true")
    monkeypatch.setenv("AWS_USE_DUALSTACK_ENDPOINT", "true")
    monkeypatch.setenv("AWS_RETRY_MODE", "legacy")
    result = run_scenario("concurrent-claims", f"{EXAMPLES / 'idempotent.py'}:handler")
    assert result.valid
    assert os.environ["AWS_ENDPOINT_URL_DYNAMODB"] == "http://localhost:4566"  # given back afterwards


# -- the response goes back as JSON, as Lambda's Python runtime encodes it --------------------------------
def test_a_decimal_goes_back_as_a_number_and_a_set_fails_the_invocation():
    from decimal import Decimal

    def handler(event, context):
        if event.get("kind") == "set":
            return {"ids": {1, 2}}
        return {"statusCode": Decimal("200"), "total": Decimal("12.50"), "raw": (1, 2)}

    with Sandbox() as sb:
        fn = sb.function(handler)
        ok, bad = fn.invoke({"kind": "decimal"}), fn.invoke({"kind": "set"})
    assert ok.outcome == "ok" and ok.result == {"statusCode": 200, "total": 12.5, "raw": [1, 2]}
    assert type(ok.result["statusCode"]) is int
    assert bad.outcome == "error"
    assert bad.error_text.startswith("Runtime.MarshalError: Unable to marshal response:") and "set" in bad.error_text


@pytest.mark.parametrize("consistent", [False, True])
def test_an_eventually_consistent_batch_get_sees_the_replica_lag_as_a_get_item_does(consistent):
    """BatchGetItem reads eventually unless a table asks otherwise (API_BatchGetItem.html): within the lag it may
    see an item as it was before an update, or still see one deleted since; a strongly consistent one never."""
    seen: set[tuple[str, ...]] = set()
    for seed in range(12):
        with Sandbox(seed=seed, replica_lag=1.0) as sb:
            ddb, table = sb.dynamodb, sb.table_name
            ddb.put_item(TableName=table, Item={"pk": {"S": "a"}, "v": {"S": "old"}})
            ddb.put_item(TableName=table, Item={"pk": {"S": "b"}, "v": {"S": "gone"}})
            sb.advance(2.0)
            ddb.put_item(TableName=table, Item={"pk": {"S": "a"}, "v": {"S": "new"}})
            ddb.delete_item(TableName=table, Key={"pk": {"S": "b"}})
            sb.advance(0.5)  # a read sees a moment of the last second: before the writes, or after them
            asked = {"Keys": [{"pk": {"S": "a"}}, {"pk": {"S": "b"}}], "ConsistentRead": consistent}
            items = ddb.batch_get_item(RequestItems={table: asked})["Responses"][table]
            seen.add(tuple(sorted(f"{i['pk']['S']}={i['v']['S']}" for i in items)))
    if consistent:
        assert seen == {("a=new",)}
    else:  # some draws fall after the writes, some before: both answers show up over the seeds
        assert ("a=new",) in seen and ("a=old", "b=gone") in seen
