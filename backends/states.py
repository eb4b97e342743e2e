"""One model of Slurm job states, shared by the poller, the CLIs and the console.

Slurm spells states differently in sacct (``CANCELLED by 0``) and squeue
(``CANCELLED``); everything past this module sees only `JobState`.
"""
from __future__ import annotations

import re
import signal as _signal
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum


class JobState(str, Enum):
    """A Slurm job (or array task) state, as sacct and squeue name it."""

    PENDING = "PENDING"
    CONFIGURING = "CONFIGURING"
    RUNNING = "RUNNING"
    COMPLETING = "COMPLETING"
    SUSPENDED = "SUSPENDED"
    STOPPED = "STOPPED"
    SIGNALING = "SIGNALING"
    STAGE_OUT = "STAGE_OUT"
    RESIZING = "RESIZING"
    REQUEUED = "REQUEUED"
    REQUEUE_HOLD = "REQUEUE_HOLD"
    REQUEUE_FED = "REQUEUE_FED"
    RESV_DEL_HOLD = "RESV_DEL_HOLD"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"
    TIMEOUT = "TIMEOUT"
    OUT_OF_MEMORY = "OUT_OF_MEMORY"
    NODE_FAIL = "NODE_FAIL"
    PREEMPTED = "PREEMPTED"
    BOOT_FAIL = "BOOT_FAIL"
    DEADLINE = "DEADLINE"
    SPECIAL_EXIT = "SPECIAL_EXIT"
    REVOKED = "REVOKED"
    # Not a Slurm state: a local task whose runner died before recording its end.
    LOST = "LOST"

    @property
    def is_terminal(self) -> bool:
        """True once Slurm will not run the task again (without a requeue by hand)."""
        return self in TERMINAL

    @property
    def is_success(self) -> bool:
        return self is JobState.COMPLETED

    @classmethod
    def parse(cls, text: str) -> "JobState":
        """``"CANCELLED by 0"`` -> CANCELLED, ``"OOM"``/``"CANCELLED+"`` accepted; unknown -> ValueError."""
        word = text.strip().split(" ", 1)[0].rstrip("+").upper()
        word = _ALIASES.get(word, word)
        try:
            return cls(word)
        except ValueError:
            raise ValueError(f"unknown Slurm job state: {text!r}") from None


TERMINAL = frozenset({
    JobState.COMPLETED, JobState.FAILED, JobState.CANCELLED, JobState.TIMEOUT,
    JobState.OUT_OF_MEMORY, JobState.NODE_FAIL, JobState.PREEMPTED, JobState.BOOT_FAIL,
    JobState.DEADLINE, JobState.SPECIAL_EXIT, JobState.REVOKED, JobState.LOST,
})

# Ends whose exit code is the program's: of a task Slurm ended (TIMEOUT, CANCELLED, OUT_OF_MEMORY,
# ...) its ExitCode is an artifact (0:0 on the job row, 0:15 on the batch step, 0:125), which
# showed as "TIMEOUT exit 0" in one view and "0 sig 15" in another; the state says what happened.
EXIT_TOLD = frozenset({JobState.COMPLETED, JobState.FAILED, JobState.SPECIAL_EXIT})

# Waiting to start (again): what `hyperion-jobs usage` and the console count as pending.
WAITING = frozenset({JobState.PENDING, JobState.REQUEUED, JobState.REQUEUE_HOLD, JobState.REQUEUE_FED,
                     JobState.RESV_DEL_HOLD})
# Started and not ended: what they count as running (a SUSPENDED or STOPPED task is neither).
RUNNING_NOW = frozenset({JobState.CONFIGURING, JobState.RUNNING, JobState.COMPLETING, JobState.SIGNALING,
                         JobState.STAGE_OUT, JobState.RESIZING})


def ended_by_slurm(state: "JobState | None") -> bool:
    """Slurm ended the task, not its program (TIMEOUT, CANCELLED, OUT_OF_MEMORY, NODE_FAIL, ...):
    its log stops mid-run without its `# Ended` line and Slurm's reason is in q/.err. Not LOST
    (nobody knows how it ended). One rule for `hyperion-jobs logs`' stderr note and the console's
    log pane title, which each wrote it out."""
    return state is not None and state.is_terminal and state not in EXIT_TOLD and state is not JobState.LOST


