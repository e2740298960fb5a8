"""Retries Will Happen: a local AWS world for learning idempotent Lambda handlers.

The notebooks import everything they need from here:

    from sandbox import Sandbox, run_scenario, orders_in, send_confirmation_email

Plotting (``plot_timeline``, ``save_timeline``) and the widgets load matplotlib and
ipywidgets only when first used, so scripts and the CLI start quickly.
"""
try:  # a Python without the project's packages (not .venv's) gets one line saying which to use
    from .checker import Finding, Verdict, check
    from .clock import VirtualClock
    from .errors import (
        BadInput,
        HandlerBlocked,
        InvocationCrashed,
        LambdaTimeout,
        ProviderError,
        RealAwsRefused,
        SandboxError,
        StillInProgressError,
    )
    from .events import make_orders, orders_in, owed_effects, removed_by_ttl
    from .faults import AwsFault, CrashPlan, Latency, ProviderFault
    from .history import History
    from .runtime import FunctionConfig, LambdaContext
    from .scenarios import SCENARIOS, RunResult, get_scenario, run_scenario
    from .services import charge_card, send_cancellation_email, send_confirmation_email
    from .settings import Setting
    from .stepping import Choice, ScenarioRun, Step, open_scenario
    from .vocab import Cause, Delivery, Effect, EffectStatus, Outcome, SourceKind, Status
    from .world import Sandbox
except ModuleNotFoundError as missing:
    from .missing_packages import refuse

    refuse(missing)

_LAZY = {
    "plot_timeline": ("sandbox.timeline", "plot_timeline"),
    "save_timeline": ("sandbox.timeline", "save_timeline"),
    "setting_controls": ("sandbox.widgets", "setting_controls"),
    "explore_settings": ("sandbox.widgets", "explore_settings"),
    "SettingsExplorer": ("sandbox.widgets", "SettingsExplorer"),
    "duplicate_matrix": ("sandbox.matrix", "duplicate_matrix"),
    "key_matrix": ("sandbox.matrix", "key_matrix"),
    "explore_scenario": ("sandbox.explore", "explore_scenario"),
    "STAGES": ("sandbox.stages", "STAGES"),
    "stage": ("sandbox.stages", "stage"),
    "run_real_threads": ("sandbox.realthreads", "run_real_threads"),
    "compare_modes": ("sandbox.realthreads", "compare_modes"),
    "run_on_endpoint": ("sandbox.endpoint", "run_on_endpoint"),
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
    "AwsFault", "BadInput", "STAGES", "duplicate_matrix", "explore_scenario", "key_matrix", "stage", "Cause",
    "Choice", "CrashPlan", "Delivery", "Effect", "EffectStatus", "Finding",
    "FunctionConfig",
    "HandlerBlocked", "History", "InvocationCrashed", "LambdaContext", "LambdaTimeout", "Latency", "Outcome",
    "ProviderError", "ProviderFault", "RealAwsRefused", "RunResult", "SCENARIOS", "Sandbox", "SandboxError",
    "ScenarioRun", "Setting", "SettingsExplorer", "SourceKind", "Status", "Step", "StillInProgressError", "Verdict",
    "VirtualClock", "charge_card", "check", "explore_settings", "get_scenario", "make_orders", "open_scenario",
    "orders_in", "owed_effects", "plot_timeline", "removed_by_ttl", "run_scenario", "save_timeline",
    "send_cancellation_email", "send_confirmation_email",
    "setting_controls", "run_real_threads", "compare_modes", "run_on_endpoint",
]
