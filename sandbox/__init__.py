"""Retries Will Happen: a local AWS world for learning idempotent Lambda handlers.

The notebooks import everything they need from here:

    from sandbox import Sandbox, run_scenario, orders_in, send_confirmation_email

Plotting (``plot_timeline``, ``save_timeline``) and the widgets load matplotlib and
ipywidgets only when first used, so scripts and the CLI start quickly.
"""
import importlib
import importlib.util
import sys

try:  # a Python without the project's packages (not .venv's) gets one line saying which to use
    # What a handler imports: light, and all an execution environment loads (no moto, no world). The effect
    # services load on first use (``_LAZY``): with the virtual clock under them they took 50-70 ms of every
    # ``import sandbox``, and a command line starts its template after that.
    from .custom_resources import respond_to_cloudformation
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
    from .vocab import Cause, Delivery, Effect, EffectStatus, Outcome, SourceKind, Status

    _missing = next((name for name in ("boto3", "moto", "time_machine") if importlib.util.find_spec(name) is None),
                    None)
    if _missing is not None:
        raise ModuleNotFoundError(f"No module named {_missing!r}", name=_missing)
except ModuleNotFoundError as missing:
    from .tools.missing_packages import refuse

    refuse(missing)

#: The world and everything that reads or drives it, loaded on first use (moto, matplotlib, ipywidgets):
#: ``from sandbox import Sandbox`` works as ever, and a handler's ``from sandbox import orders_in`` stays light.
_LAZY = {
    "charge_card": ("sandbox.core.services", "charge_card"),
    "send_cancellation_email": ("sandbox.core.services", "send_cancellation_email"),
    "send_confirmation_email": ("sandbox.core.services", "send_confirmation_email"),
    "Finding": ("sandbox.verdict.checker", "Finding"),
    "Verdict": ("sandbox.verdict.checker", "Verdict"),
    "check": ("sandbox.verdict.checker", "check"),
    "VirtualClock": ("sandbox.core.clock", "VirtualClock"),
    "AwsFault": ("sandbox.core.faults", "AwsFault"),
    "CrashPlan": ("sandbox.core.faults", "CrashPlan"),
    "Latency": ("sandbox.core.faults", "Latency"),
    "ProviderFault": ("sandbox.core.faults", "ProviderFault"),
    "History": ("sandbox.core.history", "History"),
    "FunctionConfig": ("sandbox.runtime.functions", "FunctionConfig"),
    "LambdaContext": ("sandbox.runtime.functions", "LambdaContext"),
    "SCENARIOS": ("sandbox.scenarios", "SCENARIOS"),
    "RunResult": ("sandbox.scenarios", "RunResult"),
    "get_scenario": ("sandbox.scenarios", "get_scenario"),
    "run_scenario": ("sandbox.scenarios", "run_scenario"),
    "Setting": ("sandbox.settings", "Setting"),
    "Choice": ("sandbox.modes.stepping", "Choice"),
    "ScenarioRun": ("sandbox.modes.stepping", "ScenarioRun"),
    "Step": ("sandbox.modes.stepping", "Step"),
    "open_scenario": ("sandbox.modes.stepping", "open_scenario"),
    "Sandbox": ("sandbox.world", "Sandbox"),
    "plot_timeline": ("sandbox.present.timeline", "plot_timeline"),
    "save_timeline": ("sandbox.present.timeline", "save_timeline"),
    "setting_controls": ("sandbox.present.widgets", "setting_controls"),
    "explore_settings": ("sandbox.present.widgets", "explore_settings"),
    "linked_verdict_map": ("sandbox.present.verdict_map", "linked_verdict_map"),
    "SettingsExplorer": ("sandbox.present.widgets", "SettingsExplorer"),
    "timeline_gallery": ("sandbox.present.gallery", "timeline_gallery"),
    "TimelineGallery": ("sandbox.present.gallery", "TimelineGallery"),
    "duplicate_matrix": ("sandbox.analysis.matrix", "duplicate_matrix"),
    "key_matrix": ("sandbox.analysis.matrix", "key_matrix"),
    "explore_scenario": ("sandbox.modes.explore", "explore_scenario"),
    "STAGES": ("sandbox.stages", "STAGES"),
    "stage": ("sandbox.stages", "stage"),
    "run_real_threads": ("sandbox.modes.realthreads", "run_real_threads"),
    "compare_modes": ("sandbox.modes.realthreads", "compare_modes"),
    "run_on_endpoint": ("sandbox.modes.endpoint", "run_on_endpoint"),
}


# The views (HTML of histories, verdicts and results; timelines) are registered by ``present``, loaded when first asked.
from .core import views as _views  # noqa: E402 (after the light imports above)

_views.PROVIDERS.extend(["sandbox.present.display", "sandbox.present.timeline"])


#: The modules that load a world (moto, the scenarios): a notebook that asks for one is about to run something.
_WORLDS = ("sandbox.scenarios", "sandbox.world", "sandbox.analysis.matrix", "sandbox.present.widgets",
           "sandbox.modes.stepping", "sandbox.modes.explore", "sandbox.modes.realthreads", "sandbox.stages")


def _start_environments_early() -> None:
    """In a Jupyter kernel, start the execution environments' template before the world's modules load.

    The template is a process of its own that imports boto3 and the runtime client (about a second); the world's
    modules take about as long to import in the kernel. Started first, it does its imports on the other core
    meanwhile, and a lesson's first run finds it ready instead of waiting for it. Elsewhere (the CLI starts it
    itself, a script may never run an environment) nothing is started before it is needed."""
    import os

    if "ipykernel" in sys.modules and os.environ.get("RWH_ISOLATION", "process") == "process":
        from .runtime.environment.template_process import Template

        Template.warm_up()


def __getattr__(name: str):
    """Load the world and the heavy parts (moto, matplotlib, ipywidgets) on first use."""
    if name in _LAZY:
        module, attr = _LAZY[name]
        if module in _WORLDS and not any(m in sys.modules for m in _WORLDS):  # before the world's modules load
            _start_environments_early()
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
    "send_cancellation_email", "send_confirmation_email", "respond_to_cloudformation",
    "setting_controls", "run_real_threads", "compare_modes", "run_on_endpoint", "timeline_gallery", "TimelineGallery",
    "linked_verdict_map",
]
