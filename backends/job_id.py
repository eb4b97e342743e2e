"""A Slurm job id as text, spelled once for the submit records (`backends.records.record`) and a
checkpoint's failed-task records (`sharding.store`).

What sbatch --parsable gives (a cluster name after ';' is not kept), a task's SLURM_JOB_ID: a job id
reaches sacct, squeue and scancel as an argument, where "--user=root" would be read as an option.
"""
from __future__ import annotations

import re

JOB_ID = re.compile(r"[0-9]{1,19}\Z")   # [0-9], not \d: no other script's digits
