"""What a learner reads about a failed test: the timeline in words, and the command that replays it.

Both live in ``sandbox.present.run_text``, shared with the command line, so the replay command is the one
``python -m sandbox run ... --policy exhaustive`` prints for the same schedule (``--script``), or a
seeded run (``--seed``). Drills replay with ``python -m sandbox.grading drill``.
"""
from ..present.run_text import PROGRAM, TIMELINE_LINES, replay_command, text_timeline

__all__ = ["PROGRAM", "TIMELINE_LINES", "replay_command", "text_timeline"]
