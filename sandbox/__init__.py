"""Retries Will Happen: a local AWS world for learning idempotent Lambda handlers.

The notebooks import everything they need from here:

    from sandbox import Sandbox, run_scenario, orders_in, send_confirmation_email

Plotting (``plot_timeline``, ``save_timeline``) and the widgets load matplotlib and
ipywidgets only when first used, so scripts and the CLI start quickly.
"""
from .checker import Finding, Verdict, check
from .clock import VirtualClock
from .errors import (BadInput, HandlerBlocked, InvocationCrashed, LambdaTimeout, ProviderError, RealAwsRefused,
                     SandboxError, StillInProgressError)
from .events import make_orders, orders_in, owed_effects
from .faults import AwsFault, CrashPlan, Latency, ProviderFault
from .history import History
from .runtime import FunctionConfig, LambdaContext
from .scenarios import SCENARIOS, RunResult, get_scenario, run_scenario
from .services import charge_card, send_confirmation_email
from .settings import Setting
from .vocab import Cause, Delivery, Effect, EffectStatus, Outcome, SourceKind, Status
from .world import Sandbox

_LAZY = {
    "plot_timeline": ("sandbox.timeline", "plot_timeline"),
    "save_timeline": ("sandbox.timeline", "save_timeline"),
}


def __getattr__(name: str):
    """Load the heavy parts (matplotlib, ipywidgets) on first use."""
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(module), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'sandbox' has no attribute {name!r}")


__all__ = [
    "AwsFault", "BadInput", "Cause", "CrashPlan", "Delivery", "Effect", "EffectStatus", "Finding", "FunctionConfig",
    "HandlerBlocked", "History", "InvocationCrashed", "LambdaContext", "LambdaTimeout", "Latency", "Outcome",
    "ProviderError", "ProviderFault", "RealAwsRefused", "RunResult", "SCENARIOS", "Sandbox", "SandboxError",
    "Setting", "SourceKind", "Status", "StillInProgressError", "Verdict", "VirtualClock", "charge_card", "check",
    "get_scenario", "make_orders", "orders_in", "owed_effects", "plot_timeline", "run_scenario",
    "save_timeline", "send_confirmation_email",
]
