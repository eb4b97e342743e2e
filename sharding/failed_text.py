"""One failed-task record as a line of text: what `hyperion-checkpoint failed` prints and what the
console's Checkpoint screen shows for the same record (its details cell showed the first 18
characters of the raw JSON, ``{"errors": {"p6": ``, where the CLI says ``tasks p6  ValueError: x``).

Plain text: callers escape it for the terminal or the screen.
"""
from __future__ import annotations

from sharding.coverage import Standing
from sharding.error_text import error_text
from sharding.store import FailedRecord
from sharding.task_ids import task_ids_text

SUMMARY_LIMIT = 200     # characters of a summary; a foreign record's error text may be megabytes
COMPLETE_SINCE_NOTE = "  (shard complete since)"
# A rerun of a complete shard failed: its manifest stands, so `retry` does not rerun it
FAILED_AFTER_NOTE = "  (failed after its shard completed; retry skips the shard)"
NOTES = {Standing.COMPLETE_SINCE: COMPLETE_SINCE_NOTE, Standing.FAILED_AFTER: FAILED_AFTER_NOTE}


def or_dash(value: object) -> str:
    """A field a record's folders did not name (a user's own failed-task folder) shown as '-'."""
    return "-" if value is None else str(value)


def job_text(record: FailedRecord) -> str:
    """The job of a failed-task record as hyperion-jobs names its task, ``12358_6`` (array job _
    array task), where the record says so (Hyperion's writer records both); else the job its
    ``slurm_job_<J>`` folder names (the task's own SLURM_JOB_ID: Curator's records, older ones),
    ``-`` without one. Every face that names a record's job shows this."""
    return record.array_id or or_dash(record.job)


def record_summary(record: FailedRecord, limit: int = SUMMARY_LIMIT) -> str:
    """``tasks A,B  first error line`` of a record's details, whatever shape a foreign file gave them."""
    details = record.details
    if not isinstance(details, dict) or not details:
        return f"tasks -  {record.without_details if details is None else '(no details)'}"
    tasks = task_ids_text(details)
    text = f"tasks {tasks}  {error_text(details) or '(no error text)'}"
    return text if len(text) <= limit else text[:limit] + "..."


def record_line(record: FailedRecord, standing: Standing | None) -> str:
    """``shard 2  job 100_2  array_task 2  restart 0  tasks p1  ValueError: x  (shard complete since)``;
    no note for a shard still failing or a record of no shard (`standing` None)."""
    shard, task, restart = (or_dash(v) for v in (record.shard, record.array_task, record.restart))
    job = job_text(record)
    since = NOTES.get(standing, "")
    return f"shard {shard}  job {job}  array_task {task}  restart {restart}  {record_summary(record)}{since}"
