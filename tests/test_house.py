"""The house rules: one vocabulary, no import cycles, short functions, sources that share one
protocol, faults that reach any client, and hooks that leave nothing behind."""
from __future__ import annotations

import ast
import dataclasses
import inspect
import subprocess
import sys
from pathlib import Path

import boto3
import botocore.endpoint
import botocore.handlers
import pytest
from moto import mock_aws

from sandbox import SCENARIOS, Sandbox, run_scenario, vocab
from sandbox.settings import Config, Setting
from sandbox.sources.base import Source

from conftest import ROOT

PACKAGE = ROOT / "sandbox"
MODULES = sorted(PACKAGE.rglob("*.py"))
MAX_FUNCTION_LINES = 50


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, known: set[str], me: str | None = None) -> set[str]:
    """Modules of the package that ``path`` imports, by any import statement wherever it stands (in a function or
    under ``TYPE_CHECKING`` too): each is a dependency a reader must follow."""
    tree = ast.parse(path.read_text())
    me = me or module_name(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name in known}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")
                parent = parent[: len(parent) - node.level + 1]
                base = ".".join(parent + ([node.module] if node.module else []))
            for alias in node.names:
                child = f"{base}.{alias.name}"
                out.add(child if child in known else base)
    return {m for m in out if m in known and m != me}


def test_no_import_cycles_in_the_package():
    known = {module_name(p) for p in MODULES}
    graph = {module_name(p): imports_of(p, known) for p in MODULES}
    assert graph["sandbox.world"] >= {"sandbox.aws.gateway", "sandbox.runtime.functions", "sandbox.core.services",
                                      "sandbox.aws.ttl"}
    state: dict[str, int] = {}
    cycles = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append(path[path.index(nxt):] + [nxt] if nxt in path else [node, nxt])
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    assert cycles == []


#: The package's rooms (its folders and top-level modules), ground floor first: a room imports only rooms on its
#: own floor or below (docs/layout.md). Reading one run (``verdict``) stands below the world that makes runs, and
#: driving many (``analysis``) above the scenarios it drives; ``core/views`` lets what is shown register from above.
FLOORS = [{"vocab", "errors", "paths", "custom_resources", "parts"}, {"core", "settings", "stages"}, {"aws"},
          {"runtime", "events"}, {"verdict"}, {"world"}, {"sources"}, {"scenarios"}, {"present"},
          {"modes", "analysis"}, {"grading", "cli"}, {"bench", "tools", "__main__"}, {"__init__"}]
#: Imports that run up a floor, each for annotations only (under ``TYPE_CHECKING``), and why.
UPWARD = {("parts", "runtime"): "the runtime protocol names the types of its process switch and task roots"}


def test_every_import_runs_down_the_floors():
    known = {module_name(p) for p in MODULES}
    floor = {room: n for n, rooms in enumerate(FLOORS) for room in rooms}

    def room(module: str) -> str:
        return module.split(".")[1] if "." in module else "__init__"

    assert set(floor) == {room(m) for m in known}, "every room of the package stands on one floor"
    upward = {(room(module_name(p)), room(t)) for p in MODULES for t in imports_of(p, known)
              if floor[room(t)] > floor[room(module_name(p))]}
    assert upward == set(UPWARD), upward


def test_an_import_under_type_checking_or_in_a_function_counts(tmp_path):
    known = {module_name(p) for p in MODULES}
    display = PACKAGE / "present" / "display.py"
    assert "sandbox.core.history" not in imports_of(display, known)
    fake = tmp_path / "display.py"
    fake.write_text(display.read_text() + "\nif TYPE_CHECKING:\n    from ..core.history import History\n"
                    "def f():\n    from ..verdict.checker import check\n")
    assert {"sandbox.core.history", "sandbox.verdict.checker"} <= imports_of(fake, known, me="sandbox.present.display")


def test_core_parts_never_import_the_world():
    """Components receive their parts; only composers (scenarios, explore, bench, cli...) know the world."""
    known = {module_name(p) for p in MODULES}
    core = ["aws/gateway", "runtime/functions", "core/services", "aws/ttl", "core/scheduler", "core/history",
            "verdict/checker", "core/faults", "aws/adapter", "core/policies", "runtime/loader", "core/clock", "vocab",
            "settings", "aws/dynamo", "events", "present/display", "core/active"]
    for name in core:
        assert "sandbox.world" not in imports_of(PACKAGE / f"{name}.py", known), name


