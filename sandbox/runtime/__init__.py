"""The Lambda runtime: functions, containers and their contexts, handler loading, and the execution
environments (one OS process each, AWS's runtime client).
"""
