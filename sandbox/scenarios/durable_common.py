"""What the durable function scenarios share: deploying the function as a durable one, or not.

Lambda runs a function as durable when it was created with a DurableConfig
(https://docs.aws.amazon.com/lambda/latest/api/API_DurableConfig.html), and then hands every invocation the
execution's state, not the event: a handler that does not use AWS's durable execution SDK could not read it. So
the durable scenarios deploy a handler that imports the SDK as a durable function, and any other handler (the
naive one, the improved ``idempotent.py``) as a plain function behind the same delivery. That plain function is
judged as in the other scenarios: what its source (Lambda's async queue, an SQS mapping) repeats.
"""
from __future__ import annotations

from typing import Any

from ..runtime.functions import LambdaFunction
from ..settings import param
from ..sources.durable import DOC_CONFIG, DurableConfig, DurableService, is_durable_handler
from ..world import Sandbox

#: The ``durable`` setting's choices.
DURABLE_CHOICES = ("auto", "on", "off")


def durable_mode() -> Any:
    """The ``durable`` setting, a field of every durable scenario's settings (next to a ``DurableConfig`` group)."""
    return param("auto", "deploy the function with a DurableConfig: auto does so when its handler file imports "
                 "aws_durable_execution_sdk_python (a plain handler then runs as a plain function); on forces it (a "
                 "plain handler cannot read the execution's state, and the execution fails)", DOC_CONFIG,
                 choices=DURABLE_CHOICES)


def deploy(sb: Sandbox, fn: LambdaFunction, mode: str, config: DurableConfig) -> DurableService | None:
    """The durable execution service of ``fn`` when it is deployed durable (None: a plain function)."""
    durable = mode == "on" or (mode == "auto" and is_durable_handler(fn))
    if not durable:
        sb.note("the handler does not use AWS's durable execution SDK: deployed as a plain function, behind the "
                "same delivery")
        return None
    return DurableService(sb, fn, config)
