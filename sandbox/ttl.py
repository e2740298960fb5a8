"""The TTL sweeper: DynamoDB deletes expired items lazily, moto never does.

AWS: "Items with valid, expired TTL attributes may be deleted by the system at any time,
typically within a few days of their expiration" and expired items still appear in reads
until then (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/howitworks-ttl.html).
The sweeper deletes each item ``lag`` seconds after its TTL attribute, so a lesson can
show an expired item that is still readable.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .dynamo import number_text, table_writes, update_assignments
from .vocab import IDEMPOTENCY_TABLE, TableSchema

if TYPE_CHECKING:
    from .clock import VirtualClock
    from .gateway import Gateway
    from .history import History
    from .scheduler import Scheduler

DOC_TTL = "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/howitworks-ttl.html"
#: How DynamoDB puts the lag; it gives no upper bound.
TTL_WORDS = "typically within a few days"


class TtlSweeper:
    """Schedules a delete for every write that sets the TTL attribute on the idempotency table."""

    def __init__(self, clock: "VirtualClock", scheduler: "Scheduler", history: "History", gateway: "Gateway",
                 dynamodb: Callable[[], Any], lag: float, schema: TableSchema = IDEMPOTENCY_TABLE):
        self.clock, self.scheduler, self.history, self.gateway = clock, scheduler, history, gateway
        self.dynamodb, self.schema, self.lag = dynamodb, schema, float(lag)
        # The expiry each key was last written with. Every write in a world passes the
        # gateway, so a timer whose expiry has since been rewritten can be dropped without
        # asking DynamoDB (most locks are rewritten as COMPLETED long before they expire).
        self._latest: dict[str, float] = {}
        gateway.on_request(self.observe)

    def observe(self, service: str, op: str, params: dict, status: int) -> None:
        if service != "dynamodb" or status != 200:
            return
        for table, single, write in table_writes(op, params):
            if table == self.schema.name:
                self._written(single, write)

    def _written(self, op: str, params: dict) -> None:
        pk, ttl = self.schema.partition_key, self.schema.ttl_attribute
        if op == "DeleteItem":
            self._latest.pop((params.get("Key") or {}).get(pk, {}).get("S"), None)
            return
        expires = None
        if op == "PutItem":
            expires = (params.get("Item") or {}).get(ttl, {}).get("N")
        elif op == "UpdateItem":
            expires = update_assignments(params).get(ttl)
        key = (params.get("Item") or params.get("Key") or {}).get(pk, {}).get("S")
        if expires is None or key is None:
            return
        try:
            expires = float(expires)
        except (TypeError, ValueError):
            return
        self._latest[key] = expires
        due = max(0.0, expires - self.clock.epoch) + self.lag
        self.scheduler.call_at(due, lambda: self._sweep(key, expires), name=f"ttl {key}", daemon=True)

    def _sweep(self, key: str, expires: float) -> None:
        """Delete ``key`` if it still carries this expiry (a later write re-armed it)."""
        if self._latest.get(key) != expires:
            return  # rewritten or deleted since this timer was set
        client = self.dynamodb()
        with self.gateway.unrecorded():
            try:
                client.delete_item(
                    TableName=self.schema.name,
                    Key={self.schema.partition_key: {"S": key}},
                    ConditionExpression=f"{self.schema.ttl_attribute} = :e",
                    ExpressionAttributeValues={":e": {"N": number_text(expires)}},
                )
            except client.exceptions.ConditionalCheckFailedException:
                return
        self.history.sweep(self.clock.elapsed(), target=self.schema.name, key=key,
                           detail={"expiresAt": expires, "lag": self.lag})
