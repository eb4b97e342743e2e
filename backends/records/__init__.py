"""What a submission leaves on disk: its record, a local run's results, who ran a local task.

Below both halves of the core: submitting writes these files, watching reads them.
"""
