"""What a world is made of: the protocols of its swappable parts, and the recipe that picks them.

Three kinds of world run the same scenarios:

- the deterministic one: a virtual clock, a scheduler that runs one task at a time in a seeded
  order, and moto in this process (``clock.VirtualClock``, ``scheduler.Scheduler``,
  ``gateway.Gateway``);
- real threads: the wall clock, free OS threads, and moto's HTTP server (``freethreads``,
  ``http_gateway.HttpGateway``);
- an endpoint: the same, with requests sent to LocalStack or AWS.

They differ only in four parts, each described here by what the rest of the sandbox calls on it.
A ``Recipe`` says how to make those four; ``world.assemble`` wires them to the parts every world
shares (history, faults, replicas, services, the TTL sweeper) in one place. This module imports
nothing of the sandbox, so any part can name these types without importing another part.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, runtime_checkable

if TYPE_CHECKING:  # for annotations only: at run time this module still imports nothing of the sandbox
    from .runtime.codecache import TaskRoots
    from .runtime.container_state import ProcessSwitch


@runtime_checkable
class Clock(Protocol):
    """The world's time: ``now()`` in Unix seconds, ``elapsed()`` since the run began."""

    epoch: float

    def now(self) -> float: ...

    def elapsed(self) -> float: ...

    def advance(self, seconds: float) -> float: ...

    def advance_to(self, elapsed: float) -> float: ...

    def start(self) -> None: ...

    def stop(self) -> None: ...


class RunningInvocation(Protocol):
    """An invocation as an effect's provider sees it: its id, its deadline, and a step after each effect."""

    id: str

    def deadline(self) -> float | None: ...

    def after_effect(self, kind: str) -> None: ...


class Turn(Protocol):
    """A task as a scheduling policy sees it: its number, its name and what it waits to do next."""

    tid: int
    name: str
    label: str


class SchedulerListener(Protocol):
    """Hears the scheduler work (the exhaustive search cuts a run into steps with it)."""

    def step(self, task: Any, decided: bool) -> None:
        """``task`` is about to take a step; ``decided``: the policy chose it among others."""

    def tick(self) -> None:
        """The world's own thread works: timers fire, or a ``run`` begins or ends."""


@runtime_checkable
class TaskScheduler(Protocol):
    """Who runs when: tasks (invocations, pollers), timers, and every wait a task makes."""

    watchdog: float

    def spawn(self, fn: Callable[..., Any], *args: Any, name: str, daemon: bool = False, **kwargs: Any) -> Any: ...

    def call_at(self, elapsed: float, fn: Callable[[], Any], name: str = "timer", daemon: bool = False) -> None: ...

    def call_later(self, delay: float, fn: Callable[[], Any], name: str = "timer", daemon: bool = False) -> None: ...

    def yield_point(self, label: str) -> None: ...

    def sleep(self, seconds: float, label: str = "sleep") -> None: ...

    def wait_for(self, other: Any, timeout: float | None = None, label: str = "wait") -> bool: ...

    def wait_signal(self, key: Any, timeout: float | None = None, label: str = "wait") -> None: ...

    def notify(self, key: Any) -> None: ...

    def block_until(self, ready: Callable[[], bool], timeout: float | None = None, label: str = "blocked") -> bool: ...

    def kill(self, task: Any, exc: BaseException) -> None: ...

    def check_alive(self) -> None: ...

    def halt_after_block(self, reason: str) -> None:
        """The watchdog stopped an invocation (a scheduler may end the run there)."""

    def listen(self, listener: SchedulerListener) -> None: ...

    def run(self, until: float | None = None, stop_when: Callable[[], bool] | None = None) -> None: ...

    def close(self) -> None: ...


#: ``listener(service, op, params, status)``, told of every AWS request once it is answered.
RequestListener = Callable[[str, str, dict, int], None]


@runtime_checkable
class AwsGateway(Protocol):
    """Where every AWS request goes: one at a time, faults applied, recorded in the history."""

    #: ``service`` -> what to do before its first request (make the world's table), done once.
    before_first: dict[str, Callable[[], None]]
    #: ``service`` -> what answers its requests instead of moto (``route(op, request)``).
    routes: dict[str, Callable[[str, Any], Any]]

    def handle(self, request: Any) -> Any:
        """Serve one botocore request; its service and operation are read from the request itself."""

    def record(self, service: str, op: str, target: str | None, key: str | None, result: str,
               detail: Mapping[str, object]) -> None: ...

    def serve_locally(self, service: str, op: str, handler: Callable[[dict, Callable[[], Any]], Any]) -> None: ...

    def on_request(self, listener: RequestListener) -> None: ...

    def notify(self, service: str, op: str, params: dict, status: int) -> None:
        """Tell the request listeners of a request answered outside ``handle``."""

    def unrecorded(self) -> AbstractContextManager[None]: ...


@runtime_checkable
class LambdaRuntime(Protocol):
    """The Lambda service: deploys functions, runs their execution environments, keeps their logs."""

    isolation: str
    seed: int
    failure: Any  # the sandbox's own failure that ended a run (a TemplateFailed), or None

    @property
    def processes(self) -> ProcessSwitch: ...

    @property
    def task_roots(self) -> TaskRoots: ...

    def deploy(self, handler: Any = None, *, factory: Callable[[], Callable[..., Any]] | None = None,
               timeout: float = ..., memory_mb: int = ..., name: str = ...,
               environment: dict[str, str] | None = None, check_names: bool = True) -> Any: ...

    def log(self, inv: Any, stream: str, text: str) -> None: ...

    def close(self) -> None: ...


C = TypeVar("C", bound=Clock)  # the kind of clock a recipe makes, which its scheduler is given


@dataclass(frozen=True)
class Recipe(Generic[C]):
    """How one kind of world makes the parts that differ between kinds.

    ``gateway(clock, scheduler, history, faults, schema, replicas)`` and
    ``runtime(clock, scheduler, history, new_request_id, region, env=...)`` take the shared parts.
    """

    clock: Callable[[], C]
    scheduler: Callable[[C], TaskScheduler]
    gateway: Callable[..., AwsGateway]
    runtime: Callable[..., LambdaRuntime]
