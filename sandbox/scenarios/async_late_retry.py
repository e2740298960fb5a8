"""async-late-retry: Lambda's async queue retries hours later, after the idempotency record has expired.

Two documented behaviours meet (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html):
a timeout is a function error, so Lambda retries the event; and "For throttling errors (429)
and system errors (500-series), Lambda returns the event to the queue and attempts to run the
function again for up to 6 hours by default", with a backoff that grows "from 1 second after the
first attempt to a maximum of 5 minutes".

The first invocation does all its work and saves its result, then times out anyway: an
extension keeps the Invoke phase open after the handler returned, and the function's timeout
"limits the duration of the entire Invoke phase"
(https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html). Its retry
is due a minute later, but the function is throttled for two hours, so the retry runs only
then. A handler with no memory sends the email again. The article's run_once replays the saved
result, as long as the record is still there: it keeps it ``RUN_ONCE_KEEP_FOR`` seconds (a day by
default). Keep it an hour (``--set keep_for=3600``, Powertools' default ``expires_after_seconds``)
and the late retry finds nothing, claims the key and sends the email twice. The checker names
that finding: retention shorter than the redelivery horizon.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..core.faults import CrashPlan
from ..events import make_orders
from ..runtime.functions import LambdaFunction
from ..settings import group, param
from ..sources.async_invoke import AsyncConfig, AsyncInvokeSource, run_until_idle
from ..world import Sandbox
from .base import Scenario, ScenarioSettings

DOC_RUNTIME_ENV = "https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html"
DOC_POWERTOOLS = "https://docs.aws.amazon.com/powertools/python/latest/utilities/idempotency/"


@dataclass(frozen=True)
class AsyncLateRetrySettings(ScenarioSettings):
    keep_for: int = param(
        86400, "RUN_ONCE_KEEP_FOR, the function's environment variable: seconds "
        "examples/run_once.py keeps a completed record (a day; Powertools keeps one an hour by default, "
        "expires_after_seconds=3600)", DOC_POWERTOOLS, 60, 7 * 86400)
    extension_seconds: float = param(
        5.0, "seconds an extension keeps the Invoke phase open after the handler "
        "returned; past the function's timeout the invocation times out with all its work done (0: none)",
        DOC_RUNTIME_ENV, 0, 900)
    async_queue: AsyncConfig = group(AsyncConfig, throttled_from=5.0, throttled_for=7200.0)


class AsyncLateRetry(Scenario[AsyncLateRetrySettings]):
    name = "async-late-retry"
    kind = "duplicate source"
    source = "async invoke"
    headline = "a throttled retry arrives two hours later: past a short retention, even a correct `run_once` repeats"
    summary = ("An async event carries one order. The function sends the email and saves its result, but an "
               "extension keeps the invocation open past its 3 s timeout: a timeout is a function error, so Lambda "
               "will retry the event. Meanwhile the function is throttled for two hours, and Lambda keeps the event, "
               "trying again with back off. The retry finally runs two hours later; a handler with no memory emails "
               "the customer again, and run_once is safe only while its record is kept longer than that.")

    def environment(self, cfg: AsyncLateRetrySettings) -> dict[str, str]:
        return {"RUN_ONCE_KEEP_FOR": str(cfg.keep_for)}

    def drive(self, sb: Sandbox, fn: LambdaFunction, cfg: AsyncLateRetrySettings) -> None:
        source = AsyncInvokeSource(sb, fn, cfg.async_queue)
        hold = CrashPlan(hold_after_return=cfg.extension_seconds) if cfg.extension_seconds else None
        source.invoke(sb.order_event(make_orders(1, sb.seed)), crash=hold)
        run_until_idle(sb, source)
