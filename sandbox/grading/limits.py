"""The grading child's resource limits, set before anything else runs.

Memory, CPU time, file size and no core dumps (``resource.setrlimit``), inherited by the
execution environments' template and every environment forked from it; the grading parent adds
a wall-clock limit and kills on overrun. What keeps a submission away from the grader is the
operating system (``sandbox.runtime.environment.containment``), not these limits.
"""
from __future__ import annotations


def limit(memory_mb: int, cpu_seconds: int, file_mb: int = 16) -> None:
    """This process's resource limits (set before anything else runs)."""
    import resource

    mb = 1024 * 1024
    for name, soft, hard in (("RLIMIT_AS", memory_mb * mb, memory_mb * mb),
                             ("RLIMIT_CPU", cpu_seconds, cpu_seconds + 5),
                             ("RLIMIT_FSIZE", file_mb * mb, file_mb * mb), ("RLIMIT_CORE", 0, 0)):
        if hasattr(resource, name):
            resource.setrlimit(getattr(resource, name), (soft, hard))
