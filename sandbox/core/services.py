"""Effect services: the things a handler must not do twice.

``send_confirmation_email(order)`` and ``send_cancellation_email(order)`` write to an
outbox; ``charge_card(order,
idempotency_key=None)`` charges through a payment API that, like real payment APIs,
returns the original charge when it sees an idempotency key again. Each call is a yield
point, takes virtual time, and is recorded with the order's business key, the virtual
time and the invocation that made it.

What goes wrong at a provider is the nemesis's business (``sandbox.core.faults.ProviderFault``):
a provider can fail without performing the effect, be slow, or hang. A call cut off by
the function's deadline never reached the provider, so by default it performs nothing;
with ``indefinite=True`` it is performed but unacknowledged (Maelstrom's indefinite outcome).
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

from ..errors import BadInput, LambdaTimeout, ProviderError
from ..vocab import Effect, EffectStatus
from . import active
from .jsonvalues import json_number
from .scheduler import current_task

if TYPE_CHECKING:
    from ..parts import Clock, RunningInvocation, TaskScheduler
    from .faults import Nemesis, ProviderCall
    from .history import History

#: How long a provider that hangs keeps its caller waiting: past any Lambda deadline.
HANG_SECONDS = 10 ** 9
#: The scheduler's word for the step that takes a provider's answer: "email answer" follows "email", the request.
ANSWER = "answer"


class EmailProviderError(ProviderError):
    """The email provider refused the message; nothing was sent."""


class PaymentError(ProviderError):
    """The payment API declined or failed; nothing was charged."""


class IdempotencyKeyReused(PaymentError):
    """The same idempotency key came back with a different request (a different amount)."""


@dataclass
class ServiceTimings:
    """Virtual time each provider call takes, in seconds."""

    email: float = 0.2
    charge: float = 0.3


#: The longest orderId the services take (far longer than any the scenarios make).
MAX_ORDER_ID = 256
#: The longest idempotency key the payment API takes: Stripe's keys are "up to 255 characters long"
#: (https://docs.stripe.com/api/idempotent_requests).
MAX_IDEMPOTENCY_KEY = 255


def _order_key(order: Any, what: str) -> str:
    if not isinstance(order, dict):
        raise BadInput(f"{what} needs an order dict with orderId, email and amount; got {type(order).__name__}")
    missing = [k for k in ("orderId", "email", "amount") if k not in order]
    if missing:
        raise BadInput(f"{what}: the order is missing {', '.join(missing)}: {str(order)[:200]}")
    order_id = order["orderId"]
    # The order's key in the history and the checker: a short string (or a whole number), as an event carries it.
    if isinstance(order_id, bool) or not isinstance(order_id, (str, int)) or len(str(order_id)) > MAX_ORDER_ID:
        raise BadInput(f"{what}: orderId must be a string of at most {MAX_ORDER_ID} characters, got "
                       f"{type(order_id).__name__} {str(order_id)[:40]!r}")
    return str(order_id)


def _fingerprint(order: dict) -> str:
    return hashlib.sha256(json.dumps(order, sort_keys=True, default=str).encode()).hexdigest()[:12]


class Email(TypedDict):
    """An email the provider sent: its id, to whom, for which order (a cancellation says so in its subject)."""

    messageId: str
    to: str
    orderId: str
    subject: NotRequired[str]


class SentEmail(Email):
    """An email in the outbox, with when it went (virtual seconds)."""

    t: float


class Charge(TypedDict):
    """A charge the payment API made, and the idempotency key it was made with."""

    chargeId: str
    orderId: str
    amount: Any  # the order's, as the handler passed it
    idempotencyKey: str | None


class ChargeMade(Charge):
    """A charge in the ledger, with when it was made (virtual seconds)."""

    t: float


class _KeyedCharge(Charge):
    """A charge kept under its idempotency key, with what the request held, to refuse the key's reuse."""

    fingerprint: str


class EffectArgs(TypedDict, total=False):
    """An effect call's arguments, as an execution environment sends them: the order, and a charge's key."""

    order: Any  # the handler's order, the services' to judge (a BadInput answered to the handler)
    idempotency_key: str | None


