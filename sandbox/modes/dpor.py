"""Every interleaving that matters, and no more: dynamic partial-order reduction (DPOR).

Exhaustive exploration (``explore.py``) tries every order in which concurrent tasks can take
their steps. Most of those orders differ only in the order of independent steps (a failed claim
and a read of the same key, an email and a write to the table) and end alike. DPOR runs one
schedule, looks at which steps touched the same thing, and schedules again only reorderings of
steps that conflict. This module is *source-DPOR* with sleep sets (Abdulla, Aronis, Jonsson and
Sagonas, "Optimal dynamic partial order reduction", POPL 2014, Algorithm 1), which refines the
persistent-set DPOR of Flanagan and Godefroid ("Dynamic partial-order reduction for model
checking software", POPL 2005). Its guarantee: at least one schedule of every class of schedules
that differ only in the order of independent steps (a Mazurkiewicz trace) is run, and the verdict
is the same for every schedule of a class, so no verdict the full search finds is missed.

- a *step* is what a task does from one yield point to the next, and a *tick* is what the
  scheduler does itself when no task can run (the clock jumps, timers fire): a barrier that
  every step before it happens before, and that happens before every step after it;
- what a step touched is read from the history records it added (``resources_of``) and from
  the world's hidden state it changed (random number generators, the nemesis's fault counters);
- two steps of different tasks *conflict* when they touched the same thing and one wrote it;
  a conditional write whose condition failed changed nothing, so it counts as a read;
- *happens-before* orders steps of one task and steps that conflict (transitively); two
  conflicting steps form a *race* when nothing else orders them, and for each race the search
  plans, at the decision before the first, a task that starts a schedule reversing it.

It assumes tasks interact only through what the history and those probes show: true for handler
files, each container in its own process (``sandbox.runtime.container_state``), for which steps of one invocation
(its threads) all conflict with each other, and a start or the end of an invocation conflicts with
the function's container pool. Steps of tasks that are not invocations (pollers, callers) conflict
with everything. Handlers that share Python objects (a function defined in a notebook and its
globals) need the full search: ``explore_scenario`` never reduces for them.
"""
from __future__ import annotations

import contextlib
import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..aws.dynamo import PARTIQL_OPS, scalar, table_writes
from ..core.policies import Policy
from ..errors import BadInput
from ..settings import SettingValue
from ..vocab import DYNAMODB_READS, Effect, RecordType

#: (space, target, key, mode): a space such as "dynamodb" or "sqs", its table or queue, the item key,
#: and a mode: READ, WRITE, or FREE (an update that commutes with others like it: freeing a
#: container). ANY as the target or the key stands for all of them.
Resource = tuple[str, str, str, str]
READ, WRITE, FREE, ANY = "r", "w", "+", "*"
#: The task name of a tick (the scheduler's own work between steps).
TICK = "(clock)"
#: The label of a task that has not started yet (the scheduler's word).
FRESH = "start"
#: A conditional write that failed its condition changed nothing: it only read the item.
CONDITION_FAILED = "ConditionalCheckFailed"
#: Nor did a PartiQL INSERT refused because the key is taken (DuplicateItemException).
DUPLICATE_ITEM = "DuplicateItem"
#: Records that say nothing two tasks share: a handler's own log lines, a reader's notes.
_PRIVATE = frozenset({RecordType.LOG, RecordType.NOTE})
#: Effects whose providers keep one shared log (the email outbox numbers its messages).
_PROVIDER: dict[str | None, str] = {Effect.CANCELLATION: Effect.EMAIL}


@dataclass
class Step:
    """One step of one task (or a tick): what it touched, and the decision that chose it, if any."""

    task: str
    resources: frozenset[Resource] = frozenset()
    decision: int | None = None  # index of the decision that chose it; None when it was the only runnable task
    everything: bool = False  # it conflicts with every step (a tick, a poller's step, a record we cannot read)

    @property
    def tick(self) -> bool:
        return self.task == TICK


@dataclass
class Trace:
    """One run: its verdict (None when it was cut short as redundant), its steps and its decisions."""

    verdict: str | None
    steps: list[Step] = field(default_factory=list)
    decisions: list[tuple[list[str], str]] = field(default_factory=list)


