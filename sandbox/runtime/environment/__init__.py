"""Lambda execution environments as OS processes.

``template`` forks them warm, ``guest`` is what runs inside one (AWS's runtime client and the
handler), ``host`` is the world's side of each, and ``wire`` the one channel between them.
"""
