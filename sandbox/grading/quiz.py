"""Exercise 01's timelines: runs whose scenario you are asked to name.

    candidates()          # the scenarios to choose from
    mystery("A")          # timeline A, drawn (its scenario's name is not in it)
    mystery("A", text=True)   # the same run, in words
"""
from __future__ import annotations

from pathlib import Path

from ..cli import first_sentence
from ..errors import BadInput
from ..history import History
from . import notebooks as nb
from .catalog import EXERCISES_DIR
from .feedback import text_timeline

QUIZ = "01_name_the_source"


def _folder() -> Path:
    here = Path.cwd() / QUIZ
    return here if here.is_dir() else EXERCISES_DIR / QUIZ


def candidates() -> None:
    """Print the scenarios a timeline may come from, each with its first sentence."""
    from ..scenarios import SCENARIOS

    meta = nb.exercise_meta(nb.read(EXERCISES_DIR / f"{QUIZ}.ipynb")) or {}
    names = meta.get("candidates") or sorted(SCENARIOS)
    width = max(len(n) for n in names)
    for name in names:
        print(f"{name:<{width}}  {first_sentence(SCENARIOS[name].summary)}")


def load(letter: str) -> History:
    path = _folder() / f"{str(letter).upper()}.json"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in _folder().glob("*.json")))
        raise BadInput(f"no timeline {letter!r}; there are: {known}")
    return History.load(path)


def mystery(letter: str, text: bool = False):
    """Timeline ``letter``: a figure (or, with ``text=True``, the run in words)."""
    history = load(letter)
    if text:
        print(text_timeline(history, limit=200))
        return None
    from ..timeline import plot_timeline

    return plot_timeline(history, title=f"Timeline {str(letter).upper()}")