# -- what a step touched -------------------------------------------------------------------------
def _aws(r: dict[str, Any]) -> list[Resource]:
    service, op = str(r.get("service")), r.get("op")
    target = ANY if r.get("target") is None else str(r.get("target"))
    if service == "dynamodb":
        key = r.get("key")
        whole = op in ("Query", "Scan") or key is None
        mode = READ if op in DYNAMODB_READS or r.get("result") in (CONDITION_FAILED, DUPLICATE_ITEM) else WRITE
        return [("dynamodb", target, ANY if whole else str(key), mode)]
    if service == "dynamodb-streams":  # a table's stream holds every write to it (botocore's name, as recorded)
        return [("dynamodb", target, ANY, WRITE)]
    return [(service, target, ANY, WRITE)]  # queues, streams, functions, buses: every call may change them


def _item_key(item: Any) -> str | None:
    """An item's key as the history spells it (``pk``, or ``pk|sk``)."""
    if not isinstance(item, dict):
        return None
    return "|".join(str(scalar(item[k])) for k in sorted(item) if k in ("pk", "sk")) or None


def _statements(op: str, params: dict) -> int:
    """How many statements a PartiQL request holds."""
    if op == "ExecuteStatement":
        return 1
    return len(params.get("Statements" if op == "BatchExecuteStatement" else "TransactStatements") or [])


def request_resources(service: str, op: str, params: dict, status: int) -> list[Resource]:
    """Every item one DynamoDB request really touched: each item of a transaction or a batch too.

    A transaction or a write refused by a condition wrote nothing: it only read its items.
    """
    if service != "dynamodb":
        return []
    mode = WRITE if status < 300 else READ
    touched = [(table, _item_key(body.get("Item") or body.get("Key")), mode)
               for table, _, body in table_writes(op, params)]
    if op == "TransactGetItems":
        touched += [((e.get("Get") or {}).get("TableName"), _item_key((e.get("Get") or {}).get("Key")), READ)
                    for e in params.get("TransactItems") or [] if isinstance(e, dict)]
    elif op == "BatchGetItem":
        touched += [(table, _item_key(key), READ) for table, body in (params.get("RequestItems") or {}).items()
                    for key in (body or {}).get("Keys") or []]
    elif op in DYNAMODB_READS or not touched or (op in PARTIQL_OPS and len(touched) < _statements(op, params)):
        # a PartiQL statement other than INSERT (SELECT, UPDATE, DELETE) is not read here: it counts as
        # touching the whole table
        touched.append((params.get("TableName"), None if op in ("Query", "Scan") else _item_key(params.get("Key")),
                        READ if op in DYNAMODB_READS else WRITE))
    return [("dynamodb", str(table) if table else ANY, key or ANY, m) for table, key, m in touched]


def resources_of(records: Sequence[dict[str, Any]], pool: str = ANY) -> tuple[set[Resource], bool]:
    """What the records a step added say it touched, and whether it may have touched anything.

    ``pool`` names the function whose containers an invocation's start and end take and give
    back: a cold start only finds that no container is free (two cold starts commute; the
    containers they create differ only in their names), a warm start takes one, an end frees one
    (two ends commute: each clears its own container's flag).
    """
    out: set[Resource] = set()
    for r in records:
        kind = r.get("type")
        if kind == RecordType.AWS:
            out.update(_aws(r))
        elif kind == RecordType.EFFECT:
            out.add(("provider", str(_PROVIDER.get(r.get("kind"), r.get("kind"))), ANY, WRITE))
        elif kind == RecordType.INVOKE_START:
            out.add(("containers", pool, ANY, READ if r.get("cold_start") else WRITE))
        elif kind == RecordType.INVOKE_END:
            out.add(("containers", pool, ANY, FREE))
        elif kind not in _PRIVATE:
            return out, True  # an accept, a delivery, a sweep: the source's own state, which we cannot see
    return out, False


def _clash(a: Resource, b: Resource) -> bool:
    """Two reads commute, and so do two updates that commute by nature (FREE); nothing else does."""
    return (a[0] == b[0] and not (a[3] == b[3] != WRITE) and (a[1] == b[1] or ANY in (a[1], b[1]))
            and (a[2] == b[2] or ANY in (a[2], b[2])))


def dependent(a: Step, b: Step) -> bool:
    """Do two steps conflict (the order they run in may matter)?"""
    if a.task == b.task or a.everything or b.everything:
        return True
    return any(_clash(x, y) for x in a.resources for y in b.resources)


