"""What a run means: the checker's verdict, the duplicate matrix, campaigns, the capstone's scoreboard and
what idempotency costs.
"""
