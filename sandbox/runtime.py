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

import importlib.util
import itertools
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from .errors import BadInput, HandlerBlocked, InvocationCrashed, LambdaTimeout, WorldClosed
from .scheduler import Task, current_task

if TYPE_CHECKING:
    from .world import Sandbox


@dataclass
class FunctionConfig:
    """A function's settings. Defaults are Lambda's own (configuration-function-common.html)."""

    name: str = "orders-handler"
    timeout: float = 3.0  # seconds; Lambda's default
    memory_mb: int = 128  # Lambda's default
    version: str = "$LATEST"
    region: str = "us-east-1"
    account: str = "123456789012"

    @property
    def arn(self) -> str:
        return f"arn:aws:lambda:{self.region}:{self.account}:function:{self.name}"


@dataclass
class CrashPlan:
    """Where an injected crash stops an invocation.

    - ``after_aws_calls=N``: right after the N-th AWS call of the invocation;
    - ``after_effect="charge"``: right after that effect is performed;
    - ``before_call="dynamodb.UpdateItem"``: just before that call is sent.
    """

    after_aws_calls: int | None = None
    after_effect: str | None = None
    before_call: str | None = None


class LambdaContext:
    """The object passed as ``context``, with the attributes of Lambda's Python runtime."""

    def __init__(self, world: "Sandbox", config: FunctionConfig, request_id: str, deadline: float, container: str):
        self._world = world
        self._deadline = deadline  # virtual Unix seconds
        self.function_name = config.name
        self.function_version = config.version
        self.invoked_function_arn = config.arn
        self.memory_limit_in_mb = config.memory_mb
        self.aws_request_id = request_id
        self.log_group_name = f"/aws/lambda/{config.name}"
        self.log_stream_name = f"2026/01/05/[{config.version}]{container}"
        self.identity = None
        self.client_context = None
        self.tenant_id = None

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int(round((self._deadline - self._world.clock.now()) * 1000)))

    def __repr__(self) -> str:
        return f"LambdaContext(request_id={self.aws_request_id!r}, remaining={self.get_remaining_time_in_millis()} ms)"


class Container:
    """One execution environment: its own copy of module-level state."""

    def __init__(self, cid: str, handler: Callable):
        self.id = cid
        self.handler = handler
        self.busy = False
        self.invocations = 0


def load_handler(spec: str) -> Callable:
    """Load ``path/to/file.py:function`` as a fresh module (one per container)."""
    if not isinstance(spec, str) or ":" not in spec:
        raise BadInput(f"handler must look like path/to/file.py:function, got {spec!r}")
    path_text, _, func = spec.rpartition(":")
    path = Path(path_text)
    if not path.is_file():
        raise BadInput(f"handler file not found: {path_text}")
    if not func.isidentifier():
        raise BadInput(f"handler function name {func!r} is not a Python identifier")
    module_name = f"_rwh_handler_{uuid.uuid4().hex}"
    loader_spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(loader_spec)
    folder = path.parent.resolve()
    before = set(sys.modules)
    sys.path.insert(0, str(folder))
    try:
        loader_spec.loader.exec_module(module)
    except SyntaxError as exc:
        raise BadInput(f"handler file {path_text} has a syntax error on line {exc.lineno}: {exc.msg}") from None
    except Exception as exc:
        raise BadInput(f"handler file {path_text} failed to import: {type(exc).__name__}: {exc}") from None
    finally:
        sys.path.remove(str(folder))
        # Sibling modules the handler imported (its run_once, say) belong to this container
        # alone: forget them so the next cold start imports its own copy, as Lambda would.
        for name in set(sys.modules) - before:
            origin = getattr(sys.modules[name], "__file__", None) or ""
            if origin and Path(origin).resolve().is_relative_to(folder):
                del sys.modules[name]
    handler = getattr(module, func, None)
    if handler is None:
        raise BadInput(f"handler file {path_text} defines no {func!r}")
    if not callable(handler):
        raise BadInput(f"{func!r} in {path_text} is not a function")
    return handler


def check_handler(handler: Any) -> None:
    """Fail early, with a clear message, on anything that cannot be a handler."""
    if isinstance(handler, str):
        load_handler(handler)
    elif not callable(handler):
        raise BadInput(f"a handler is a function handler(event, context) or 'file.py:function', got {handler!r}")


class Invocation:
    """One run of the handler. Its outcome is one of ok, error, timeout, crashed."""

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

    # -- crash injection hooks, called by the gateway and the services ------------------
    def before_aws(self, label: str) -> None:
        if self.crash.before_call and label.endswith(self.crash.before_call):
            raise InvocationCrashed(f"crashed before {label} (injected)")

    def after_aws(self, label: str) -> None:
        self.aws_calls += 1
        if self.crash.after_aws_calls is not None and self.aws_calls >= self.crash.after_aws_calls:
            raise InvocationCrashed(f"crashed after AWS call #{self.aws_calls} ({label}) (injected)")

    def after_effect(self, kind: str) -> None:
        if self.crash.after_effect == kind:
            raise InvocationCrashed(f"crashed right after the {kind} (injected)")

    def __repr__(self) -> str:
        return f"<Invocation {self.id} {self.source}/{self.cause} {self.outcome or 'running'}>"


