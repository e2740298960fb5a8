"""Retries Will Happen: a local AWS world for learning idempotent Lambda handlers.

The notebooks import everything they need from here:

    from sandbox import Sandbox, run_scenario, orders_in, send_confirmation_email
"""
from .checker import Verdict, check
from .clock import VirtualClock
from .errors import (BadInput, HandlerBlocked, InvocationCrashed, LambdaTimeout, ProviderError, RealAwsRefused,
                     SandboxError, StillInProgressError)
from .events import make_orders, orders_in, owed_effects
from .history import History
from .runtime import CrashPlan, FunctionConfig, LambdaContext
from .scenarios import SCENARIOS, RunResult, get_scenario, run_scenario
from .services import charge_card, send_confirmation_email
from .world import Sandbox

__all__ = [
    "BadInput", "CrashPlan", "FunctionConfig", "HandlerBlocked", "History", "InvocationCrashed", "LambdaContext",
    "LambdaTimeout", "ProviderError", "RealAwsRefused", "RunResult", "SCENARIOS", "Sandbox", "SandboxError",
    "StillInProgressError", "Verdict", "VirtualClock", "charge_card", "check", "get_scenario", "make_orders",
    "orders_in", "owed_effects", "run_scenario", "send_confirmation_email",
]
