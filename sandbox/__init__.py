"""Retries Will Happen: a local AWS world for learning idempotent Lambda handlers.

The notebooks import everything they need from here:

    from sandbox import Sandbox, run_scenario, orders_in, send_confirmation_email

Plotting (``plot_timeline``, ``save_timeline``) and the widgets load matplotlib and
ipywidgets only when first used, so scripts and the CLI start quickly.
"""
import importlib
import importlib.util

try:  # a Python without the project's packages (not .venv's) gets one line saying which to use
    # What a handler imports: light, and all an execution environment loads (no moto, no world).
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
    from .services import charge_card, send_cancellation_email, send_confirmation_email
    from .vocab import Cause, Delivery, Effect, EffectStatus, Outcome, SourceKind, Status

    _missing = next((name for name in ("boto3", "moto", "time_machine") if importlib.util.find_spec(name) is None),
                    None)
    if _missing is not None:
        raise ModuleNotFoundError(f"No module named {_missing!r}", name=_missing)
except ModuleNotFoundError as missing:
    from .missing_packages import refuse

    refuse(missing)

#: The world and everything that reads or drives it, loaded on first use (moto, matplotlib, ipywidgets):
#: ``from sandbox import Sandbox`` works as ever, and a handler's ``from sandbox import orders_in`` stays light.
_LAZY = {
    "Finding": ("sandbox.checker", "Finding"),
    "Verdict": ("sandbox.checker", "Verdict"),
    "check": ("sandbox.checker", "check"),
    "VirtualClock": ("sandbox.clock", "VirtualClock"),
    "AwsFault": ("sandbox.faults", "AwsFault"),
    "CrashPlan": ("sandbox.faults", "CrashPlan"),
    "Latency": ("sandbox.faults", "Latency"),
    "ProviderFault": ("sandbox.faults", "ProviderFault"),
    "History": ("sandbox.history", "History"),
    "FunctionConfig": ("sandbox.runtime", "FunctionConfig"),
    "LambdaContext": ("sandbox.runtime", "LambdaContext"),
    "SCENARIOS": ("sandbox.scenarios", "SCENARIOS"),
    "RunResult": ("sandbox.scenarios", "RunResult"),
    "get_scenario": ("sandbox.scenarios", "get_scenario"),
    "run_scenario": ("sandbox.scenarios", "run_scenario"),
    "Setting": ("sandbox.settings", "Setting"),
    "Choice": ("sandbox.stepping", "Choice"),
    "ScenarioRun": ("sandbox.stepping", "ScenarioRun"),
    "Step": ("sandbox.stepping", "Step"),
    "open_scenario": ("sandbox.stepping", "open_scenario"),
    "Sandbox": ("sandbox.world", "Sandbox"),
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


# The HTML views of histories, verdicts and results are registered by ``display``, loaded when one is first shown.
from . import views as _views  # noqa: E402 (after the light imports above)

_views.PROVIDERS.append("sandbox.display")


def __getattr__(name: str):
    """Load the world and the heavy parts (moto, matplotlib, ipywidgets) on first use."""
    if name in _LAZY:
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