class LambdaFunction:
    """A deployed function: a handler, its settings and its pool of containers.

    ``handler`` is ``"file.py:function"`` (each container loads its own copy of the
    module, so module state is per container, as in Lambda), a function (shared by all
    containers), or ``factory=`` a zero-argument callable returning the handler, called
    once per cold start.
    """

    def __init__(self, world: "Sandbox", handler: Any = None, config: FunctionConfig | None = None,
                 factory: Callable[[], Callable] | None = None):
        if handler is None and factory is None:
            raise BadInput("a function needs a handler or a factory")
        # A handler file is loaded now, so a bad path fails before anything runs; that first
        # copy of the module then serves the first container.
        self._preloaded = load_handler(handler) if isinstance(handler, str) else None
        if handler is not None and not isinstance(handler, str):
            check_handler(handler)
        self.world = world
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

    def start(self, event: Any, *, source: str = "direct", cause: str = "first delivery", prev: str | None = None,
              keys: list[str] | None = None, crash: CrashPlan | None = None) -> Invocation:
        """Begin an invocation as a new concurrent task and return at once."""
        world = self.world
        inv = Invocation(self, world.runtime.next_id(), event, source, cause, prev, list(keys or []), crash)
        inv.task = world.scheduler.spawn(self._run, inv, name=inv.id)
        inv.task.invocation = inv
        inv.task.on_abandon = lambda message: self._finish(inv, "error", message)
        return inv

    def invoke(self, event: Any, **kw: Any) -> Invocation:
        """Invoke and wait for the outcome (from a task or from the world's own thread)."""
        inv = self.start(event, **kw)
        self.world.scheduler.wait_for(inv.task, label=f"wait {inv.id}")
        return inv

    def _run(self, inv: Invocation) -> Any:
        world = self.world
        task = current_task()
        inv.request_id = world.new_uuid()
        try:
            container = self._container()
        except Exception as exc:
            # Lambda reports a failed cold start (module code raised) as a function error of
            # this invocation: record it as one, never drop the event silently.
            inv.error = exc
            world.history.append("invoke_start", world.clock.elapsed(), inv=inv.id, source=inv.source,
                                 cause=inv.cause, container=None, request_id=inv.request_id, keys=inv.keys,
                                 prev=inv.prev, timeout=self.config.timeout)
            message = str(exc) if isinstance(exc, BadInput) else f"{type(exc).__name__}: {exc}"
            self._finish(inv, "error", f"Runtime.InitError: {message}")
            return None
        container.busy = True
        inv.container = container
        container.invocations += 1
        start = world.clock.now()
        deadline = start + self.config.timeout
        task.deadline = world.clock.elapsed() + self.config.timeout
        task.on_deadline = lambda: LambdaTimeout(f"Task timed out after {self.config.timeout:.2f} seconds")
        context = LambdaContext(world, self.config, inv.request_id, deadline, container.id.rsplit("/", 1)[-1])
        world.history.append(
            "invoke_start", world.clock.elapsed(), inv=inv.id, source=inv.source, cause=inv.cause,
            container=container.id, request_id=inv.request_id, keys=inv.keys, prev=inv.prev,
            timeout=self.config.timeout,
        )
        try:
            inv.result = container.handler(inv.event, context)
            # The deadline already fired (and was swallowed), or the work ran right up to it.
            if task.on_deadline is None or world.clock.now() >= deadline - 1e-9:
                raise LambdaTimeout(f"Task timed out after {self.config.timeout:.2f} seconds")
            self._finish(inv, "ok", None)
        except LambdaTimeout as exc:
            inv.error = exc
            self._finish(inv, "timeout", str(exc))
        except InvocationCrashed as exc:
            inv.error = exc
            self._finish(inv, "crashed", str(exc))
        except WorldClosed:
            inv.error = None
            self._finish(inv, "crashed", "the world closed while this invocation was still running")
            raise
        except HandlerBlocked as exc:
            inv.error = exc
            self._finish(inv, "error", str(exc) or "blocked outside the sandbox")
        except Exception as exc:  # the handler's own error is a function error
            inv.error = exc
            self._finish(inv, "error", f"{type(exc).__name__}: {exc}")
        finally:
            task.deadline = None
            container.busy = False
        return inv.result

    def _finish(self, inv: Invocation, outcome: str, error: str | None) -> None:
        if inv.outcome is not None:
            return
        inv.outcome, inv.error_text = outcome, error
        self.world.history.append("invoke_end", self.world.clock.elapsed(), inv=inv.id, outcome=outcome, error=error)


class Runtime:
    """World-wide bookkeeping for invocations: ids, and which one is running."""

    def __init__(self, world: "Sandbox"):
        self.world = world
        self._ids = itertools.count(1)

    def next_id(self) -> str:
        return f"inv-{next(self._ids)}"

    def current_invocation(self) -> Invocation | None:
        task = current_task()
        return task.invocation if task is not None else None

    def actor_name(self) -> str:
        task = current_task()
        if task is None:
            return "world"
        return task.invocation.id if task.invocation is not None else task.name
