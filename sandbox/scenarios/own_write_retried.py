"""own-write-retried: the handler's own claim takes effect, its answer is lost, and botocore retries it.

A request can take effect while its response never arrives (a connection reset, a read
timeout); botocore's standard retry mode then sends it again, and for DynamoDB it makes up to 4
attempts (https://docs.aws.amazon.com/sdkref/latest/guide/feature-retry-behavior.html; botocore's
``_SERVICE_MAX_ATTEMPTS``). Here the handler's first conditional put (the claim) is written, the
answer is lost, and the retry meets the item its own first attempt wrote: the condition fails.
PutItem takes no idempotency token
(https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_PutItem.html), so only the
item itself can say whose claim it is. A ``run_once`` that takes every refused claim for another
invocation's refuses its own (the article's raises ``StillInProgressError``, a 409 to its own
caller, and so does Powertools). One that stores an owner token in the claim and gets the old
item back with the refusal (``ReturnValuesOnConditionCheckFailure``) sees the token is its own,
and goes on.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..core.faults import AwsFault
from ..events import make_orders
from ..runtime.functions import LambdaFunction
from ..settings import group
from ..sources.apigateway import ApiGatewayConfig, ApiGatewaySource
from ..sources.base import run_sources
from ..world import Sandbox
from .base import RunConfig, Scenario, ScenarioSettings

DOC_RETRY = "https://docs.aws.amazon.com/sdkref/latest/guide/feature-retry-behavior.html"


@dataclass(frozen=True)
class OwnWriteRetriedSettings(ScenarioSettings):
    client: ApiGatewayConfig = group(ApiGatewayConfig)
    run: RunConfig = group(RunConfig,
                           function_timeout=(10.0, "the function's timeout in seconds: room for the claim's retry and "
                                                   "the email"))


class OwnWriteRetried(Scenario[OwnWriteRetriedSettings]):
    name = "own-write-retried"
    kind = "run_once"
    source = "API Gateway"
    headline = "the handler's own claim took effect, its answer was lost, and botocore's retry meets it"
    summary = ("A client POSTs an order through API Gateway. The function claims the order with a conditional put; "
               "DynamoDB writes it, but the answer is lost (a read timeout), so botocore sends the put again. The "
               "retry's condition fails on the claim the first attempt wrote. A run_once that cannot tell its own "
               "claim from another's answers its own caller 409 (still in progress), and the client, told its "
               "order is being handled, never sends it again: the order is never emailed.")

    def drive(self, sb: Sandbox, fn: LambdaFunction, cfg: OwnWriteRetriedSettings) -> None:
        # The first PutItem to the idempotency table takes effect; its answer is lost.
        sb.faults.add(AwsFault("timeout-applied", "dynamodb", "PutItem", target=sb.table_name, times=1))
        source = ApiGatewaySource(sb, fn, cfg.client)
        source.call(make_orders(1, sb.seed)[0])
        run_sources(sb, source)
