"""Submission planning: portable options + site config -> a frozen, printable plan.

Pure: building a plan runs nothing and writes nothing, so ``--dry-run``, the
console and the retry bridge can all show exactly what would run.
"""
from __future__ import annotations

import os
import stat

from backends.errors import InputError
from backends.fileio import kind_of_mode
from backends.printable import cut, printable, quoted
from backends.records.paths import log_stem, q_dir, record_path, window_script_path
from backends.submit.array import MAX_VALUES
from backends.submit.config import SiteConfig
from backends.submit.env_names import check_env_name
from backends.submit.model import (
    BACKENDS,
    PlannedTask,
    PlannedWindow,
    SubmitOptions,
    SubmitPlan,
    launch_prefix,
    substitute,
)
from backends.submit.resources import MAX_GPUS, MAX_THREADS, check_count, check_memory, check_time


def submit_argv(options: SubmitOptions) -> list[str]:
    """The hyperion-submit command line (without the program name) that recreates `options`."""
    argv = [options.backend, *_option("--cfg", options.cfg), *_option("--output-file", options.output_file),
            "--num-gpus", str(options.num_gpus), "--num-threads", str(options.num_threads)]
    if options.mem is not None:
        argv += _option("--mem", options.mem)
    if options.mem_per_cpu is not None:
        argv += _option("--mem-per-cpu", options.mem_per_cpu)
    if options.time is not None:
        argv += _option("--time", options.time)
    if options.array is not None:
        argv += ["--array", options.array.text]
    if options.max_jobs_run is not None:
        argv += ["--max-jobs-run", str(options.max_jobs_run)]
    for key, value in options.env:
        argv += ["--env", f"{key}={value}"]
    return [*argv, "--", *options.command]


def _option(name: str, value: str) -> list[str]:
    """``--output-file=-x.log`` for a value that starts with "-" (read back as an option otherwise)."""
    return [f"{name}={value}"] if value.startswith("-") else [name, value]


def validate_options(site: SiteConfig, options: SubmitOptions) -> None:
    """Cross-checks between options (and the site) that no single field can make."""
    if options.backend not in BACKENDS:
        raise InputError("backend", f"expected 'local' or 'slurm', got {quoted(options.backend)}")
    if not options.command or not options.command[0].strip():
        raise InputError("command", "no command after '--'")
    if options.command[0].startswith("-"):
        raise InputError("command", f"{quoted(options.command[0])} is not a program; the command after "
                         "'--' must start with the program to run")
    if not options.output_file.strip():
        raise InputError("--output-file", "required: the combined stdout/stderr log path")
    where = os.path.abspath(options.output_file)   # the cwd is part of every path a record keeps
    if printable(where) != where:
        # every face would show the path escaped, and the console refuses such a record
        raise InputError("--output-file", f"{printable(where)} holds a control, bidi or invisible character "
                         "or a byte that is not UTF-8")
    _check_log_file(options.output_file)
    if options.backend == "slurm" and "\\" in os.path.dirname(where):
        # sbatch drops it and then reads no %-pattern: Slurm's .out/.err go nowhere, the task never runs
        raise InputError("--output-file", f"{printable(os.path.dirname(where))} holds a backslash, which "
                         "Slurm's --output file patterns cannot hold (the local backend can)")
    check_count("--num-gpus", options.num_gpus, minimum=0, maximum=MAX_GPUS)
    check_count("--num-threads", options.num_threads, minimum=1, maximum=MAX_THREADS)
    if options.mem is not None and options.mem_per_cpu is not None:
        raise InputError("--mem-per-cpu", "--mem and --mem-per-cpu are mutually exclusive; give only one")
    check_memory("--mem", options.mem)
    check_memory("--mem-per-cpu", options.mem_per_cpu)
    check_time("--time", options.time)
    if options.max_jobs_run is not None:
        check_count("--max-jobs-run", options.max_jobs_run, minimum=1, maximum=MAX_VALUES)
        if options.array is None:
            raise InputError("--max-jobs-run", "needs --array (it limits concurrently running array tasks)")
    for name, _ in options.env:      # a record's env too (retry): bash would not pass these on
        check_env_name(name, options.backend)
    if options.array is not None and options.array.name in dict(options.env):
        raise InputError("--env", f"{cut(options.array.name)} is the array name; each task gets its own "
                         "value, so it cannot also be set for all tasks")
    if options.array is not None and options.array.name not in options.output_file:
        raise InputError("--output-file", f"{quoted(options.output_file)} must contain the array name "
                         f"{cut(options.array.name)} so that every task writes its own log")
    if options.array is not None:
        _check_logs_differ(options.output_file, options.array.name)
    if options.num_gpus > 0:
        site.gpu_options(options.num_gpus)
    if options.backend == "slurm":
        site.sbatch_options(options.num_gpus)


