"""The nemesis: every fault the sandbox can inject, declared as data, owned in one place.

Maelstrom keeps faults apart from workloads and checkers; so does the sandbox. A scenario
declares what goes wrong as a list of these values and hands it to ``world.faults``:

- ``AwsFault``: one AWS request is throttled, fails with a 5xx, or times out *after*
  taking effect (the caller never hears that it worked);
- ``ProviderFault``: an effect provider (email, payments) refuses, is slow, hangs, or
  takes a call that its caller gave up on;
- ``CrashPlan``: the execution environment dies at a chosen point of an invocation;
- ``Latency``: requests to a service take virtual time on the network.

Faults act where every request and effect passes (the gateway and the services), so they
reach a handler whatever boto3 session or client it builds.
"""
from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from ..errors import BadInput, InvocationCrashed
from ..vocab import Effect

#: "transaction-conflict" and "validation": errors DynamoDB's PutItem, UpdateItem and DeleteItem may return besides
#: ConditionalCheckFailedException (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_PutItem.html#API_PutItem_Errors,
#: https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/CommonErrors.html): a handler that tolerates only
#: the refusal of its condition must let them fail the invocation.
AWS_FAULT_KINDS = ("throttle", "5xx", "timeout-applied", "transaction-conflict", "validation")


@dataclass(frozen=True)
class AwsFault:
    """The ``nth`` matching request (and the ``times - 1`` after it) goes wrong.

    ``kind``: "throttle" (HTTP 400, the service's throughput error), "5xx" (HTTP 500),
    "timeout-applied" (moto serves it, then the caller gets ``ReadTimeoutError``), "transaction-conflict"
    (HTTP 400 TransactionConflictException: an ongoing transaction holds the item) or "validation" (HTTP 400
    ValidationException: DynamoDB refused the request as written).
    ``target`` narrows it to one table, queue or stream; ``invocation`` to one invocation.
    """

    kind: str
    service: str
    op: str
    target: str | None = None
    nth: int = 1
    times: int = 1
    invocation: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in AWS_FAULT_KINDS:
            raise BadInput(f"unknown AWS fault {self.kind!r}; choose one of {AWS_FAULT_KINDS}")
        if self.nth < 1 or self.times < 1:
            raise BadInput(f"an AWS fault needs nth >= 1 and times >= 1, got nth={self.nth}, times={self.times}")


@dataclass(frozen=True)
class ProviderFault:
    """What goes wrong for one order at one effect provider.

    ``fail``        refuse this many calls (the first ones), performing nothing;
    ``extra_seconds``  slow: added to every call;
    ``hang``        never answer: the caller waits until its own deadline;
    ``indefinite``  a call cut off by the caller's deadline still takes effect;
    ``answer_before_deadline``  answer only this many seconds before the caller's deadline;
    ``calls``       the fault covers this many calls, then the provider is healthy again
                    (None: every call). ``fail`` counts within them.
    """

    effect: str
    order: str
    fail: int = 0
    extra_seconds: float = 0.0
    hang: bool = False
    indefinite: bool = False
    answer_before_deadline: float | None = None
    calls: int | None = None

    def __post_init__(self) -> None:
        if self.effect not in Effect._value2member_map_:
            raise BadInput(f"effect kind must be one of {', '.join(Effect)}, not {self.effect!r}")
        object.__setattr__(self, "order", str(self.order))


@dataclass(frozen=True)
class CrashPlan:
    """Where an injected crash stops an invocation.

    - ``after_aws_calls=N``: right after the N-th AWS call of the invocation;
    - ``after_effect="charge"``: right after that effect is performed;
    - ``before_call="dynamodb.UpdateItem"``: just before that call is sent;
    - ``hold_after_return=5.0``: not a crash: once the handler has returned, an extension keeps
      the Invoke phase open this many seconds more. The function's timeout limits "the duration
      of the entire Invoke phase" (https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html),
      so past it the invocation times out with all of the handler's work done.
    """

    after_aws_calls: int | None = None
    after_effect: str | None = None
    before_call: str | None = None
    hold_after_return: float | None = None

    def before_aws(self, label: str) -> None:
        if self.before_call and label.endswith(self.before_call):
            raise InvocationCrashed(f"crashed before {label} (injected)")

    def after_aws(self, label: str, calls: int) -> None:
        if self.after_aws_calls is not None and calls >= self.after_aws_calls:
            raise InvocationCrashed(f"crashed after AWS call #{calls} ({label}) (injected)")

    def after(self, effect: str) -> None:
        if self.after_effect == effect:
            raise InvocationCrashed(f"crashed right after the {effect} (injected)")


