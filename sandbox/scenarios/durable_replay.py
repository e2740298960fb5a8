"""durable-replay: code outside steps runs again on every replay; an execution name absorbs the caller's retry.

AWS semantics:

- "When it's time to resume, Lambda invokes your function again from the beginning and replays the checkpoint
  log, substituting stored values for completed operations. This means your code runs again"
  (https://docs.aws.amazon.com/lambda/latest/dg/durable-basic-concepts.html): an email sent outside a step goes out
  on every invocation of the execution; one inside a step is replayed from its checkpoint.
- "The execution name acts as an idempotency key, allowing you to safely retry invocation requests without
  creating duplicate executions" (https://docs.aws.amazon.com/lambda/latest/dg/durable-execution-idempotency.html).
  The idempotency table there: same name, execution running, same payload: "Idempotent start: Lambda returns the
  existing execution information without starting a duplicate"; different payload:
  ``DurableExecutionAlreadyStartedException``. Without a name, "Lambda generates a unique execution ID".

An application invokes the function asynchronously for one order, naming the execution ``order-<orderId>``. Lambda
starts the execution but the 202 is lost; after the 60 s read timeout botocore sends the same Invoke again. The
function emails, then waits ``follow_up`` seconds (120) before a follow-up. ``examples/durable_email_outside_step.py``
emails outside a step: the replay after the wait emails again. ``examples/durable_email_in_step.py`` does not; and
the name keeps the caller's retry from starting a second execution (``execution_name=none`` shows that it does
then). A plain handler runs as a plain function: the retried Invoke queues a second event (``async-invoke-resend``).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..core.faults import AwsFault
from ..events import make_orders
from ..runtime.functions import LambdaFunction
from ..settings import group, param
from ..sources.async_invoke import AsyncConfig, AsyncInvokeCaller, AsyncInvokeSource
from ..sources.base import run_sources
from ..sources.durable import DOC_IDEMPOTENCY, DurableConfig
from ..sources.sync_invoke import DOC_INVOKE, CallerConfig
from ..world import Sandbox
from .base import Scenario, ScenarioSettings
from .durable_common import deploy, durable_mode


@dataclass(frozen=True)
class DurableReplaySettings(ScenarioSettings):
    lost_answers: int = param(1, "how many of the caller's Invoke attempts Lambda acts on while the 202 never "
                              "reaches the caller (each a read timeout botocore retries); 0: none", DOC_INVOKE, 0, 21)
    execution_name: str = param(
        "order", "the DurableExecutionName the caller gives: 'order' names it after the "
        "order (order-<orderId>), 'none' gives none, so Lambda makes a unique one for every Invoke",
        DOC_IDEMPOTENCY, choices=("order", "none"))
    follow_up: int = param(
        120, "seconds the durable handlers wait before their follow-up step (their "
        "FOLLOW_UP_SECONDS); past the caller's 60 s read timeout, so its retry finds the execution running",
        None, 1, 86400)
    durable: str = durable_mode()
    execution: DurableConfig = group(DurableConfig)
    async_queue: AsyncConfig = group(AsyncConfig)


class DurableReplay(Scenario[DurableReplaySettings]):
    name = "durable-replay"
    kind = "duplicate source"
    source = "durable function"
    headline = "every replay runs the code outside steps again; an execution name turns the caller's retry away"
    summary = ("An application invokes the function for one order, naming the execution after it. Lambda starts "
               "it, but the 202 is lost, and the caller's SDK sends the Invoke again 60 s later: the name finds the "
               "running execution with the same payload, and nothing new starts. The function emails, then waits two "
               "minutes; when Lambda invokes it again the SDK replays, and an email sent outside a step goes out "
               "again.")

    def environment(self, cfg: DurableReplaySettings) -> dict[str, str]:
        return {"FOLLOW_UP_SECONDS": str(cfg.follow_up)}

    def drive(self, sb: Sandbox, fn: LambdaFunction, cfg: DurableReplaySettings) -> None:
        if cfg.lost_answers:
            sb.faults.add(AwsFault("timeout-applied", "lambda", "Invoke", target=fn.config.name,
                                   times=cfg.lost_answers))
        service = deploy(sb, fn, cfg.durable, cfg.execution)
        queue = AsyncInvokeSource(sb, fn, cfg.async_queue)
        named = cfg.execution_name == "order"
        caller = AsyncInvokeCaller(sb, fn, CallerConfig(), queue=queue,
                                   name_of=(lambda order: f"order-{order['orderId']}") if named else None)
        caller.call(make_orders(1, sb.seed)[0])
        run_sources(sb, caller, *([service] if service is not None else []))