# -- hidden state: what a step changed that no record shows --------------------------------------
def _probes(sb: Any) -> list[tuple[str, Callable[[], Any]]]:
    """The world's shared state outside AWS and the providers, each as (name, snapshot).

    A step that draws from a random number generator changes what every later draw gives (an
    eventually consistent read's staleness, botocore's retry jitter, moto's ids), and a fault's
    counter decides which call it hits: such steps conflict with every other step that does.
    """
    from moto.moto_api._internal import mock_random

    def faults() -> Any:
        nemesis = sb.faults
        return ([(a.seen, a.fired) for a in nemesis.aws],
                sorted((k, a.seen, a.fired) for k, a in nemesis.providers.items()))

    probes = [("random", random.getstate), ("moto-random", mock_random.getstate), ("world-random", sb.rng.getstate),
              ("replica-random", sb.replicas.rng.getstate), ("faults", faults)]
    jitter = getattr(sb.faults, "jitter", None)  # AWS latency drawn per call (the random policy's only, today)
    if jitter is not None:
        probes.append(("latency-random", jitter.getstate))
    return probes


#: How long moto's request ids are (``moto.utilities.aws_headers.gen_amzn_requestid_long``).
_REQUEST_ID_LENGTH = 52


def _request_ids_only(before: Any, after: Any, calls: int) -> bool:
    """Did moto's generator go from ``before`` to ``after`` by drawing request ids alone (up to ``calls + 1``)?

    moto draws a request id for every response. Two steps that draw one each leave the generator
    as it would be in the other order; only which response carried which id differs, and nothing
    reads it. Any other draw (a message id, a stream record's id) makes the step conflict.
    """
    from moto.moto_api._internal.moto_random import MotoRandom

    twin = MotoRandom()
    twin.setstate(before)
    for _ in range(calls + 2):
        if twin.getstate() == after:
            return True
        twin.get_random_string(length=_REQUEST_ID_LENGTH)
    return False


class _Tracer:
    """Cuts a run into steps as it goes: a step ends where the next one (or a tick) begins."""

    def __init__(self, sb: Any, policy: "DporPolicy"):
        self.sb, self.policy = sb, policy
        self.steps: list[Step] = []
        self.probes = _probes(sb)
        self._open: tuple[Any, int, int | None, list[Any]] | None = None
        self._decisions = 0
        #: What each request since the open step began really touched (the gateway tells every request).
        self._heard: list[Resource] = []
        policy.sync = self.close

    def install(self) -> None:
        """Hear of each step and each tick (a ``parts.SchedulerListener``), and of what each request touched."""
        self.sb.scheduler.listen(self)
        self.sb.gateway.on_request(lambda service, op, params, status: self._heard.extend(
            request_resources(service, op, params, status)))

    def step(self, task: Any, decided: bool) -> None:
        self.close()
        self.policy.started(task.name, decided)
        decision = self._decisions if decided else None
        self._decisions += decided
        self._open = (task, len(self.sb.history), decision, [snap() for _, snap in self.probes])
        self._heard = []

    def tick(self) -> None:
        self.close()
        self._open = (None, len(self.sb.history), None, [])
        self._heard = []

    def close(self) -> None:
        if self._open is None:
            return
        task, start, decision, before = self._open
        self._open = None
        step = Step(TICK, everything=True) if task is None else self._step(task, start, decision, before)
        self.steps.append(step)
        self.policy.observe(step)

    def _step(self, task: Any, start: int, decision: int | None, before: list[Any]) -> Step:
        inv = task.invocation
        if inv is None:  # a poller, a caller, a producer: it shares Python objects with the sources
            return Step(task.name, decision=decision, everything=True)
        records = self.sb.history[start:]
        found, unknown = resources_of(records, inv.function.config.name)
        found.update(self._heard)
        found.add(("invocation", inv.id, ANY, WRITE))  # its threads share its process
        if task.done:  # its container is free again (or dead)
            found.add(("containers", inv.function.config.name, ANY, FREE))
        for (name, snap), old in zip(self.probes, before):
            now = snap()
            if now != old and not (name == "moto-random" and _request_ids_only(old, now, len(records))):
                found.add(("hidden", name, ANY, WRITE))
        return Step(task.name, frozenset(found), decision, unknown)


# -- the policy: replay a prefix, then go on with sleep sets --------------------------------------
class Redundant(BaseException):
    """Every task that could go on is asleep: this schedule is equivalent to one already run.

    A BaseException, so that no ``except Exception`` on the way (a source, a scenario) swallows it.
    """


@dataclass
class _Node:
    """One decision on the current path: who could run, who was tried first, who still should be."""

    runnable: list[str]
    sleep: dict[str, Step]  # tasks whose step here is covered elsewhere, with that step
    done: dict[str, Step | None] = field(default_factory=dict)  # tried here, in order, with the step each took
    backtrack: set[str] = field(default_factory=set)
    chosen: str = ""

    def todo(self) -> list[str]:
        return [q for q in self.runnable if q in self.backtrack and q not in self.done and q not in self.sleep]


