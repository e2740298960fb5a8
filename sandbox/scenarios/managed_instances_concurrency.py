"""managed-instances-concurrency: one execution environment runs several requests at once.

With Lambda Managed Instances, "The Lambda runtime uses multiple Python processes to handle
concurrent requests. Each concurrent request runs in a separate process with its own memory space
and initialization. ... global variables, module-level caches, and singleton objects are isolated
between concurrent requests", while "The /tmp directory is shared across all concurrent requests
in the execution environment"; ``PerExecutionEnvironmentMaxConcurrency`` sets how many requests
(and processes) an environment takes, 16 per vCPU by default for Python
(https://docs.aws.amazon.com/lambda/latest/dg/lambda-managed-instances-python-runtime.html).

Here two orders arrive at once, each delivered twice (a duplicate), and all four requests go to
one environment's processes. Module state is per process: a set of handled orders kept in memory
(``examples/module_set.py``) sees none of the others, so it dedupes nothing. A scratch file under
a fixed name in /tmp (``examples/tmp_scratch.py``) is shared: one request's work reads another's
order. The sandbox's environments with ``processes_per_environment`` above 1 are processes of
their own, forked from the template, sharing one private /tmp.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..runtime.functions import LambdaFunction
from ..settings import param
from ..world import Sandbox
from .concurrent_claims import Claims, ConcurrentClaimsSettings

DOC_PYTHON = "https://docs.aws.amazon.com/lambda/latest/dg/lambda-managed-instances-python-runtime.html"


@dataclass(frozen=True)
class ManagedInstancesConcurrencySettings(ConcurrentClaimsSettings, defaults={
        "orders": (2, "how many distinct orders arrive at once (each delivered `copies` times)"),
        "interval": (0.0, "virtual seconds between two distinct orders (0: all together)")}):
    processes_per_environment: int = param(
        4, "PerExecutionEnvironmentMaxConcurrency: how many requests, each in a process of its own, one environment "
        "takes at once (1: ordinary Lambda, one request per environment and a /tmp each; AWS's default for Python is "
        "16 per vCPU)", DOC_PYTHON, 1, 64)
    scratch_per_request: bool = param(False, "the function's SCRATCH_PER_REQUEST=1: examples/tmp_scratch.py then "
                                      "names its scratch file after the request id", DOC_PYTHON)


class ManagedInstancesConcurrency(Claims[ManagedInstancesConcurrencySettings]):
    name = "managed-instances-concurrency"
    kind = "run_once"
    source = "async invoke"
    headline = "one Managed Instances environment runs concurrent requests in processes that share /tmp"
    summary = ("The function runs on Lambda Managed Instances: one execution environment takes several requests at "
               "once, each in a Python process of its own. Two orders arrive together, each delivered twice, and the "
               "four requests run side by side in one environment. Globals stay per process, so an in-memory set "
               "of handled orders dedupes nothing; /tmp is shared, so a scratch file under a fixed name carries one "
               "request's order into another's work.")

    def environment(self, cfg: ManagedInstancesConcurrencySettings) -> dict[str, str]:
        return {"SCRATCH_PER_REQUEST": "1"} if cfg.scratch_per_request else {}

    def drive(self, sb: Sandbox, fn: LambdaFunction, cfg: ManagedInstancesConcurrencySettings) -> None:
        if cfg.processes_per_environment > 1:
            fn.use_managed_instances(cfg.processes_per_environment)
        super().drive(sb, fn, cfg)
