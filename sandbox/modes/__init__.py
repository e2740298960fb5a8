"""Other ways to run a world: one step at a time, every interleaving (DPOR), real threads, a real endpoint.
"""
