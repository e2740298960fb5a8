# Key facts of notebooks/06_the_duplicate_matrix.ipynb, run in its kernel after its last cell.
# ruff: noqa: F821 (the names come from the notebook's kernel)
# The matrix covers the control and every duplicate source, once each.
_kinds = {name: get_scenario(name).kind for name in SOURCE_SCENARIOS}
assert set(_kinds.values()) == {"control", "duplicate source"} and list(_kinds.values()).count("control") == 1
assert [r.scenario for r in naive.rows] == SOURCE_SCENARIOS == [r.scenario for r in improved.rows]
# The naive handler: the control is valid, every duplicate source's scenario is invalid, with these extra emails,
# and it never loses an order.
_extra = {r.scenario: (r.verdict, r.extra_effects) for r in naive.rows}
assert _extra == {
    "no-fault": ("valid", 0),
    "sync-sdk-retry": ("invalid", 2), "apigw-client-retry": ("invalid", 2),
    "function-url-client-retry": ("invalid", 2), "alb-client-retry": ("invalid", 1),
    "stepfunctions-task-retry": ("invalid", 1),
    "async-retry": ("invalid", 1), "async-duplicate": ("invalid", 2), "timeout-after-effect": ("invalid", 1),
    "async-late-retry": ("invalid", 1), "async-invoke-resend": ("invalid", 1), "concurrent-claims": ("invalid", 1),
    "eventbridge-target-retry": ("invalid", 1), "eventbridge-producer-resend": ("invalid", 1),
    "eventbridge-duplicate-target": ("invalid", 1),
    "sns-delivery-retry": ("invalid", 1), "s3-notification-duplicate": ("invalid", 1),
    "cfn-custom-resource-retry": ("invalid", 3),
    "sqs-batch-failure": ("invalid", 2), "sqs-visibility-timeout": ("invalid", 3),
    "sqs-throttled-batch": ("invalid", 3), "sqs-low-traffic-wait": ("invalid", 1),
    "sqs-spontaneous-duplicate": ("invalid", 3), "sqs-dlq-redrive": ("invalid", 1), "producer-resend": ("invalid", 1),
    "sqs-fifo-window": ("invalid", 1),
    "stream-batch-retry": ("invalid", 2), "stream-partial-batch": ("invalid", 1),
    "kinesis-producer-resend": ("invalid", 1),
    "ddb-stream-batch-retry": ("invalid", 2), "ddb-stream-ttl-remove": ("invalid", 3),
    "kafka-batch-retry": ("invalid", 2), "kafka-partial-batch": ("invalid", 1), "kafka-producer-resend": ("invalid", 1),
    "kafka-topic-destination": ("invalid", 2),
    "durable-step-retry": ("invalid", 1), "durable-replay": ("invalid", 1), "durable-esm-start": ("invalid", 12),
}, _extra
assert all(r.lost == 0 for r in naive.rows)
for _row in naive.rows:  # an extra email is a second email to the same order, found by the checker
    if _row.verdict == "invalid":
        assert _row.result.verdict.duplicates and _row.causes, _row.scenario
# Sixteen sources, each invalid in every one of its scenarios; the prose names them in this order.
assert list(by_source) == ["sync invoke (SDK)", "API Gateway", "function URL", "load balancer", "Step Functions",
                           "async invoke", "EventBridge", "SNS", "S3", "CloudFormation", "SQS", "SQS FIFO", "Kinesis",
                           "DynamoDB Streams", "Kafka", "durable function"]
assert all(r.verdict == "invalid" for rows in by_source.values() for r in rows)
# One timeline per source: the run with the most extra emails, as the prose reads them.
assert {s: r.scenario for s, r in worst.items()} == {
    "sync invoke (SDK)": "sync-sdk-retry", "API Gateway": "apigw-client-retry",
    "function URL": "function-url-client-retry", "load balancer": "alb-client-retry",
    "CloudFormation": "cfn-custom-resource-retry",
    "Step Functions": "stepfunctions-task-retry", "async invoke": "async-duplicate",
    "EventBridge": "eventbridge-target-retry", "SNS": "sns-delivery-retry", "S3": "s3-notification-duplicate",
    "SQS": "sqs-visibility-timeout", "SQS FIFO": "sqs-fifo-window",
    "Kinesis": "stream-batch-retry", "DynamoDB Streams": "ddb-stream-ttl-remove", "Kafka": "kafka-batch-retry",
    "durable function": "durable-esm-start"}
