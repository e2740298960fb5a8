"""The scenario catalogue as a whole: names, kinds, docs, and what naive and correct handlers get.

Every expected count below is derived from AWS semantics under each scenario's defaults.
"""
import re
import subprocess
import sys

import pytest

from sandbox import run_scenario
from sandbox.cli import main
from sandbox.scenarios import ORDER, SCENARIOS, catalog

from conftest import example

NAIVE, IDEMPOTENT = example("naive_email.py"), example("idempotent.py")

# scenario -> (effects per order for the naive handler, the cause that repeats the work, why)
NAIVE_EXPECTED = {
    "sync-sdk-retry": ({"o-1": {"email": 3}}, "SDK retry",
                       "the handler outlasts the caller's 60 s read timeout on every attempt; a plain boto3 client "
                       "(standard mode) makes 3 attempts in all, each a new invocation that finishes and sends"),
    "async-retry": ({"o-1": {"email": 2}, "o-2": {"email": 1}}, "retry 1",
                    "one event with two orders; o-2's provider fails without sending; Lambda retries the whole "
                    "event a minute later, so o-1 is emailed again"),
    "async-duplicate": ({"o-1": {"email": 2}, "o-2": {"email": 2}}, "spontaneous duplicate",
                        "the async queue delivers each of the two events twice with no error at all"),
    "sqs-batch-failure": ({"o-1": {"email": 2}, "o-2": {"email": 2}, "o-3": {"email": 1}}, "redelivery",
                          "a batch of three; o-3's provider fails; the whole batch returns after the 30 s "
                          "visibility timeout, handled records included"),
    "sqs-visibility-timeout": ({"o-1": {"email": 2}, "o-2": {"email": 2}, "o-3": {"email": 2}}, "redelivery",
                               "a 4 s batching window plus 3 x 0.6 s of work outlasts the 5 s visibility timeout "
                               "counted from receipt, so a second poller takes the whole batch again"),
    "sns-delivery-retry": ({"o-1": {"email": 2}}, "delivery retry",
                           "Lambda accepts the message but its answer to SNS is lost; SNS's delivery policy retries at "
                           "once and hands the same message (same MessageId) over again, a second async invocation "
                           "that emails"),
    "s3-notification-duplicate": ({"o-1": {"email": 2}}, "spontaneous duplicate",
                                  "S3 delivers the upload's notification twice (at least once; certain here): same "
                                  "object, same sequencer; each invocation reads the object with GetObject and emails"),
    "sqs-throttled-batch": ({"o-1": {"email": 2}, "o-2": {"email": 2}, "o-3": {"email": 2}}, "redelivery",
                            "the function is throttled for 6 s; the poller's tries at 0, 1 and 3 s get 429, the one "
                            "at 7 s gets through, and its 1.8 s of work runs past the 8 s visibility timeout, so a "
                            "second poller takes the whole batch again"),
    "sqs-low-traffic-wait": ({"o-1": {"email": 2}}, "redelivery",
                             "on a quiet queue the poller holds the one message 20 s before invoking, past its 3 s "
                             "window and the 15 s visibility timeout (six 2 s function timeouts plus the window, as "
                             "AWS advises), so a second poller receives it, holds it too and emails again"),
    "stream-batch-retry": ({"o-1": {"email": 2}, "o-2": {"email": 2}, "o-3": {"email": 1}, "o-4": {"email": 1}},
                           "retry 1", "a batch of four; o-3's provider fails once; the batch is retried from its "
                           "first record, so o-1 and o-2 are emailed again"),
    "timeout-after-effect": ({"o-1": {"email": 2}, "o-2": {"email": 1}}, "retry 1",
                             "o-1's email goes out, o-2's provider hangs past the 3 s timeout (nothing sent); the "
                             "async retry re-delivers both"),
    "producer-resend": ({"o-1": {"email": 1}, "o-2": {"email": 2}, "o-3": {"email": 1}}, "producer re-send",
                        "o-2's SendMessage takes effect but times out; the producer's SDK sends it again as a "
                        "second message with a new MessageId"),
    "concurrent-claims": ({"o-1": {"email": 2}}, "concurrent duplicate",
                          "two identical deliveries run at once in two containers"),
    "crash-mid-work": ({"o-1": {"charge": 2, "email": 1}}, "retry 1",
                       "the first attempt charges, then crashes before the email; the async retry charges again"),
    "cfn-custom-resource-retry": ({"o-1": {"email": 3}, "o-2": {"email": 2}}, "retry 1",
                                  "o-1 is emailed, the provider fails on o-2, and Lambda's async queue retries the "
                                  "whole Create (same RequestId): o-1 again; the naive handler never answers "
                                  "CloudFormation, so after ServiceTimeout (1 h) the rollback's Delete emails both "
                                  "once more"),
    "sqs-spontaneous-duplicate": ({"o-1": {"email": 2}, "o-2": {"email": 2}, "o-3": {"email": 2}},
                                  "spontaneous duplicate",
                                  "nothing fails and the 30 s visibility timeout is right, but Lambda's DeleteMessage "
                                  "misses a stored copy of each message (duplicate_probability 1 for the demo), and "
                                  "SQS hands the copies out again once the visibility timeout runs out"),
    "sqs-fifo-window": ({"o-1": {"email": 1}, "o-2": {"email": 2}, "o-3": {"email": 1}}, "producer re-send",
                        "the producer's own job sends o-2 again 360 s after the first send, past the FIFO queue's "
                        "5-minute deduplication interval, so SQS stores a second message with a new MessageId"),
    "sqs-dlq-redrive": ({"o-1": {"email": 2}, "o-2": {"email": 1}}, "DLQ redrive",
                        "o-1 is emailed, o-2 fails until maxReceiveCount moves both messages to the dead-letter "
                        "queue; the operator's StartMessageMoveTask brings both back as new messages, so o-1 is "
                        "emailed again"),
    "apigw-client-retry": ({"o-1": {"email": 3}}, "client retry",
                           "the email takes 35 s; API Gateway answers 504 at 29 s while the function runs on; the "
                           "client retries a 5xx twice, each retry a new request (new requestId) and a new "
                           "invocation that finishes and sends"),
    "function-url-client-retry": ({"o-1": {"email": 3}}, "client retry",
                                  "the email takes 35 s; the function URL would wait (60 s function timeout), but "
                                  "the client's read timeout is 30 s: it retries twice, each retry a new invocation "
                                  "while the earlier ones run on and send"),
    "alb-client-retry": ({"o-1": {"email": 2}, "o-2": {"email": 1}}, "client retry",
                         "a cart of two orders; o-1's email goes out, the provider hangs on o-2 and the function times "
                         "out at 30 s; the load balancer answers 502 and the client sends the cart again, so o-1 is "
                         "emailed again"),
    "stepfunctions-task-retry": ({"o-1": {"email": 2}, "o-2": {"email": 1}}, "retry 1",
                                 "one execution with two orders; o-2's provider fails without sending, so the "
                                 "function raises and the Task fails; its Retry (States.ALL) invokes the function "
                                 "again a second later with the same input, so o-1 is emailed again"),
    "eventbridge-producer-resend": ({"o-1": {"email": 1}, "o-2": {"email": 2}, "o-3": {"email": 1}},
                                    "producer re-send",
                                    "o-2's PutEvents takes effect but times out; the producer's SDK sends it again "
                                    "and EventBridge creates a second event with a new id"),
    "eventbridge-target-retry": ({"o-1": {"email": 2}, "o-2": {"email": 1}}, "retry 1",
                                 "EventBridge retries two failed hand-offs (500), which ran nothing; once Lambda "
                                 "accepts the event, o-2's provider fails and Lambda's async retry repeats o-1"),
    "eventbridge-duplicate-target": ({"o-1": {"email": 2}}, "spontaneous duplicate",
                                     "EventBridge, rarely (certainly here), hands the same event to Lambda twice: "
                                     "two invocations with the same event id, no failure anywhere"),
    "async-late-retry": ({"o-1": {"email": 2}}, "retry 1",
                         "the first attempt sends and then times out in an extension; the function is throttled "
                         "for two hours, so Lambda's retry of that timeout runs two hours later and sends again"),
    "async-invoke-resend": ({"o-1": {"email": 2}}, "caller re-send",
                            "Lambda queues the caller's Event invoke but its 202 is lost; the caller's SDK waits out "
                            "the 60 s read timeout and sends the Invoke again, and Lambda queues a second event"),
    "stream-partial-batch": ({"o-1": {"email": 2}, "o-2": {"email": 1}, "o-3": {"email": 1}, "o-4": {"email": 1}},
                             "retry 1", "ReportBatchItemFailures is on, but this handler raises on o-2's failed "
                             "email instead of reporting it, so Lambda retries the whole batch and o-1 is emailed "
                             "again (examples/partial_stream.py reports o-2, and o-3, o-4 come again)"),
    "kinesis-producer-resend": ({"o-1": {"email": 1}, "o-2": {"email": 2}, "o-3": {"email": 1}},
                                "producer re-send", "o-2's PutRecord takes effect but times out; the producer's SDK "
                                "writes it again, a second record with identical data and a new sequence number"),
    "ddb-stream-batch-retry": ({"o-1": {"email": 2}, "o-2": {"email": 2}, "o-3": {"email": 1}, "o-4": {"email": 1}},
                               "retry 1", "four INSERT records in one batch; o-3's provider fails once; the batch is "
                               "retried from its first record, so o-1 and o-2 are emailed again"),
    "ddb-stream-ttl-remove": ({"o-1": {"email": 2}, "o-2": {"email": 2}, "o-3": {"email": 2}}, "TTL deletion",
                              "DynamoDB's TTL deletes the three expired orders; each deletion is a REMOVE record whose "
                              "old image is the order, and this handler emails every order it is handed"),
    "kafka-batch-retry": ({"o-1": {"email": 2}, "o-2": {"email": 2}, "o-3": {"email": 1}, "o-4": {"email": 1}},
                          "retry 1", "four orders in one batch of a Kafka partition; o-3's provider fails once; "
                          "Lambda commits no offset and retries the whole batch, so o-1 and o-2 are emailed again"),
    "kafka-partial-batch": ({"o-1": {"email": 2}, "o-2": {"email": 1}, "o-3": {"email": 1}, "o-4": {"email": 1}},
                            "retry 1", "ReportBatchItemFailures is on, but this handler raises on o-2's failed email "
                            "instead of naming it, so Lambda retries the whole batch and o-1 is emailed again"),
    "kafka-producer-resend": ({"o-1": {"email": 1}, "o-2": {"email": 2}, "o-3": {"email": 1}}, "producer re-send",
                              "o-2's write lands but its acknowledgement is lost; after delivery.timeout.ms the "
                              "producer sends it again, a second record at a new offset with the same data"),
    "kafka-topic-destination": ({"o-1": {"email": 2}, "o-2": {"email": 2}, "o-3": {"email": 1}, "o-4": {"email": 1}},
                                "dead-letter topic", "four orders in one batch; o-3's provider fails once; with no "
                                "retry Lambda writes the whole batch to the Kafka destination orders-failures, and the "
                                "function's second mapping reads it: o-1 and o-2 are emailed again"),
    # The naive handler is no durable function, so the durable scenarios deploy it as a plain one, behind the same
    # delivery (tests/test_durable.py pins what the durable handlers get there).
    "durable-step-retry": ({"o-1": {"email": 2}, "o-2": {"email": 1}}, "retry 1",
                           "a plain function: one async event with two orders; o-2's provider fails without sending; "
                           "Lambda's async queue retries the whole event a minute later, so o-1 is emailed again"),
    "durable-replay": ({"o-1": {"email": 2}}, "caller re-send",
                       "a plain function ignores the execution name: the 202 is lost, botocore sends the Invoke "
                       "again after its 60 s read timeout, and Lambda queues a second event"),
    "durable-esm-start": ({"o-1": {"email": 7}, "o-2": {"email": 7}, "o-3": {"email": 1}}, "redelivery",
                          "a plain function: o-3's provider fails six times, so the batch of three comes back six "
                          "times after the 300 s visibility timeout, o-1 and o-2 emailed on every delivery"),
}