def test_sources_and_scenarios_use_only_what_the_world_docstring_lists():
    """world.py's docstring names what the sources and scenarios, which take the world whole, may use of it."""
    import re

    import sandbox.scenarios
    import sandbox.sources
    import sandbox.world

    (paragraph,) = [p for p in sandbox.world.__doc__.split("\n\n") if p.startswith("The delivery sources")]
    listed = set(re.findall(r"``(\w+)``", paragraph)) - {"sb"}
    used = set()
    for folder in (*sandbox.sources.__path__, *sandbox.scenarios.__path__):
        for path in Path(folder).glob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                base = node.value if isinstance(node, ast.Attribute) else None
                if (isinstance(base, ast.Name) and base.id in ("world", "sb")) or (
                        isinstance(base, ast.Attribute) and base.attr == "world"
                        and isinstance(base.value, ast.Name) and base.value.id == "self"):
                    used.add(node.attr)
    assert {"scheduler", "record_delivery", "accept"} <= used  # the walk sees the sources' reach
    assert used - listed == set(), "used but not in world.py's docstring"
    assert listed - used == set(), "in world.py's docstring but unused"


def test_no_function_is_longer_than_fifty_lines():
    long = []
    for path in MODULES:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({lines} lines)")
    assert long == []


# -- one vocabulary ------------------------------------------------------------------------------
VOCABULARY = {m.value for enum in (vocab.RecordType, vocab.Outcome, vocab.Cause, vocab.Delivery, vocab.Effect,
                                   vocab.EffectStatus, vocab.SourceKind) for m in enum} - {
    vocab.SourceKind.SQS.value, vocab.SourceKind.EVENTBRIDGE.value, vocab.SourceKind.SNS.value,
    vocab.SourceKind.S3.value, vocab.SourceKind.STEPFUNCTIONS.value}  # also the names of AWS services (botocore's)
#: Words that mean something else where they stand.
ALLOWED = {
    ("sandbox/core/services.py", "email"): "an order's email address field",
    ("sandbox/grading/child.py", "effect"): "the kind of a message on the grading pipe",
    ("sandbox/grading/child.py", "done"): "the kind of a message on the grading pipe",
    ("sandbox/grading/batch.py", "failed"): "a test's status in Gradescope's results.json",
    ("sandbox/grading/scoring.py", "failed"): "a graded test's status",
    ("sandbox/present/timeline/ownership.py", "deleted"): "the verb in a refused write's label",
    **{("sandbox/runtime/environment/wire.py", word): "a message kind or field on an environment's channel"
       for word in ("error", "aws", "effect", "log", "stream")},
}


def _words_spelled(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text())
    skip: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        first = body[0] if isinstance(body, list) and body else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
            skip.add(id(first.value))  # docstrings
        if isinstance(node, ast.Dict):
            skip |= {id(k) for k in node.keys if k is not None}  # field names
        elif isinstance(node, ast.Subscript):
            skip.add(id(node.slice))
        elif isinstance(node, ast.Call) and node.args and (
                isinstance(node.func, ast.Attribute) and node.func.attr in ("get", "pop")
                or isinstance(node.func, ast.Name) and node.func.id == "Setting"):
            skip.add(id(node.args[0]))  # a field read, or a setting's name
        elif isinstance(node, ast.JoinedStr):
            skip |= {id(v) for v in node.values}
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in VOCABULARY and id(n) not in skip]


def test_only_the_vocabulary_module_spells_its_words():
    spelled = []
    for path in MODULES:
        rel = str(path.relative_to(ROOT))
        if path.name == "vocab.py":
            continue
        spelled += [f"{rel}:{line}: {word!r}" for line, word in _words_spelled(path) if (rel, word) not in ALLOWED]
    assert spelled == []


