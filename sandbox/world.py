"""The world: one object that puts together a fresh local AWS, its clock, scheduler, services and history.

    with Sandbox(seed=1) as sb:
        fn = sb.function(handler)
        fn.invoke({"orderId": "o-1", ...})
        sb.history, sb.outbox, sb.check()

Opening a world gives an empty moto AWS (DynamoDB, SQS, Kinesis) with the idempotency
table already created; closing it leaves nothing behind. Inside, boto3 always sees fake
credentials, whatever the caller's environment holds, and nothing can reach the network.

The world's own parts (clock, scheduler, history, gateway, nemesis, runtime, services, TTL
sweeper) each receive the few parts they use, never the world. ``assemble`` is the one place they
are wired; a ``parts.Recipe`` picks the four that differ between the deterministic, real-threads and
endpoint worlds (clock, scheduler, gateway, runtime).

The delivery sources and the scenarios that drive them sit above the world and take it whole
(``source.world``, a scenario's ``sb``). They use this of it, and nothing else (a house test
holds them to this list): its writers to the history (``accept``, ``record_delivery``, ``note``);
``function``, ``run``, ``order_event``, ``on_aws`` and ``new_uuid``; its parts (``scheduler``,
``clock``, ``gateway``, ``faults``, ``history``, ``services``, ``sweeper``); its seeded ``rng``
and ``seed``; and its AWS clients and names (``dynamodb``, ``sqs``, ``kinesis``, ``region``,
``table_name``).
"""
from __future__ import annotations

import atexit
import functools
import gc
import os
import random
import sys
import threading
import uuid
from collections.abc import Callable, Iterable
from typing import Any

import boto3

from .aws import adapter, partiql_ops
from .aws.event_shapes import EventBridgeEvent
from .aws.gateway import FAKE_ACCESS_KEY, FAKE_SECRET_KEY, Gateway, dispatch
from .aws.replicas import DEFAULT_REPLICA_LAG, Replicas
from .aws.ttl import DOC_TTL, TtlSweeper
from .core import active, views
from .core.clock import DEFAULT_EPOCH, VirtualClock
from .core.faults import Nemesis
from .core.history import History
from .core.policies import Policy, make_policy
from .core.scheduler import DEFAULT_WATCHDOG, Scheduler, current_task
from .core.services import ChargeMade, SentEmail, Services
from .errors import BadInput, SandboxError
from .events import Order, eventbridge_event, eventbridge_time, owed_effects
from .parts import AwsGateway, Clock, LambdaRuntime, Recipe, TaskScheduler
from .runtime import interpose
from .runtime.functions import DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT, LambdaFunction, Runtime
from .vocab import IDEMPOTENCY_TABLE, SourceKind

#: The longest TTL lag a world accepts. DynamoDB deletes expired items "typically within two
#: days of expiration" and promises no upper bound (howitworks-ttl.html); a week covers the lessons.
MAX_TTL_LAG = 7 * 24 * 3600
#: The longest replica lag a world models (AWS: consistency is usually reached within a second).
MAX_REPLICA_LAG = 60.0

_FAKE_ENV = {
    "AWS_ACCESS_KEY_ID": FAKE_ACCESS_KEY,
    "AWS_SECRET_ACCESS_KEY": FAKE_SECRET_KEY,
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
}
#: Settings a caller's environment could hold that would send requests elsewhere, sign them
#: differently or change botocore's retries: a world ignores them all, so every run repeats.
_DROP_ENV = ("AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE",
             "AWS_ENDPOINT_URL", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
             "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_USE_FIPS_ENDPOINT", "AWS_USE_DUALSTACK_ENDPOINT",
             "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "AWS_CA_BUNDLE", "AWS_RETRY_MODE", "AWS_MAX_ATTEMPTS",
             "AWS_DEFAULTS_MODE", "AWS_STS_REGIONAL_ENDPOINTS", "AWS_S3_US_EAST_1_REGIONAL_ENDPOINT",
             "AWS_LAMBDA_FUNCTION_NAME", "AWS_LAMBDA_FUNCTION_VERSION", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE",
             "AWS_LAMBDA_LOG_GROUP_NAME", "AWS_LAMBDA_LOG_STREAM_NAME", "_HANDLER", "AWS_EXECUTION_ENV",
             "LAMBDA_TASK_ROOT", "LAMBDA_RUNTIME_DIR")


