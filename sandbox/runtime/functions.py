"""The Lambda runtime model: functions, containers, contexts, timeouts and crashes.

Facts modelled (https://docs.aws.amazon.com/lambda/latest/dg/python-context.html,
https://docs.aws.amazon.com/lambda/latest/dg/configuration-timeout.html,
https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html):

- every invocation gets a new ``aws_request_id`` unless its source says otherwise (Lambda's
  async retries of one event keep theirs);
- each invocation gets the event as freshly deserialised JSON;
- the default function timeout is 3 seconds; a timeout is a function error and stops the
  function where it is, so an effect already performed stays performed;
- "If the Lambda function crashes or times out during the Invoke phase, Lambda resets the
  execution environment": nothing more of that invocation runs (no ``finally`` block
  reaches AWS, a service or the clock), and the next invocation starts a new container;
  a handled error keeps the container;
- ``sys.exit`` or ``os._exit`` in a handler is a crash (Runtime.ExitError);
- a container is a process (``sandbox.runtime.container_state``): code outside the handler runs once per
  container, and its modules, environment and ``sys.path`` are its own; the handler's
  module is named after its file, as ``_HANDLER=app.handler`` names module ``app``;
- Lambda adds containers as concurrency grows.
"""
from __future__ import annotations

import datetime as dt
import itertools
import json
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ..core.faults import CrashPlan
from ..core.jsonvalues import json_number
from ..core.scheduler import Task, current_task
from ..errors import (
    BadInput,
    HandlerBlocked,
    InvocationCrashed,
    LambdaTimeout,
    OutOfMemory,
    ResponseTooLarge,
    RuntimeExit,
    TemplateFailed,
    WorldClosed,
)
from ..vocab import Cause, LogStream, Outcome, SourceKind
from .codecache import TaskRoots
from .container_state import ProcessContext, Processes, ProcessSwitch
from .environment.wire import EnvironmentConfig, ErrorPayload
from .loader import HandlerSpec, check_handler, check_handler_file, load_handler

if TYPE_CHECKING:
    from ..core.clock import VirtualClock
    from ..core.history import History
    from ..core.scheduler import Scheduler
    from .environment.host import EnvironmentProcess, TaskRootCopies, Template

DOC_CONFIG = "https://docs.aws.amazon.com/lambda/latest/dg/configuration-function-common.html"
DOC_TIMEOUT = "https://docs.aws.amazon.com/lambda/latest/dg/configuration-timeout.html"
DOC_ENV = "https://docs.aws.amazon.com/lambda/latest/dg/configuration-envvars.html"
DEFAULT_TIMEOUT = 3.0  # seconds (configuration-timeout.html)
RESPONSE_LIMIT = 6 * 1024 * 1024  # bytes: "For synchronous invocations, the maximum payload size is 6 MB" (API_Invoke)
#: Sources that invoke asynchronously (through Lambda's event queue): their response reaches no caller.
ASYNCHRONOUS = frozenset({SourceKind.ASYNC, SourceKind.EVENTBRIDGE, SourceKind.SNS, SourceKind.S3})
DOC_LIFECYCLE = "https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html"
INIT_LIMIT = 10.0  # real seconds: "The Init phase is limited to 10 seconds" (DOC_LIFECYCLE)
MAX_TIMEOUT = 900.0  # 15 minutes
DEFAULT_MEMORY_MB = 128  # configuration-function-common.html
MIN_MEMORY_MB, MAX_MEMORY_MB = 128, 10_240  # configuration-memory.html
DOC_MEMORY = "https://docs.aws.amazon.com/lambda/latest/dg/configuration-memory.html"
DEFAULT_EPHEMERAL_MB, MAX_EPHEMERAL_MB = 512, 10_240  # configuration-ephemeral-storage.html
DOC_STORAGE = "https://docs.aws.amazon.com/lambda/latest/dg/configuration-ephemeral-storage.html"
ACCOUNT = "123456789012"
PYTHON_RUNTIME = f"python{sys.version_info.major}.{sys.version_info.minor}"


@dataclass
class FunctionConfig:
    """A function's settings. Defaults are Lambda's own (configuration-function-common.html)."""

    name: str = "orders-handler"
    timeout: float = DEFAULT_TIMEOUT
    memory_mb: int = DEFAULT_MEMORY_MB
    version: str = "$LATEST"
    region: str = "us-east-1"
    account: str = ACCOUNT
    #: The function's own environment variables (configuration-envvars.html); Lambda's reserved ones win.
    environment: dict[str, str] = field(default_factory=dict)
    #: /tmp's size in MB: 512 by default, up to 10,240 (configuration-ephemeral-storage.html).
    ephemeral_storage_mb: int = DEFAULT_EPHEMERAL_MB

    def __post_init__(self) -> None:
        if not (1 <= self.timeout <= MAX_TIMEOUT):
            raise BadInput(f"function timeout must be between 1 and 900 seconds (Lambda's range), got {self.timeout}")
        if not (MIN_MEMORY_MB <= self.memory_mb <= MAX_MEMORY_MB):
            raise BadInput(f"function memory must be between {MIN_MEMORY_MB} and {MAX_MEMORY_MB:,} MB (Lambda's "
                           f"range, {DOC_MEMORY}), got {self.memory_mb}")
        if not (DEFAULT_EPHEMERAL_MB <= self.ephemeral_storage_mb <= MAX_EPHEMERAL_MB):
            raise BadInput(f"ephemeral storage must be between {DEFAULT_EPHEMERAL_MB} and {MAX_EPHEMERAL_MB:,} MB "
                           f"(Lambda's range, {DOC_STORAGE}), got {self.ephemeral_storage_mb}")

    @property
    def arn(self) -> str:
        return f"arn:aws:lambda:{self.region}:{self.account}:function:{self.name}"

    def log_stream(self, clock: "VirtualClock", container: str) -> str:
        day = dt.datetime.fromtimestamp(clock.now(), dt.UTC).strftime("%Y/%m/%d")
        return f"{day}/[{self.version}]{container}"