def test_the_vocabulary_check_would_catch_a_literal(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text('def f(r):\n    """The outcome, "timeout"."""\n    return r.get("outcome") == "timeout"\n')
    assert _words_spelled(sample) == [(3, "timeout")]


# -- one source protocol, one config style -------------------------------------------------------
def _source_classes():
    import importlib
    import pkgutil

    import sandbox.sources as pkg

    found = []
    for info in pkgutil.iter_modules(pkg.__path__):
        module = importlib.import_module(f"sandbox.sources.{info.name}")
        found += [c for _, c in inspect.getmembers(module, inspect.isclass)
                  if c.__module__ == module.__name__ and issubclass(c, Source) and c is not Source
                  and not inspect.isabstract(c)]  # shared bases (the stream mappings', the producers') excluded
    return found


def test_every_source_implements_the_protocol():
    names = {c.__name__ for c in _source_classes()}
    assert names >= {"AsyncInvokeSource", "SyncInvokeSource", "SqsEventSourceMapping", "StreamSource", "Producer",
                     "KinesisProducer", "DdbStreamSource"}
    for cls in _source_classes():
        assert cls.kind in vocab.SourceKind._value2member_map_, cls
        for method in ("start", "idle", "stop", "finish"):
            assert callable(getattr(cls, method)), (cls, method)


def test_every_config_is_frozen_validates_itself_and_yields_its_settings():
    from sandbox.sources.async_invoke import AsyncConfig
    from sandbox.sources.ddb_stream import DdbStreamMapping
    from sandbox.sources.sqs import QueueConfig, SqsMappingConfig
    from sandbox.sources.stepfunctions import TaskRetryConfig
    from sandbox.sources.stream import StreamMapping
    from sandbox.sources.sync_invoke import CallerConfig

    for cls in (AsyncConfig, QueueConfig, SqsMappingConfig, StreamMapping, DdbStreamMapping, CallerConfig,
                TaskRetryConfig):
        assert issubclass(cls, Config) and cls.__dataclass_params__.frozen
        settings = cls.settings()
        assert settings and all(isinstance(s, Setting) for s in settings)
        config = cls()
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(config, settings[0].name, settings[0].default)
        numeric = next((s for s in settings if s.maximum is not None), None)
        if numeric is not None:
            with pytest.raises(Exception, match=numeric.name):
                cls(**{numeric.name: numeric.maximum + 1})


def test_a_scenario_offers_its_sources_settings_written_once():
    from sandbox.sources.sqs import SqsMappingConfig

    scenario_setting = SCENARIOS["sqs-batch-failure"].all_settings()["batch_size"]
    assert scenario_setting == next(s for s in SqsMappingConfig.settings() if s.name == "batch_size")
    assert SCENARIOS["sqs-visibility-timeout"].all_settings()["visibility_timeout"].default == 5


def test_every_aws_default_cites_its_page():
    for sc in SCENARIOS.values():
        for s in sc.all_settings().values():
            if s.aws:
                assert s.doc and s.doc.startswith("https://docs.aws.amazon.com/"), (sc.name, s.name)


# -- one fault module ----------------------------------------------------------------------------
OWN_SESSION_HANDLER = '''
import os, boto3
from sandbox import orders_in, send_confirmation_email

def handler(event, context):
    # A client from a session of its own, not boto3's default one.
    table = boto3.Session().resource("dynamodb").Table(os.environ["IDEMPOTENCY_TABLE"])
    for order in orders_in(event):
        key = "done#" + order["orderId"]
        if "Item" in table.get_item(Key={"pk": key}, ConsistentRead=True):
            continue
        send_confirmation_email(order)
        table.put_item(Item={"pk": key})
    return {}
'''


def test_a_fault_in_the_window_reaches_a_handler_with_its_own_session(tmp_path):
    path = tmp_path / "own_session.py"
    path.write_text(OWN_SESSION_HANDLER)
    result = run_scenario("timeout-after-effect", f"{path}:handler", settings={"fault_in_window": True})
    history = result.history
    calls = [e for e in history.of_type("aws") if e["inv"] == "inv-1" and e["service"] == "dynamodb"]
    # The network latency lands on this handler's own client too, so its save after the first
    # email cannot finish before the deadline: the first attempt times out mid-window.
    assert [c["op"] for c in calls] == ["GetItem"]
    assert history.invocations()["inv-1"]["outcome"] == "timeout"
    (dup,) = result.verdict.duplicates
    assert dup.key == "o-1"


# -- hooks that leave nothing behind -------------------------------------------------------------
def test_after_a_world_closes_plain_boto3_behaves_as_without_the_sandbox():
    before_handlers = list(botocore.handlers.BUILTIN_HANDLERS)
    before_send = botocore.endpoint.Endpoint._send
    import time

    before_sleep = time.sleep
    with Sandbox() as sb:
        assert botocore.endpoint.Endpoint._send is not before_send
        sb.table.put_item(Item={"pk": "inside"})
    assert botocore.handlers.BUILTIN_HANDLERS == before_handlers
    assert botocore.endpoint.Endpoint._send is before_send and time.sleep is before_sleep
    with mock_aws():  # a plain client, mocked the ordinary way, works exactly as it does without us
        client = boto3.client("dynamodb", region_name="eu-west-1", aws_access_key_id="x", aws_secret_access_key="y")
        client.create_table(TableName="plain", AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "S"}],
                            KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}], BillingMode="PAY_PER_REQUEST")
        client.put_item(TableName="plain", Item={"k": {"S": "1"}})
        assert client.get_item(TableName="plain", Key={"k": {"S": "1"}})["Item"] == {"k": {"S": "1"}}
    assert not any(getattr(h[1], "__module__", "").startswith("sandbox") for h in botocore.handlers.BUILTIN_HANDLERS)


