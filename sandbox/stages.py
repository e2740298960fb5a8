"""The stages of ``run_once``, from no protection at all to the improved version, in one place.

Lessons, tests, the campaign and the grader run them side by side. Each stage is a handler
file in ``examples/``; its entry says what it fixes and what it still gets wrong, and names
the scenario (with settings and a seed) that shows the weakness.

    from sandbox.stages import STAGES, stage
    run_scenario("crash-mid-work", stage("no-expiry").handler)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import BadInput
from .paths import ROOT

EXAMPLES = ROOT / "examples"


@dataclass(frozen=True)
class Stage:
    """One version of the handler, and what the sandbox shows about it."""

    name: str
    file: str
    fixes: str
    still_wrong: str
    #: (scenario, settings, seed) where the weakness shows; None for the stage that has none left.
    counterexample: tuple[str, dict[str, Any], int] | None = None
    function: str = "handler"

    @property
    def handler(self) -> str:
        """``path/to/file.py:handler``, as ``run_scenario`` and the CLI take it."""
        return f"{EXAMPLES / self.file}:{self.function}"


STAGES: dict[str, Stage] = {s.name: s for s in (
    Stage("naive", "naive_email.py",
          "nothing: it does the work for every delivery",
          "every duplicate delivery repeats the email (and the charge)",
          ("sqs-batch-failure", {}, 0)),
    Stage("module-set", "module_set.py",
          "a duplicate that lands in the same warm container is skipped",
          "a second container, or a container reset after a timeout, has an empty set",
          ("concurrent-claims", {}, 0)),
    Stage("read-then-write", "read_then_write.py",
          "remembers handled orders in DynamoDB, across containers",
          "two invocations can both read 'missing' before either writes: a race",
          ("concurrent-claims", {}, 0)),
    Stage("claim-only", "claim_only.py",
          "one conditional put: exactly one concurrent invocation wins the claim",
          "no stored result, no expiry, no clean-up: work that fails after the claim is never retried",
          ("sqs-batch-failure", {}, 0)),
    Stage("no-expiry", "run_once_no_expiry.py",
          "stores the result and replays it; deletes the claim when the work raises",
          "a crash or timeout is no exception: its IN_PROGRESS claim never expires, and the order is lost",
          ("crash-mid-work", {}, 0)),
    Stage("ttl-only", "run_once_ttl_only.py",
          "the claim carries an expiry",
          "it trusts TTL to delete the expired claim, but TTL deletes lazily: the retries are refused",
          ("ttl-lag", {}, 0)),
    Stage("article", "article.py",
          "the article's run_once: the claim checks expiresAt itself, so an expired lock is taken over",
          "a duplicate costs two calls; when a lock runs out under a slow owner, the owner's unconditional "
          "delete throws away the record of the invocation that took over, and the retry runs the work again; "
          "the same key with another payload replays the first payload's result; a batch is all or nothing",
          ("lock-shorter-than-work", {}, 0)),
    Stage("improved", "idempotent.py",
          "one call on the duplicate path, a fencing token, separate lock and retention windows, a payload "
          "fingerprint, per-record SQS and stream handling, the HTTP Idempotency-Key, a downstream charge key",
          "within its assumptions (a lock that outlasts the work, records kept longer than any source "
          "redelivers) nothing the scenarios throw at it; outside them the checker says which assumption broke. "
          "The remaining window stays open for an effect that takes no idempotency key (an email): no claim "
          "closes it (crash-mid-work with crash_after=email)",
          None),
)}


def stage(name: str) -> Stage:
    try:
        return STAGES[name]
    except KeyError:
        raise BadInput(f"unknown stage {name!r}; stages: {', '.join(STAGES)}") from None