class LambdaContext:
    """The object passed as ``context``, with the attributes of Lambda's Python runtime."""

    def __init__(self, clock: "VirtualClock", config: FunctionConfig, request_id: str, deadline: float,
                 container: str):
        self._clock = clock
        self._deadline = deadline  # virtual Unix seconds
        self.function_name = config.name
        self.function_version = config.version
        self.invoked_function_arn = config.arn
        self.memory_limit_in_mb = str(config.memory_mb)  # a string in the Python runtime, as in its environment
        self.aws_request_id = request_id
        self.log_group_name = f"/aws/lambda/{config.name}"
        self.log_stream_name = config.log_stream(clock, container)
        self.identity = None
        self.client_context = None
        self.tenant_id = None

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int(round((self._deadline - self._clock.now()) * 1000)))

    def __repr__(self) -> str:
        return f"LambdaContext(request_id={self.aws_request_id!r}, remaining={self.get_remaining_time_in_millis()} ms)"


class Container:
    """One execution environment: its own process (modules, environment), its handler."""

    def __init__(self, cid: str, process: "ProcessContext | None", env: "EnvironmentProcess | None" = None):
        self.id = cid
        self.process = process
        #: The OS process of this execution environment (None: the handler runs in the world's process).
        self.env = env
        self.handler: Callable | None = None
        self.busy = False
        self.dead = False  # reset after a timeout or a crash: never used again
        self.invocations = 0
        #: Lambda Managed Instances: the execution environment this process belongs to ("e1"), whose /tmp it
        #: shares with the environment's other processes (None: the process is an environment of its own).
        self.environment: str | None = None
        #: An init that Lambda retried within the first invocation's timeout: what it computed (not yet on the
        #: world's clock) and all it took (out of that invocation's timeout).
        self.init_charged = 0.0
        self.init_spent = 0.0


class Invocation:
    """One run of the handler. Its outcome is an ``Outcome``, or None while it runs."""

    def __init__(self, function: "LambdaFunction", inv_id: str, event: Any, source: str, cause: str,
                 prev: str | None, keys: list[str], crash: CrashPlan | None, request_id: str | None):
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
        self.children: list[Task] = []  # threads the handler started: part of this invocation
        self.container: Container | None = None
        self.request_id = request_id or ""

    @property
    def done(self) -> bool:
        return self.outcome is not None

    # -- the crash plan, applied where the gateway and the services call in --------------
    def before_aws(self, label: str) -> None:
        self._crash_if(lambda: self.crash.before_aws(label))

    def after_aws(self, label: str) -> None:
        self.aws_calls += 1
        self._crash_if(lambda: self.crash.after_aws(label, self.aws_calls))

    def after_effect(self, kind: str) -> None:
        self._crash_if(lambda: self.crash.after(kind))

    def _crash_if(self, check: Callable[[], None]) -> None:
        try:
            check()
        except InvocationCrashed as exc:
            self.function.stop(self, Outcome.CRASHED, exc)
            raise

    def deadline(self) -> float | None:
        """Elapsed virtual seconds at which the runtime stops this invocation (None: not running)."""
        return self.task.deadline if self.task is not None else None

    def __repr__(self) -> str:
        return f"<Invocation {self.id} {self.source}/{self.cause} {self.outcome or 'running'}>"


#: Characters of log output an invocation keeps in the history (the rest is counted, not kept).
LOG_CAP = 256 * 1024


