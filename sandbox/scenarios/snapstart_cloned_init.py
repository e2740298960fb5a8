"""snapstart-cloned-init: environments restored from one snapshot share what init made unique.

"When invocations scale up on a SnapStart function, Lambda uses a single initialized snapshot
to resume multiple execution environments. If your initialization code generates unique content
that is included in the snapshot, then the content might not be unique when it is reused across
execution environments" (https://docs.aws.amazon.com/lambda/latest/dg/snapstart-uniqueness.html).
SnapStart for Python runs the init once, runs the before-snapshot hooks, and then restores each
environment from that snapshot, running the after-restore hooks
(https://docs.aws.amazon.com/lambda/latest/dg/snapstart-runtime-hooks-python.html). In the
sandbox the snapshot is a process that has run the init, and each restored environment is a fork
of it: the same memory, and a copy of its /tmp (the snapshot holds the environment's memory and
disk state, https://docs.aws.amazon.com/lambda/latest/dg/snapstart.html).

Two copies of one order arrive at once and run in two restored environments. A token made at
init (``examples/init_token.py``) is the same in both, so an "is this claim my own?" check lets
both through; made after the restore (``after_restore_hook``) or per invocation (the improved
``run_once``), it holds.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..runtime.functions import LambdaFunction
from ..settings import param
from ..world import Sandbox
from .concurrent_claims import Claims, ConcurrentClaimsSettings

DOC_UNIQUENESS = "https://docs.aws.amazon.com/lambda/latest/dg/snapstart-uniqueness.html"
DOC_HOOKS = "https://docs.aws.amazon.com/lambda/latest/dg/snapstart-runtime-hooks-python.html"


@dataclass(frozen=True)
class SnapStartClonedInitSettings(ConcurrentClaimsSettings):
    snapstart: bool = param(True, "SnapStart on: the init runs once and every environment is restored from its "
                            "snapshot (off: each environment runs its own init)", DOC_UNIQUENESS)
    after_restore_hook: bool = param(False, "the function's OWNER_TOKEN_AFTER_RESTORE=1: examples/init_token.py "
                                     "then makes a fresh token in an after-restore hook "
                                     "(snapshot_restore_py.register_after_restore)", DOC_HOOKS)


class SnapStartClonedInit(Claims[SnapStartClonedInitSettings]):
    name = "snapstart-cloned-init"
    kind = "run_once"
    source = "async invoke"
    headline = "environments restored from one SnapStart snapshot share what init made unique"
    summary = ("The function has SnapStart on: its init runs once, and Lambda restores every execution environment "
               "from that snapshot. Two copies of one order arrive at once and run in two restored environments. "
               "Anything the init made unique (a uuid, a random token, a seeded generator) is the same in both, so "
               "a claim that recognises its own owner token lets the other environment's duplicate through.")

    def environment(self, cfg: SnapStartClonedInitSettings) -> dict[str, str]:
        return {"OWNER_TOKEN_AFTER_RESTORE": "1"} if cfg.after_restore_hook else {}

    def drive(self, sb: Sandbox, fn: LambdaFunction, cfg: SnapStartClonedInitSettings) -> None:
        if cfg.snapstart:
            fn.use_snapstart()
        super().drive(sb, fn, cfg)
