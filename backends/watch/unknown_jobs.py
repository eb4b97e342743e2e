"""Jobs Slurm has no trace of among those a watched record's unended tasks wait in.

A record's job purged from accounting, another cluster's, a test fixture's: Slurm never gives its
tasks a state, so a watch of the record (`hyperion-jobs watch RECORD`, the console's Jobs screen)
waited for ever on them. Decided per job, as `status` takes Slurm's answers: such a job's unended
tasks are UNKNOWN (nothing is recorded of them) and the watch ends once every other job ended.
"""
from __future__ import annotations

import time
from collections.abc import Sequence

from backends.records.history import History
from backends.records.record import LOCAL_JOB, TaskRecord
from backends.states import LEDGER
from backends.watch.poller import Poller, PollUpdate
from backends.watch.targets import jobs_slurm_knows_none, knows_none_line

UNKNOWN_LOOK_EVERY = 60.0   # seconds between two looks at whether Slurm knows a watched record's jobs at all


class UnknownJobs:
    """Which of the jobs a watched record's unended tasks wait in Slurm knows nothing of: `watch
    RECORD` of it waited for ever, where `watch J` says `Slurm knows no job J`. The watch ends, once
    every other job's tasks ended, with the recorded ends shown and the unknown jobs' unended tasks
    UNKNOWN (`ended_line`), as `status` shows them: it waited for ever, saying every 30 s that sacct
    had no row of a job "Slurm listed before" (the ledger had), and a record whose attempt 1 waits in
    such a job was watched for ever after attempt 2's job ended. (`watch RECORD` refuses, exit 2, a
    record with nothing to show: `line`.)

    Decided per job, on the unended tasks' jobs only (`jobs`): a recorded end says nothing of whether
    Slurm knows them now, and a state Slurm gives a task of one job says nothing of another. A job is
    asked about only while Slurm gives none of its tasks a state, and only after a poll both daemons
    answered: a query that failed or timed out is an outage, which the watch waits out and says, not
    a job Slurm does not know. Then one look as `status` takes it (`jobs_slurm_knows_none` of those
    jobs, charged to the watch's budget, at most every UNKNOWN_LOOK_EVERY s) tells it: a site wrapper
    answering nothing (exit 0) is no answer, and a job squeue knows from the moment sbatch queued it
    is named. The poller is told (`Poller.not_known`): it asks no more of them and ends with the rest."""

    def __init__(self, history: History, tasks: Sequence[TaskRecord], poller: Poller) -> None:
        unended = [t for t in tasks if t.job_id != LOCAL_JOB and history.final(t) is None]
        self.jobs = sorted({t.job_id for t in unended}, key=lambda job: (len(job), job))
        self.unended = frozenset((t.job_id, t.array_task_id) for t in unended)
        self.watched = frozenset((t.job_id, t.array_task_id) for t in tasks if t.job_id != LOCAL_JOB)
        self.record = history.record_path
        self.poller = poller
        self.known: set[str] = set()     # jobs Slurm told a state of a task of (or forgot): watched as ever
        self.looked_at: float | None = None
        self.gone: list[str] = []        # jobs Slurm knows none of: their unended tasks are not known (UNKNOWN)

    def none_known(self, update: PollUpdate) -> bool:
        """True once Slurm, answering, named none of some jobs nor gave their tasks a state, and
        every other watched task ended: the watch ends there."""
        self._learn(update)
        self._look(update)
        if not self.gone:
            return False
        gone = set(self.gone)
        return all(key[0] in gone or key in update.unknown
                   or (key in update.states and update.states[key].state.is_terminal) for key in self.watched)

    def _learn(self, update: PollUpdate) -> None:
        """The jobs Slurm told a state of (or of whose forgetting): a watch as ever for them."""
        left = {job for job in self.jobs if job not in self.known and job not in self.gone}
        if left:
            self.known |= left & ({key[0] for key, state in update.states.items()
                                   if key in self.unended or state.source != LEDGER}
                                  | {key[0] for key in update.unknown})

    def _look(self, update: PollUpdate) -> None:
        candidates = [job for job in self.jobs if job not in self.known and job not in self.gone]
        if not candidates or update.error or update.problem:
            return                    # not answering: the watch goes on, and says so
        now = time.monotonic()
        if self.looked_at is not None and now - self.looked_at < UNKNOWN_LOOK_EVERY:
            return
        groups = self.poller.by_cluster(candidates, self.poller.client)   # each job's cluster (-M), the watch's stop
        # sacct and squeue per cluster; of several jobs, squeue of one alone
        calls = sum(3 if len(jobs) > 1 else 2 for _, jobs in groups)
        budget = self.poller.budget
        if budget.room(now) < calls:
            return
        self.looked_at = now
        budget.charge(calls, now)
        gone = [job for run, jobs in groups for job in jobs_slurm_knows_none(jobs, run)]
        if gone:
            self.gone = sorted({*self.gone, *gone}, key=lambda job: (len(job), job))
            self.poller.not_known(gone)

    def line(self) -> str:
        """``Slurm knows no job 4242, which /x/log/q/x.JOB.submit.json submitted``."""
        return knows_none_line(self.record, self.gone)

    def ended_line(self, update: PollUpdate) -> str | None:
        """`line` and the tasks it leaves UNKNOWN, as the line of jobs the controller forgot says it
        (None: no such job). `status RECORD` says the same (`knows_none_line`)."""
        if not self.gone:
            return None
        gone = set(self.gone)
        not_known = sum(1 for key in self.unended if key[0] in gone and key not in update.states)
        return knows_none_line(self.record, self.gone, not_known)