class Runtime:
    """The Lambda service of one world: it deploys functions, numbers invocations, swaps processes."""

    def __init__(self, clock: "VirtualClock", scheduler: "Scheduler", history: "History",
                 new_request_id: Callable[[], str], region: str = "us-east-1", env: Callable[[], dict] | None = None):
        self.clock, self.scheduler, self.history = clock, scheduler, history
        self.new_request_id = new_request_id
        self.region = region
        self.processes: ProcessSwitch = Processes()
        #: Handler folders whose modules each cold start imports without compiling them again.
        self.task_roots = TaskRoots()
        self.base_env = env or (lambda: {})
        self._partial: dict[tuple[str, str], str] = {}  # a line printed in pieces, until its newline
        self._logged: dict[str, int] = {}  # characters of log each invocation has had kept
        self._dropped: dict[str, int] = {}  # characters past LOG_CAP, counted and not kept
        self._ids = itertools.count(1)
        scheduler.on_switch = self.switch_to
        #: "process": a handler file runs in execution environments of their own (OS processes);
        #: "thread": in the world's own process, with modules and environment swapped at each switch.
        self.isolation = "process"
        #: The environments' task roots (read-only copies of the handler folders), made on first use.
        self.task_root_copies: "TaskRootCopies | None" = None
        self.environments: list["EnvironmentProcess"] = []
        self.seed = 0
        #: The sandbox's own failure that ended a run (its template could not start): the run gives no verdict.
        self.failure: TemplateFailed | None = None

    def close(self) -> None:
        """Kill every environment still alive (the task root copies serve the next world)."""
        for env in self.environments:
            env.kill()
        self.environments.clear()
        self.task_root_copies = None

    def next_id(self) -> str:
        return f"inv-{next(self._ids)}"

    # -- what a handler does beside its work ------------------------------------------------
    def adopt_thread(self, thread: Any) -> Task:
        """A thread the running invocation started becomes one of its tasks (see ``interpose``)."""
        inv = current_invocation()
        assert inv is not None  # interpose adopts only threads an invocation's code starts
        task = self.scheduler.spawn(thread.run, name=f"{inv.id}/{thread.name}", daemon=True)
        task.invocation = inv
        inv.children.append(task)
        return task

    def log(self, inv: "Invocation", stream: str, text: str) -> None:
        """Keep what the invocation printed, a line per record, as CloudWatch Logs would.

        A history is read, drawn and judged: past ``LOG_CAP`` characters an invocation's output is counted,
        not kept, and one line at its end says how much was left out. A noisy handler is judged like any
        other (its prints are no fault)."""
        pending = self._partial.get((inv.id, stream), "") + text
        *lines, rest = pending.split("\n")
        if len(rest) > LOG_CAP:  # a line that never ends is kept in pieces as long as there is room
            lines.append(rest)
            rest = ""
        for line in lines:
            room = LOG_CAP - self._logged.get(inv.id, 0)
            if len(line) > room:  # what does not fit is counted: the line's head is kept while there is room
                self._dropped[inv.id] = self._dropped.get(inv.id, 0) + len(line) - max(room, 0)
                if room <= 0:
                    continue
                line = line[:room]
            self._logged[inv.id] = self._logged.get(inv.id, 0) + len(line) + 1
            self.history.log(self.clock.elapsed(), inv=inv.id, stream=stream, text=line)
        self._partial[(inv.id, stream)] = rest

    def flush_logs(self, inv: "Invocation") -> None:
        for stream in LogStream:
            rest = self._partial.pop((inv.id, stream), "")
            if rest:
                self.log(inv, stream, rest + "\n")
        dropped = self._dropped.pop(inv.id, 0)
        if dropped:
            self.history.log(self.clock.elapsed(), inv=inv.id, stream=LogStream.STDERR,
                             text=f"[sandbox] {dropped:,} more characters of output were not kept (a history keeps "
                                  f"the first {LOG_CAP:,} of each invocation's log)")

    def switch_to(self, task: Task | None) -> None:
        """Put in place the process of the container ``task`` runs in (the world's own for None)."""
        inv = task.invocation if task is not None else None
        container = inv.container if inv is not None else None
        self.processes.activate(container.process if container is not None else None)

    def deploy(self, handler: Any = None, *, factory: Callable[[], Callable] | None = None,
               timeout: float = DEFAULT_TIMEOUT, memory_mb: int = DEFAULT_MEMORY_MB,
               name: str = "orders-handler", environment: dict[str, str] | None = None,
               check_names: bool = True) -> "LambdaFunction":
        """``check_names=False``: a handler file's function is looked for only when an environment loads it."""
        if callable(handler) and not isinstance(handler, str) and self.isolation in ("process", "contained"):
            from .environment import cells

            handler = cells.handler_file(handler) or handler  # a cell's function: its cell becomes a file
        config = FunctionConfig(name=name, timeout=timeout, memory_mb=memory_mb, region=self.region,
                                environment={str(k): str(v) for k, v in (environment or {}).items()})
        return LambdaFunction(self, handler, config, factory=factory, check_names=check_names)


#: What a contained environment (the grader's) gets of the world's environment: what a process needs to run,
#: and the world's AWS settings (fake keys, the region, the table). On Lambda a function sees only its reserved
#: and configured variables (configuration-envvars.html), and the grading machine's own must reach no submission.
_CONTAINED_ENV = ("PATH", "LANG", "LC_ALL", "IDEMPOTENCY_TABLE")


def _passed_on(world_env: dict[str, str], isolation: str) -> dict[str, str]:
    """The world's environment as a function's starts from: all of it where the learner runs their own code
    (a notebook's ``os.environ`` reaches the handler, as a function's configuration would), the few variables
    above under containment."""
    if isolation != "contained":
        return world_env
    return {k: v for k, v in world_env.items() if k in _CONTAINED_ENV or k.startswith("AWS_")}


def current_invocation() -> Invocation | None:
    """The invocation whose code is running on this thread, if any."""
    task = current_task()
    return task.invocation if task is not None else None


