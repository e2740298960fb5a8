"""Every interleaving that matters, and no more: dynamic partial-order reduction (DPOR).

Exhaustive exploration (``explore.py``) tries every order in which concurrent tasks can take
their steps. Most of those orders differ only in independent steps (two claims on different
keys, an email and a read of another table) and end alike. DPOR, as Flanagan and Godefroid
defined it and as Loom (Rust) and CHESS use it, runs one schedule, looks at which steps touched
the same thing, and schedules again only the reorderings of steps that conflict:

- a step is what a task does from one yield point to the next; what it touched is read from
  the history records it added: an AWS request (DynamoDB: the table and the item key, or the
  whole table for a Query or Scan; SQS, Kinesis, Lambda: the queue, stream or function) or an
  effect (its kind and order);
- two steps of different tasks conflict when they touched the same thing;
- for each step, the last earlier step of another task it conflicts with marks a decision
  point where the later task should also have been tried first (a backtrack point).

It assumes tasks interact only through AWS and the effect services: true for handler files,
each in its own process (``sandbox.process``). Handlers that share Python objects (a function
defined in a notebook and its globals) need the full search.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import BadInput
from .policies import Policy
from .vocab import RecordType, Status

Resource = tuple[str, ...]


@dataclass
class Step:
    task: str
    resources: list[Resource]
    decision: int | None  # index of the decision that chose it, None when it was the only runnable task


@dataclass
class Trace:
    """One run: its verdict, its steps and its decisions (runnable names, the one chosen)."""

    verdict: str
    steps: list[Step] = field(default_factory=list)
    decisions: list[tuple[list[str], str]] = field(default_factory=list)


class NamedReplayPolicy(Policy):
    """Follows a prefix of task names at decision points, then always picks the first runnable task."""

    name = "replay"

    def __init__(self, prefix: Sequence[str] = ()):
        self.prefix = list(prefix)
        self.decisions: list[tuple[list[str], str]] = []

    def choose(self, runnable):
        i, names = len(self.decisions), [t.name for t in runnable]
        want = self.prefix[i] if i < len(self.prefix) else names[0]
        if want not in names:
            raise BadInput(f"replay lost its way at decision {i + 1}: {want!r} is not runnable ({names})")
        self.decisions.append((names, want))
        return runnable[names.index(want)]


#: DynamoDB operations that only read: two reads of the same item commute.
READS = ("GetItem", "Query", "Scan", "BatchGetItem", "TransactGetItems", "DescribeTable", "DescribeTimeToLive")


def resources_of(records: list[dict[str, Any]]) -> list[Resource]:
    """What a step touched, read from the records it added: (service, target, key, "r" or "w").

    Effects are left out on purpose: two emails for one order are a duplicate in either order,
    so their order never changes a verdict.
    """
    out: list[Resource] = []
    for r in records:
        if r.get("type") != RecordType.AWS:
            continue
        service, target, key, op = r.get("service"), r.get("target"), r.get("key"), r.get("op")
        if service == "dynamodb":
            whole = op in ("Query", "Scan") or key is None
            out.append(("dynamodb", str(target), "*" if whole else str(key), "r" if op in READS else "w"))
        else:
            out.append((str(service), str(target), "*", "w"))  # queues, streams, functions: every call changes them
    return out


def _clash(a: Resource, b: Resource) -> bool:
    same = a[:2] == b[:2] and (a[2] == b[2] or "*" in (a[2], b[2]))
    return same and "w" in (a[3], b[3])


def conflict(a: list[Resource], b: list[Resource]) -> bool:
    return any(_clash(x, y) for x in a for y in b)


@dataclass
class _Node:
    runnable: list[str]
    done: set[str] = field(default_factory=set)
    backtrack: set[str] = field(default_factory=set)


def _backtrack_points(trace: Trace, nodes: dict[tuple[str, ...], _Node]) -> None:
    """For each step, ask to try its task first at the decision of the last step it conflicts with."""
    prefixes = [tuple(chosen for _, chosen in trace.decisions[:i]) for i in range(len(trace.decisions))]
    for k, step in enumerate(trace.steps):
        if not step.resources:
            continue
        for j in range(k - 1, -1, -1):
            earlier = trace.steps[j]
            if earlier.task == step.task or not conflict(earlier.resources, step.resources):
                continue
            if earlier.decision is not None:
                node = nodes[prefixes[earlier.decision]]
                node.backtrack |= {step.task} if step.task in node.runnable else set(node.runnable)
            break


def _next_prefix(nodes: dict[tuple[str, ...], _Node]) -> tuple[str, ...] | None:
    """The deepest decision with a task still to try first (depth-first)."""
    for prefix in sorted(nodes, key=len, reverse=True):
        node = nodes[prefix]
        todo = sorted(node.backtrack - node.done, key=node.runnable.index)
        if todo:
            node.done.add(todo[0])
            return prefix + (todo[0],)
    return None


@dataclass
class Reduced:
    """What a reduced exploration found."""

    schedules: int = 0
    broken: int = 0
    verdicts: dict[str, int] = field(default_factory=dict)
    first_broken: list[tuple[list[str], str]] | None = None  # the decisions of the first broken schedule
    truncated: bool = False


def explore_reduced(run: Callable[[NamedReplayPolicy], Trace], max_schedules: int = 5000) -> Reduced:
    """Run ``run(policy)`` once per schedule that DPOR finds worth trying; count verdicts."""
    result = Reduced()
    nodes: dict[tuple[str, ...], _Node] = {}
    prefix: tuple[str, ...] | None = ()
    while prefix is not None:
        policy = NamedReplayPolicy(prefix)
        trace = run(policy)
        result.schedules += 1
        result.verdicts[trace.verdict] = result.verdicts.get(trace.verdict, 0) + 1
        if trace.verdict != Status.VALID and result.first_broken is None:
            result.first_broken = list(trace.decisions)
        result.broken += trace.verdict != Status.VALID
        path: tuple[str, ...] = ()
        for names, chosen in trace.decisions:
            nodes.setdefault(path, _Node(names)).done.add(chosen)
            path += (chosen,)
        _backtrack_points(trace, nodes)
        prefix = _next_prefix(nodes)
        if prefix is not None and result.schedules >= max_schedules:
            result.truncated = True
            break
    return result


def run_traced(scenario: Any, handler: Any, policy: NamedReplayPolicy, *, seed: int = 0,
               settings: dict | None = None) -> Trace:
    """One run of a scenario under ``policy``, with what each step touched."""
    from .checker import check
    from .scenarios.base import deploy, open_world
    from .scenarios.catalog import get_scenario
    from .scheduler import DEFAULT_WATCHDOG

    sc = get_scenario(scenario) if isinstance(scenario, str) else scenario
    cfg = sc.resolve(settings)
    marks: list[tuple[str, int, bool]] = []
    with open_world(sc, cfg, seed, policy, DEFAULT_WATCHDOG) as sb:
        sb.scheduler.step_listener = lambda task, decided: marks.append((task.name, len(sb.history), decided))
        sc.drive(sb, deploy(sb, handler, None, cfg), cfg)
        history = sb.history
    return Trace(check(history).status, _steps(marks, history.events), list(policy.decisions))


def _steps(marks: list[tuple[str, int, bool]], records: list[dict]) -> list[Step]:
    """Cut the history at each step's start; number the steps chosen at decisions, in order."""
    ends = [seq for _, seq, _ in marks[1:]] + [len(records)]
    steps, decision = [], 0
    for (task, start, decided), end in zip(marks, ends):
        steps.append(Step(task, resources_of(records[start:end]), decision if decided else None))
        decision += decided
    return steps
