"""Many runs at once: the duplicate matrix, seeded campaigns, the capstone's scoreboard and what idempotency
costs. Each drives scenarios and reads their verdicts (``verdict``); nothing below imports this package.
"""