# Ends after which Slurm may run the task again (JobRequeue, --requeue, PreemptMode=REQUEUE):
# such a state from accounting is final only once the controller no longer lists the task
# as alive (it then shows PENDING/REQUEUED with a higher restart count instead).
REQUEUE_PRONE = frozenset({JobState.NODE_FAIL, JobState.PREEMPTED, JobState.BOOT_FAIL})

# squeue's compact codes (%t) and sacct's short spellings.
_ALIASES = {
    "PD": "PENDING", "R": "RUNNING", "CG": "COMPLETING", "CD": "COMPLETED", "F": "FAILED",
    "CA": "CANCELLED", "TO": "TIMEOUT", "OOM": "OUT_OF_MEMORY", "NF": "NODE_FAIL",
    "PR": "PREEMPTED", "BF": "BOOT_FAIL", "DL": "DEADLINE", "RQ": "REQUEUED",
    "RH": "REQUEUE_HOLD", "RF": "REQUEUE_FED", "S": "SUSPENDED", "ST": "STOPPED",
    "SI": "SIGNALING", "SO": "STAGE_OUT", "RS": "RESIZING", "RD": "RESV_DEL_HOLD",
    "SE": "SPECIAL_EXIT", "RV": "REVOKED", "CF": "CONFIGURING",
}

# The source of a state that is an end the ledger holds, not an answer of Slurm's (see Poller's `settled`).
LEDGER = "ledger"


@dataclass(frozen=True, slots=True)
class TaskState:
    """What Slurm last said about one array task (or a non-array job)."""

    job_id: str              # the array's job id ("1234"), as in JobRecord.job_id
    task_id: int | None      # physical array index, None for non-array jobs
    state: JobState
    exit_code: int | None = None
    signal: int | None = None
    elapsed: float | None = None   # seconds
    node: str | None = None
    source: str = "sacct"    # "sacct" | "squeue" | LEDGER
    reason: str | None = None          # Slurm's pending reason; None unless waiting to run
    restart_count: int | None = None   # times Slurm requeued it (squeue's RestartCnt); None: unknown

    @property
    def key(self) -> tuple[str, int | None]:
        return (self.job_id, self.task_id)

    @property
    def slurm_id(self) -> str:
        """``1234_5`` or ``1234``: the id scancel and squeue understand."""
        return self.job_id if self.task_id is None else f"{self.job_id}_{self.task_id}"


# Pending reasons that no amount of waiting fixes: the request exceeds what the
# partition, its nodes, the account or the QOS allow (Slurm's job_reason strings).
_NEVER = frozenset({
    "PartitionConfig", "PartitionNodeLimit", "PartitionTimeLimit", "BadConstraints",
    "InvalidAccount", "InvalidQOS", "AccountNotAllowed", "QOSNotAllowed",
    "DependencyNeverSatisfied", "InvalidReservation",
})
# Per-job QOS/association limits (e.g. QOSMaxCpuPerJobLimit) and QOS minimums: fixed by
# the request, unlike the per-user limits (QOSMaxCpuPerUserLimit) that other jobs free.
_NEVER_PATTERN = re.compile(r"(?:Assoc|QOS)(?:Max\w*PerJob\w*|Min\w+)\Z")
_EXPLAIN = {
    "PartitionConfig": "it asks for more than the partition's nodes have or allow "
                       "(CPUs, memory, GPUs, features or nodes)",
    "PartitionNodeLimit": "it asks for more nodes than the partition allows",
    "PartitionTimeLimit": "its time limit is above the partition's MaxTime",
    "BadConstraints": "no node has the requested features/constraints",
    "ReqNodeNotAvail": "the nodes it needs are not available to it",
    "DependencyNeverSatisfied": "a job it depends on ended in a way that never satisfies it",
}


def never_runs(reason: str | None) -> bool:
    """True for a pending reason that means Slurm will never start the task as asked.

    ``ReqNodeNotAvail`` counts only without nodes named after it: with
    ``UnavailableNodes:vm`` the node is down and may come back.
    """
    if not reason:
        return False
    word, _, rest = reason.partition(",")
    word = word.strip()
    if word == "ReqNodeNotAvail":
        nodes = rest.partition("UnavailableNodes:")[2].strip() if "UnavailableNodes:" in rest else ""
        return not nodes and not rest.strip().lower().startswith("reserved")
    return word in _NEVER or bool(_NEVER_PATTERN.match(word))


