"""A CloudFormation custom resource backed by the function.

AWS facts pinned here:
- CloudFormation invokes the function asynchronously (services-cloudformation.html), so Lambda's async queue
  retries a function error with the same event, the same RequestId, a minute later
  (invocation-async-error-handling.html);
- a Create carries no PhysicalResourceId; the provider answers by uploading JSON to the presigned S3 URL
  (crpg-ref-requests.html, crpg-ref-responses.html); a body over 4,096 bytes is refused;
- CloudFormation waits ServiceTimeout seconds (1-3600, default 3600) for the answer, then the operation fails
  (crpg-ref.html); a failed Create rolls back with a Delete carrying the FAILED response's physical id.
"""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from matplotlib.text import Text

from sandbox import BadInput, Sandbox, make_orders, orders_in, respond_to_cloudformation, run_scenario
from sandbox.core.faults import ProviderFault
from sandbox.sources.base import run_sources
from sandbox.sources.cloudformation import (
    RESPONSE_BUCKET,
    CustomResourceConfig,
    CustomResourceSource,
)
from sandbox.vocab import Cause, Delivery, Effect

from conftest import example

NAIVE, IDEMPOTENT = example("naive_email.py"), example("idempotent.py")


def run_stack(handler, seed=0, service_timeout=3600, fail_second=True):
    """Create the stack (two orders in the custom resource's properties); returns (history, stack, events, outbox)."""
    with Sandbox(seed=seed) as sb:
        fn = sb.function(handler)
        orders = make_orders(2, seed)
        if fail_second:
            sb.faults.add(ProviderFault(Effect.EMAIL, orders[1]["orderId"], fail=1, calls=1))
        stack = CustomResourceSource(sb, fn, CustomResourceConfig(service_timeout=service_timeout))
        stack.create_stack(orders)
        run_sources(sb, stack)
        events = [entry.event for entry in stack.queue.events]  # what CloudFormation handed to Lambda, in order
        return sb.history, stack, events, list(sb.outbox)


def test_a_failed_create_is_retried_with_the_same_request_and_no_physical_id():
    history, stack, events, _ = run_stack(NAIVE)
    create = events[0]
    first, retry = list(history.invocations().values())[:2]
    assert retry["cause"] == Cause.retry(1) and retry["request_id"] == first["request_id"]  # the same event again
    assert stack.queue.events[0].attempts >= 2
    assert create["RequestType"] == "Create" and "PhysicalResourceId" not in create
    assert create["ResponseURL"].startswith(f"https://{RESPONSE_BUCKET}.s3.amazonaws.com/")
    assert [o["orderId"] for o in orders_in(create)] == [o["orderId"] for o in make_orders(2, 0)]


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 500), timeout=st.sampled_from([120, 300, 3600]))
def test_an_unanswered_create_fails_at_the_service_timeout_and_rolls_back_with_a_delete(seed, timeout):
    history, stack, events, outbox = run_stack(NAIVE, seed, service_timeout=timeout)
    invs = list(history.invocations().values())
    assert [i["cause"] for i in invs] == [Cause.FIRST_DELIVERY, Cause.retry(1), Cause.ROLLBACK_DELETE]
    delete = events[1]
    assert delete["RequestType"] == "Delete" and delete["RequestId"] != events[0]["RequestId"]
    assert delete["PhysicalResourceId"].startswith("OrdersImport-")  # none was ever answered: one is made up
    create, rollback = stack.operations
    assert rollback.sent - create.sent == pytest.approx(timeout, abs=0.01)
    assert stack.status == "ROLLBACK_FAILED"  # the Delete went unanswered too
    o1, o2 = (o["orderId"] for o in make_orders(2, seed))
    assert sorted(e["orderId"] for e in outbox) == sorted([o1, o1, o1, o2, o2])


def test_a_service_timeout_shorter_than_lambdas_retry_rolls_back_before_the_create_is_retried():
    """CloudFormation and Lambda's async queue keep separate clocks: the Delete can come before the Create's retry."""
    history, stack, _, _ = run_stack(NAIVE, service_timeout=1)
    causes = [i["cause"] for i in history.invocations().values()]
    assert causes == [Cause.FIRST_DELIVERY, Cause.ROLLBACK_DELETE, Cause.retry(1)]
    assert stack.status == "ROLLBACK_FAILED"


