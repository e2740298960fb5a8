"""The Lambda runtime model: functions, containers, contexts, timeouts and crashes.

Facts modelled (https://docs.aws.amazon.com/lambda/latest/dg/python-context.html,
https://docs.aws.amazon.com/lambda/latest/dg/configuration-timeout.html,
https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html):

- every invocation gets a new ``aws_request_id``, retries included;
- the default function timeout is 3 seconds; a timeout is a function error and stops
  the function where it is, so an effect already performed stays performed;
- code outside the handler runs once per execution environment (container) and its
  state survives between invocations of that container, not across containers;
- Lambda adds containers as concurrency grows.
"""
from __future__ import annotations

import datetime as dt
import itertools
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import BadInput, HandlerBlocked, InvocationCrashed, LambdaTimeout, WorldClosed
from .faults import CrashPlan
from .loader import check_handler, load_handler
from .scheduler import Task, current_task
from .vocab import Cause, Outcome, SourceKind

if TYPE_CHECKING:
    from .clock import VirtualClock
    from .history import History
    from .scheduler import Scheduler

DOC_CONFIG = "https://docs.aws.amazon.com/lambda/latest/dg/configuration-function-common.html"
DOC_TIMEOUT = "https://docs.aws.amazon.com/lambda/latest/dg/configuration-timeout.html"
DEFAULT_TIMEOUT = 3.0  # seconds (configuration-timeout.html)
MAX_TIMEOUT = 900.0  # 15 minutes
DEFAULT_MEMORY_MB = 128  # configuration-function-common.html
ACCOUNT = "123456789012"


@dataclass
class FunctionConfig:
    """A function's settings. Defaults are Lambda's own (configuration-function-common.html)."""

    name: str = "orders-handler"
    timeout: float = DEFAULT_TIMEOUT
    memory_mb: int = DEFAULT_MEMORY_MB
    version: str = "$LATEST"
    region: str = "us-east-1"
    account: str = ACCOUNT

    def __post_init__(self) -> None:
        if not (1 <= self.timeout <= MAX_TIMEOUT):
            raise BadInput(f"function timeout must be between 1 and 900 seconds (Lambda's range), got {self.timeout}")

    @property
    def arn(self) -> str:
        return f"arn:aws:lambda:{self.region}:{self.account}:function:{self.name}"


class LambdaContext:
    """The object passed as ``context``, with the attributes of Lambda's Python runtime."""

    def __init__(self, clock: "VirtualClock", config: FunctionConfig, request_id: str, deadline: float,
                 container: str):
        self._clock = clock
        self._deadline = deadline  # virtual Unix seconds
        self.function_name = config.name
        self.function_version = config.version
        self.invoked_function_arn = config.arn
        self.memory_limit_in_mb = config.memory_mb
        self.aws_request_id = request_id
        self.log_group_name = f"/aws/lambda/{config.name}"
        day = dt.datetime.fromtimestamp(clock.now(), dt.UTC).strftime("%Y/%m/%d")
        self.log_stream_name = f"{day}/[{config.version}]{container}"
        self.identity = None
        self.client_context = None
        self.tenant_id = None

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int(round((self._deadline - self._clock.now()) * 1000)))

    def __repr__(self) -> str:
        return f"LambdaContext(request_id={self.aws_request_id!r}, remaining={self.get_remaining_time_in_millis()} ms)"


class Container:
    """One execution environment: its own copy of module-level state."""

    def __init__(self, cid: str, handler: Callable):
        self.id = cid
        self.handler = handler
        self.busy = False
        self.invocations = 0


class Invocation:
    """One run of the handler. Its outcome is an ``Outcome``, or None while it runs."""

    def __init__(self, function: "LambdaFunction", inv_id: str, event: Any, source: str, cause: str,
                 prev: str | None, keys: list[str], crash: CrashPlan | None):
        self.function = function
        self.id = inv_id
        self.event = event
        self.source, self.cause, self.prev, self.keys = source, cause, prev, keys
        self.crash = crash or CrashPlan()
        self.outcome: str | None = None
        self.result: Any = None
        self.error: BaseException | None = None
        self.error_text: str | None = None
        self.aws_calls = 0
        self.task: Task | None = None
        self.container: Container | None = None
        self.request_id = ""

    @property
    def done(self) -> bool:
        return self.outcome is not None

    # -- the crash plan, applied where the gateway and the services call in --------------
    def before_aws(self, label: str) -> None:
        self.crash.before_aws(label)

    def after_aws(self, label: str) -> None:
        self.aws_calls += 1
        self.crash.after_aws(label, self.aws_calls)

    def after_effect(self, kind: str) -> None:
        self.crash.after(kind)

    def deadline(self) -> float | None:
        """Elapsed virtual seconds at which the runtime stops this invocation (None: not running)."""
        return self.task.deadline if self.task is not None else None

    def __repr__(self) -> str:
        return f"<Invocation {self.id} {self.source}/{self.cause} {self.outcome or 'running'}>"


