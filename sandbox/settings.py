"""Settings: each knob written once, with its range, its help and the AWS page behind its default.

A source's configuration is a frozen dataclass built from ``param`` fields. The same
declaration validates the dataclass when it is created and yields the ``Setting`` objects
a scenario offers on the command line, in widgets and in ``python -m sandbox scenarios``,
so an AWS limit is never written twice.

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
from typing import TYPE_CHECKING, Any, ClassVar

from .errors import BadInput

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
        changes: dict[str, Any] = {"default": default}
        if help is not None:
            changes["help"] = help
        if doc is not None:
            changes["doc"] = doc
        return dataclasses.replace(self, **changes)


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
    rules). ``settings()`` yields the ``Setting`` of each field, ``from_settings(cfg)``
    builds the config from a scenario's resolved values.
    """

    if TYPE_CHECKING:  # every subclass is a dataclass, so dataclasses.fields() takes the class
        __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]

    def __post_init__(self) -> None:
        for setting in self.settings():
            setting.check(getattr(self, setting.name))
        self.check()

    def check(self) -> None:
        """Rules that involve several fields; subclasses raise BadInput."""

    @classmethod
    def settings(cls, **defaults: Any) -> tuple[Setting, ...]:
        """Every ``param`` field as a Setting; keyword arguments give a scenario's own defaults."""
        out = []
        for f in dataclasses.fields(cls):
            spec = f.metadata.get("setting")
            if spec is None:
                continue
            out.append(Setting(f.name, defaults.pop(f.name, f.default), **spec))
        if defaults:
            raise TypeError(f"{cls.__name__} has no settings {sorted(defaults)}")
        return tuple(out)

    @classmethod
    def from_settings(cls, cfg: Mapping[str, Any], **extra: Any):
        names = {s.name for s in cls.settings()}
        return cls(**{k: v for k, v in cfg.items() if k in names}, **extra)


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
