"""The TTL sweeper: DynamoDB deletes expired items lazily, moto never does.

AWS: "Items with valid, expired TTL attributes may be deleted by the system at any time,
typically within a few days of their expiration" and expired items still appear in reads
until then (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/howitworks-ttl.html).
The sweeper deletes each item ``lag`` seconds after its ``expiresAt``, so a lesson can
show an expired item that is still readable.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .world import Sandbox


class TtlSweeper:
    """Schedules a delete for every write that sets ``expiresAt`` on the idempotency table."""

    def __init__(self, world: "Sandbox", lag: float):
        self.world = world
        self.lag = float(lag)
        self.deleted = 0
        # The expiry each key was last written with. Every write in a world passes the
        # gateway, so a timer whose expiry has since been rewritten can be dropped without
        # asking DynamoDB (most locks are rewritten as COMPLETED long before they expire).
        self._latest: dict[str, float] = {}

    def observe(self, service: str, op: str, params: dict, status: int) -> None:
        if service != "dynamodb" or status != 200 or params.get("TableName") != self.world.table_name:
            return
        expires = None
        if op == "DeleteItem":
            self._latest.pop((params.get("Key") or {}).get("pk", {}).get("S"), None)
            return
        if op == "PutItem":
            expires = (params.get("Item") or {}).get("expiresAt", {}).get("N")
        elif op == "UpdateItem":
            from .gateway import _update_assignments

            expires = _update_assignments(params).get("expiresAt")
        key = (params.get("Item") or params.get("Key") or {}).get("pk", {}).get("S")
        if expires is None or key is None:
            return
        try:
            expires = float(expires)
        except (TypeError, ValueError):
            return
        self._latest[key] = expires
        due = max(0.0, expires - self.world.clock.epoch) + self.lag
        self.world.scheduler.call_at(due, lambda: self._sweep(key, expires), name=f"ttl {key}", daemon=True)

    def _sweep(self, key: str, expires: float) -> None:
        """Delete ``key`` if it still carries this ``expiresAt`` (a later write re-armed it)."""
        world = self.world
        if self._latest.get(key) != expires:
            return  # rewritten or deleted since this timer was set
        with world.gateway.unrecorded():
            try:
                world.dynamodb.delete_item(
                    TableName=world.table_name,
                    Key={"pk": {"S": key}},
                    ConditionExpression="expiresAt = :e",
                    ExpressionAttributeValues={":e": {"N": _number(expires)}},
                )
            except world.dynamodb.exceptions.ConditionalCheckFailedException:
                return
        self.deleted += 1
        world.history.append("sweep", world.clock.elapsed(), target=world.table_name, key=key,
                             detail={"expiresAt": expires, "lag": self.lag})


def _number(value: float) -> str:
    """A DynamoDB number as text, written the way the item was (1700000000, not 1700000000.0)."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))
