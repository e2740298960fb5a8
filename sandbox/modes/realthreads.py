"""Real-threads mode: the same scenarios on free OS threads, the wall clock and moto's HTTP server.

Is a verdict only an artefact of the simulator? This mode takes the deterministic scheduler and
the virtual clock away and keeps everything else:

- every invocation, queue worker and timer is an OS thread that runs when the operating system
  lets it (``freethreads.FreeScheduler``), and time is the wall clock, so settings must be short
  (``SHORT_SETTINGS``: fractions of a second instead of AWS's minutes);
- AWS is moto's own server (``moto.server.ThreadedMotoServer``) on 127.0.0.1, reached over HTTP
  by ``http_gateway.HttpGateway``, which still makes every request atomic with the sandbox's
  one lock, as the in-process world does (moto is not thread safe either way);
- ``run_real_threads`` calls the scenario's ``drive`` on a ``RealThreadsSandbox``. It swaps exactly
  the four parts its recipe (``real_threads``) makes: the clock (``freethreads.WallClock``), the
  scheduler (``freethreads.FreeScheduler``), the gateway (``http_gateway.HttpGateway``) and the
  Lambda runtime (``FreeThreadsRuntime``: a container's process is swapped in only while its code
  loads, ``SharedProcesses``, and an invocation picks its container under a lock,
  ``FreeThreadsFunction``). ``world.assemble``
  wires the rest as for every world, so the scenario, its delivery source, the history, the
  services, the TTL sweeper and the checker are the deterministic world's own. The world itself
  sets no replica lag and no AWS latency, creates its table through the endpoint's API, and starts
  its history's clock once that table is ready;
- a handler file runs in the same execution environments (``sandbox.runtime.environment``: an OS process
  each, AWS's runtime client, its own /tmp); their requests reach the HTTP gateway through the
  same channel, their sleeps are real ones. A handler passed as a Python function (not a cell)
  runs in this process (``SharedProcesses``).

What it leaves out: the same seed no longer gives the same history (the OS interleaves), the
eventually consistent reads of ``replica_lag`` (moto's server answers every read consistently),
and scenarios that look inside moto's queues or streams between requests (SQS, Kinesis and
DynamoDB Streams pollers); those are refused with a BadInput naming the ones it runs.
"""
from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..aws import adapter
from ..aws.http_gateway import Forwarder, HttpGateway
from ..errors import BadInput
from ..parts import Recipe
from ..runtime.container_state import ProcessContext, ProcessSwitch
from ..runtime.functions import DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT, Container, FunctionConfig, LambdaFunction, Runtime
from ..settings import SettingValue
from ..vocab import IDEMPOTENCY_TABLE, WorldMode
from ..world import Sandbox
from .freethreads import DEFAULT_BUDGET, FreeScheduler, WallClock

if TYPE_CHECKING:
    from ..scenarios.base import Scenario, ScenarioSettings

MODE = WorldMode.REAL_THREADS

#: Scenarios whose drive needs nothing but requests (no look inside moto between them), with the
#: short settings that make each take a second or two of wall-clock time. Both modes run them
#: with these settings, so a comparison compares one scenario. Provider calls take 50 ms.
_QUICK = {"email_seconds": 0.05, "charge_seconds": 0.05, "aws_latency": 0.0, "replica_lag": 0.0}
SHORT_SETTINGS: dict[str, dict[str, SettingValue]] = {
    "no-fault": {**_QUICK, "interval": 0.2},
    "concurrent-claims": {**_QUICK, "copies": 3, "interval": 0.0},
    # Retries half a second apart: should a duplicate find its twin still at work on a busy machine
    # (an error with the idempotent examples), its retry comes within the run, not a minute later.
    "async-duplicate": {**_QUICK, "interval": 0.3, "duplicate_delay": 0.3, "first_retry_delay": 0.5,
                        "second_retry_delay": 0.5},
    "async-retry": {**_QUICK, "first_retry_delay": 0.5, "second_retry_delay": 0.5},
    # A 2 s timeout, not 1 s: the examples lock a key until int(time.time()) plus the remaining
    # seconds, so on the wall clock (not at a whole second, as the virtual clock starts) a 1 s lock
    # can run out a few milliseconds after the claim. The retry comes after a 2 s lock has run out.
    "crash-mid-work": {**_QUICK, "function_timeout": 2.0, "first_retry_delay": 2.5, "second_retry_delay": 2.5},
    # The same whole-second locks: a claim made at N.99 s with 1.9 s left holds until N+2 and is
    # free only once int(time.time()) reaches N+3, up to about a second past the deadline. A retry
    # 0.5 s after the timeout could find the lock held (seen on a loaded CI machine); 1.5 s cannot.
    "timeout-after-effect": {**_QUICK, "function_timeout": 2.0, "first_retry_delay": 1.5,
                             "second_retry_delay": 0.5},
    "sqs-batch-failure": {**_QUICK, "visibility_timeout": 1, "function_timeout": 1.0, "horizon": 20.0},
}
RUNNABLE_SCENARIOS = tuple(SHORT_SETTINGS)


