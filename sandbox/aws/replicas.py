"""DynamoDB's eventually consistent reads: a read may see an item as it was a moment ago.

"When issuing eventually consistent reads to a DynamoDB table or an index, the responses
may not reflect the results of a recently completed write operation"
(https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/HowItWorks.ReadConsistency.html).
moto always answers with the latest item, so the sandbox keeps, for each item written in the
last ``lag`` seconds, what it looked like before and after each write. A read without
``ConsistentRead=True`` (GetItem, BatchGetItem, Query, Scan) is answered as of a moment drawn, with the
world's seed, from the last ``lag`` seconds; a strongly consistent read always sees the
latest write. For a single-region table AWS says only that "consistency across all copies
of data is usually reached within one second" (HowItWorks.ReadConsistency.html), so the lag
defaults to a second.

BatchGetItem is eventually consistent unless a table's ``ConsistentRead`` says otherwise
(https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_BatchGetItem.html): each
table's keys are answered as of the moment drawn, so an item deleted since comes back and one
written since is missing. TransactGetItems is always strongly consistent, as AWS's is.

Simplifications: a stale Query or Scan replaces or drops the items written since that
moment, but does not bring back items deleted since; a stale item is the whole item, whatever
the read's ProjectionExpression.
"""
from __future__ import annotations

import json
import random
import zlib
from typing import TYPE_CHECKING

from . import adapter
from .dynamo import table_writes

if TYPE_CHECKING:
    from ..parts import Clock

DOC_CONSISTENCY = "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/HowItWorks.ReadConsistency.html"
DEFAULT_REPLICA_LAG = 1.0  # seconds
EVENTUAL_READS = ("GetItem", "BatchGetItem", "Query", "Scan")

Version = tuple[float, "dict | None"]  # (virtual seconds, the item from then on; None: absent)


class Replicas:
    """The recent versions of every item written, and the stale answers they make."""

    def __init__(self, clock: "Clock", region: str, lag: float, seed: int):
        self.clock, self.region, self.lag = clock, region, float(lag)
        self.rng = random.Random(f"replicas:{seed}")  # each stale read draws its age from it
        self._versions: dict[tuple[str, str], list[Version]] = {}

    @staticmethod
    def _id(table: str, key: dict) -> tuple[str, str]:
        return table, json.dumps(key, sort_keys=True)

    def _keys(self, op: str, params: dict) -> list[tuple[str, dict]]:
        out = []
        for table, _, write in table_writes(op, params):
            if table is None:  # a write naming no table: moto refuses it
                continue
            key = adapter.item_key(self.region, table, write.get("Item") or write.get("Key") or {})
            if key is not None:
                out.append((table, key))
        return out

    def before_write(self, op: str, params: dict) -> list[tuple[str, dict]]:
        """Note how each item a write touches looks now, before the write; returns their keys."""
        if self.lag <= 0:
            return []
        keys = self._keys(op, params)
        for table, key in keys:
            versions = self._versions.setdefault(self._id(table, key), [])
            if not versions:
                versions.append((float("-inf"), adapter.stored_item(self.region, table, key)))
        return keys

    def after_write(self, keys: list[tuple[str, dict]]) -> None:
        now = self.clock.elapsed()
        for table, key in keys:
            versions = self._versions[self._id(table, key)]
            versions.append((now, adapter.stored_item(self.region, table, key)))
            # Versions older than the lag can no longer be read: keep the newest of them only.
            while len(versions) > 2 and versions[1][0] <= now - self.lag:
                versions.pop(0)

    def as_of(self) -> float:
        """The moment an eventually consistent read sees: up to ``lag`` seconds ago."""
        return self.clock.elapsed() - self.rng.uniform(0.0, self.lag)

    def version(self, table: str, key: dict, moment: float) -> tuple[bool, "dict | None"]:
        """(stale?, the item as of ``moment``): stale when a write since then changed it."""
        versions = self._versions.get(self._id(table, key))
        if not versions or versions[-1][0] <= moment:
            return False, None
        seen = [item for t, item in versions if t <= moment]
        return True, (seen[-1] if seen else versions[0][1])

    @staticmethod
    def headers_for(headers: dict, body: bytes) -> dict:
        """DynamoDB signs each body with a CRC32 header that botocore checks: a new body needs its own."""
        return {**headers, "x-amz-crc32": str(zlib.crc32(body))} if "x-amz-crc32" in headers else headers

    def stale_answer(self, op: str, params: dict, body: bytes) -> bytes | None:
        """A stale body for an eventually consistent read (None: the latest answer stands)."""
        if self.lag <= 0 or op not in EVENTUAL_READS or params.get("ConsistentRead"):
            return None
        if op == "BatchGetItem":
            return self._stale_batch(params, json.loads(body or b"{}"))
        moment = self.as_of()
        data = json.loads(body or b"{}")
        table = params["TableName"]  # moto answered 200, so the request named its table
        if op == "GetItem":
            stale, item = self.version(table, params.get("Key") or {}, moment)
            if not stale:
                return None
            return json.dumps({"Item": item} if item is not None else {}).encode()
        return self._stale_items(table, data, moment)

    def _stale_batch(self, params: dict, data: dict) -> bytes | None:
        """Each eventually consistent table of a BatchGetItem, its keys as of one moment drawn for the call."""
        asked = params.get("RequestItems") or {}
        eventual = [t for t, spec in asked.items() if isinstance(spec, dict) and not spec.get("ConsistentRead")]
        if not eventual:
            return None
        moment, changed = self.as_of(), False
        responses = dict(data.get("Responses") or {})
        for table in eventual:
            latest = {json.dumps(adapter.item_key(self.region, table, item) or {}, sort_keys=True): item
                      for item in responses.get(table) or []}
            items = []
            for key in asked[table].get("Keys") or []:
                stale, old = self.version(table, key, moment)
                changed |= stale
                found = old if stale else latest.get(json.dumps(key, sort_keys=True))
                if found is not None:
                    items.append(found)
            responses[table] = items
        if not changed:
            return None
        return json.dumps({**data, "Responses": responses}).encode()

    def _stale_items(self, table: str, data: dict, moment: float) -> bytes | None:
        items, changed = [], False
        for item in data.get("Items") or []:
            key = adapter.item_key(self.region, table, item) or {}
            stale, old = self.version(table, key, moment)
            changed |= stale
            if not stale:
                items.append(item)
            elif old is not None:
                items.append(old)
        if not changed:
            return None
        return json.dumps({**data, "Items": items, "Count": len(items)}).encode()

