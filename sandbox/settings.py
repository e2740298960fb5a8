"""Settings: each knob written once, with its range, its help and the AWS page behind its default.

A source's configuration is a frozen dataclass built from ``param`` fields. The same
declaration validates the dataclass when it is created and yields the ``Setting`` objects
a scenario offers on the command line, in widgets and in ``python -m sandbox scenarios``,
so an AWS limit is never written twice. A scenario's settings are one such dataclass too
(``ScenarioSettings``): its own ``param`` fields, and its sources' configs as ``group`` fields,
whose settings it offers by their own names; ``--set``, a widget's values and a notebook's
``settings=`` are parsed into it in one place, ``Scenario.resolve``.

    @dataclass(frozen=True)
    class QueueConfig(Config):
        visibility_timeout: int = param(30, "the queue's visibility timeout (s)", DOC, 0, 43200,
                                        aws="VisibilityTimeout")
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Self, TypeVar

from .errors import BadInput

C = TypeVar("C", bound="Config")

#: A setting's value: its default's type, one of these (``Setting._convert`` turns text into each). Settings' values
#: go by name in a ``dict[str, SettingValue]``: which names there are depends on the scenario, and
#: ``Scenario.resolve`` refuses any other.
SettingValue = bool | int | float | str

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


@dataclass(frozen=True)
class Setting:
    """One knob: a name, a default (whose type is the setting's type), help text and limits."""

    name: str
    default: Any
    help: str
    doc: str | None = None  # the AWS documentation page the default comes from
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple | None = None
    aws: str | None = None  # AWS's own name for it, when it has one (BatchSize, ...)

    @property
    def kind(self) -> type:
        return type(self.default)

    @property
    def label(self) -> str:
        return f"{self.name} ({self.aws})" if self.aws and self.aws != self.name else self.name

    def parse(self, text: Any) -> Any:
        """Turn a ``--set`` value (text) or a Python value into this setting's type, checking its range."""
        return self.check(self._convert(text))

    def _convert(self, text: Any) -> Any:
        kind = self.kind
        try:
            if kind is bool:
                if isinstance(text, bool):
                    return text
                if str(text).strip().lower() in _TRUE:
                    return True
                if str(text).strip().lower() in _FALSE:
                    return False
                raise ValueError
            if kind is int:
                if isinstance(text, bool) or (isinstance(text, float) and not text.is_integer()):
                    raise ValueError
                return int(text)
            if kind is float:
                if isinstance(text, bool):
                    raise ValueError
                return float(text)
            return str(text)
        except (TypeError, ValueError, OverflowError):
            raise BadInput(f"setting {self.name} takes {_article(kind.__name__)} {kind.__name__}, "
                           f"got {text!r}") from None

    def check(self, value: Any) -> Any:
        """``value`` unchanged if it is of this setting's type and inside its limits; else a clear BadInput."""
        kind = self.kind
        ok_type = isinstance(value, kind) and not (kind is not bool and isinstance(value, bool))
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            ok_type = True
        if not ok_type:
            raise BadInput(f"setting {self.label} takes {_article(kind.__name__)} {kind.__name__}, got {value!r}")
        if isinstance(value, float) and not math.isfinite(value):
            raise BadInput(f"setting {self.label} must be a finite number, got {value!r}")
        if self.choices is not None and value not in self.choices:
            raise BadInput(f"setting {self.label} must be one of {', '.join(map(str, self.choices))}, got {value!r}")
        if self.minimum is not None and value < self.minimum:
            raise BadInput(f"setting {self.label} must be at least {_number(self.minimum)}, got {value!r}"
                           f"{self._cite()}")
        if self.maximum is not None and value > self.maximum:
            raise BadInput(f"setting {self.label} must be at most {_number(self.maximum)}, got {value!r}"
                           f"{self._cite()}")
        return value

    def _cite(self) -> str:
        return f" ({self.doc})" if self.doc else ""

    def with_default(self, default: Any, help: str | None = None, doc: str | None = None) -> "Setting":
        """The same setting with a scenario's own default (and, if given, its own help text)."""
        return dataclasses.replace(self, default=default, help=self.help if help is None else help,
                                   doc=self.doc if doc is None else doc)


def _number(x: float) -> str:
    """A limit as people write it: 0.05, 900, 31622400 (``:g`` alone would write 3.16224e+07)."""
    return str(int(x)) if float(x).is_integer() and abs(x) >= 1e6 else f"{x:g}"


def _article(word: str) -> str:
    return "an" if word[:1] in "aeiou" else "a"


def param(default: Any, help: str, doc: str | None = None, minimum: float | None = None,
          maximum: float | None = None, choices: tuple | None = None, *, aws: str | None = None) -> Any:
    """A dataclass field that is also a scenario setting (see ``Config``)."""
    spec = dict(help=help, doc=doc, minimum=minimum, maximum=maximum, choices=choices, aws=aws)
    return field(default=default, metadata={"setting": spec})


class Config:
    """Mixin for frozen dataclasses whose ``param`` fields are settings.

    Creating one checks every field against its limits, then ``check()`` (cross-field
    rules). ``settings()`` yields the ``Setting`` of each field, a ``group`` field's settings
    in its place; ``from_settings(values)`` builds the config from settings' values by name,
    and ``values()`` gives them back.

    A subclass may give some inherited settings defaults of its own, by name (a value, or a
    ``(default, help[, doc])`` tuple as ``override`` takes), a group's settings too:
    ``class Slow(Base, defaults={"email_seconds": 0.6})``.
    """

    if TYPE_CHECKING:  # every subclass is a dataclass, so dataclasses.fields() takes the class
        __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]

    def __init_subclass__(cls, defaults: Mapping[str, Any] | None = None, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        if defaults:
            _redeclare(cls, dict(defaults))

    def __post_init__(self) -> None:
        direct = {f.name for f in dataclasses.fields(self) if "setting" in f.metadata}
        for setting in self.settings():
            if setting.name in direct:
                setting.check(getattr(self, setting.name))
        self.check()

    def check(self) -> None:
        """Rules that involve several fields; subclasses raise BadInput."""

    @classmethod
    def settings(cls, **defaults: Any) -> tuple[Setting, ...]:
        """Every ``param`` field as a Setting; keyword arguments give a scenario's own defaults."""
        out: list[Setting] = []
        for f in dataclasses.fields(cls):
            spec = f.metadata.get("setting")
            if "group" in f.metadata:
                out.extend(f.metadata["group"].settings())
            elif spec is not None:
                out.append(Setting(f.name, defaults.pop(f.name, f.default), **spec))
        if defaults:
            raise TypeError(f"{cls.__name__} has no settings {sorted(defaults)}")
        return tuple(out)

    @classmethod
    def from_settings(cls, values: Mapping[str, Any]) -> Self:
        """The config of ``values`` (settings' values by name; names of other configs are left alone, a name
        left out takes its default)."""
        kwargs: dict[str, object] = {}  # each field's value: a setting's, or a group's whole config
        for f in dataclasses.fields(cls):
            if "group" in f.metadata:
                kwargs[f.name] = f.metadata["group"].build(values)
            elif "setting" in f.metadata and f.name in values:
                kwargs[f.name] = values[f.name]
        return cls(**kwargs)

    def values(self) -> dict[str, SettingValue]:
        """Every setting's value by name, in ``settings()``'s order (a group's offered settings in its place)."""
        out: dict[str, SettingValue] = {}
        for f in dataclasses.fields(self):
            if "group" in f.metadata:
                offered = {s.name for s in f.metadata["group"].settings()}
                out.update((k, v) for k, v in getattr(self, f.name).values().items() if k in offered)
            elif "setting" in f.metadata:
                out[f.name] = getattr(self, f.name)
        return out


@dataclass(frozen=True)
class Group:
    """A field that holds a whole config (a source's), whose settings its owner offers under their own names."""

    config: type[Config]
    #: The owner's own defaults by name: a value, or a ``(default, help[, doc])`` tuple as ``override`` takes.
    defaults: Mapping[str, Any]
    #: Settings offered only when ``defaults`` gives them (a scenario opts in by giving its default).
    opt_in: tuple[str, ...] = ()

    def all_settings(self) -> tuple[Setting, ...]:
        return override(self.config.settings(), **self.defaults)

    def settings(self) -> tuple[Setting, ...]:
        return tuple(s for s in self.all_settings() if s.name not in self.opt_in or s.name in self.defaults)

    def build(self, values: Mapping[str, Any]) -> Any:
        """The config from ``values``, this group's defaults for the names they leave out and for the settings it
        does not offer (another group may offer one of the same name: its value is not this one's)."""
        offered = {s.name for s in self.settings()}
        chosen = {name: value for name, value in values.items() if name in offered}
        return self.config.from_settings({**{s.name: s.default for s in self.all_settings()}, **chosen})

    def as_field(self) -> Any:
        return field(default_factory=lambda: self.build({}), metadata={"group": self})


def group(config: type[C], *, opt_in: tuple[str, ...] = (), **defaults: Any) -> C:
    """A dataclass field holding a whole ``config`` whose settings are offered flat, by their own names
    (``defaults``: the owner's own defaults, as ``override`` takes them; ``opt_in``: see ``Group``)."""
    override(config.settings(), **defaults)  # an unknown name fails here, where it is written
    result: C = Group(config, dict(defaults), opt_in).as_field()
    return result


def _redeclare(cls: type, defaults: dict[str, object]) -> None:
    """Declare again on ``cls`` (before the dataclass decorator reads it) the fields whose defaults it changes:
    a setting keeps its help, page and limits; a group keeps its own defaults, ``defaults`` over them."""
    annotations = dict(cls.__dict__.get("__annotations__", {}))
    inherited: dict[str, dataclasses.Field[Any]] = dict(getattr(cls, "__dataclass_fields__", {}))
    own = {name: value for name, value in vars(cls).items() if isinstance(value, dataclasses.Field)}
    for name, f in {**inherited, **own}.items():
        spec, grp = f.metadata.get("setting"), f.metadata.get("group")
        if spec is not None and name in defaults:
            value = defaults.pop(name)
            setting = Setting(name, f.default, **spec)
            setting = setting.with_default(*value) if isinstance(value, tuple) else setting.with_default(value)
            new = field(default=setting.default, metadata={"setting": {k: getattr(setting, k) for k in spec}})
        elif grp is not None and (mine := {k: defaults.pop(k) for k in list(defaults)
                                           if k in {s.name for s in grp.config.settings()}}):
            new = group(grp.config, opt_in=grp.opt_in, **{**grp.defaults, **mine})
        else:
            continue
        annotations.setdefault(name, f.type)  # an inherited field: the dataclass reads only the class's own
        setattr(cls, name, new)
    if defaults:
        raise TypeError(f"{cls.__name__} has no settings {sorted(defaults)}")
    cls.__annotations__ = annotations


def override(settings: tuple[Setting, ...], **changes: Any) -> tuple[Setting, ...]:
    """``settings`` with some defaults replaced: ``override(s, email_seconds=0.6)``.

    A value may be a ``(default, help)`` pair to replace the help text too.
    """
    out = []
    for s in settings:
        if s.name in changes:
            value = changes.pop(s.name)
            s = s.with_default(*value) if isinstance(value, tuple) else s.with_default(value)
        out.append(s)
    if changes:
        raise TypeError(f"no such settings: {sorted(changes)}")
    return tuple(out)
