"""The TTL sweeper: DynamoDB deletes expired items lazily, moto never does.

AWS: DynamoDB "automatically deletes expired items within a few days of their expiration time", and expired
items still appear in reads until then (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/TTL.html,
howitworks-ttl.html); the UpdateTimeToLive reference says "DynamoDB typically deletes expired items within two days
of expiration" (DOC_TTL_API), the default largest lag here. The sweeper deletes each item at a moment drawn, seeded per
item, between its TTL attribute and ``lag`` seconds after it (or exactly ``lag`` after it, where a
lesson needs one lag to show), so a lesson can show an expired item that is still readable.

It sweeps the idempotency table from the start, and any other table a source asks it to
``watch`` (the orders table of a DynamoDB stream, say). On a table with a stream, the
deletion's stream record is then marked as DynamoDB's own (``userIdentity`` of the DynamoDB
service), as AWS writes it for TTL deletions
(https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_streams_Record.html).
"""
from __future__ import annotations

import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..vocab import IDEMPOTENCY_TABLE, TableSchema
from . import adapter
from .dynamo import number_text, table_writes, update_assignments

if TYPE_CHECKING:
    from ..core.history import History
    from ..parts import AwsGateway, Clock, TaskScheduler

DOC_TTL = "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/howitworks-ttl.html"
DOC_TTL_API = "https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_UpdateTimeToLive.html"
#: How DynamoDB's API reference puts the lag (the TTL guide now says "within a few days"); it gives no upper bound.
TTL_WORDS = "typically within two days of expiration"
#: The scenarios' default bound on the drawn lag: "typically ... within two days of expiration" (DOC_TTL_API).
TYPICAL_TTL_LAG = 2 * 24 * 3600.0


class TtlSweeper:
    """Schedules a delete for every write that sets the TTL attribute on a watched table."""

    def __init__(self, clock: "Clock", scheduler: "TaskScheduler", history: "History", gateway: "AwsGateway",
                 dynamodb: Callable[[], Any], lag: float, schema: TableSchema = IDEMPOTENCY_TABLE,
                 drawn: bool = False, seed: int = 0):
        self.clock, self.scheduler, self.history, self.gateway = clock, scheduler, history, gateway
        self.dynamodb, self.schema, self.lag = dynamodb, schema, float(lag)
        #: Draw each item's lag between 0 and ``lag`` (seeded by the item, so every schedule draws alike).
        self.drawn, self.seed = drawn, seed
        #: Every table swept, by name: the idempotency table, and any a source watches.
        self.schemas: dict[str, TableSchema] = {schema.name: schema}
        # The expiry each (table, key) was last written with. Every write in a world passes
        # the gateway, so a timer whose expiry has since been rewritten can be dropped without
        # asking DynamoDB (most locks are rewritten as COMPLETED long before they expire).
        self._latest: dict[tuple[str, str], float] = {}
        gateway.on_request(self.observe)

    def watch(self, schema: TableSchema) -> None:
        """Sweep this table too (a string partition key, TTL on ``schema.ttl_attribute``)."""
        self.schemas[schema.name] = schema

    def observe(self, service: str, op: str, params: dict, status: int) -> None:
        if service != "dynamodb" or status != 200:
            return
        for table, single, write in table_writes(op, params):
            if table in self.schemas:
                self._written(self.schemas[table], single, write)

    def _written(self, schema: TableSchema, op: str, params: dict) -> None:
        pk, ttl = schema.partition_key, schema.ttl_attribute
        if op == "DeleteItem":
            self._latest.pop((schema.name, (params.get("Key") or {}).get(pk, {}).get("S")), None)
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
        self._latest[(schema.name, key)] = expires
        lag = self.lag_for(schema.name, key, expires)
        due = max(0.0, expires - self.clock.epoch) + lag
        self.scheduler.call_at(due, lambda: self._sweep(schema, key, expires, lag), name=f"ttl {key}", daemon=True)

    def lag_for(self, table: str, key: str, expires: float) -> float:
        """Seconds after ``expires`` that TTL deletes this item (drawn from the item alone, never from the order
        of writes, so every interleaving of the same run agrees)."""
        if not self.drawn:
            return self.lag
        return round(random.Random(f"ttl:{self.seed}:{table}:{key}:{number_text(expires)}").uniform(0, self.lag), 3)

    def _sweep(self, schema: TableSchema, key: str, expires: float, lag: float) -> None:
        """Delete ``key`` if it still carries this expiry (a later write re-armed it)."""
        if self._latest.get((schema.name, key)) != expires:
            return  # rewritten or deleted since this timer was set
        client = self.dynamodb()
        item_key = {schema.partition_key: {"S": key}}
        with self.gateway.unrecorded():
            try:
                client.delete_item(
                    TableName=schema.name,
                    Key=item_key,
                    ConditionExpression=f"{schema.ttl_attribute} = :e",
                    ExpressionAttributeValues={":e": {"N": number_text(expires)}},
                )
            except client.exceptions.ConditionalCheckFailedException:
                return
        adapter.mark_ttl_deletion(client.meta.region_name, schema.name, item_key)
        self.history.sweep(self.clock.elapsed(), target=schema.name, key=key,
                           detail={"expiresAt": expires, "lag": lag})