#: The scenarios that test a run_once: what the naive handler (no claim at all) gets there, and why.
RUN_ONCE_NAIVE = {
    "crash-mid-work": ({"o-1": {"charge": 2, "email": 1}}, "the first attempt charges and crashes; the async retry "
                       "charges again (it never claimed, so nothing stops it)"),
    "ttl-lag": ({"o-1": {"email": 1}}, "the first attempt's email hangs and nothing is sent; the retry sends it: "
                "without a claim, no lock can stand in its way"),
    "lock-shorter-than-work": ({"o-1": {"charge": 3, "email": 2}}, "three attempts charge and two email: with no "
                               "claim, every delivery does the work"),
    "own-write-retried": ({"o-1": {"email": 1}}, "there is no claim whose answer can be lost: one request, one email"),
    "snapstart-cloned-init": ({"o-1": {"email": 2}}, "two copies at once, two restored environments, two emails"),
    "managed-instances-concurrency": ({"o-1": {"email": 2}, "o-2": {"email": 2}}, "each of two orders delivered "
                                      "twice at once, each copy in a process of its own, each emailed"),
}


@pytest.mark.parametrize("name", list(RUN_ONCE_NAIVE))
def test_what_the_naive_handler_gets_in_each_run_once_trial(name):
    effects, why = RUN_ONCE_NAIVE[name]
    result = run_scenario(name, NAIVE, seed=0)
    assert result.verdict.effects_per_key == effects, why
    assert result.valid == all(n == 1 for kinds in effects.values() for n in kinds.values()), why