def scenario_for_mode(name: Any, mode: str = MODE, runnable: tuple[str, ...] = RUNNABLE_SCENARIOS):
    """The scenario ``name`` if this mode can run it; otherwise a BadInput that says which it can."""
    from ..scenarios.catalog import get_scenario

    sc = get_scenario(name) if isinstance(name, str) else name
    if sc.name not in runnable:
        raise BadInput(f"{mode} mode cannot run {sc.name}: its delivery source looks inside moto between requests "
                       f"(queues, streams), or its story needs minutes of wall-clock time; {mode} mode runs "
                       f"{', '.join(runnable)}")
    return sc


# -- moto's server, one per process ------------------------------------------------------------
class MotoServer:
    """moto's ``ThreadedMotoServer`` on 127.0.0.1 and a free port, started on first use.

    It runs in this process and serves moto's process-wide backends, so opening a world
    (which resets them) gives it a fresh, empty AWS, as it does in-process.
    """

    _lock = threading.Lock()
    _running: "MotoServer | None" = None

    def __init__(self) -> None:
        from moto.server import ThreadedMotoServer

        self.server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        self.server.start()
        host, port = self.server.get_host_and_port()
        self.url = f"http://{host}:{port}"

    @classmethod
    def shared(cls) -> "MotoServer":
        with cls._lock:
            if cls._running is None:
                # Not stopped at exit: its thread is a daemon with nothing in hand once the worlds have closed,
                # and stopping it waits for werkzeug's next poll (up to 0.5 s of every kernel's shutdown).
                cls._running = cls()
            return cls._running

    def stop(self) -> None:
        self.server.stop()


# -- the Lambda runtime on free threads -----------------------------------------------------------
class SharedProcesses:
    """``process.Processes`` for free threads: one process for all, swapped only while code loads.

    The deterministic world swaps a container's modules, environment and ``sys.path`` in at every
    switch; free threads run side by side, so nothing can be swapped while they run. Each container
    still loads its own copy of the handler's module (its globals are its own), inside the
    container's process, under a lock. So module code sees the function's environment (Lambda's
    reserved variables, the scenario's own), and code that reads ``os.environ`` later, while handling
    an event, sees the world's.
    """

    _loading = threading.RLock()

    def __init__(self, processes: ProcessSwitch):
        self._processes = processes
        self._depth = 0

    @property
    def current(self) -> ProcessContext | None:
        return self._processes.current

    def activate(self, ctx: ProcessContext | None) -> None:
        if self._depth:
            self._processes.activate(ctx)

    @contextlib.contextmanager
    def loading(self):
        """Swap containers' processes in for real meanwhile (one loader at a time), and the world's back after."""
        with SharedProcesses._loading:
            self._depth += 1
            try:
                yield
            finally:
                try:
                    self._processes.activate(None)
                finally:
                    self._depth -= 1

    def capture(self, ctx: ProcessContext) -> None:
        self._processes.capture(ctx)


class FreeThreadsFunction(LambdaFunction):
    """A ``LambdaFunction`` whose invocations may pick and start containers at the same moment."""

    runtime: FreeThreadsRuntime

    def __init__(self, runtime: FreeThreadsRuntime, *args, **kwargs):
        self._picking = threading.Lock()
        with runtime.processes.loading():
            super().__init__(runtime, *args, **kwargs)

    def _cold_start(self) -> Container:
        with self.runtime.processes.loading():
            return super()._cold_start()

    def _container(self) -> tuple[Container, bool]:
        # One invocation at a time picks a free container (or starts one) and marks it busy at once.
        with self._picking:
            container, cold = super()._container()
            container.busy = True
            return container, cold


class FreeThreadsRuntime(Runtime):
    processes: SharedProcesses

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.processes = SharedProcesses(self.processes)

    def deploy(self, handler: Any = None, *, factory: Callable[[], Callable] | None = None,
               timeout: float = DEFAULT_TIMEOUT, memory_mb: int = DEFAULT_MEMORY_MB,
               name: str = "orders-handler", environment: dict[str, str] | None = None,
               check_names: bool = True) -> FreeThreadsFunction:
        config = FunctionConfig(name=name, timeout=timeout, memory_mb=memory_mb, region=self.region,
                                environment={str(k): str(v) for k, v in (environment or {}).items()})
        return FreeThreadsFunction(self, handler, config, factory=factory, check_names=check_names)


# -- the world ----------------------------------------------------------------------------------
def real_threads(forwarder: Forwarder, budget: float = DEFAULT_BUDGET) -> Recipe:
    """This world's parts: the wall clock, free OS threads, requests over HTTP to ``forwarder``'s endpoint."""

    def gateway(*shared: Any) -> HttpGateway:
        return HttpGateway(*shared, forwarder=forwarder)

    return Recipe(clock=WallClock, scheduler=lambda clock: FreeScheduler(clock, budget),
                  gateway=gateway, runtime=FreeThreadsRuntime)