def _check_logs_differ(output_file: str, name: str) -> None:
    """NAME must survive into the log's path: a '..' after the folder holding it gives every task one log.

    A value is digits, so it never makes a '.' or '..' itself; two values tell for all of them.
    """
    first = os.path.abspath(substitute(output_file, name, 1))
    if first == os.path.abspath(substitute(output_file, name, 2)):
        name = cut(name)
        raise InputError("--output-file", f"{quoted(output_file)} is the same log for every task "
                         f"({quoted(first)}): a '..' leaves the folder named with {name}; put {name} "
                         f"in the log's own path, e.g. log/train.{name}.log")


def _check_log_file(output_file: str) -> None:
    """The log must be a file path: a directory would also put q/ (and the record) above it."""
    home = os.path.expanduser(output_file)
    if output_file.startswith("~") and home != output_file:
        # no shell expands it in the console's form, nor in --output-file=~/x
        raise InputError("--output-file", f"{quoted(output_file)} starts with ~, which nothing expands here: it "
                         f"would be a folder named ~ in the working directory; give the full path, e.g. {printable(home)}")
    if output_file.endswith(os.sep) or os.path.basename(output_file) in (".", "..") \
            or os.path.isdir(output_file):
        raise InputError("--output-file", f"{quoted(output_file)} is a directory; give the log file's "
                         "path, e.g. exp/log/train.log")
    if os.path.basename(output_file) == "q":
        raise InputError("--output-file", f"{printable(output_file)}: a log named q would be the q/ folder "
                         "beside it, where the record and scripts go; name it e.g. q.log")


def _task(options: SubmitOptions, value: int | None) -> PlannedTask:
    name = options.array.name if options.array else None
    argv = launch_prefix(options.num_gpus) + tuple(substitute(a, name, value) for a in options.command)
    env = ((name, str(value)),) if name is not None and value is not None else ()
    log = os.path.abspath(substitute(options.output_file, name, value))
    return PlannedTask(value, argv, log, env + tuple(options.env))


def _windows(site: SiteConfig, options: SubmitOptions) -> tuple[PlannedWindow, ...]:
    """One PlannedWindow per sbatch; with several windows, --max-jobs-run is shared among them."""
    from backends.ranges import share_slots, split_windows
    from backends.submit.slurm.argv import array_expression, sbatch_argv
    from backends.submit.slurm.script import render_script

    base = q_dir(options.output_file) / log_stem(options.output_file)
    if options.array is None:
        script_path = window_script_path(base, 0, 0)
        argv = sbatch_argv(site, options, None, script_path)
        return (PlannedWindow(0, (), None, script_path, render_script(options, 0), tuple(argv)),)
    windows = split_windows(options.array.values, site.max_array_size)
    shares: tuple[int | None, ...] = (None,) * len(windows)
    if options.max_jobs_run and len(windows) > 1:
        shares = share_slots([len(w.values) for w in windows], options.max_jobs_run)
    planned = []
    for number, (window, share) in enumerate(zip(windows, shares)):
        script_path = window_script_path(base, number, window.offset)
        held = share == 0            # submitted with a placeholder throttle of 1, held
        throttle = 1 if held else share
        argv = sbatch_argv(site, options, window, script_path, throttle, held)
        planned.append(PlannedWindow(window.offset, window.values,
                                     array_expression(options, window, throttle), script_path,
                                     render_script(options, window.offset), tuple(argv), held))
    return tuple(planned)


def dir_problem(directory: str) -> str | None:
    """Why files cannot be created in `directory` (or in the directories it needs), or None.

    Walks up to the nearest existing directory: that one must be a directory
    (not a file in the way) that this user may write into. Reads only (stat,
    access), so a dry run still writes nothing.
    """
    path = os.path.abspath(directory)
    while True:
        try:
            info = os.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            parent = os.path.dirname(path)
            if parent == path:
                return f"{path} does not exist"
            path = parent
            continue
        except OSError as err:
            return f"cannot reach {path}: {err.strerror or err}"
        if not stat.S_ISDIR(info.st_mode):
            return f"{path} is not a directory"
        if not os.access(path, os.W_OK | os.X_OK):
            return f"{path} is not writable by you"
        return None


def check_log_dirs(plan: SubmitPlan) -> None:
    """Every log directory and q/ can be created and written, before anything is submitted or run.

    Otherwise Slurm would accept the job and each task fail when it opens its
    log (or the local runner stop at the first task).
    """
    directories = sorted({os.path.dirname(task.log) for task in plan.tasks} | {plan.q_dir})
    for directory in directories:
        problem = dir_problem(directory)
        if problem is not None:
            raise InputError("--output-file", f"cannot write logs in {directory}: {problem}")