def fresh_event(event: Any) -> Any:
    """The event as Lambda hands it over: JSON, freshly deserialised for every invocation."""
    try:
        return json.loads(json.dumps(event))
    except (TypeError, ValueError) as exc:
        raise BadInput(f"a Lambda event is JSON, and this one is not: {exc}") from None


class LambdaFunction:
    """A deployed function: a handler, its settings and its pool of containers.

    ``handler`` is ``"file.py:function"`` (each container loads its own copy of the file as
    module ``file``, with the file's folder as its task root), a function (shared by all
    containers, in the world's process; ``Runtime.deploy`` writes a notebook cell's function out
    as a file first, see environment/cells.py), or ``factory=`` a zero-argument callable
    returning the handler, called once per cold start.
    """

    def __init__(self, runtime: Runtime, handler: Any = None, config: FunctionConfig | None = None,
                 factory: Callable[[], Callable] | None = None, check_names: bool = True):
        if handler is None and factory is None:
            raise BadInput("a function needs a handler or a factory")
        if handler is not None and not isinstance(handler, str):
            check_handler(handler)
        self.runtime, self.handler_spec, self.factory = runtime, handler, factory
        #: A handler file's spec, parsed once (None for a function or a factory).
        self.spec = HandlerSpec.parse(handler) if isinstance(handler, str) else None
        self.config = config or FunctionConfig()
        self.containers: list[Container] = []
        self.task_root = self.spec.task_root if self.spec is not None else None
        self.module_name = self.spec.module if self.spec is not None else None
        self._numbers = itertools.count(1)
        self._first: Container | None = None
        #: SnapStart: init runs once, in a snapshot, and every environment is restored from it.
        self.snapstart = False
        #: Lambda Managed Instances: processes per execution environment (0: off, one process each).
        self.processes_per_environment = 0
        self._environments: list[list[Container]] = []
        self._snapshot: "EnvironmentProcess | None" = None
        if self.in_processes:
            check_handler_file(handler, names=check_names)  # checked without running it: only environments do
            from .environment.host import Template, task_root_signature

            assert self.task_root is not None  # a handler file's folder
            task_root_signature(self.task_root)  # a folder too big to copy is refused here, not at a cold start

            Template.warm_up(contained=runtime.isolation == "contained")
        else:
            if self.task_root is not None:
                runtime.task_roots.add(self.task_root)
            if isinstance(handler, str):
                self._first = self._preload(handler)

    @property
    def in_processes(self) -> bool:
        """Does each container run in an execution environment of its own (an OS process)?"""
        return self.spec is not None and self.runtime.isolation in ("process", "contained")

    def _preload(self, handler: str) -> Container | None:
        """Load the handler file now, in the process its first container will have.

        A missing file, a syntax error or a missing function is bad input, refused at once. Module
        code that raises (or exits) is what Lambda reports as an init error of every invocation:
        no container is kept, and each cold start tries again and records the error.
        """
        first = self._new_container()
        self.runtime.processes.activate(first.process)
        try:
            first.handler = load_handler(handler, self.module_name)
        except BadInput:
            raise
        except (Exception, SystemExit, RuntimeExit):
            return None
        finally:
            self.runtime.processes.activate(None)
        return first

    def _log_of_current(self, stream: str, text: str) -> None:
        inv = current_invocation()
        if inv is not None:  # an init outside any invocation (init_error) has no log of its own
            self.runtime.log(inv, stream, text)

    def init_error(self) -> str | None:
        """Start one container now, running the handler's init: None if it loads, else Lambda's word for why.

        Its environment then serves the first invocation, as a warm one would.
        """
        def start() -> str | None:
            try:
                self._cold_start()
            except (Exception, SystemExit, RuntimeExit) as exc:
                return f"Runtime.InitError: {_error_text(exc)}"
            return None

        task = self.runtime.scheduler.spawn(start, name="init")
        task.own_watchdog = self.in_processes
        self.runtime.scheduler.wait_for(task, label="init")
        if task.error is not None:
            raise task.error
        return task.result

    # -- containers ------------------------------------------------------------------------
    def _new_container(self) -> Container:
        cid = f"{self.config.name}/c{next(self._numbers)}"
        if self.in_processes:
            return Container(cid, None)
        return Container(cid, ProcessContext(self._environment(cid), self.task_root))

    def _start_environment(self, container: Container) -> None:
        """A new execution environment, forked from the warm template, through its init."""
        from .environment.host import EnvironmentProcess, InitTimedOut, TaskRootCopies, Template

        rt = self.runtime
        share = self._join_environment(container)
        for attempt in (1, 2):  # a template that has died (killed, say) is replaced once, never charged to the code
            template = Template.get(contained=rt.isolation == "contained")
            copies = rt.task_root_copies
            if copies is None or copies.template is not template:
                copies = rt.task_root_copies = TaskRootCopies(template)
            assert self.task_root is not None  # environments run handler files, which have a folder
            config = self.environment_config(container.id, str(copies.copy_of(self.task_root)))
            snapshot = self._snapshot_environment(config) if self.snapstart else None
            try:
                env = EnvironmentProcess(config, copies, template, snapshot=snapshot, share_tmp=share)
                break
            except TemplateFailed:
                if attempt == 2:
                    raise
        rt.environments.append(env)
        container.env = env
        env.logs = self._log_of_current
        try:
            env.init(limit=None if self.snapstart else INIT_LIMIT)
        except InitTimedOut:
            # "If all three tasks do not complete within 10 seconds, Lambda retries the Init phase at the time
            # of the first function invocation with the configured function timeout" (DOC_LIFECYCLE): a new
            # environment, whose init counts toward this invocation's timeout.
            env.kill()
            self._log_of_current("stdout", f"INIT_REPORT Init Duration: {INIT_LIMIT * 1000:.2f} ms Phase: init "
                                           f"Status: timeout\n")
            assert copies is not None  # made above, with the template
            self._retry_init(container, config, copies, template)
        except BaseException:
            env.kill()
            raise
        assert container.env is not None  # this environment, or the one that retried its init
        container.handler = ProcessHandler(container.env)

    def _retry_init(self, container: Container, config: EnvironmentConfig, copies: "TaskRootCopies",
                    template: "Template") -> None:
        """The init again, in a new environment, within the function's timeout (charged to the invocation)."""
        from .environment.host import EnvironmentProcess, InitTimedOut

        env = EnvironmentProcess(config, copies, template)
        self.runtime.environments.append(env)
        container.env = env
        env.logs = self._log_of_current
        started = self.runtime.clock.elapsed()
        try:
            computed = env.init(limit=self.config.timeout)
        except InitTimedOut:
            env.kill()
            raise LambdaTimeout(_timeout_text(self.config.timeout)) from None
        except BaseException:
            env.kill()
            raise
        # What it slept is on the clock already; what it computed goes on now. Both leave the invocation less.
        container.init_charged = computed
        container.init_spent = self.runtime.clock.elapsed() - started + computed

    def use_snapstart(self) -> None:
        """Turn on SnapStart: the handler's init runs once, and each environment is restored from its snapshot
        (https://docs.aws.amazon.com/lambda/latest/dg/snapstart.html). Python 3.12 and later have it."""
        if not self.in_processes:
            raise BadInput("SnapStart restores execution environments from a snapshot: it needs the handler as a "
                           "file (path/to/file.py:function) and isolation 'process' or 'contained'")
        if self.containers:
            raise BadInput("turn SnapStart on before the function's first invocation (it is set per version)")
        self.snapstart = True

    def use_managed_instances(self, processes_per_environment: int) -> None:
        """Lambda Managed Instances: each execution environment runs several processes, each handling one
        request at a time, with their own globals and one shared /tmp (lambda-managed-instances-python-runtime.html)."""
        if not self.in_processes:
            raise BadInput("Managed Instances run several processes per execution environment: they need the "
                           "handler as a file (path/to/file.py:function) and isolation 'process' or 'contained'")
        if not 1 <= processes_per_environment <= 64:
            raise BadInput(f"processes per environment must be between 1 and 64, got {processes_per_environment}")
        if self.containers:
            raise BadInput("choose Managed Instances before the function's first invocation")
        self.processes_per_environment = processes_per_environment

    def _join_environment(self, container: Container) -> "EnvironmentProcess | None":
        """Managed Instances: put the new process in an environment with room (returning one of its processes,
        whose /tmp it shares), or in a new one (None)."""
        if not self.processes_per_environment:
            return None
        for number, members in enumerate(self._environments, 1):
            alive = [c for c in members if not c.dead and c.env is not None and not c.env.dead]
            members[:] = alive
            if alive and len(alive) < self.processes_per_environment:
                container.environment = f"e{number}"
                members.append(container)
                return alive[0].env
        self._environments.append([container])
        container.environment = f"e{len(self._environments)}"
        return None

    def _snapshot_environment(self, config: EnvironmentConfig) -> "EnvironmentProcess":
        """The snapshot: an environment that runs the init once and then only makes restored copies of itself."""
        from .environment.host import EnvironmentProcess

        rt = self.runtime
        if self._snapshot is None or self._snapshot.dead:
            copies = rt.task_root_copies
            assert copies is not None  # _start_environment made them
            environ = {**config["environ"], "AWS_LAMBDA_INITIALIZATION_TYPE": "snap-start"}
            snapshot = EnvironmentProcess({**config, "environ": environ}, copies, copies.template)
            rt.environments.append(snapshot)
            snapshot.logs = self._log_of_current
            try:
                snapshot.init()
            except BaseException:
                snapshot.kill()
                raise
            self._snapshot = snapshot
        return self._snapshot

    def environment_config(self, cid: str, root: str) -> EnvironmentConfig:
        """What the template hands a new environment: its variables, task root, handler, seed and time."""
        environ = {**self._environment(cid), "LAMBDA_TASK_ROOT": root}
        return {"environ": environ, "task_root": root, "handler": environ["_HANDLER"],
                "seed": f"botocore-jitter:{self.runtime.seed}:{cid}", "now": self.runtime.clock.now(),
                "limits": {"memory_mb": self.config.memory_mb, "tmp_mb": self.config.ephemeral_storage_mb}}

    def _environment(self, cid: str) -> dict[str, str]:
        """The container's environment: the world's, plus Lambda's reserved variables (configuration-envvars.html)."""
        cfg, name = self.config, self.handler_spec
        handler_name = (self.spec.lambda_handler if self.spec is not None
                        else f"{getattr(name or self.factory, '__module__', 'handler')}.handler")
        return {**_passed_on(self.runtime.base_env(), self.runtime.isolation), **cfg.environment,
                "_HANDLER": handler_name, "AWS_EXECUTION_ENV": f"AWS_Lambda_{PYTHON_RUNTIME}",
                "AWS_LAMBDA_FUNCTION_NAME": cfg.name, "AWS_LAMBDA_FUNCTION_VERSION": cfg.version,
                "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(cfg.memory_mb),
                "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{cfg.name}",
                "AWS_LAMBDA_LOG_STREAM_NAME": cfg.log_stream(self.runtime.clock, cid.rsplit("/", 1)[-1]),
                "AWS_LAMBDA_INITIALIZATION_TYPE": "snap-start" if self.snapstart else "on-demand",
                "LAMBDA_TASK_ROOT": self.task_root or "",
                "LAMBDA_RUNTIME_DIR": "/var/runtime", "TZ": ":UTC",
                # The Runtime API's address, and the session token Lambda's credentials come with: here the
                # channel is the Runtime API, and the token is as fake as the keys (configuration-envvars.html).
                "AWS_LAMBDA_RUNTIME_API": "127.0.0.1:9001", "AWS_SESSION_TOKEN": "testing"}

    def _cold_start(self) -> Container:
        """A new execution environment: its own process, the handler's code loaded into it."""
        container, self._first = (self._first, None) if self._first is not None else (self._new_container(), None)
        self.runtime.processes.activate(container.process)
        if self.in_processes:
            self._start_environment(container)
        elif container.handler is None:
            if self.factory is not None:
                container.handler = self.factory()
            elif self.spec is not None:
                container.handler = load_handler(self.spec, self.module_name)
            else:
                container.handler = self.handler_spec
        self.containers.append(container)  # only a container whose code loaded serves invocations
        return container

    def _container(self) -> tuple[Container, bool]:
        for c in self.containers:
            if c.env is not None and c.env.dead:  # it broke the protocol, or its process ended: never reused
                c.dead = True
            if not c.busy and not c.dead:
                return c, False
        return self._cold_start(), True

    # -- invocations -----------------------------------------------------------------------
    def start(self, event: Any, *, source: str = SourceKind.DIRECT, cause: str = Cause.FIRST_DELIVERY,
              prev: str | None = None, keys: list[str] | None = None, crash: CrashPlan | None = None,
              request_id: str | None = None) -> Invocation:
        """Begin an invocation as a new concurrent task and return at once.

        ``request_id`` keeps an earlier invocation's id (Lambda's async retries); by default
        every invocation gets a new one.
        """
        rt = self.runtime
        inv = Invocation(self, rt.next_id(), fresh_event(event), source, cause, prev, list(keys or []), crash,
                         request_id or rt.new_request_id())
        inv.task = task = rt.scheduler.spawn(self._run, inv, name=inv.id)
        task.invocation = inv
        # From its very first step: that step starts (or forks) its environment, which is the sandbox's own
        # work, and the scheduler's watchdog, interrupting it there, would cut the task's records short.
        task.own_watchdog = self.in_processes
        task.on_abandon = lambda message: self.stop(inv, Outcome.ERROR, HandlerBlocked(message), blocked=True)
        return inv

    def invoke(self, event: Any, **kw: Any) -> Invocation:
        """Invoke and wait for the outcome (from a task or from the world's own thread)."""
        inv = self.start(event, **kw)
        assert inv.task is not None  # start() gave it its task
        self.runtime.scheduler.wait_for(inv.task, label=f"wait {inv.id}")
        return inv

    def _run(self, inv: Invocation) -> Any:
        task = inv.task
        assert task is not None  # this runs as that task
        # An environment's task waits on its channel and keeps the watchdog itself, counting only the
        # time the learner's code runs (not the template's start, nor the world's own work).
        task.own_watchdog = self.in_processes
        try:
            container, cold = self._container()
        except TemplateFailed as exc:  # the sandbox could not make an environment: never charged to the handler
            self.runtime.failure = exc
            raise
        except LambdaTimeout as exc:  # its init, retried within the function's timeout, ran out of it too
            inv.error = exc
            self._record_start(inv, None, cold=True)
            self.runtime.scheduler.sleep(self.config.timeout, label="init (retried within the function's timeout)")
            self._finish(inv, Outcome.TIMEOUT, str(exc))
            return None
        except (Exception, SystemExit, RuntimeExit) as exc:
            # Lambda reports a failed cold start (module code raised) as a function error of
            # this invocation: record it as one, never drop the event silently.
            inv.error = exc
            self._record_start(inv, None, cold=True)
            self._finish(inv, Outcome.ERROR, f"Runtime.InitError: {_error_text(exc)}", where=_where(exc))
            return None
        container.busy, inv.container = True, container
        container.invocations += 1
        self.runtime.processes.activate(container.process)  # a warm container's process, from this step on
        try:
            self._call_handler(inv, container, cold)
        finally:
            task.deadline = None
            container.busy = False
        return inv.result

    def _record_start(self, inv: Invocation, container: Container | None, cold: bool) -> None:
        extra: dict[str, Any] = {"cold_start": True} if cold else {}
        if cold and self.snapstart:
            extra["restored"] = True  # from the SnapStart snapshot: no init of its own
        if container is not None and container.environment is not None:
            extra["environment"] = container.environment
        self.runtime.history.invoke_start(
            self.runtime.clock.elapsed(), inv=inv.id, source=inv.source, cause=inv.cause,
            container=container.id if container is not None else None, request_id=inv.request_id, keys=inv.keys,
            prev=inv.prev, timeout=self.config.timeout, **extra)

    def _call_handler(self, inv: Invocation, container: Container, cold: bool) -> None:
        clock, task, timeout = self.runtime.clock, inv.task, self.config.timeout
        assert task is not None  # this runs as that task
        if container.init_spent:  # a retried init ran inside this invocation: its time counts
            self.runtime.scheduler.sleep(container.init_charged, label="init (retried within the function's timeout)")
            timeout = max(0.001, timeout - container.init_spent)
            container.init_charged = container.init_spent = 0.0
        deadline = clock.now() + timeout
        task.deadline = clock.elapsed() + timeout
        task.on_deadline = lambda: self.stop(inv, Outcome.TIMEOUT, LambdaTimeout(_timeout_text(timeout)))
        context = LambdaContext(clock, self.config, inv.request_id, deadline, container.id.rsplit("/", 1)[-1])
        self._record_start(inv, container, cold)
        try:
            handler = container.handler
            assert handler is not None  # loaded by its cold start
            inv.result = marshal_response(handler(inv.event, context))
            if inv.crash.hold_after_return:
                # The Invoke phase ends when the runtime *and every extension* are done, and the
                # function's timeout covers all of it (lambda-runtime-environment.html).
                self.runtime.scheduler.sleep(inv.crash.hold_after_return, label="an extension is still working")
            if task.killed is None and clock.now() >= deadline - 1e-9:
                raise LambdaTimeout(_timeout_text(timeout))  # it ran right up to the deadline
            self._finish(inv, Outcome.OK, None)
        except LambdaTimeout as exc:
            self.stop(inv, Outcome.TIMEOUT, exc)
        except InvocationCrashed as exc:
            self.stop(inv, Outcome.CRASHED, exc)
        except (SystemExit, RuntimeExit) as exc:
            kind = exc.lambda_error if isinstance(exc, RuntimeExit) else "Runtime.ExitError"
            self.stop(inv, Outcome.CRASHED, exc, text=f"{kind}: {_exit_text(exc)}")
        except WorldClosed:
            self._finish(inv, Outcome.CRASHED, "the world closed while this invocation was still running")
            raise
        except HandlerBlocked as exc:  # the watchdog interrupted a busy loop
            self.stop(inv, Outcome.ERROR, exc, text=str(exc) or task.blocked_message, blocked=True)
        except MarshalError as exc:  # the runtime could not send the response: a function error
            inv.error = exc
            self._finish(inv, Outcome.ERROR, f"Runtime.MarshalError: {exc}")
        except ResponseTooLarge as exc:
            if inv.source in ASYNCHRONOUS:  # an async invocation's response goes to no caller
                self._finish(inv, Outcome.OK, None)
            else:
                inv.error = exc
                self._finish(inv, Outcome.ERROR, f"{exc.error_type}: {exc}")
        except Exception as exc:  # the handler's own error is a function error; the container lives on
            inv.error = exc
            self._finish(inv, Outcome.ERROR, _error_text(exc), where=_where(exc))

    def stop(self, inv: Invocation, outcome: str, exc: BaseException, *, text: str | None = None,
             blocked: bool = False) -> BaseException:
        """The runtime stops the invocation (timeout, crash, exit): recorded now, its process reset.

        Returns ``exc``, which the invocation's code then meets at every yield point.
        """
        task = inv.task
        if task is None or task.killed is not None:
            return exc
        inv.error = exc
        scheduler = self.runtime.scheduler
        # In the grader's runs a timeout its code computed through, never asking the sandbox anything, is a
        # block: every retry and copy would compute through its own timeout again, in real seconds.
        blocked = blocked or (task.computed_out and scheduler.halt_on_block)
        self._finish(inv, outcome, text or str(exc) or type(exc).__name__, blocked=blocked)
        scheduler.kill(task, exc)
        for child in inv.children:
            if not child.done:
                scheduler.kill(child, exc)
        if inv.container is not None:
            inv.container.dead = True  # Lambda resets the execution environment
            if inv.container.env is not None:
                inv.container.env.kill()
        return exc

    def _finish(self, inv: Invocation, outcome: str, error: str | None, *, blocked: bool = False,
                where: str | None = None) -> None:
        if inv.outcome is not None:
            return
        inv.outcome, inv.error_text = outcome, error
        self.runtime.flush_logs(inv)
        self.runtime.history.invoke_end(self.runtime.clock.elapsed(), inv=inv.id, outcome=outcome, error=error,
                                        blocked=blocked, where=where)
        if blocked:  # the grader's runs end here: the verdict is unknown, and retries would block again
            self.runtime.scheduler.halt_after_block(f"{inv.id} was blocked outside the sandbox")


