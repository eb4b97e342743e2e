"""Submitting a plan to Slurm as the next attempt of its output pattern, and waiting for it to end.

`submit` is sbatch for every window, the windows already queued kept and
recorded when a later one is refused; `run_slurm` is the synchronous ``hyperion-submit slurm``:
submit, wait with the shared poller, report, cancel on a signal.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
from contextlib import contextmanager
from typing import Callable, Iterator, Sequence, TextIO

from backends.attempt import LiveCheck, begin_attempt, script_jobs, site_cluster
from backends.client import QueryStopped
from backends.cluster import copyable, for_cluster
from backends.printable import printable
from backends.records.attempts import NewAttempt
from backends.records.history import commit_attempt
from backends.records.record import SubmitRecord
from backends.retry_hint import named_values, new_attempt_line, not_submitted
from backends.shellwords import shell_quote
from backends.states import explain_reason
from backends.submit.model import SubmitPlan
from backends.submit.site_options import ignored_inputs_line
from backends.submit.slurm import sbatch
from backends.submit.slurm.sbatch import SubmitError
from backends.watch.progress import Progress
from backends.watch.slurm.accounting import COMMAND_TIMEOUT, QueryError, run_command
from backends.watch.slurm.cancel import CancelError, cancel
from backends.watch.terminal import SafeStream, safe
from backends.watch.wait import Outcome, bad_ends, report, task_label, wait

PROG = "hyperion-submit"
INTERRUPTED = 130
HANGUP = 129   # SIGHUP: the wait ends, the jobs stay queued (reattach with the record's command)
QUIT = 131     # SIGQUIT (Ctrl-\): cancelled as after Ctrl-C, with the shell's code for it


def submit(plan: SubmitPlan, kind: str = "submit", on_begin: Callable[[], None] | None = None,
           live_check: LiveCheck | None = None, warn: sbatch.Warn | None = None,
           on_attempt: Callable[[NewAttempt], None] | None = None,
           stop: threading.Event | None = None) -> SubmitRecord:
    """sbatch every window of `plan` as a new attempt and save its record; `warn` is told the
    lines an sbatch that queued its window said on stderr, once per call (escaped, bounded);
    `on_attempt` hears the attempt before the first sbatch (its earlier logs moved aside already);
    `stop` ends the checks before it (QueryStopped, nothing submitted: `begin_attempt`), never an sbatch.

    If a window after the first is refused, the windows already queued keep
    running and are recorded: the record names the values left out and sbatch's
    refusal (`record.refused`), which the caller tells with `refusal_line`; a job
    an sbatch that did not answer in time queued unseen is cancelled, as those
    values are told to be left out. SubmitError when the first window is
    refused; InputError when the pattern's newest attempt still has live tasks.
    """
    try:
        with begin_attempt(plan, kind, on_begin, live_check, stop) as attempt:
            if on_attempt is not None:
                on_attempt(attempt)
            done, refused, cluster = sbatch.submit_windows(plan, warn)
            if refused is not None and refused.error.unanswered:
                asked = cluster or site_cluster(plan)      # where the unanswered window went too
                queued, failure = _queued_unanswered(refused.error.unanswered, asked)
                note = (_unknown_note(refused.error.unanswered, failure, asked) if failure is not None
                        else _cancel_note(queued, asked)[0])
                error = SubmitError(f"{refused.error}{'; ' + note if note else ''}")
                refused = sbatch.Refused(error, refused.windows)
            record = sbatch.make_record(plan, done, attempt, refused, cluster)
            commit_attempt(record, attempt)
            return record
    except SubmitError as err:
        if not err.unanswered:
            raise
        asked = site_cluster(plan)      # the site file's --clusters: where sbatch sent it
        queued, failure = _queued_unanswered(err.unanswered, asked)   # the first window's, unseen
        if failure is not None:     # "nothing was submitted" would be a guess: say what is known
            raise SubmitError(f"{err}; {_unknown_note(err.unanswered, failure, asked)}", err.unanswered,
                              maybe_queued=True) from None
        if not queued:
            raise
        note, left = _cancel_note(queued, asked)
        raise SubmitError(f"{err}; {note}", err.unanswered, left) from None


def not_made_line(record_path: str, number: int, array: bool, left_queued: Sequence[str] = (),
                  maybe_queued: bool = False, cluster: str | None = None) -> str:
    """After "attempt N of this --output-file" was said, sbatch refused the first window: no attempt N
    was made (history lists none), but the earlier logs were moved, and stay where that line said
    (each in the folder of the attempt that wrote it, not always N-1's: `logs --attempt` finds it).
    `left_queued`: the jobs an sbatch that did not answer queued all the same and scancel refused:
    "nothing was submitted" was said of them too, while they may run and write the logs.
    `maybe_queued`: whether sbatch queued a job all the same could not be told (squeue failed).
    `cluster`: the one they were queued on (a site file's --clusters; None: the local one)."""
    folder = os.path.join(os.path.dirname(record_path), "attempts")
    if left_queued:
        made = (f"no attempt {number} is recorded, but job(s) {', '.join(left_queued)} that sbatch queued all "
                f"the same could not be cancelled: they may run, writing this --output-file's logs "
                f"({_check_and_cancel(left_queued, cluster)})")
    elif maybe_queued:
        made = (f"no attempt {number} is recorded, though sbatch may have queued a job all the same, which would "
                "write this --output-file's logs (see the line above)")
    else:
        made = f"nothing was submitted, so there is no attempt {number}"
    return printable(f"{made}: the earlier logs stay in "
                     f"{folder}/ (hyperion-jobs history {shell_quote(record_path)}; hyperion-jobs logs "
                     f"{shell_quote(record_path)}{':VALUE' if array else ''} --attempt {number - 1})")


def _check_and_cancel(job_ids: Sequence[str], cluster: str | None = None) -> str:
    """How a user sees and cancels jobs left queued: ``squeue --me -j 12,13; scancel 12 13``, with
    ``-M NAME`` for the cluster a site file's --clusters sent them to (`copyable`)."""
    return (f"see them with: {copyable(['squeue', '--me', '-j', ','.join(job_ids)], cluster)}; "
            f"cancel them with: {copyable(['scancel', *job_ids], cluster)}")


def _say_rerun(err_stream, plan: SubmitPlan, attempt: NewAttempt) -> None:
    """`new_attempt_line` (an --output-file that ran before), on stderr."""
    note = new_attempt_line(plan, attempt)
    if note:
        err_stream.line(f"{PROG}: {note}")


def refusal_line(record: SubmitRecord, command: str | None) -> str | None:
    """What a submission a later window of which sbatch refused says, once: sbatch's refusal, the
    values left out, and that the windows that went in run and are recorded. None if none was."""
    if record.refused is None:
        return None
    name = record.array_name
    went_in = named_values(name, [t.value for t in record.tasks if t.value is not None], "the windows before it")
    rest = f"; once they end, submit {named_values(name, record.unsubmitted)} with: {command}" if command else ""
    return printable(f"{record.refused}; {not_submitted(name, record.unsubmitted)}; {went_in} (job(s) "
                     f"{', '.join(_job_ids(record))}) submitted and recorded in {record.path}{rest}")


def rest_command(plan: SubmitPlan, record: SubmitRecord, rerun: Sequence[str] | None = None,
                 kind: str = "submit") -> str | None:
    """The command that submits the values a refused window left out: `retry_command`'s (a retry
    of the record submits them, with what failed; the checkpoint bridge finds them still missing;
    after a retry, one naming them, since the plain one reruns every value still failing).
    None when none was left out or no retry could run (a site file given as a pipe)."""
    if record.refused is None:
        return None
    from backends.retry_hint import retry_command

    return retry_command(plan, rerun, values=record.unsubmitted if kind == "retry" else ())


def _queued_unanswered(script: str, cluster: str | None = None) -> tuple[tuple[str, ...], str | None]:
    """The job an sbatch that did not answer in time queued all the same, found by its batch script
    (no other live job runs it: `begin_attempt` refused those). Its id never reached us: it would
    have run unseen, writing the logs the next attempt writes too. With why squeue could not say
    (None when it answered): then none is known, and none may be said not to be. Asked on `cluster`."""
    try:
        return tuple(script_jobs({os.path.realpath(script)}, COMMAND_TIMEOUT, cluster=cluster)), None
    except QueryError as err:
        return (), str(err)


def _unknown_note(script: str, failure: str, cluster: str | None = None) -> str:
    """What is known when the look for the job an unanswered sbatch may have queued failed too: that
    it cannot be told, how to look, and what the next submission does about such a job."""
    return (f"whether it queued a job all the same cannot be told: {failure}; check with: "
            f"{copyable(['squeue', '--me', '-o', '%i %o'], cluster)} (a job whose command is {script} is it; "
            f"{copyable(['scancel'], cluster)} it if it should not run); the next "
            "submission to this --output-file looks for such a job first and refuses while one runs")


def _cancel_note(job_ids: Sequence[str], cluster: str | None = None) -> tuple[str, tuple[str, ...]]:
    """Cancel `job_ids`, the job an sbatch that did not answer queued all the same, and say so ("" when
    there is none); with the jobs left queued (all of them when scancel failed)."""
    if not job_ids:
        return "", ()
    what = "the job it queued all the same"
    try:
        cancel(list(job_ids), for_cluster(run_command, cluster))
    except (CancelError, OSError, ValueError) as err:
        return (f"could not cancel {what} ({', '.join(job_ids)}): {err}; it may run "
                f"({_check_and_cancel(job_ids, cluster)})", tuple(job_ids))
    return f"cancelled {what}: {', '.join(job_ids)}", ()


@contextmanager
def _stop_on_signals(stop: threading.Event, hangup: threading.Event,
                     quit_: threading.Event) -> Iterator[None]:
    """SIGINT/SIGTERM set `stop` instead of killing us, so we can cancel what we queued;
    SIGHUP sets `hangup` too: the wait ends but the jobs are left to run. SIGQUIT
    (Ctrl-\\) sets `quit_` and `stop`: it used to end us at once, leaving the jobs
    queued without a word.

    Only the main thread may install handlers; elsewhere (a console worker)
    the caller's own `stop` is the way to interrupt. A signal ignored when we start
    stays ignored, as local runs keep it: under ``nohup`` a hangup must not end the
    wait (and the recipe with exit 129), nor Ctrl-C reach a job a non-interactive
    shell started with ``&``. SIGTERM is always ours.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_hangup(signum, frame) -> None:
        hangup.set()
        stop.set()

    def on_quit(signum, frame) -> None:
        quit_.set()
        stop.set()

    def on_stop(signum, frame) -> None:
        stop.set()

    handlers = {signal.SIGINT: on_stop, signal.SIGTERM: on_stop, signal.SIGHUP: on_hangup,
                signal.SIGQUIT: on_quit}
    previous = {sig: signal.signal(sig, handler) for sig, handler in handlers.items()
                if sig == signal.SIGTERM or signal.getsignal(sig) is not signal.SIG_IGN}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def _job_ids(record: SubmitRecord) -> list[str]:
    return [job.job_id for job in record.jobs]


def _cancel_all(record: SubmitRecord, err: SafeStream, why: str = "interrupted",
                outcome: Outcome | None = None) -> None:
    """Cancel every job of `record`, saying how many of its tasks that stopped: those `outcome`
    (the wait's last word) saw end were not cancelled (it said 40 tasks when 35 had not ended)."""
    job_ids = _job_ids(record)
    try:
        cancel(job_ids, for_cluster(run_command, record.cluster))   # a site file's -M: scancel asks that cluster
    except (CancelError, OSError) as exc:
        err.line(f"{PROG}: could not cancel {' '.join(job_ids)}: {printable(str(exc))}")
        return
    total = len(record.tasks)
    if outcome is None:
        what = f"{total} task(s)"
    else:
        unfinished = sum(1 for _, state in outcome.bad if not state.state.is_terminal)
        what = f"{unfinished} of its {total} task(s) had not ended"
    err.line(f"{PROG}: {why}; cancelled job(s) {' '.join(job_ids)} ({what})")


def _describe(record: SubmitRecord) -> str:
    jobs = ", ".join(f"{j.job_id}" + (f" (--array={j.array_expression}, offset {j.offset})"
                                      if j.array_expression else "") for j in record.jobs)
    return f"{PROG}: submitted job(s) {jobs}; record {printable(record.path)}"


def _never_runs(record: SubmitRecord, outcome: Outcome, err: SafeStream) -> int:
    """A task Slurm will never start: name it and the reason, cancel everything submitted, 1."""
    task, reason = outcome.never_runs[0]
    more = len(outcome.never_runs) - 1
    others = f" (and {more} more task(s))" if more else ""
    err.line(f"{PROG}: error: {task_label(task, record.array_name)}{others} can never run: "
             f"Slurm says {printable(explain_reason(reason))}")
    _cancel_all(record, err, "nothing of it can complete", outcome)
    return 1


def run_slurm(plan: SubmitPlan, err: TextIO | None = None,
              stop: threading.Event | None = None, kind: str = "submit",
              on_begin: Callable[[], None] | None = None, rerun: Sequence[str] | None = None,
              live_check: LiveCheck | None = None) -> int:
    """Submit `plan`, wait for every task, report bad tasks; the exit status for main.

    0 only if every task COMPLETED with exit code 0 and wrote its log; 1
    otherwise, and at once (everything submitted cancelled) when Slurm says a
    task can never run as asked; 130 after SIGINT/SIGTERM (131 after SIGQUIT), having cancelled
    everything submitted (or after `stop` was set by the caller; set while the checks before the first
    sbatch ask Slurm, it ends them at once and nothing is submitted, an sbatch started is never
    stopped); 129 after
    SIGHUP, with the jobs left queued (the record's `reattach` command waits
    for them again). An sbatch refusal prints one line and gives 1; when it
    refused a later window, the windows that went in are waited for as usual
    and the run ends 1 naming the command that submits the values left out. Losing the
    terminal stops the output, not the wait.
    """
    err_stream = safe(err or sys.stderr)
    stop = stop or threading.Event()
    hangup, quit_ = threading.Event(), threading.Event()
    ignored = ignored_inputs_line(os.environ)
    if ignored:
        err_stream.line(f"{PROG}: {ignored}")
    with _stop_on_signals(stop, hangup, quit_):
        try:
            # said before the first sbatch, as the local backend says it before the first task: a task
            # may run (and the user look at its log) before sbatch's answer is back
            said: list[NewAttempt] = []
            record = submit(plan, kind, on_begin, live_check,
                            warn=lambda lines: [err_stream.line(f"{PROG}: {line}") for line in lines],
                            on_attempt=lambda attempt: said.append(attempt) or _say_rerun(err_stream, plan, attempt),
                            stop=stop)
        except QueryStopped:    # a signal while the checks before sbatch asked Slurm: none was started
            why, status = (("hangup", HANGUP) if hangup.is_set() else ("quit", QUIT) if quit_.is_set()
                           else ("interrupted", INTERRUPTED))
            err_stream.line(f"{PROG}: {why}; nothing was submitted")
            return status
        except SubmitError as exc:
            err_stream.line(f"{PROG}: error: {exc}")
            if said and said[0].number > 1 and said[0].kind == "submit":
                gone = not_made_line(plan.record_path, said[0].number, plan.options.array is not None,
                                     exc.left_queued, exc.maybe_queued, site_cluster(plan))
                err_stream.line(f"{PROG}: {gone}")
            return 1
        rest = rest_command(plan, record, rerun, kind)
        refusal = refusal_line(record, rest)
        if refusal:
            err_stream.line(f"{PROG}: error: {refusal}")
        err_stream.line(_describe(record))
        progress = Progress(len(record.tasks), stream=err_stream)
        try:
            outcome = wait(record, progress, stop, floor=plan.site.poll_interval,
                           say=lambda line: progress.note(f"{PROG}: {line}"))
        finally:
            progress.close()
        if outcome.unrecorded:      # said however the wait ends: a hangup or Ctrl-C too
            err_stream.line(f"{PROG}: warning: {outcome.unrecorded}")
        if outcome.never_runs:
            return _never_runs(record, outcome, err_stream)
        if hangup.is_set():
            err_stream.line(f"{PROG}: hangup; job(s) {' '.join(_job_ids(record))} left queued; "
                            f"wait for them again with: {record.reattach}")
            return HANGUP
        if stop.is_set():
            _cancel_all(record, err_stream, "quit" if quit_.is_set() else "interrupted", outcome)
            return QUIT if quit_.is_set() else INTERRUPTED
    for line in report(outcome, record.array_name, record.path):
        err_stream.line(f"{PROG}: {line}")
    if not outcome.ok:
        from backends.retry_hint import rerun_failed, retry_command

        # a retry's own values (and those a refused window left out): `retry RECORD` alone reruns
        # every value still failing, not only these
        values = [task.value for task, _ in outcome.bad if task.value is not None] + \
            (list(record.unsubmitted) if refusal else []) if kind == "retry" else ()
        command = retry_command(plan, rerun, (state.state.value for _, state in outcome.bad), values)
        left_out = record.unsubmitted if refusal else ()
        rerun = f"; {rerun_failed(command, record.array_name, left_out)}" if command else ""
        # by how they ended, as the progress line counts them: "3 ... failed" counted a TIMEOUT and a CANCELLED
        ends = bad_ends(outcome)
        err_stream.line(f"{PROG}: {len(outcome.bad)} of {len(record.tasks)} task(s) did not succeed ({ends})"
                        f"{rerun}")
    if refusal:   # what went in ended; what sbatch refused never ran: the run did not do what was asked
        then = f"; submit them with: {rest}" if rest else ""
        err_stream.line(f"{PROG}: {not_submitted(record.array_name, record.unsubmitted)} "
                        f"(sbatch refused it, above){then}")
        return max(outcome.exit_status, 1)
    return outcome.exit_status