class DporPolicy(Policy):
    """Follows a prefix of task names at decisions, then picks a task that is not asleep.

    After the prefix it starts a fresh task first when one is awake (so schedules read as
    ``ScriptedPolicy`` scripts), else the first awake task. Sleep sets (Godefroid 1996): once a
    task's step was tried at a decision, trying the other tasks there puts it to sleep until a
    step conflicting with it runs; a run in which only sleeping tasks can go on is cut short.
    ``taken`` holds the picks as indices into the runnable list, so ``ReplayPolicy(taken)`` replays it.
    """

    name = "dpor"

    def __init__(self, prefix: Sequence[str] = (), nodes: list[_Node] | None = None):
        self.prefix = list(prefix)
        self.nodes = nodes if nodes is not None else []
        self.decisions: list[tuple[list[str], str]] = []
        self.taken: list[int] = []
        self.sleep: dict[str, Step] = {}
        self.redundant = False
        self.sync: Callable[[], None] = lambda: None  # ends the step that just ran (the tracer's)

    def choose(self, runnable):
        self.sync()
        d, names = len(self.decisions), [t.name for t in runnable]
        node = self._node(d, names)
        if d < len(self.prefix):
            want = self.prefix[d]
        else:
            want = self._awake(runnable)
            node.done[want] = None
            node.backtrack.add(want)
        node.chosen = want
        self.sleep = {q: s for q, s in {**node.sleep, **node.done}.items() if s is not None and q != want}
        task = runnable[names.index(want)]
        self.decisions.append((names, want))
        self.taken.append(names.index(want))
        self._chosen(task, runnable)
        return task

    def _node(self, d: int, names: list[str]) -> _Node:
        if d == len(self.nodes):
            self.nodes.append(_Node(names, dict(self.sleep)))
        node = self.nodes[d]
        if node.runnable != names:
            raise BadInput(f"the same schedule ran differently twice (decision {d + 1} offered {node.runnable}, "
                           f"then {names}): the handler depends on something outside the sandbox (real time, "
                           f"real randomness), so its schedules cannot be replayed")
        return node

    def _awake(self, runnable) -> str:
        awake = [t for t in runnable if t.name not in self.sleep]
        if not awake:
            self._cut()
        fresh = [t for t in awake if t.label == FRESH]
        return (fresh or awake)[0].name

    def _cut(self) -> None:
        self.redundant = True
        raise Redundant

    def _chosen(self, task, runnable) -> None:
        """A subclass's hook: ``task`` was picked among ``runnable``."""

    def started(self, task: str, decided: bool) -> None:
        """A step begins; one the scheduler gave the only runnable task may find it asleep."""
        if self.redundant or (not decided and task in self.sleep):
            self._cut()

    def observe(self, step: Step) -> None:
        """A step ended: it wakes the sleeping tasks whose step conflicts with it."""
        self.sleep = {q: s for q, s in self.sleep.items() if not dependent(s, step)}


# -- happens-before and races ---------------------------------------------------------------------
def _direct_predecessors(steps: list[Step], k: int, last: dict[str, int], barrier: int | None) -> list[int]:
    """The earlier steps ``k`` directly depends on: its task's last step, the last barrier, conflicts since."""
    step = steps[k]
    since = range(barrier + 1 if barrier is not None else 0, k)
    if step.everything:
        direct = set(since)
    else:
        direct = {j for j in since if steps[j].everything or dependent(steps[j], step)}
    if step.task in last:
        direct.add(last[step.task])
    if barrier is not None:
        direct.add(barrier)
    return sorted(direct)


def happens_before(steps: list[Step]) -> tuple[list[int], list[tuple[int, int]]]:
    """Each step's past (a bit mask of the steps that happen before it) and the races of the run.

    Steps ``j < k`` race when they conflict, belong to different tasks and nothing but their
    conflict orders them (no step ``m`` with ``j -> m -> k``): running ``k``'s task first could
    reverse them. A barrier (a tick, or a step that conflicts with everything) ends the search
    for conflicts: whatever came before it happens before it.
    """
    past, races = [0] * len(steps), []
    last: dict[str, int] = {}
    barrier: int | None = None
    for k, step in enumerate(steps):
        direct = _direct_predecessors(steps, k, last, barrier)
        for j in direct:
            past[k] |= past[j] | (1 << j)
        if not step.tick:
            races += [(j, k) for j in direct if _races(steps, past, direct, j, k)]
        last[step.task] = k
        if step.everything:
            barrier = k
    return past, races


def _races(steps: list[Step], past: list[int], direct: list[int], j: int, k: int) -> bool:
    if steps[j].task == steps[k].task or steps[j].tick:
        return False
    return not any(m != j and (past[m] >> j) & 1 for m in direct)


