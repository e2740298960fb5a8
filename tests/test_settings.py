"""A scenario's settings are one frozen dataclass, each setting declared once (issue 33).

The ``Setting`` tuples the CLI, the widgets and the catalogue read are derived from the dataclass, so the two
cannot drift apart; these tests hold the derivation to its promise: every declared setting is a field a run
reads, every value the CLI or a widget may give comes back from the dataclass unchanged, and a misspelled
setting is refused (by ``resolve`` at run time, by mypy in the scenarios' code).
"""
from __future__ import annotations

import dataclasses
import textwrap

import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

from sandbox.errors import BadInput
from sandbox.scenarios import SCENARIOS, Scenario
from sandbox.scenarios.base import RunConfig, ScenarioSettings
from sandbox.settings import Setting, group, param
from sandbox.sources.async_invoke import AsyncConfig

from conftest import ROOT

NAMES = list(SCENARIOS)


# -- the metadata: written once, whole, and within its own limits ------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_each_scenario_derives_its_settings_from_its_dataclass(name):
    sc = SCENARIOS[name]
    assert dataclasses.is_dataclass(sc.config) and issubclass(sc.config, ScenarioSettings)
    assert sc.config.__dataclass_params__.frozen  # type: ignore[attr-defined]
    declared = [s.name for s in (*sc.settings, *sc.common)]
    assert len(declared) == len(set(declared)), f"{name} declares a setting twice"
    defaults = sc.config()
    assert defaults.values() == {s.name: s.default for s in (*sc.settings, *sc.common)}
    assert [s.name for s in sc.common] == [s.name for s in RunConfig.settings()] == list(defaults.run.values())


@given(data=st.data())
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_every_scenarios_settings_round_trip_with_their_declared_metadata(data):
    """Any values within the declared limits, given as the CLI gives them (text) or as a notebook does (Python
    values), come back from the dataclass as given; each default is within its limits and described."""
    sc = SCENARIOS[data.draw(st.sampled_from(NAMES), label="scenario")]
    chosen = {}
    for s in (*sc.settings, *sc.common):
        assert s.help.strip(), f"{sc.name}: {s.name} has no description"
        assert s.check(s.default) == s.default
        if data.draw(st.booleans(), label=f"set {s.name}"):
            chosen[s.name] = data.draw(_values(s), label=s.name)
    as_text = data.draw(st.booleans(), label="as text")
    try:
        cfg = sc.resolve({k: str(v) if as_text else v for k, v in chosen.items()})
    except BadInput:
        reject()  # a rule across settings (a config's check()) refused the mix: not what this test is about
    values = cfg.values()
    assert {k: values[k] for k in chosen} == chosen
    assert all(values[s.name] == s.default for s in (*sc.settings, *sc.common) if s.name not in chosen)
    assert sc.config.from_settings(values) == cfg
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.run = RunConfig()  # type: ignore[misc]


def _values(s: Setting) -> st.SearchStrategy:
    """Values ``s`` takes: within its limits, of its type (a free text setting keeps its default)."""
    if s.choices is not None:
        return st.sampled_from(s.choices)
    if s.kind is bool:
        return st.booleans()
    low = s.minimum if s.minimum is not None else -1e6
    high = s.maximum if s.maximum is not None else 1e6
    if s.kind is int:
        return st.integers(int(low), int(high))
    if s.kind is float:
        return st.floats(low, high, allow_nan=False, allow_infinity=False)
    return st.just(s.default)


# -- a misspelled or out-of-range setting is refused, clearly -----------------------------------------------------
def test_a_misspelled_setting_is_refused_naming_the_closest_one():
    with pytest.raises(BadInput, match=r"scenario sqs-visibility-timeout has no setting 'visibility_timout'; did "
                                       r"you mean 'visibility_timeout'\? its settings are: .*batch_size"):
        SCENARIOS["sqs-visibility-timeout"].resolve({"visibility_timout": "5"})


def test_a_setting_out_of_its_range_is_refused_citing_the_aws_page():
    with pytest.raises(BadInput, match=r"setting visibility_timeout \(VisibilityTimeout\) must be at most 43200, "
                                       r"got 50000 \(https://docs\.aws\.amazon\.com/"):
        SCENARIOS["sqs-visibility-timeout"].resolve({"visibility_timeout": "50000"})


def test_a_settings_dataclass_refuses_a_name_it_does_not_have():
    with pytest.raises(TypeError, match="visibility_timout"):
        SCENARIOS["sqs-visibility-timeout"].config(visibility_timout=5)  # type: ignore[call-arg]


def test_a_scenarios_own_defaults_must_name_settings_it_has():
    with pytest.raises(TypeError, match=r"no such settings: \['duplicate_probabilty'\]"):
        group(AsyncConfig, duplicate_probabilty=1.0)
    with pytest.raises(TypeError, match=r"has no settings \['ordrs'\]"):
        @dataclasses.dataclass(frozen=True)
        class Misspelled(ScenarioSettings, defaults={"ordrs": 2}):
            orders: int = param(1, "how many orders", None, 1, 10)


def test_a_subclass_default_keeps_the_rest_of_the_declaration():
    @dataclasses.dataclass(frozen=True)
    class Base(ScenarioSettings):
        orders: int = param(1, "how many orders", "https://docs.aws.amazon.com/x", 1, 10, aws="Orders")

    @dataclasses.dataclass(frozen=True)
    class Mine(Base, defaults={"orders": 3, "email_seconds": (0.6, "slower email")}):
        pass

    base, mine = (next(s for s in cls.settings() if s.name == "orders") for cls in (Base, Mine))
    assert mine == dataclasses.replace(base, default=3) and Mine().orders == 3 and Base().orders == 1
    assert Mine().run.email_seconds == 0.6 and Base().run.email_seconds == 0.2
    assert next(s for s in Mine.settings() if s.name == "email_seconds").help == "slower email"
    with pytest.raises(BadInput, match="must be at most 10"):
        Mine(orders=11)


@pytest.mark.slow
def test_a_misspelled_setting_in_a_scenario_is_a_type_error(tmp_path, monkeypatch):
    """mypy reads the settings as attributes: a typo is caught before any run."""
    api = pytest.importorskip("mypy.api")
    monkeypatch.setenv("MYPYPATH", str(ROOT))  # this tree's sandbox, not an installed one
    snippet = tmp_path / "typo.py"
    snippet.write_text(textwrap.dedent("""
        from sandbox.scenarios.sqs_batch_failure import SqsBatchFailureSettings

        def horizon(cfg: SqsBatchFailureSettings) -> float:
            return cfg.horizn + cfg.mapping.batch_size
    """))
    out, _, status = api.run([str(snippet), "--config-file", str(ROOT / "pyproject.toml"),
                              "--cache-dir", str(ROOT / ".mypy_cache")])
    assert status == 1 and '"SqsBatchFailureSettings" has no attribute "horizn"' in out, out


def test_a_scenario_may_not_offer_one_name_twice():
    @dataclasses.dataclass(frozen=True)
    class Twice(ScenarioSettings):
        function_timeout: float = param(3.0, "the same name as the world's", None, 1, 900)

    with pytest.raises(TypeError, match=r"offers settings \['function_timeout'\] twice"):
        class Doubled(Scenario[Twice]):
            name = ""
