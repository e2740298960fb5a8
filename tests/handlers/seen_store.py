"""State a handler keeps next to itself: one copy per container (process)."""
SEEN = set()