@dataclass(frozen=True)
class Latency:
    """Requests to ``service`` made by invocations take ``seconds`` of virtual time first."""

    service: str
    seconds: float

    def __post_init__(self) -> None:
        if not self.seconds >= 0:
            raise BadInput(f"latency must be 0 seconds or more, got {self.seconds!r}")


_F = TypeVar("_F", AwsFault, ProviderFault)


@dataclass
class _Armed(Generic[_F]):
    """A fault with its counters: how often it matched, and fired."""

    fault: _F
    seen: int = 0
    fired: int = 0


@dataclass
class Nemesis:
    """The faults of one world and their counters. ``add`` takes any of the values above."""

    aws: list[_Armed[AwsFault]] = field(default_factory=list)
    providers: dict[tuple[str, str], _Armed[ProviderFault]] = field(default_factory=dict)
    latency: dict[str, float] = field(default_factory=dict)
    #: Seconds every AWS request from a handler takes when no ``Latency`` names its service, and
    #: the generator that varies it (half to one and a half times; None: always exactly that).
    round_trip: float = 0.0
    jitter: "random.Random | None" = None

    def add(self, *faults: "AwsFault | ProviderFault | Latency | Iterable") -> None:
        for fault in faults:
            if isinstance(fault, AwsFault):
                self.aws.append(_Armed(fault))
            elif isinstance(fault, ProviderFault):
                self.providers[(fault.effect, fault.order)] = _Armed(fault)
            elif isinstance(fault, Latency):
                self.latency[fault.service] = fault.seconds
            elif isinstance(fault, (list, tuple)):
                self.add(*fault)
            else:
                raise BadInput(f"not a fault: {fault!r} (AwsFault, ProviderFault or Latency)")

    # -- asked by the gateway ---------------------------------------------------------
    def aws_fault(self, service: str, op: str, target: str | None, inv: str | None) -> AwsFault | None:
        """The fault this request triggers, if any (counts it as seen)."""
        for armed in self.aws:
            f = armed.fault
            if (service, op) != (f.service, f.op) or (f.target is not None and target != f.target):
                continue
            if f.invocation is not None and inv != f.invocation:
                continue
            armed.seen += 1
            if armed.seen >= f.nth and armed.fired < f.times:
                armed.fired += 1
                return f
        return None

    def latency_of(self, service: str) -> float:
        if service in self.latency:
            return self.latency[service]
        if self.jitter is None or not self.round_trip:
            return self.round_trip
        return round(self.round_trip * (0.5 + self.jitter.random()), 6)

    # -- asked by the effect services ---------------------------------------------------
    def provider_call(self, effect: str, order: str) -> "ProviderCall":
        """What the next call to this provider for this order does (counts the call)."""
        armed = self.providers.get((effect, order))
        if armed is None:
            return ProviderCall()
        f = armed.fault
        armed.seen += 1
        if f.calls is not None and armed.seen > f.calls:
            return ProviderCall()
        return ProviderCall(fail=armed.seen <= f.fail, extra_seconds=f.extra_seconds, hang=f.hang,
                            indefinite=f.indefinite, answer_before_deadline=f.answer_before_deadline)


@dataclass(frozen=True)
class ProviderCall:
    """The fault one provider call meets (the default: none)."""

    fail: bool = False
    extra_seconds: float = 0.0
    hang: bool = False
    indefinite: bool = False
    answer_before_deadline: float | None = None