class Services:
    """The email outbox and the payment API of one world."""

    def __init__(self, clock: "Clock", scheduler: "TaskScheduler", history: "History", faults: "Nemesis"):
        self.clock, self.scheduler, self.history, self.faults = clock, scheduler, history, faults
        self.timings = ServiceTimings()
        self.outbox: list[SentEmail] = []
        self.charges: list[ChargeMade] = []
        self._by_idem_key: dict[str, _KeyedCharge] = {}

    # -- the calls --------------------------------------------------------------------
    def _call(self, kind: str, key: str, perform: Callable[[], tuple[Mapping[str, object], str]]) -> Any:
        task = current_task()
        inv: RunningInvocation | None = task.invocation if task is not None else None
        self.scheduler.check_alive()  # a stopped invocation's code reaches no provider
        fault = self.faults.provider_call(kind, key)
        # A hung provider never answers; the caller only gets back control at its deadline.
        duration = HANG_SECONDS if fault.hang else self._duration(kind, fault, inv)
        self.scheduler.yield_point(kind)
        try:
            # the step that takes the provider's answer: "email answer", after "email" sent the request
            self.scheduler.sleep(duration, label=f"{kind} {ANSWER}")
        except LambdaTimeout:
            if fault.indefinite:
                # The provider got the request even though the caller never heard back.
                result, _ = perform()
                self._record(kind, key, inv, EffectStatus.INDEFINITE, result)
            else:  # the call was out, unanswered, when the deadline came: recorded, so a picture can show it
                self._record(kind, key, inv, EffectStatus.UNANSWERED,
                             {"reason": "no answer before the function's deadline; nothing was sent"})
            raise
        if fault.fail:
            self._record(kind, key, inv, EffectStatus.FAILED, {"reason": "provider error (injected)"})
            mail = kind != Effect.CHARGE
            error = EmailProviderError if mail else PaymentError
            raise error(f"{kind} provider failed for order {key} (nothing was {'sent' if mail else 'charged'})")
        result, status = perform()
        self._record(kind, key, inv, status, result)
        if inv is not None:
            inv.after_effect(kind)
        return result

    def _duration(self, kind: str, fault: "ProviderCall", inv: "RunningInvocation | None") -> float:
        duration = getattr(self.timings, Effect.EMAIL if kind == Effect.CANCELLATION else kind) + fault.extra_seconds
        deadline = inv.deadline() if inv is not None else None
        if fault.answer_before_deadline is not None and deadline is not None:
            # Whatever else the handler did first, the answer lands just inside its deadline.
            duration = max(0.0, deadline - self.clock.elapsed() - fault.answer_before_deadline)
        return duration

    def _record(self, kind: str, key: str, inv: "RunningInvocation | None", status: str,
                result: Mapping[str, object] | None) -> None:
        self.history.effect(self.clock.elapsed(), inv=inv.id if inv else None, kind=kind, key=key, status=status,
                            detail=dict(result or {}))

    def send_confirmation_email(self, order: dict) -> dict:
        key = _order_key(order, "send_confirmation_email")

        def perform() -> tuple[Email, EffectStatus]:
            message: Email = {"messageId": f"email-{len(self.outbox) + 1:04d}", "to": order["email"], "orderId": key}
            self.outbox.append({**message, "t": self.clock.elapsed()})
            return message, EffectStatus.DONE

        return self._call(Effect.EMAIL, key, perform)

    def send_cancellation_email(self, order: dict) -> dict:
        key = _order_key(order, "send_cancellation_email")

        def perform() -> tuple[Email, EffectStatus]:
            message: Email = {"messageId": f"email-{len(self.outbox) + 1:04d}", "to": order["email"], "orderId": key,
                              "subject": "cancelled"}
            self.outbox.append({**message, "t": self.clock.elapsed()})
            return message, EffectStatus.DONE

        # The same email provider, so it takes as long as a confirmation.
        return self._call(Effect.CANCELLATION, key, perform)

    def charge_card(self, order: dict, idempotency_key: str | None = None) -> dict:
        key = _order_key(order, "charge_card")
        if idempotency_key is not None and not isinstance(idempotency_key, str):
            raise BadInput(f"idempotency_key must be a string, got {type(idempotency_key).__name__}")
        if idempotency_key is not None and len(idempotency_key) > MAX_IDEMPOTENCY_KEY:
            raise BadInput(f"idempotency_key must be at most {MAX_IDEMPOTENCY_KEY} characters, got "
                           f"{len(idempotency_key):,}")
        return self._call(Effect.CHARGE, key, lambda: self._charge(order, key, idempotency_key))

    def _charge(self, order: dict, key: str, idempotency_key: str | None) -> tuple[Charge, str]:
        fingerprint = _fingerprint({"amount": order["amount"], "orderId": key})
        if idempotency_key is not None and idempotency_key in self._by_idem_key:
            first = self._by_idem_key[idempotency_key]
            if first["fingerprint"] != fingerprint:
                raise IdempotencyKeyReused(
                    f"idempotency key {idempotency_key!r} was first used for a different request "
                    f"(amount {first['amount']}), now amount {order['amount']}")
            return ({"chargeId": first["chargeId"], "orderId": first["orderId"], "amount": first["amount"],
                     "idempotencyKey": first["idempotencyKey"]}, EffectStatus.DEDUPLICATED)
        charge: Charge = {"chargeId": f"ch_{len(self.charges) + 1:04d}", "orderId": key, "amount": order["amount"],
                  "idempotencyKey": idempotency_key}
        self.charges.append({**charge, "t": self.clock.elapsed()})
        if idempotency_key is not None:
            self._by_idem_key[idempotency_key] = {**charge, "fingerprint": fingerprint}
        return charge, EffectStatus.DONE


#: In an execution environment (its own process), where effects go: ``call(kind, args)`` asks the world.
_remote: Callable[[str, EffectArgs], Any] | None = None


def connect(call: Callable[[str, EffectArgs], Any]) -> None:
    """Send this process's effects to the world with ``call`` (an execution environment's channel)."""
    global _remote
    _remote = call


def _plain(value: Any) -> Any:
    """An order as JSON carries it (a DynamoDB resource hands back numbers as Decimal)."""
    return json.loads(json.dumps(value, default=json_number))


def _services() -> Services:
    world = active.current()
    if world is None:
        raise BadInput("effect services work inside a world: use `with Sandbox(seed=...) as sb:` first")
    return world.services


def send_confirmation_email(order: dict) -> dict:
    """Send the order's confirmation email. Returns ``{"messageId", "to", "orderId"}``."""
    if _remote is not None:
        return _remote("send_confirmation_email", {"order": _plain(order)})
    return _services().send_confirmation_email(order)


def send_cancellation_email(order: dict) -> dict:
    """Tell the customer their order is cancelled. Returns ``{"messageId", "to", "orderId", "subject"}``."""
    if _remote is not None:
        return _remote("send_cancellation_email", {"order": _plain(order)})
    return _services().send_cancellation_email(order)


def charge_card(order: dict, idempotency_key: str | None = None) -> dict:
    """Charge the order's amount. With an idempotency key, a repeat returns the first charge."""
    if _remote is not None:
        return _remote("charge_card", {"order": _plain(order), "idempotency_key": idempotency_key})
    return _services().charge_card(order, idempotency_key=idempotency_key)