def explain_reason(reason: str) -> str:
    """``PartitionConfig: it asks for more than ...``: Slurm's word and what it means."""
    word = reason.partition(",")[0].strip()
    meaning = _EXPLAIN.get(word)
    if meaning is None and _NEVER_PATTERN.match(word):
        meaning = "it is outside a per-job limit of its QOS or account"
    return f"{reason}: {meaning}" if meaning else reason


# How a summary names a task that did not succeed: "failed" is the program's own failure (it exited
# non-zero, or a local task's runner died with it: LOST, the task ran and nobody recorded its end);
# an end Slurm made is named by its state, so a time limit or an scancel no longer reads as "my
# program failed" ("failed 6" counted 2 TIMEOUT, 1 CANCELLED). A task Slurm never reported
# (UNKNOWN) is "unknown": nothing says it ran, let alone failed. One rule for hyperion-submit's last
# lines, `hyperion-jobs status --failures` and the console.
_END_WORDS = {
    "FAILED": "failed", "SPECIAL_EXIT": "failed", "LOST": "failed",
    "TIMEOUT": "timeout", "CANCELLED": "cancelled", "OUT_OF_MEMORY": "out-of-memory", "NODE_FAIL": "node-fail",
    "PREEMPTED": "preempted", "BOOT_FAIL": "boot-fail", "DEADLINE": "deadline", "REVOKED": "revoked",
    "NOT_RUN": "not-run", "UNKNOWN": "unknown", "COMPLETED": "completed",
}
_END_ORDER = tuple(dict.fromkeys(_END_WORDS.values()))


def signal_name(number: int) -> str:
    """``1`` -> ``SIGHUP``; a number Linux has no name for stays ``signal N``."""
    try:
        return _signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def exit_note(code: int | None, signal: int | None = None) -> str:
    """`` (128+SIGSEGV)`` after an exit code of 139 whose signal is not known: how a shell (a batch
    script, ``bash -c``) reports a program that signal killed (the program may also have exited
    so itself). Empty for other codes, or when the signal is known and said already."""
    if code is None or signal or not 128 < code <= 128 + 64:
        return ""
    name = signal_name(code - 128)
    return f" (128+{name})" if name.startswith("SIG") else ""


def signal_text(number: int) -> str:
    """``signal 1 (SIGHUP)``: how the views say a task was stopped by a signal."""
    name = signal_name(number)
    return f"signal {number} ({name})" if name.startswith("SIG") else name


# A FAILED end with a signal: the task was stopped by it (a local task's terminal hung up, a
# Slurm task killed with SIGKILL), not a program that exited non-zero.
_SIGNALLED = frozenset({"FAILED"})   # as `TaskRow.ended_label` relabels only FAILED


def end_word(label: str, signal: int | None = None) -> str:
    """``FAILED`` -> ``failed``, ``TIMEOUT`` -> ``timeout``, ``CANCELLED by 0`` -> ``cancelled``: the
    word a summary counts an unsuccessful end under (an unknown label: itself, lower case). A FAILED
    end with a `signal` is counted under the signal's name (``sighup``), apart from programs that failed."""
    word = str(label).strip().split(" ", 1)[0].rstrip("+").upper()
    if signal and word in _SIGNALLED:
        return signal_name(signal).lower().replace(" ", "-")
    return _END_WORDS.get(word, word.lower().replace("_", "-"))


def end_counts(labels: Iterable[str | tuple[str, int | None]]) -> dict[str, int]:
    """Unsuccessful ends counted by `end_word` (a label, or a (label, signal) pair), "failed" first,
    then Slurm's ends in a fixed order, then the rest (signals' names) alphabetically."""
    counts: dict[str, int] = {}
    for label in labels:
        word = end_word(*label) if isinstance(label, tuple) else end_word(label)
        counts[word] = counts.get(word, 0) + 1
    rank = {word: i for i, word in enumerate(_END_ORDER)}
    return dict(sorted(counts.items(), key=lambda item: (rank.get(item[0], len(rank)), item[0])))


def ends_text(counts: dict[str, int]) -> str:
    """``failed 3, timeout 2, cancelled 1``: the nonzero counts of `end_counts`."""
    return ", ".join(f"{word} {n}" for word, n in counts.items() if n)