def test_the_idempotent_example_answers_once_the_work_is_done_and_the_stack_completes():
    history, stack, events, outbox = run_stack(IDEMPOTENT)
    assert stack.status == "CREATE_COMPLETE" and len(stack.operations) == 1
    (op,) = stack.operations
    assert op.response["Status"] == "SUCCESS" and op.response["RequestId"] == events[0]["RequestId"]
    assert op.response["PhysicalResourceId"].startswith("orders-import#arn:aws:cloudformation:")
    assert sorted(e["orderId"] for e in outbox) == sorted(o["orderId"] for o in make_orders(2, 0))
    puts = [e for e in history.of_type("aws") if e["service"] == "s3" and e["op"] == "PutObject"]
    assert len(puts) == 1 and puts[0]["inv"] == "inv-2"  # only the attempt that finished answered


def failed_then_deleted(event, context):
    if event["RequestType"] == "Create":
        respond_to_cloudformation(event, context, "FAILED", physical_resource_id="import-7", reason="no room")
    else:
        respond_to_cloudformation(event, context, "SUCCESS", physical_resource_id=event["PhysicalResourceId"])


def test_a_failed_response_rolls_back_at_once_with_its_physical_id():
    _, stack, events, _ = run_stack(failed_then_deleted, fail_second=False)
    create, delete = stack.operations
    assert delete.sent - create.sent < 1.0  # no hour of waiting: the answer came
    assert "no room" in create.failure and events[1]["PhysicalResourceId"] == "import-7"
    assert stack.status == "ROLLBACK_COMPLETE"


def _orphans(history):
    return [d for d in history.of_type("delivery") if d["what"] == Delivery.ORPHANED]


@settings(max_examples=5, deadline=None)
@given(seed=st.integers(0, 500), timeout=st.sampled_from([1, 120, 3600]))
def test_a_create_answered_without_a_physical_id_leaves_its_work_orphaned(seed, timeout):
    """No response named a physical id, so the rollback's Delete names one CloudFormation made up: what the Create's
    attempts did is under no id the stack knows, and the rollback's end says so, naming those attempts."""
    history, stack, events, _ = run_stack(NAIVE, seed, service_timeout=timeout)
    (orphan,) = _orphans(history)
    creates = [i for i, v in history.invocations().items() if v["cause"] != Cause.ROLLBACK_DELETE
               and v["t"] < stack.operations[1].sent + 1e-9]
    assert orphan["detail"]["creates"] == creates and creates  # the attempts that had run when it gave up
    assert orphan["detail"]["physical"] == events[1]["PhysicalResourceId"]
    ended = [d["t"] for d in history.of_type("delivery") if d["what"] == "stack status"][-1]
    assert orphan["t"] == ended


@pytest.mark.parametrize("handler", [IDEMPOTENT, failed_then_deleted])
def test_a_create_whose_answer_named_its_resource_orphans_nothing(handler):
    history, _, _, _ = run_stack(handler, fail_second=handler is IDEMPOTENT)
    assert _orphans(history) == []


def oversized(event, context):
    respond_to_cloudformation(event, context, "SUCCESS", data={"blob": "x" * 5000})


def test_a_response_over_4096_bytes_fails_the_operation():
    _, stack, _, _ = run_stack(oversized, fail_second=False, service_timeout=60)
    assert all("4096-byte limit" in op.failure for op in stack.operations)  # its Delete answers too much as well
    assert stack.status == "ROLLBACK_FAILED"


def default_id(event, context):
    return respond_to_cloudformation(event, context, "SUCCESS")


def test_the_default_physical_id_is_the_log_streams_name_as_cfn_response_makes_it():
    _, stack, _, _ = run_stack(default_id, fail_second=False)
    assert stack.operations[0].response["PhysicalResourceId"].startswith("2026/")  # the log stream's name
    with pytest.raises(ValueError):
        respond_to_cloudformation({}, None, "DONE")