def _timeout_text(timeout: float) -> str:
    return f"Task timed out after {timeout:.2f} seconds"


def _exit_text(exc: BaseException) -> str:
    if isinstance(exc, OutOfMemory):
        return str(exc)
    code = exc.code if isinstance(exc, (SystemExit, RuntimeExit)) else 1
    code = 0 if code is None else code
    return f"Runtime exited with error: exit status {code}" if isinstance(code, int) else f"Runtime exited: {code}"


def _error_text(exc: BaseException) -> str:
    error_type = getattr(exc, "error_type", None)  # the handler's own error, sent by its environment
    if error_type is not None:
        return f"{error_type}: {exc}"
    if isinstance(exc, BadInput):
        return str(exc)
    if isinstance(exc, (SystemExit, RuntimeExit)):
        return _exit_text(exc)
    return f"{type(exc).__name__}: {exc}"


def _where(exc: BaseException) -> str | None:
    """The last frame of the learner's own code in ``exc``'s traceback: ``handler.py:12 in handler``."""
    from .container_state import private_path

    if hasattr(exc, "where"):  # reported by the environment the code ran in
        return exc.where
    frames = [(frame.f_code.co_filename, lineno, frame.f_code.co_name)
              for frame, lineno in traceback.walk_tb(exc.__traceback__)]  # no source lines needed, so none are read
    frames = [f for f in frames if private_path(f[0])]
    if not frames:
        return None
    filename, lineno, name = frames[-1]
    try:
        shown = str(Path(filename).resolve().relative_to(Path.cwd()))
    except ValueError:
        shown = filename
    return f"{shown}:{lineno} in {name}"