def initials(steps: list[Step], past: list[int], j: int, k: int) -> list[str]:
    """Tasks that can start a schedule that runs ``k`` before ``j`` (weak initials of notdep(j).k).

    Those are the tasks whose first step among the steps after ``j`` that do not depend on it,
    followed by ``k``, depends on none of those steps.
    """
    v = [e for e in range(j + 1, k) if not (past[e] >> j) & 1] + [k]
    mask = sum(1 << e for e in v)
    out: list[str] = []
    for e in v:
        if not past[e] & mask and steps[e].task not in out:
            out.append(steps[e].task)
    return out


def plan_reversals(trace: Trace, nodes: list[_Node]) -> None:
    """For each race, make sure the decision before its first step tries a task that reverses it."""
    for step in trace.steps:  # what each task tried at a decision did there (for the sleep sets)
        if step.decision is not None:
            nodes[step.decision].done[step.task] = step
    past, races = happens_before(trace.steps)
    for j, k in races:
        decision = trace.steps[j].decision
        if decision is None:
            continue  # its task was the only one that could run: no other order starts there
        node = nodes[decision]
        could = [q for q in initials(trace.steps, past, j, k) if q in node.runnable]
        if not could:  # the reversing task could not run there yet: try every task (Flanagan-Godefroid)
            node.backtrack.update(node.runnable)
        elif not node.backtrack.intersection(could):
            node.backtrack.add(trace.steps[k].task if trace.steps[k].task in could else could[0])


# -- the search -------------------------------------------------------------------------------------
@dataclass
class Search:
    """How a reduced search went: complete schedules run, runs cut short, and whether it stopped early."""

    schedules: int = 0
    redundant: int = 0  # runs cut short by the sleep sets (their schedules are covered by others)
    truncated: bool = False


def _next_prefix(nodes: list[_Node]) -> list[str] | None:
    """The deepest decision on the current path with a task still to try (depth first)."""
    for depth in range(len(nodes) - 1, -1, -1):
        todo = nodes[depth].todo()
        if todo:
            del nodes[depth + 1:]
            nodes[depth].done[todo[0]] = None
            return [n.chosen for n in nodes[:depth]] + [todo[0]]
    return None


def search(run: Callable[[DporPolicy], Trace], max_schedules: int = 5000, *,
           on_schedule: Callable[[DporPolicy, Trace], None] | None = None,
           policy: type[DporPolicy] = DporPolicy) -> Search:
    """Run ``run(policy)`` once per schedule the reduction finds worth trying.

    ``run`` runs the case under the policy and returns its ``Trace`` (with ``verdict`` None when
    the policy cut it short); ``on_schedule(policy, trace)`` hears of each complete schedule.
    Stops after ``max_schedules`` complete schedules (``truncated`` says whether any were left).
    """
    found = Search()
    nodes: list[_Node] = []
    prefix: list[str] | None = []
    while prefix is not None:
        chooser = policy(prefix, nodes)
        trace = run(chooser)
        plan_reversals(trace, nodes)
        if trace.verdict is None:
            found.redundant += 1
        else:
            found.schedules += 1
            if on_schedule is not None:
                on_schedule(chooser, trace)
        prefix = _next_prefix(nodes)
        if prefix is not None and found.schedules >= max_schedules:
            found.truncated = True
            break
    return found


def run_traced(scenario: Any, handler: Any, policy: DporPolicy, *, seed: int = 0,
               settings: Mapping[str, SettingValue] | None = None, watchdog: float | None = None) -> Trace:
    """One run of a scenario under ``policy``, cut into steps, with what each step touched."""
    from ..core.scheduler import DEFAULT_WATCHDOG
    from ..scenarios.base import open_world, run_in_world
    from ..scenarios.catalog import get_scenario

    sc = get_scenario(scenario) if isinstance(scenario, str) else scenario
    cfg = sc.resolve(settings)
    tracers: list[_Tracer] = []

    @contextlib.contextmanager
    def traced(sb: Any) -> Iterator[None]:
        tracers.append(_Tracer(sb, policy))
        tracers[-1].install()
        yield
        tracers[-1].close()  # the last step ends with the drive, before the world closes

    verdict = None
    try:
        world = open_world(sc, cfg, seed, policy, DEFAULT_WATCHDOG if watchdog is None else watchdog)
        verdict = run_in_world(world, sc, handler, cfg, during=traced).status
    except Redundant:
        pass
    return Trace(verdict, tracers[0].steps, list(policy.decisions))