def test_the_shared_loader_taken_before_any_world_leaves_worlds_working():
    """A benchmark or a notebook may take the shared service models first: worlds still answer locally."""
    code = ("from sandbox import run_scenario\n"
            "from sandbox.aws import adapter\n"
            "adapter.shared_loader()\n"
            "try:\n"
            "    adapter.boto3_session('us-east-1')\n"
            "except RuntimeError as exc:\n"
            "    print('refused:', exc)\n"
            "print(run_scenario('no-fault', 'examples/idempotent.py:handler').status)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "refused: the sandbox's shared boto3 session is made inside an open world", "valid"]


def test_unrecorded_is_scoped_to_the_calling_task():
    with Sandbox() as sb:
        seen = {}

        def quiet_poller():
            with sb.gateway.unrecorded():
                sb.sqs.list_queues()
                sb.scheduler.sleep(1.0)  # another task runs meanwhile, and its requests are recorded
                sb.sqs.list_queues()

        def loud_worker():
            sb.scheduler.sleep(0.5)
            sb.sqs.create_queue(QueueName="loud")
            seen["done"] = True

        sb.scheduler.spawn(quiet_poller, name="quiet")
        sb.scheduler.spawn(loud_worker, name="loud")
        sb.run()
        ops = [(e["actor"], e["op"]) for e in sb.history.of_type("aws")]
    assert seen == {"done": True} and ops == [("loud", "CreateQueue")]


def _assigned_private_attributes(path: Path) -> list[str]:
    """``x._name = ...`` where ``x`` is not ``self``/``cls``: code that rewires another object's insides."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, (ast.AugAssign, ast.AnnAssign)) else []
        for target in targets:
            for t in (target.elts if isinstance(target, ast.Tuple) else [target]):
                if (isinstance(t, ast.Attribute) and t.attr.startswith("_") and not t.attr.startswith("__")
                        and not (isinstance(t.value, ast.Name) and t.value.id in ("self", "cls"))):
                    found.append(f"{path.name}:{node.lineno} {ast.unparse(t)}")
        if isinstance(node, ast.Subscript) and ast.unparse(node.value).endswith(".__dict__"):
            found.append(f"{path.name}:{node.lineno} {ast.unparse(node)}")
    return found


def test_the_grader_and_the_search_use_public_hooks_only(tmp_path):
    """Exploration and grading hear the world through its hooks (scheduler listeners, history subscribers,
    the gateway's request listeners); they never rewire a part's insides."""
    watchers = [PACKAGE / "modes" / "dpor.py", PACKAGE / "modes" / "explore.py", PACKAGE / "modes" / "stepping.py",
                *sorted((PACKAGE / "grading").glob("*.py"))]
    assert [hit for path in watchers for hit in _assigned_private_attributes(path)] == []
    # The check catches what it is for: the search's old way into the scheduler.
    old = tmp_path / "old_tracer.py"
    old.write_text("def install(sched, h):\n    sched._fire_due, sched.run = h, h\n    h.__dict__['g'] = 1\n")
    assert len(_assigned_private_attributes(old)) == 2


def test_every_kind_of_world_differs_only_in_its_parts():
    """The deterministic, real-threads and endpoint worlds are one ``Sandbox`` built from different recipes:
    each part answers its protocol, and the parts every world shares are the same classes."""
    from sandbox import parts
    from sandbox.modes.endpoint import EndpointSandbox
    from sandbox.modes.realthreads import RealThreadsSandbox
    from sandbox.world import assemble

    protocols = {"clock": parts.Clock, "scheduler": parts.TaskScheduler, "gateway": parts.AwsGateway,
                 "runtime": parts.LambdaRuntime}
    kinds = [Sandbox(0), RealThreadsSandbox(0, forwarder=_no_forwarder())]
    shared = {name: type(getattr(kinds[0], name)) for name in ("history", "replicas", "services", "sweeper")}
    for world in kinds:
        for name, protocol in protocols.items():
            assert isinstance(getattr(world, name), protocol), (type(world).__name__, name)
        assert {name: type(getattr(world, name)) for name in shared} == shared
    assert type(kinds[0].scheduler).__name__ == "Scheduler" and type(kinds[1].scheduler).__name__ == "FreeScheduler"
    # Neither subclass builds parts of its own: the world's one builder does.
    for cls in (RealThreadsSandbox, EndpointSandbox):
        source = inspect.getsource(cls)
        assert not [n for n in ("History(", "Replicas(", "Services(", "TtlSweeper(", "Gateway(") if n in source]
    assert "recipe" in inspect.signature(assemble).parameters


def _no_forwarder():
    from sandbox.aws.http_gateway import Forwarder

    return Forwarder("http://127.0.0.1:9")  # never used: the world is built, not opened


def test_the_package_shows_its_architecture():
    """A dozen modules at the top; the rest in packages named for their part of the architecture (docs/layout.md)."""
    loose = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(loose) <= 12, loose
    packages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    assert packages == {"core", "aws", "runtime", "sources", "scenarios", "modes", "verdict", "analysis", "present",
                        "grading", "bench", "tools"}
    layout = (ROOT / "docs" / "layout.md").read_text()
    assert all(f"`{name}/`" in layout for name in packages), "docs/layout.md names every package"
