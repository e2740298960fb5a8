"""Effect services: the things a handler must not do twice.

``send_confirmation_email(order)`` writes to an outbox; ``charge_card(order,
idempotency_key=None)`` charges through a payment API that, like real payment APIs,
returns the original charge when it sees an idempotency key again. Each call is a yield
point, takes virtual time, and is recorded with the order's business key, the virtual
time and the invocation that made it.

Faults are set per order id (``world.services.fail(...)``): a provider can fail without
performing the effect, be slow, or hang. A call cut off by the function's deadline never
reached the provider, so by default it performs nothing; with ``indefinite=True`` it is
performed but unacknowledged (Maelstrom's indefinite outcome).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import BadInput, LambdaTimeout, ProviderError

if TYPE_CHECKING:
    from .world import Sandbox


class EmailProviderError(ProviderError):
    """The email provider refused the message; nothing was sent."""


class PaymentError(ProviderError):
    """The payment API declined or failed; nothing was charged."""


class IdempotencyKeyReused(PaymentError):
    """The same idempotency key came back with a different request (a different amount)."""


@dataclass
class ProviderFault:
    """What goes wrong for one order at one provider."""

    fail: int = 0  # fail this many calls, performing nothing
    extra_seconds: float = 0.0  # slow: added to every call
    hang: bool = False  # never answers: the caller waits until its own deadline
    indefinite: bool = False  # a call cut off by the deadline still takes effect
    calls: int = 0
    answer_before_deadline: float | None = None  # slow: answers only this many seconds before the caller's deadline


@dataclass
class ServiceTimings:
    """Virtual time each provider call takes, in seconds."""

    email: float = 0.2
    charge: float = 0.3


def _order_key(order: Any, what: str) -> str:
    if not isinstance(order, dict):
        raise BadInput(f"{what} needs an order dict with orderId, email and amount; got {type(order).__name__}")
    missing = [k for k in ("orderId", "email", "amount") if k not in order]
    if missing:
        raise BadInput(f"{what}: the order is missing {', '.join(missing)}: {order!r}")
    return str(order["orderId"])


def _fingerprint(order: dict) -> str:
    return hashlib.sha256(json.dumps(order, sort_keys=True, default=str).encode()).hexdigest()[:12]


class Services:
    """The email outbox and the payment API of one world."""

    def __init__(self, world: "Sandbox"):
        self.world = world
        self.timings = ServiceTimings()
        self.outbox: list[dict[str, Any]] = []
        self.charges: list[dict[str, Any]] = []
        self._by_idem_key: dict[str, dict[str, Any]] = {}
        self._faults: dict[tuple[str, str], ProviderFault] = {}

    # -- configuring faults ----------------------------------------------------------
    def fault(self, kind: str, order_id: str, **settings: Any) -> ProviderFault:
        """Configure a fault for ``kind`` ("email" or "charge") calls about ``order_id``."""
        if kind not in ("email", "charge"):
            raise BadInput(f"effect kind must be 'email' or 'charge', not {kind!r}")
        fault = ProviderFault(**settings)
        self._faults[(kind, str(order_id))] = fault
        return fault

    # -- the calls --------------------------------------------------------------------
    def _call(self, kind: str, key: str, order: dict, perform) -> Any:
        world = self.world
        inv = world.runtime.current_invocation()
        fault = self._faults.get((kind, key))
        duration = getattr(self.timings, kind) + (fault.extra_seconds if fault else 0.0)
        if fault is not None and fault.answer_before_deadline is not None and inv is not None \
                and inv.task is not None and inv.task.deadline is not None:
            # Whatever else the handler did first, the answer lands just inside its deadline.
            duration = max(0.0, inv.task.deadline - world.clock.elapsed() - fault.answer_before_deadline)
        if fault is not None:
            fault.calls += 1
        world.scheduler.yield_point(kind)
        hang = fault is not None and fault.hang
        try:
            # A hung provider never answers; the caller only gets back control at its deadline.
            world.scheduler.sleep(10 ** 9 if hang else duration, label=f"{kind} call")
        except LambdaTimeout:
            if fault is not None and fault.indefinite:
                # The provider got the request even though the caller never heard back.
                result, _ = perform()
                self._record(kind, key, inv, "indefinite", result, order)
            raise
        if fault is not None and fault.calls <= fault.fail:
            self._record(kind, key, inv, "failed", {"reason": "provider error (injected)"}, order)
            error = EmailProviderError if kind == "email" else PaymentError
            raise error(f"{kind} provider failed for order {key} (nothing was {'sent' if kind == 'email' else 'charged'})")
        result, status = perform()
        self._record(kind, key, inv, status, result, order)
        if inv is not None:
            inv.after_effect(kind)
        return result

    def _record(self, kind, key, inv, status, result, order) -> None:
        detail = dict(result or {})
        self.world.history.append("effect", self.world.clock.elapsed(), inv=inv.id if inv else None,
                                  kind=kind, key=key, status=status, detail=detail)

    def send_confirmation_email(self, order: dict) -> dict:
        key = _order_key(order, "send_confirmation_email")

        def perform():
            message = {"messageId": f"email-{len(self.outbox) + 1:04d}", "to": order["email"], "orderId": key}
            self.outbox.append({**message, "t": self.world.clock.elapsed()})
            return message, "done"

        return self._call("email", key, order, perform)

    def charge_card(self, order: dict, idempotency_key: str | None = None) -> dict:
        key = _order_key(order, "charge_card")
        if idempotency_key is not None and not isinstance(idempotency_key, str):
            raise BadInput(f"idempotency_key must be a string, got {type(idempotency_key).__name__}")

        def perform():
            fingerprint = _fingerprint({"amount": order["amount"], "orderId": key})
            if idempotency_key is not None and idempotency_key in self._by_idem_key:
                first = self._by_idem_key[idempotency_key]
                if first["fingerprint"] != fingerprint:
                    raise IdempotencyKeyReused(
                        f"idempotency key {idempotency_key!r} was first used for a different request "
                        f"(amount {first['amount']}), now amount {order['amount']}"
                    )
                return {k: v for k, v in first.items() if k != "fingerprint"}, "deduplicated"
            charge = {"chargeId": f"ch_{len(self.charges) + 1:04d}", "orderId": key, "amount": order["amount"],
                      "idempotencyKey": idempotency_key}
            self.charges.append({**charge, "t": self.world.clock.elapsed()})
            if idempotency_key is not None:
                self._by_idem_key[idempotency_key] = {**charge, "fingerprint": fingerprint}
            return charge, "done"

        return self._call("charge", key, order, perform)


def _world() -> "Sandbox":
    from .gateway import active_world

    world = active_world()
    if world is None:
        raise BadInput("effect services work inside a world: use `with Sandbox(seed=...) as sb:` first")
    return world


def send_confirmation_email(order: dict) -> dict:
    """Send the order's confirmation email. Returns ``{"messageId", "to", "orderId"}``."""
    return _world().services.send_confirmation_email(order)


def charge_card(order: dict, idempotency_key: str | None = None) -> dict:
    """Charge the order's amount. With an idempotency key, a repeat returns the first charge."""
    return _world().services.charge_card(order, idempotency_key=idempotency_key)