def function_error_payload(inv: Invocation) -> ErrorPayload:
    """The payload Lambda returns for a function error (``X-Amz-Function-Error: Unhandled``).

    The same JSON reaches a synchronous caller and an async on-failure destination
    (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-retain-records.html).
    """
    rid = inv.request_id
    if inv.outcome == Outcome.TIMEOUT:
        return {"errorType": "Sandbox.Timedout", "errorMessage": f"RequestId: {rid} Error: Task timed out after "
                                                                 f"{inv.function.config.timeout:.2f} seconds"}
    if isinstance(inv.error, ResponseTooLarge):
        return {"errorType": inv.error.error_type, "errorMessage": str(inv.error)}
    if inv.outcome == Outcome.CRASHED and isinstance(inv.error, OutOfMemory):
        return {"errorType": OutOfMemory.lambda_error, "errorMessage": f"RequestId: {rid} Error: {inv.error}"}
    if inv.outcome == Outcome.CRASHED:
        return {"errorType": "Runtime.ExitError",
                "errorMessage": f"RequestId: {rid} Error: Runtime exited without providing a reason"}
    exc = inv.error
    payload = getattr(exc, "payload", None)
    if isinstance(payload, dict) and "error_type" in vars(exc):
        return cast(ErrorPayload, {**payload, "requestId": rid})  # awslambdaric's own payload
    if isinstance(exc, BaseException):
        frames = traceback.extract_tb(exc.__traceback__)
        return {"errorMessage": str(exc), "errorType": type(exc).__name__, "requestId": rid,
                "stackTrace": [f'  File "{f.filename}", line {f.lineno}, in {f.name}\n    {f.line}\n' for f in frames]}
    return {"errorMessage": inv.error_text or "unknown error", "errorType": "Runtime.Unknown", "requestId": rid}