NAME_MAX = 255       # bytes in one file name (ext4, xfs, NFS, Lustre)
PATH_MAX = 4096
# What q/ adds to the log's stem: ".attempts.jsonl.<pid>.spare" (the ledger's spare room) is the longest.
Q_NAME_ROOM = 40
# What a log moved aside may gain: "<value>." in front (NAME only in its directory), ".<n>" behind.
MOVED_NAME_ROOM = 16


def _check_name(path: str, room: int, what: str) -> None:
    name = os.path.basename(path)
    size = len(os.fsencode(name))
    if size + room > NAME_MAX:
        shown = printable(name if len(name) <= 60 else name[:60] + "...")
        raise InputError("--output-file", f"{what} {shown} is {size} bytes; "
                         f"up to {NAME_MAX - room} leave room for the files named after it "
                         f"(the filesystem allows {NAME_MAX})")


def check_log_files(plan: SubmitPlan) -> None:
    """Every log is new or a regular file, with a name the filesystem takes, before anything is moved.

    An existing log is moved aside as an earlier attempt's: a FIFO, device or
    link at a log's path is not one (root would move /dev/null away), and a
    name too long for the q/ files beside it would fail half way.
    """
    _check_name(log_stem(plan.options.output_file), Q_NAME_ROOM, "the log name's stem")
    for task in plan.tasks:
        if len(os.fsencode(task.log)) + Q_NAME_ROOM > PATH_MAX:
            raise InputError("--output-file", f"the log path is {len(os.fsencode(task.log))} bytes; "
                             f"up to {PATH_MAX - Q_NAME_ROOM} leave room for the files beside it")
        _check_name(task.log, MOVED_NAME_ROOM, "the log name")
        try:
            mode = os.lstat(task.log).st_mode
        except OSError:       # none yet; a directory in the way is check_log_dirs' to name
            continue
        if not stat.S_ISREG(mode):
            raise InputError("--output-file", f"{printable(task.log)} is {kind_of_mode(mode)}, not a regular file; "
                             "a log must be a file of its own (nothing was moved or written)")


def build_plan(site: SiteConfig, options: SubmitOptions) -> SubmitPlan:
    """Validate and plan everything a submission would do (raises InputError).

    Pure but for reading the filesystem to check that the logs can be written.
    """
    validate_options(site, options)
    values: tuple[int | None, ...] = options.array.values if options.array else (None,)
    is_local = options.backend == "local"
    plan = SubmitPlan(
        site=site, options=options, argv=("hyperion-submit", *submit_argv(options)),
        tasks=tuple(_task(options, v) for v in values),
        windows=() if is_local else _windows(site, options),
        q_dir=str(q_dir(options.output_file)), record_path=str(record_path(options.output_file)),
    )
    check_log_files(plan)
    check_log_dirs(plan)
    return plan


def _task_label(plan: SubmitPlan, task: PlannedTask) -> str:
    return "task" if task.value is None else f"task {plan.options.array.name}={task.value}"


def describe_plan(plan: SubmitPlan) -> str:
    """What ``--dry-run`` prints: every command that would run, nothing executed."""
    from backends.shellwords import shell_join, shell_quote

    lines = [f"# hyperion-submit dry run ({plan.options.backend}); nothing was submitted or written",
             f"# command line: {shell_join(plan.argv)}",
             f"# record: {plan.record_path}"]
    if plan.options.backend == "local":
        lines.append("# 1 task, run here" if len(plan.tasks) == 1 else
                     f"# {len(plan.tasks)} task(s), run one after another, stopping at the first failure")
        for task in plan.tasks:
            env = " ".join(f"{k}={shell_quote(v)}" for k, v in task.env)
            lines += [f"{_task_label(plan, task)}: log {task.log}",
                      f"  {env + ' ' if env else ''}{shell_join(task.argv)}"]
        return "\n".join(lines) + "\n"
    shared = plan.options.max_jobs_run and len(plan.windows) > 1
    if shared:
        lines.append(f"# --max-jobs-run {plan.options.max_jobs_run} is shared by the {len(plan.windows)} "
                     "windows (the %N of each); while hyperion-submit waits it moves slots to the windows "
                     "that still have tasks as others drain")
    for number, window in enumerate(plan.windows, start=1):
        what = f"array {window.array_expression}, offset {window.offset}" if window.array_expression else "single job"
        if window.held:
            what += ", held until a slot frees"
        lines += [f"# window {number}/{len(plan.windows)}: {what}",
                  f"sbatch argv: {shell_join(window.sbatch_argv)}",
                  f"# batch script {window.script_path}:",
                  window.script.rstrip("\n"),
                  "# end of batch script"]
    lines.append("# task logs:")
    lines += [f"#   {_task_label(plan, t)}: {t.log}" for t in plan.tasks]
    return "\n".join(lines) + "\n"