def _dropped(name: str) -> bool:
    """Every per-service endpoint override too: AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL_SQS, ..."""
    return name in _DROP_ENV or name.startswith("AWS_ENDPOINT_URL_")


def _virtual_sleep(seconds: float) -> None:
    """``time.sleep`` while a world is open: virtual for its tasks and its own thread."""
    world = active.current()
    if world is not None and world.sleeps_virtually():
        world.scheduler.sleep(seconds)
    else:
        adapter.real_sleep(seconds)  # JupyterLab's and other foreign threads keep real time


#: The most an AWS request from a handler may take in this world (seconds).
MAX_AWS_LATENCY = 5.0


#: Where a handler file's code runs: "process" (the default), an execution environment of its own per
#: container (sandbox.runtime.environment: AWS's runtime client, its own modules, /tmp and main thread);
#: "thread", the world's own process, with modules and environment swapped at each switch (a handler
#: passed as a Python function always runs so). RWH_ISOLATION chooses one for a whole run.
#: "contained" is "process" under bubblewrap (no network, nothing of the machine but Python, the
#: sandbox and the task root), as the grader runs submissions.
ISOLATIONS = ("thread", "process", "contained")


def deterministic(epoch: float = DEFAULT_EPOCH, policy: Policy | None = None,
                  watchdog: float = DEFAULT_WATCHDOG) -> Recipe:
    """The deterministic world's parts: a virtual clock, one task at a time in ``policy``'s order, moto in-process."""
    return Recipe(clock=lambda: VirtualClock(epoch),
                  scheduler=lambda clock: Scheduler(clock, policy, watchdog=watchdog),
                  gateway=Gateway, runtime=Runtime)


def assemble(world: "Sandbox", recipe: Recipe, *, meta: dict | None, replica_lag: float, ttl_lag: float,
             ttl_drawn: bool) -> None:
    """Give ``world`` its parts: the four ``recipe`` makes, wired to the ones every kind of world shares.

    This is the one place parts meet; each receives the few others it uses, never the world.
    """
    seed, region, schema = world.seed, world.region, world.schema
    world.clock = clock = recipe.clock()
    world.scheduler = scheduler = recipe.scheduler(clock)
    world.history = history = History({"seed": seed, "epoch": clock.epoch, "table": schema.name,
                                       "region": region, **(meta or {})})
    world.replicas = replicas = Replicas(clock, region, replica_lag, seed)
    world.gateway = gateway = recipe.gateway(clock, scheduler, history, world.faults, schema, replicas)
    world.runtime = recipe.runtime(clock, scheduler, history, world.new_uuid, region, env=lambda: dict(os.environ))
    world.services = Services(clock, scheduler, history, world.faults)
    world.sweeper = TtlSweeper(clock, scheduler, history, gateway, lambda: world.dynamodb, ttl_lag, schema,
                               drawn=ttl_drawn, seed=seed)