_sync = worst["sync invoke (SDK)"].result.history.invocations()
assert [v["cause"] for v in _sync.values()] == ["first delivery", "SDK retry", "SDK retry"]
assert worst["async invoke"].result.errors() == []  # the async duplicate comes with no error at all
assert "TTL deletion" in worst["DynamoDB Streams"].causes
assert "rollback delete" in worst["CloudFormation"].causes and "retry 1" in worst["CloudFormation"].causes
# The function URL never gave up itself (the client's read timeout did, three times); the load balancer said 502 once.
assert [r["result"] for r in worst["function URL"].result.history.of_type("aws")
        if r["op"] == "InvokeFunctionUrl"] == ["ReadTimeout"] * 3
assert [r["result"] for r in worst["load balancer"].result.history.of_type("aws")
        if r["service"] == "elasticloadbalancing"] == ["HTTP 502", "ok"]
assert worst["EventBridge"].result.verdict.effects_per_key["o-1"] == {"email": 2}
assert worst["Kinesis"].result.verdict.effects_per_key["o-1"] == worst["Kinesis"].result.verdict.effects_per_key[
    "o-2"] == {"email": 2}
# The improved handler: valid in every row, although every duplicate source still delivered a repeat.
assert improved.status == "valid" and all(r.verdict == "valid" and r.extra_effects == 0 == r.lost
                                          for r in improved.rows)
assert repeats["no-fault"] == [] and all(repeats[name] for name in SOURCE_SCENARIOS if name != "no-fault"), repeats
# Try it: the module-level set still fails in some of the sources.
assert try_it.status == "invalid" and [r.scenario for r in try_it.rows] == [r.scenario for r in worst.values()]
_try = {r.scenario: (r.extra_effects, r.lost) for r in try_it.rows}
assert _try["sync-sdk-retry"] == (1, 0) and _try["apigw-client-retry"] == (1, 0), _try  # the new container's set
assert _try["eventbridge-target-retry"] == (0, 1) and _try["stream-batch-retry"] == (0, 1), _try  # marked, then lost
assert _try["stepfunctions-task-retry"] == (0, 1), _try  # the retry lands in the same container: o-2 marked, lost
assert _try["kafka-batch-retry"] == (0, 1), _try  # o-3 marked before its email failed, then lost
# One small world per scenario, as the text says: a row each.
assert len(naive.rows) == len(SOURCE_SCENARIOS)
# What the prose says of AWS's recommended retrier: the function's own error is not retried; o-2 is lost.
from sandbox import run_scenario as _run  # noqa: E402 (facts run after the notebook's cells)

_recommended = _run("stepfunctions-task-retry", NAIVE, seed=0, settings={"error_equals": ",".join(
    ["Lambda.ServiceException", "Lambda.AWSLambdaException", "Lambda.SdkClientException",
     "Lambda.ClientExecutionTimeoutException"])})
assert [f.key for f in _recommended.verdict.lost] == ["o-2"] and not _recommended.verdict.duplicates
# The timelines: one per source in the gallery, the first drawn at once, another when it is picked.
assert list(timelines.picker.options) == list(worst) and timelines.shown == "sync invoke (SDK)"
assert timelines.drawn == ["sync invoke (SDK)"]
timelines.picker.value = "DynamoDB Streams"
assert timelines.shown == "DynamoDB Streams" and timelines.drawn == ["sync invoke (SDK)", "DynamoDB Streams"]
assert titles["DynamoDB Streams"] == "DynamoDB Streams · ddb-stream-ttl-remove · 3 extra"