def test_settings_are_checked():
    for bad in (0, 3601):
        with pytest.raises(BadInput):
            CustomResourceConfig(service_timeout=bad)


def test_the_scenario_shows_the_duplicate_create_and_the_idempotent_example_holds():
    assert run_scenario("cfn-custom-resource-retry", NAIVE, seed=0).status == "invalid"
    assert run_scenario("cfn-custom-resource-retry", IDEMPOTENT, seed=0).status == "valid"


def test_powertools_in_a_custom_resource():
    """Neither Powertools handler answers CloudFormation, so the stack rolls back in both. ``idempotent_function``
    keys each order: Lambda's retry and the rollback's Delete (an hour later, inside its hour of retention) replay.
    The ``@idempotent`` decorator keys the whole event: the failed Create leaves no record (Powertools deletes it
    when the handler raises), and the Delete is another event, so both repeat the emails."""
    function = run_scenario("cfn-custom-resource-retry", example("powertools_function.py"), seed=0)
    assert function.status == "valid"
    notes = [n["text"] for n in function.history.of_type("note")]
    assert "ROLLBACK_FAILED" in notes[-2] and "orphan" in notes[-1]  # valid, and still nothing told CloudFormation
    decorator = run_scenario("cfn-custom-resource-retry", example("powertools_decorator.py"), seed=0)
    assert decorator.verdict.effects_per_key == {"o-1": {"email": 3}, "o-2": {"email": 2}}


def test_lesson_02s_timeline_shows_the_retry_then_the_rollback_delete_an_hour_later():
    from sandbox import plot_timeline
    from sandbox.present.timeline.reading import read_history

    history = run_scenario("cfn-custom-resource-retry", NAIVE, seed=0).history
    model = read_history(history)
    assert [(i.cause, round(i.start)) for i in model.invs.values()] == [
        ("first delivery", 0), ("retry 1", 60), ("rollback delete", 3600)]
    statuses = [(round(d["t"]), d["detail"]["status"]) for d in history.of_type("delivery")
                if d["what"] == "stack status"]
    assert statuses == [(3600, "ROLLBACK_IN_PROGRESS"), (7200, "ROLLBACK_FAILED")]
    ax = plot_timeline(history).axes[0]
    texts = [t.get_text().replace("\n", " ") for t in ax.texts]  # a label may wrap to keep to its lanes' rows
    assert "CloudFormation stack" in [t.get_text() for t in ax.get_yticklabels()]  # the stack's own row, to 2 h
    assert "rollback delete at 1:00:00" in texts and "2nd email o-1" in texts
    assert any(t.startswith("3rd email o-1") for t in texts)
    legend = " ".join(t.get_text() for fig in [plot_timeline(history)] for t in fig.findobj(Text))
    assert "orphan: what the Create did, under no id the stack knows" in legend  # the ∅ mark at the rollback's end
    # its own mark, not "other delivery", its key naming this run's statuses in turn (not CREATE_COMPLETE, which
    #   neither square is)
    assert "stack status: ROLLBACK_IN_PROGRESS → ROLLBACK_FAILED" in legend
    assert "other delivery event" not in legend


def _hostile(body):
    def handler(event, context):
        import urllib.parse

        import boto3

        url = urllib.parse.urlsplit(event["ResponseURL"])
        boto3.client("s3").put_object(Bucket=url.hostname.split(".")[0], Key=urllib.parse.unquote(url.path[1:]),
                                      Body=body)
    return handler


@pytest.mark.parametrize("body", [b"[" * 2000 + b"]" * 2000, b"\xff\xfe not json", b'{"Status": "DONE"}', b"[]"])
def test_a_response_that_is_no_answer_fails_the_operation_and_never_the_sandbox(body):
    _, stack, _, _ = run_stack(_hostile(body), fail_second=False, service_timeout=60)
    create = stack.operations[0]
    assert create.failure in ("the response is not JSON", "the response has no Status of SUCCESS or FAILED")
    assert stack.status == "ROLLBACK_FAILED"  # its Delete is answered the same way