class Sandbox:
    """A local AWS world on a virtual clock.

    ``seed``      drives every random choice: the scheduler, moto's ids, request ids.
    ``policy``    how concurrent tasks interleave: "random" (seeded, default),
                  "round-robin", a list of scripted steps, or a ``Policy``.
    ``ttl_lag``   seconds between an item's ``expiresAt`` and the sweeper deleting it
                  (0 to a week; DynamoDB deletes lazily, moto never does); with ``ttl_drawn``,
                  the most it may be: each item's lag is drawn, seeded, between 0 and it.
    ``watchdog``  real seconds a task may run without yielding before it is declared blocked.
    ``isolation`` "thread", "process" or "contained" (see ``ISOLATIONS``).
    ``replica_lag`` how far behind (seconds, drawn per read) an eventually consistent DynamoDB
                  read may be; reads with ``ConsistentRead=True`` are always current.
    ``recipe``    the parts that make this kind of world (``parts.Recipe``): by default the
                  deterministic ones (``deterministic``); ``realthreads`` and ``endpoint`` give theirs.
    """

    # The parts (``assemble`` gives them): what differs between kinds of world is typed by its protocol.
    clock: Clock
    scheduler: TaskScheduler
    history: History
    replicas: Replicas
    gateway: AwsGateway
    runtime: LambdaRuntime
    services: Services
    sweeper: TtlSweeper

    #: Whether a world has closed in this process: the next one to open freezes what is loaded (``_freeze_long_lived``).
    _one_closed = False

    def __init__(self, seed: int = 0, *, policy: "str | Policy | list | None" = None, ttl_lag: float = 0.0,
                 table: str = IDEMPOTENCY_TABLE.name, region: str = "us-east-1", epoch: float = DEFAULT_EPOCH,
                 watchdog: float = DEFAULT_WATCHDOG, meta: dict | None = None,
                 replica_lag: float = DEFAULT_REPLICA_LAG, aws_latency: float = 0.0,
                 isolation: str | None = None, ttl_drawn: bool = False, recipe: Recipe | None = None):
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise BadInput(f"seed must be an integer, got {seed!r}")
        if not 0 <= replica_lag <= MAX_REPLICA_LAG:
            raise BadInput(f"replica_lag must be between 0 and {MAX_REPLICA_LAG:g} seconds, got {replica_lag}")
        if not 0 <= ttl_lag <= MAX_TTL_LAG:
            raise BadInput(f"ttl_lag must be between 0 and {MAX_TTL_LAG} seconds (a week; DynamoDB deletes "
                           f"expired items typically within two days, {DOC_TTL}), got {ttl_lag}")
        if not 0 <= aws_latency <= MAX_AWS_LATENCY:
            raise BadInput(f"aws_latency must be between 0 and {MAX_AWS_LATENCY:g} seconds, got {aws_latency}")
        isolation = isolation or os.environ.get("RWH_ISOLATION") or "process"
        if isolation not in ISOLATIONS:
            raise BadInput(f"isolation must be one of {', '.join(ISOLATIONS)}, got {isolation!r}")
        self.seed = seed
        self.region = region
        self.schema = IDEMPOTENCY_TABLE.named(table)
        self.table_name = table
        self.faults = Nemesis()
        recipe = recipe or deterministic(epoch, make_policy(policy, seed), watchdog)
        assemble(self, recipe, meta=meta, replica_lag=replica_lag, ttl_lag=ttl_lag, ttl_drawn=ttl_drawn)
        scheduler_policy = getattr(self.scheduler, "policy", None)  # the deterministic scheduler's
        if scheduler_policy is not None and scheduler_policy.name == "random":
            # Seeded jitter spreads a race's steps over time, so the timeline shows their order. The
            # other policies (scripted, replayed, exhaustive, interactive, round-robin) choose the
            # order themselves, step by step at one instant, so they keep AWS calls instant.
            self.faults.round_trip = aws_latency
            self.faults.jitter = random.Random(f"latency:{seed}")
        self.runtime.isolation = isolation
        self.runtime.seed = seed
        self._rng = random.Random(f"world:{seed}")
        self._owner: int | None = None
        self._opened = False
        self._closed = False
        self._on_close: list[Callable[[], None]] = []

    # -- lifecycle ----------------------------------------------------------------------
    def __enter__(self) -> "Sandbox":
        self.open()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
        failure = getattr(self.runtime, "failure", None)
        if exc[0] is None and failure is not None:  # the sandbox could not run the code: no verdict about it
            raise failure

    @property
    def is_open(self) -> bool:
        return self._opened and not self._closed

    def open(self) -> "Sandbox":
        if self._opened:
            raise SandboxError("this world was already opened; create a new Sandbox for a fresh world")
        _close_leftover()
        _freeze_at_exit()
        if Sandbox._one_closed:  # a second world in this process: a kernel, a matrix, a grader
            _freeze_long_lived()
        self._opened = True
        self._owner = threading.get_ident()
        self._saved_env = {k: os.environ.get(k) for k in
                           {*_FAKE_ENV, *_DROP_ENV, "IDEMPOTENCY_TABLE", *filter(_dropped, os.environ)}}
        self._saved_random = random.getstate()
        try:
            self._install()
        except BaseException:
            self.close()  # a world opens whole or leaves nothing installed
            raise
        return self

    def _install(self) -> None:
        adapter.reset_aws(self.seed)
        for k in [k for k in os.environ if _dropped(k)]:
            del os.environ[k]
        os.environ.update(_FAKE_ENV)
        os.environ["AWS_DEFAULT_REGION"] = os.environ["AWS_REGION"] = self.region
        os.environ["IDEMPOTENCY_TABLE"] = self.table_name
        random.seed(f"botocore-jitter:{self.seed}")  # botocore's retry jitter uses the random module
        if isinstance(self.clock, VirtualClock):  # the wall clock patches nothing
            self.clock.readers = self.sleeps_virtually  # its patch answers this world's threads only
        adapter.install(dispatch, _virtual_sleep, self.region)
        interpose.install(self.runtime.log)
        self.clock.start()
        active.set_current(self)
        # The table exists from the first DynamoDB request on (a run that never calls
        # DynamoDB never builds moto's DynamoDB backend).
        self.gateway.before_first["dynamodb"] = lambda: adapter.create_table(
            self.region, self.schema.create_table_request(), self.schema.ttl_request())
        # moto's PartiQL INSERT neither refuses a taken key nor fills in ``?`` parameters (see partiql);
        # an endpoint world's AWS answers for itself
        if getattr(self.gateway, "in_process", False):
            partiql_ops.serve(self.gateway, self.region)

    def close(self) -> None:
        if not self._opened or self._closed:
            return
        self._closed = True
        for callback in self._on_close:
            callback()
        try:
            self.scheduler.close()
        finally:
            self.runtime.close()
            active.set_current(None)
            self.runtime.processes.activate(None)
            self.runtime.task_roots.restore()
            interpose.uninstall()
            adapter.uninstall()
            self.clock.stop()
            random.setstate(self._saved_random)
            adapter.reset_aws()  # nothing of this world's AWS survives it
            for k, v in self._saved_env.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
            Sandbox._one_closed = True

    def on_close(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` first thing when this world closes (whoever closes it)."""
        self._on_close.append(callback)

    def sleeps_virtually(self) -> bool:
        """Does ``time.sleep`` on this thread move the virtual clock? Tasks and the world's own thread do.

        They are the threads that read it too: the kernel's others (its IOPub thread, a cell's while a
        stepped run waits at its gate on another thread) keep the machine's time.
        """
        return current_task() is not None or threading.get_ident() == self._owner

    def _require_open(self) -> None:
        if not self.is_open:
            raise SandboxError("this world is not open: use `with Sandbox(seed=...) as sb:`")

    @functools.cached_property
    def dynamodb(self):
        """A boto3 DynamoDB client inside this world."""
        self._require_open()
        return adapter.shared_client(self.region, "dynamodb")

    @functools.cached_property
    def table(self):
        """The idempotency table as a boto3 ``Table`` resource (built on first use: resources are slow to make)."""
        self._require_open()
        return boto3.resource("dynamodb", region_name=self.region).Table(self.table_name)

    @functools.cached_property
    def sqs(self):
        """A boto3 SQS client inside this world."""
        self._require_open()
        return adapter.shared_client(self.region, "sqs")

    @functools.cached_property
    def kinesis(self):
        """A boto3 Kinesis client inside this world."""
        self._require_open()
        return adapter.shared_client(self.region, "kinesis")

    # -- randomness ----------------------------------------------------------------------
    def new_uuid(self) -> str:
        return str(uuid.UUID(int=self._rng.getrandbits(128), version=4))

    @property
    def rng(self) -> random.Random:
        return self._rng

    # -- functions and time ---------------------------------------------------------------
    def function(self, handler: Any = None, *, factory: Callable[[], Callable] | None = None,
                 timeout: float = DEFAULT_TIMEOUT, memory_mb: int = DEFAULT_MEMORY_MB,
                 name: str = "orders-handler", environment: dict[str, str] | None = None) -> LambdaFunction:
        """Deploy a handler as a Lambda function (default timeout 3 s, as Lambda's).

        ``environment``: the function's own environment variables, as its configuration would hold them.
        """
        self._require_open()
        return self.runtime.deploy(handler, factory=factory, timeout=timeout, memory_mb=memory_mb, name=name,
                                   environment=environment)

    def run(self, until: float | None = None, stop_when: Callable[[], bool] | None = None) -> None:
        """Let every task run until nothing is left to do (or virtual time ``until``)."""
        self._require_open()
        self.scheduler.run(until=until, stop_when=stop_when)

    def advance(self, seconds: float) -> None:
        """Move virtual time forward, running whatever falls due on the way."""
        self._require_open()
        self.scheduler.run(until=self.clock.elapsed() + seconds)

    # -- what happened ----------------------------------------------------------------------
    def accept(self, order: Order, expects: Iterable[str] | None = None, source: str = SourceKind.DIRECT,
               group: str | None = None) -> None:
        """Record that ``order`` entered the system and is owed these effects, once each.

        By default it is owed what ``owed_effects`` says: an email, and a charge first if it pays by card.
        ``group``: the FIFO message group it was sent in, whose orders are owed their effects in order.
        """
        self.history.accept(self.clock.elapsed(), key=str(order["orderId"]),
                            expects=list(expects if expects is not None else owed_effects(order)), source=source,
                            group=group)

    def record_delivery(self, source: str, what: str, keys: Iterable[str], inv: str | None = None,
                        detail: dict | None = None) -> None:
        """Record what a delivery source did besides invoking (a ``vocab.Delivery``)."""
        self.history.delivery(self.clock.elapsed(), source=source, what=what, keys=keys, inv=inv, detail=detail)

    def order_event(self, orders: list[Order]) -> EventBridgeEvent:
        """An EventBridge "OrderPlaced" event carrying ``orders``, with a fresh id, stamped now."""
        return eventbridge_event(orders, self.new_uuid(), eventbridge_time(self.clock.now()), region=self.region)

    def note(self, text: str) -> None:
        self.history.note(self.clock.elapsed(), text)

    @property
    def outbox(self) -> list[SentEmail]:
        return self.services.outbox

    @property
    def charges(self) -> list[ChargeMade]:
        return self.services.charges

    def items(self) -> list[dict]:
        """Every item of the idempotency table, sorted by key (a read the history does not record)."""
        self._require_open()
        with self.gateway.unrecorded():
            items = self.table.scan(ConsistentRead=True)["Items"]
        return sorted(items, key=lambda i: i[self.schema.partition_key])

    def check(self):
        from .verdict.checker import check

        return check(self.history)

    def timeline(self, **kw: Any):
        return views.figure("timeline")(self.history, **kw)

    def on_aws(self, listener: Callable[[str, str, dict, int], None]) -> None:
        """Call ``listener(service, op, params, status)`` after every AWS request."""
        self.gateway.on_request(listener)

    def __repr__(self) -> str:
        state = "open" if self.is_open else ("closed" if self._closed else "new")
        return f"<Sandbox seed={self.seed} {state} t={self.clock.elapsed():.3f}s records={len(self.history)}>"


@functools.cache
def _freeze_at_exit() -> None:
    """Spare this process the collector's walks at exit, once a world has opened in it.

    Python ends by collecting garbage over every object alive, more than once as it clears the
    modules: with moto and botocore loaded, 0.3-0.6 s after one scenario (0.02 s frozen; 2 cores at
    load 4), more in a kernel that drew figures, and every "Restart Kernel" waits for it. Frozen,
    those objects are left to the operating system. Nothing is lost: atexit handlers (this one runs
    before those registered earlier, the kernel's own among them) and ``weakref.finalize`` still
    run, and an object no cycle holds is still freed, and so flushed, when the modules are cleared.
    """
    atexit.register(gc.freeze)


@functools.cache
def _freeze_long_lived() -> None:
    """As a second world opens, leave what this process loaded for good out of the collector's walks.

    By then botocore, moto, the parsed models and, in a kernel, matplotlib and the widgets are loaded:
    about 100,000-200,000 objects that live as long as the process. Python's full collection walks all of
    them whenever enough new objects have survived, 100-150 ms at a time, and in lesson 10 that landed on
    a slider move or two in fifteen (the slowest of 30 moves took 379-486 ms; frozen, 280-353 ms). The
    template does the same before it forks (``template.main``). What the first world left behind is
    collected first (30-50 ms, once); a cycle among the frozen objects that becomes garbage later stays
    until the process ends, as the modules and caches it belongs to would. A command line that runs one
    world pays nothing (``_freeze_at_exit`` spares its exit the walks).
    """
    gc.collect()
    gc.freeze()


def _close_leftover() -> None:
    """Close a world an earlier cell left open (it failed half-way, or skipped ``with``), with a notice.

    In a notebook, a world opened without ``with`` stays open when its cell fails, and
    would otherwise block every later cell until the kernel restarts.
    """
    leftover = active.current()
    if leftover is None:
        return
    leftover.close()
    print(f"note: closed the sandbox world (seed {leftover.seed}) that an earlier cell left open",
          file=sys.stderr)