class Runtime:
    """The Lambda service of one world: it deploys functions and numbers their invocations."""

    def __init__(self, clock: "VirtualClock", scheduler: "Scheduler", history: "History",
                 new_request_id: Callable[[], str], region: str = "us-east-1"):
        self.clock, self.scheduler, self.history = clock, scheduler, history
        self.new_request_id = new_request_id
        self.region = region
        self._ids = itertools.count(1)

    def next_id(self) -> str:
        return f"inv-{next(self._ids)}"

    def deploy(self, handler: Any = None, *, factory: Callable[[], Callable] | None = None,
               timeout: float = DEFAULT_TIMEOUT, memory_mb: int = DEFAULT_MEMORY_MB,
               name: str = "orders-handler") -> "LambdaFunction":
        config = FunctionConfig(name=name, timeout=timeout, memory_mb=memory_mb, region=self.region)
        return LambdaFunction(self, handler, config, factory=factory)


def current_invocation() -> Invocation | None:
    """The invocation whose code is running on this thread, if any."""
    task = current_task()
    return task.invocation if task is not None else None


class LambdaFunction:
    """A deployed function: a handler, its settings and its pool of containers.

    ``handler`` is ``"file.py:function"`` (each container loads its own copy of the
    module, so module state is per container, as in Lambda), a function (shared by all
    containers), or ``factory=`` a zero-argument callable returning the handler, called
    once per cold start.
    """

    def __init__(self, runtime: Runtime, handler: Any = None, config: FunctionConfig | None = None,
                 factory: Callable[[], Callable] | None = None):
        if handler is None and factory is None:
            raise BadInput("a function needs a handler or a factory")
        # A handler file is loaded now, so a bad path fails before anything runs; that first
        # copy of the module then serves the first container.
        self._preloaded = load_handler(handler) if isinstance(handler, str) else None
        if handler is not None and not isinstance(handler, str):
            check_handler(handler)
        self.runtime = runtime
        self.handler_spec = handler
        self.factory = factory
        self.config = config or FunctionConfig()
        self.containers: list[Container] = []

    def _cold_start(self) -> Container:
        cid = f"{self.config.name}/c{len(self.containers) + 1}"
        if self.factory is not None:
            handler = self.factory()
        elif isinstance(self.handler_spec, str):
            handler, self._preloaded = self._preloaded or load_handler(self.handler_spec), None
        else:
            handler = self.handler_spec
        container = Container(cid, handler)
        self.containers.append(container)
        return container

    def _container(self) -> Container:
        for c in self.containers:
            if not c.busy:
                return c
        return self._cold_start()

    def start(self, event: Any, *, source: str = SourceKind.DIRECT, cause: str = Cause.FIRST_DELIVERY,
              prev: str | None = None, keys: list[str] | None = None, crash: CrashPlan | None = None) -> Invocation:
        """Begin an invocation as a new concurrent task and return at once."""
        rt = self.runtime
        inv = Invocation(self, rt.next_id(), event, source, cause, prev, list(keys or []), crash)
        inv.task = rt.scheduler.spawn(self._run, inv, name=inv.id)
        inv.task.invocation = inv
        inv.task.on_abandon = lambda message: self._finish(inv, Outcome.ERROR, message, blocked=True)
        return inv

    def invoke(self, event: Any, **kw: Any) -> Invocation:
        """Invoke and wait for the outcome (from a task or from the world's own thread)."""
        inv = self.start(event, **kw)
        self.runtime.scheduler.wait_for(inv.task, label=f"wait {inv.id}")
        return inv

    def _run(self, inv: Invocation) -> Any:
        rt = self.runtime
        inv.request_id = rt.new_request_id()
        try:
            container = self._container()
        except Exception as exc:
            # Lambda reports a failed cold start (module code raised) as a function error of
            # this invocation: record it as one, never drop the event silently.
            inv.error = exc
            self._record_start(inv, None)
            message = str(exc) if isinstance(exc, BadInput) else f"{type(exc).__name__}: {exc}"
            self._finish(inv, Outcome.ERROR, f"Runtime.InitError: {message}")
            return None
        container.busy = True
        inv.container = container
        container.invocations += 1
        try:
            self._call_handler(inv, container)
        finally:
            inv.task.deadline = None
            container.busy = False
        return inv.result

    def _record_start(self, inv: Invocation, container: Container | None) -> None:
        self.runtime.history.invoke_start(
            self.runtime.clock.elapsed(), inv=inv.id, source=inv.source, cause=inv.cause,
            container=container.id if container is not None else None, request_id=inv.request_id, keys=inv.keys,
            prev=inv.prev, timeout=self.config.timeout)

    def _call_handler(self, inv: Invocation, container: Container) -> None:
        clock, task = self.runtime.clock, inv.task
        deadline = clock.now() + self.config.timeout
        task.deadline = clock.elapsed() + self.config.timeout
        task.on_deadline = lambda: LambdaTimeout(f"Task timed out after {self.config.timeout:.2f} seconds")
        context = LambdaContext(clock, self.config, inv.request_id, deadline, container.id.rsplit("/", 1)[-1])
        self._record_start(inv, container)
        try:
            inv.result = container.handler(inv.event, context)
            # The deadline already fired (and was swallowed), or the work ran right up to it.
            if task.on_deadline is None or clock.now() >= deadline - 1e-9:
                raise LambdaTimeout(f"Task timed out after {self.config.timeout:.2f} seconds")
            self._finish(inv, Outcome.OK, None)
        except LambdaTimeout as exc:
            inv.error = exc
            self._finish(inv, Outcome.TIMEOUT, str(exc))
        except InvocationCrashed as exc:
            inv.error = exc
            self._finish(inv, Outcome.CRASHED, str(exc))
        except WorldClosed:
            inv.error = None
            self._finish(inv, Outcome.CRASHED, "the world closed while this invocation was still running")
            raise
        except HandlerBlocked as exc:
            inv.error = exc
            self._finish(inv, Outcome.ERROR, str(exc) or "blocked outside the sandbox", blocked=True)
        except Exception as exc:  # the handler's own error is a function error
            inv.error = exc
            self._finish(inv, Outcome.ERROR, f"{type(exc).__name__}: {exc}")

    def _finish(self, inv: Invocation, outcome: str, error: str | None, blocked: bool = False) -> None:
        if inv.outcome is not None:
            return
        inv.outcome, inv.error_text = outcome, error
        self.runtime.history.invoke_end(self.runtime.clock.elapsed(), inv=inv.id, outcome=outcome, error=error,
                                        blocked=blocked)


def function_error_payload(inv: Invocation) -> dict[str, Any]:
    """The payload Lambda returns for a function error (``X-Amz-Function-Error: Unhandled``).

    The same JSON reaches a synchronous caller and an async on-failure destination
    (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-retain-records.html).
    """
    rid = inv.request_id
    if inv.outcome == Outcome.TIMEOUT:
        return {"errorType": "Sandbox.Timedout", "errorMessage": f"RequestId: {rid} Error: Task timed out after "
                                                                 f"{inv.function.config.timeout:.2f} seconds"}
    if inv.outcome == Outcome.CRASHED:
        return {"errorType": "Runtime.ExitError",
                "errorMessage": f"RequestId: {rid} Error: Runtime exited without providing a reason"}
    exc = inv.error
    if isinstance(exc, BaseException):
        frames = traceback.extract_tb(exc.__traceback__)
        return {"errorMessage": str(exc), "errorType": type(exc).__name__, "requestId": rid,
                "stackTrace": [f'  File "{f.filename}", line {f.lineno}, in {f.name}\n    {f.line}\n' for f in frames]}
    return {"errorMessage": inv.error_text or "unknown error", "errorType": "Runtime.Unknown", "requestId": rid}