class RealThreadsSandbox(Sandbox):
    """A ``Sandbox`` on free threads and the wall clock, whose AWS is an HTTP endpoint.

    ``forwarder`` says where requests go (moto's server, by default the shared one on localhost).
    ``budget`` is the most wall-clock seconds a run may take.
    """

    mode = MODE
    clock: WallClock  # this world's recipe makes it

    def __init__(self, seed: int = 0, *, forwarder: Forwarder | None = None, ttl_lag: float = 0.0,
                 table: str | None = None, meta: dict | None = None, budget: float = DEFAULT_BUDGET,
                 region: str = "us-east-1", ttl_drawn: bool = False):
        self.forwarder = forwarder or Forwarder(MotoServer.shared().url)
        super().__init__(seed, ttl_lag=ttl_lag, region=region, meta={"mode": self.mode, **(meta or {})},
                         replica_lag=0.0, aws_latency=0.0,
                         ttl_drawn=ttl_drawn, recipe=real_threads(self.forwarder, budget),
                         table=table or IDEMPOTENCY_TABLE.name)

    def open(self) -> "RealThreadsSandbox":
        super().open()
        try:
            # The table is made through the endpoint's API, as a user would make it.
            self.gateway.before_first.pop("dynamodb", None)
            self.create_table()
            self.clock.restart()  # the run's time starts once its AWS is ready
            self.history.starts_at(self.clock.epoch)
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        try:
            super().close()
        finally:
            self.forwarder.close()  # its pooled connections to the endpoint

    def create_table(self) -> None:
        """CreateTable and UpdateTimeToLive on the endpoint (not recorded: the world's own setup)."""
        with self.gateway.unrecorded():
            self.dynamodb.create_table(**self.schema.create_table_request())
            self.wait_until_active()
            self.dynamodb.update_time_to_live(**self.schema.ttl_request())

    def wait_until_active(self, timeout: float = 60.0) -> None:
        """DynamoDB creates a table in the background (CREATING, then ACTIVE); moto's is ACTIVE at once."""
        until = time.monotonic() + timeout
        while self.dynamodb.describe_table(TableName=self.table_name)["Table"]["TableStatus"] != "ACTIVE":
            if time.monotonic() > until:
                raise BadInput(f"table {self.table_name} did not become ACTIVE within {timeout:g} s")
            adapter.real_sleep(0.5)


def short_settings(scenario: Any, settings: Mapping[str, SettingValue] | None = None, mode: str = MODE,
                   runnable: tuple[str, ...] = RUNNABLE_SCENARIOS) -> tuple["Scenario[Any]", "ScenarioSettings"]:
    """The scenario (if the mode runs it) and its resolved settings: the short ones, then ``settings``."""
    sc = scenario_for_mode(scenario, mode, runnable)
    return sc, sc.resolve({**SHORT_SETTINGS[sc.name], **(settings or {})})


def run_real_threads(scenario: Any, handler: Any = None, *, seed: int = 0,
                     settings: Mapping[str, SettingValue] | None = None,
                     factory: Callable[[], Callable] | None = None, budget: float = DEFAULT_BUDGET):
    """Run one scenario on free threads against moto's HTTP server and judge it (a ``RunResult``)."""
    sc, cfg = short_settings(scenario, settings)
    from ..scenarios.base import run_in_world

    world = RealThreadsSandbox(seed, ttl_lag=cfg.run.ttl_lag, ttl_drawn=not cfg.run.ttl_exact, budget=budget,
                               meta={"scenario": sc.name, "settings": cfg.values()})
    return run_in_world(world, sc, handler, cfg, factory)


def compare_modes(handler: Any, scenarios: tuple[str, ...] = RUNNABLE_SCENARIOS, *, seed: int = 0,
                  run: Callable[..., Any] | None = None, mode: str = MODE) -> list[dict[str, Any]]:
    """Each scenario run deterministically and in ``mode`` (``run``, by default real threads), side by side.

    A row: the scenario, each verdict, the emails and charges per order in each, whether the verdicts
    agree, and each run's wall-clock seconds.
    """
    from ..scenarios.runner import run_scenario

    run = run or run_real_threads
    rows = []
    for name in scenarios:
        sc, cfg = short_settings(name)
        det = run_scenario(sc, handler, seed=seed, settings=cfg.values())
        real = run(sc, handler, seed=seed)
        rows.append({"scenario": sc.name, "deterministic": det.status, mode: real.status,
                     "agree": det.status == real.status,
                     "effects_deterministic": det.verdict.effects_per_key,
                     f"effects_{mode}": real.verdict.effects_per_key,
                     "seconds_deterministic": round(det.wall_seconds, 3),
                     f"seconds_{mode}": round(real.wall_seconds, 3)})
    return rows
