"""The trusted world's machinery: virtual time, the scheduler and its policies, the history, faults and
the effect services a handler must not repeat.
"""
