"""stepfunctions-task-retry: a state machine's Task fails after the function did some work, and Retry runs it all again.

A ``Task`` state with the optimized Lambda integration (``arn:aws:states:::lambda:invoke``)
invokes the function synchronously and waits for its result
(https://docs.aws.amazon.com/step-functions/latest/dg/connect-lambda.html). When the function
fails, the Task fails; a ``Retry`` whose ``ErrorEquals`` names the error invokes the function
again with the same input, after ``IntervalSeconds`` (1 s), then twice and four times that
(``BackoffRate`` 2.0), for up to ``MaxAttempts`` (3) retries
(https://docs.aws.amazon.com/step-functions/latest/dg/concepts-error-handling.html). Each
retry is a new invocation with a new request id, and it repeats whatever the failed attempt
had already done.

With the defaults one execution carries two orders: o-1's email goes out, the email provider
refuses o-2's once, the handler raises ``EmailProviderError``, and the retrier
(``States.ALL``) invokes the function again a second later. The naive handler emails o-1
twice. With ``failure=times-out`` the handler does all its work, then the invocation times out
(an extension keeps the Invoke phase open past the function's timeout): ``Lambda.Unknown``,
retried too, and every order is emailed twice. AWS's own advice is to retry Lambda's service
errors (``error_equals`` set to them leaves the function's error unretried, and the execution
fails with o-2 lost). A Task ``timeout_seconds`` shorter than the work fails the Task with
``States.Timeout`` while the function runs on, and the retry overlaps it.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..core.faults import CrashPlan, ProviderFault
from ..events import make_orders
from ..runtime.functions import LambdaFunction
from ..settings import group, param
from ..sources.base import run_sources
from ..sources.stepfunctions import StepFunctionsSource, TaskRetryConfig
from ..vocab import Effect
from ..world import Sandbox
from .base import Scenario, ScenarioSettings

FAILURES = ("raises", "times-out")


@dataclass(frozen=True)
class StepFunctionsTaskRetrySettings(ScenarioSettings):
    orders: int = param(2, "how many orders the execution's input carries", None, 1, 50)
    failure: str = param(
        FAILURES[0],
        "how the first attempt fails after its work: 'raises' (the email provider refuses the last order, "
        "nothing is sent for it, and the handler raises) or 'times-out' (every email is sent, then the "
        "invocation runs past the function's timeout: an extension keeps the Invoke phase open)", None,
        choices=FAILURES)
    provider_failures: int = param(1, "with failure=raises: how many calls for the last order the email provider "
                                   "refuses; more than MaxAttempts makes the execution fail", None, 1, 10)
    task: TaskRetryConfig = group(TaskRetryConfig)


class StepFunctionsTaskRetry(Scenario[StepFunctionsTaskRetrySettings]):
    name = "stepfunctions-task-retry"
    kind = "duplicate source"
    source = "Step Functions"
    headline = ("a Step Functions Task's Retry invokes the function again after its error: the same input, a new "
                "invocation")
    summary = ("A state machine's Task invokes the order function synchronously with one execution's input: two "
               "orders. The first order's email goes out, then the email provider fails on the second, so the "
               "function raises and the Task fails. Its Retry (ErrorEquals States.ALL, a second after the error) "
               "invokes the function again with the same input: a new invocation with a new request id, and a "
               "handler with no memory of the first attempt emails the first customer twice.")

    def drive(self, sb: Sandbox, fn: LambdaFunction, cfg: StepFunctionsTaskRetrySettings) -> None:
        config = cfg.task
        source = StepFunctionsSource(sb, fn, config)
        sb.note(config.describe())
        orders = make_orders(cfg.orders, sb.seed)
        crash = None
        if cfg.failure == FAILURES[0]:
            # The provider refuses without sending: only the orders before the last were handled.
            sb.faults.add(ProviderFault(Effect.EMAIL, orders[-1]["orderId"], fail=cfg.provider_failures))
        else:
            crash = CrashPlan(hold_after_return=cfg.run.function_timeout)
        source.start_execution(sb.order_event(orders), crash=crash)
        run_sources(sb, source)