def test_every_scenario_is_pinned_for_the_naive_handler():
    assert set(NAIVE_EXPECTED) | set(RUN_ONCE_NAIVE) | {"no-fault"} == set(SCENARIOS)
    assert len(SCENARIOS) >= 34


def test_catalogue_has_every_contract_name_in_order():
    # Every scenario is placed in ORDER: a control, then the duplicate sources, then run_once's trials.
    assert list(SCENARIOS) == list(ORDER)
    kinds = {name: sc.kind for name, sc in SCENARIOS.items()}
    assert kinds["no-fault"] == "control"
    sources = [n for n in ORDER if kinds[n] == "duplicate source"]
    assert sources == list(ORDER[1:1 + len(sources)]) and len(sources) >= 20
    assert set(sources) <= set(NAIVE_EXPECTED)  # each duplicate source shows the naive handler its duplicate
    assert [n for n in ORDER if kinds[n] == "run_once"] == list(ORDER[1 + len(sources):])


def test_a_run_imports_only_its_own_scenario_module():
    """The CLI's start (issue 29): the catalogue lists every scenario from its module's name and imports a scenario's
    module when it is first asked for, so a run of no-fault loads no other scenario (it loaded all 44, ~0.2 s)."""
    code = ("import sys; from sandbox.scenarios import SCENARIOS, get_scenario; names = list(SCENARIOS); "
            "get_scenario('no-fault'); "
            "print(len(names), sorted(m for m in sys.modules if m.startswith('sandbox.scenarios.') "
            "and m.rsplit('.', 1)[1] not in ('base', 'catalog', 'runner')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split(" ", 1)
    assert (int(out[0]), out[1].strip()) == (len(ORDER), "['sandbox.scenarios.no_fault']")


def test_a_scenario_module_defines_the_one_scenario_its_name_says():
    assert all(SCENARIOS[name].name == name for name in SCENARIOS)  # every module loads, by its own name
    with pytest.raises(TypeError, match="must define one scenario, named 'ttl-lag'"):
        catalog._load("no_fault", "ttl-lag")
    assert "no-fault" in SCENARIOS and "no_fault" not in SCENARIOS and ["no-fault"] not in SCENARIOS


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_every_scenario_documents_itself(name, capsys):
    sc = SCENARIOS[name]
    assert len(sc.summary) > 60
    for setting in sc.all_settings().values():
        assert setting.help, f"{name}.{setting.name} has no help"
        if setting.doc:
            pages = r"https://(docs\.aws\.amazon\.com|boto3\.amazonaws\.com|botocore\.amazonaws\.com)/"
            assert re.match(pages, setting.doc), setting.doc
    assert any(s.doc and "docs.aws.amazon.com" in s.doc for s in sc.all_settings().values()), f"{name} cites no AWS doc"
    assert main(["scenarios"]) == 0
    assert name in capsys.readouterr().out


@pytest.mark.parametrize("name", list(NAIVE_EXPECTED))
def test_naive_handler_double_sends_for_the_right_reason(name):
    effects, cause, why = NAIVE_EXPECTED[name]
    result = run_scenario(name, NAIVE, seed=0)
    assert result.status == "invalid", why
    assert result.verdict.effects_per_key == effects, why
    invs = result.history.invocations()
    for dup in result.verdict.duplicates:
        causes = {invs[i]["cause"] for i in dup.invocations if i}
        assert cause in causes, (why, causes)
        assert cause in dup.text


def test_naive_handler_is_valid_without_faults():
    assert run_scenario("no-fault", NAIVE, seed=0).status == "valid"


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_a_correct_handler_is_valid_everywhere_under_defaults(name):
    for seed in range(2):  # the campaign's slice (test_campaign.py) and make campaign run more
        result = run_scenario(name, IDEMPOTENT, seed=seed)
        assert result.status == "valid", result.verdict.explain()


# The same seed gives the same history: test_golden.py runs every scenario in one process and compares each
# history with its snapshot taken in another (make golden: all ten seeds).


def test_the_scenarios_page_lists_every_scenario_in_order_with_its_source():
    from pathlib import Path

    page = (Path(__file__).resolve().parent.parent / "docs" / "scenarios.md").read_text()
    rows = re.findall(r"^\| `([a-z0-9-]+)` \| ([^|]+) \| (.+) \|$", page, re.M)
    assert [name for name, _, _ in rows] == list(ORDER)
    for name, source, headline in rows:
        # the page may shorten "sync invoke (SDK)" to "sync invoke"
        assert SCENARIOS[name].source.startswith(source.strip()), name
        # the same line `scenarios --brief` prints
        assert headline.strip() == SCENARIOS[name].headline, name
