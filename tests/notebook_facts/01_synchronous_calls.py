# Key facts of notebooks/01_synchronous_calls.ipynb, run in its kernel after its last cell.
# The SDK re-sends a slow Invoke: one email per attempt, 3 in standard mode and 5 in legacy.
assert sync_standard.status == "invalid"
assert sync_standard.verdict.effects_per_key == {"o-1": {"email": 3}}, sync_standard.verdict.explain()
assert sync_legacy.verdict.effects_per_key == {"o-1": {"email": 5}}, sync_legacy.verdict.explain()
assert emails_by_mode == {"standard": 3, "adaptive": 3, "legacy": 5}
assert {v["cause"] for v in sync_standard.history.invocations().values()} == {"first delivery", "SDK retry"}
assert all(v["outcome"] == "ok" for v in sync_standard.history.invocations().values())  # Lambda saw nothing wrong
# Every attempt has a new aws_request_id.
assert len(sync_request_ids) == 3 and len(set(sync_request_ids)) == 3
# The improved handler: one email; the 2nd attempt gets a 409 inside a successful Invoke, and the SDK stops.
assert sync_fixed.status == "valid" and sync_fixed.verdict.effects_per_key == {"o-1": {"email": 1}}
assert caller_saw(sync_fixed) == [(1, "inv-1", "ReadTimeout"), (2, "inv-2", 409)], caller_saw(sync_fixed)

# API Gateway: a 504 at 29 s, three requests, three emails for the naive handler.
assert apigw_naive.verdict.effects_per_key == {"o-1": {"email": 3}}, apigw_naive.verdict.explain()
assert [a[2] for a in caller_saw(apigw_naive)] == ["HTTP 504"] * 3
# Both request ids are new on every retry; the Idempotency-Key is the same.
assert len(http_ids["aws_request_id"]) == 3 and len(http_ids["requestContext.requestId"]) == 3
assert len(http_ids["Idempotency-Key"]) == 1
assert by_request_id.status == "invalid" and by_request_id.verdict.effects_per_key == {"o-1": {"email": 3}}
# Keyed on the Idempotency-Key: one email; the retry in progress gets 409, a later one the stored 200.
assert apigw_fixed.status == "valid" and apigw_fixed.verdict.effects_per_key == {"o-1": {"email": 1}}
assert caller_saw(apigw_fixed) == [(1, "inv-1", "HTTP 504"), (2, "inv-2", 409)], caller_saw(apigw_fixed)
assert apigw_replay.status == "valid" and caller_saw(apigw_replay)[-1][2] == 200, caller_saw(apigw_replay)
assert try_it.scenario == "sync-sdk-retry"

# A function URL: no cap of its own; the client's 30 s read timeout gives up three times, three emails.
assert url_naive.verdict.effects_per_key == {"o-1": {"email": 3}}, url_naive.verdict.explain()
assert [a[2] for a in client_saw(url_naive)] == ["ReadTimeout"] * 3
# A load balancer: the function's 30 s timeout is a 502; the client sends the cart again and o-1 goes twice.
assert alb_naive.verdict.effects_per_key == {"o-1": {"email": 2}, "o-2": {"email": 1}}, alb_naive.verdict.explain()
assert [a[2] for a in client_saw(alb_naive)] == ["HTTP 502", 200]
assert [i["outcome"] for i in alb_naive.history.invocations().values()] == ["timeout", "ok"]
# The improved handler: valid behind both; the load balancer's retry replays o-1 and sends only o-2.
assert alb_fixed.status == "valid" and alb_fixed.verdict.effects_per_key == {"o-1": {"email": 1}, "o-2": {"email": 1}}