class ProcessHandler:
    """The handler of a container that is an OS process: each call is an invocation sent there."""

    def __init__(self, env: "EnvironmentProcess"):
        self.env = env

    def __call__(self, event: Any, context: LambdaContext) -> Any:
        return self.env.invoke(event, context.aws_request_id, context._deadline, context.invoked_function_arn)


class MarshalError(Exception):
    """The handler returned something the runtime cannot send back as JSON."""


def marshal_response(response: Any) -> Any:
    """What the caller receives: the response as Lambda's Python runtime encodes it.

    The runtime sends JSON, writing a ``Decimal`` (what boto3's DynamoDB resource hands back) as the
    number it holds, and fails the invocation with Runtime.MarshalError on anything else JSON cannot
    hold (a set, a datetime) (aws-lambda-python-runtime-interface-client, lambda_runtime_marshaller.py).
    Bytes go back as they are.
    """
    if response is None or isinstance(response, (bool, int, float)):
        return response
    if isinstance(response, (bytes, str)):
        if len(response) > RESPONSE_LIMIT:
            raise ResponseTooLarge()
        return response
    try:
        text = json.dumps(response, default=json_number)
    except (TypeError, ValueError) as exc:
        raise MarshalError(f"Unable to marshal response: {exc}") from None
    if len(text) > RESPONSE_LIMIT:
        raise ResponseTooLarge()
    return json.loads(text)
