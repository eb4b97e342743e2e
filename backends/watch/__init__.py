"""Watching a submission: Slurm queries, the poller, per-task rows, logs, waiting for the end."""
