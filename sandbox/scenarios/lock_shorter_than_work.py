"""lock-shorter-than-work: a lock that runs out while its owner still works, and what the owner then writes.

run_once's promise holds only while the IN_PROGRESS lock outlasts the work it guards. Here
the function's environment sets the lock (``RUN_ONCE_LOCK_SECONDS``) to 10 s, and the first
attempt's email takes 30 s and then fails. Twelve seconds in, the async queue delivers the
event again (Lambda's documented spontaneous duplicate,
https://docs.aws.amazon.com/lambda/latest/dg/invocation-async.html). The duplicate finds the
lock expired, takes the key over, does the work (the card charge carries its own idempotency
key, so the provider charges once) and saves COMPLETED. Then the first attempt's email fails
and it cleans up after itself:

- the article's run_once deletes the record unconditionally, the duplicate's COMPLETED record
  with it, so Lambda's retry of the first attempt a minute later finds nothing, claims the key
  and emails the customer a second time;
- with a fencing token the delete is conditional on still owning the claim: it is refused, the
  COMPLETED record stands, and the retry replays it.

The checker notes the lock overlap either way (both invocations did the work at once), and the
stale delete where it happened. Sizing the lock from the remaining time, as the examples do
unless told otherwise, keeps a lock from running out before its owner is stopped.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..core.faults import ProviderFault
from ..events import make_orders
from ..runtime.functions import LambdaFunction
from ..settings import group, param
from ..sources.async_invoke import AsyncConfig, AsyncInvokeSource, run_until_idle
from ..vocab import Effect
from ..world import Sandbox
from .base import RunConfig, Scenario, ScenarioSettings

DOC_ASYNC = "https://docs.aws.amazon.com/lambda/latest/dg/invocation-async.html"


@dataclass(frozen=True)
class LockShorterThanWorkSettings(ScenarioSettings):
    lock_seconds: int = param(
        10, "RUN_ONCE_LOCK_SECONDS, the function's environment variable: how long a claim "
        "locks the key (0: the invocation's remaining time, as the examples do by default)", None, 0, 900)
    slow_email_seconds: float = param(30.0, "how long the first attempt's email call takes before it fails", None,
                                      1, 600)
    async_queue: AsyncConfig = group(AsyncConfig, duplicate_probability=1.0, duplicate_delay=12.0)
    run: RunConfig = group(
        RunConfig,
        function_timeout=(60.0, "the function's timeout in seconds: at 60 it outlasts the slow email, "
                          "so the lock runs out first; below the email's time, Lambda stops the "
                          "first attempt before it can delete anything"))


class LockShorterThanWork(Scenario[LockShorterThanWorkSettings]):
    name = "lock-shorter-than-work"
    kind = "run_once"
    source = "async invoke"
    headline = ("a lock runs out under a slow owner; what the owner then writes decides whether the retry "
                "repeats the work")
    summary = ("A card order arrives as an async event. The lock is set to 10 s, but the first attempt's email "
               "takes 30 s and then fails. At 12 s the queue delivers the event again; the duplicate takes the "
               "expired lock over, charges (with the charge's idempotency key) and emails, and saves COMPLETED. "
               "When the first attempt then fails, a run_once that deletes its record unconditionally deletes the "
               "duplicate's, and Lambda's retry emails the customer again; a delete fenced by the claim's owner "
               "is refused, and the retry replays the result.")

    def environment(self, cfg: LockShorterThanWorkSettings) -> dict[str, str]:
        return {"RUN_ONCE_LOCK_SECONDS": str(cfg.lock_seconds)} if cfg.lock_seconds else {}

    def drive(self, sb: Sandbox, fn: LambdaFunction, cfg: LockShorterThanWorkSettings) -> None:
        source = AsyncInvokeSource(sb, fn, cfg.async_queue)
        [order] = make_orders(1, sb.seed, payment="card")
        # Only the first call is slow and fails; the duplicate's call goes through at once.
        sb.faults.add(ProviderFault(Effect.EMAIL, order["orderId"], fail=1, extra_seconds=cfg.slow_email_seconds,
                                    calls=1))
        source.invoke(sb.order_event([order]))
        run_until_idle(sb, source)
