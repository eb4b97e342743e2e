"""The console app and the one factory both the CLI and the tests build it with."""
from __future__ import annotations

import asyncio
import signal
from dataclasses import dataclass, field
from pathlib import Path

from textual.app import App
from textual.binding import Binding
from textual.command import SimpleProvider
from textual.screen import ModalScreen
from textual.theme import ThemeProvider
from textual.worker import Worker, WorkerState

from backends.printable import printable
from backends.records.record import any_record
from backends.retry_hint import usable_retry_command
from backends.watch.budget import QueryBudget
from backends.shellwords import shell_join

from .commands import ConsoleCommands
from .driver import surviving
from .errors import describe_error
from .local_runs import LocalRuns
from .record_cache import cached_record
from .messages import Submitted
from .palette import Palette
from .screens.checkpoint import CheckpointScreen
from .screens.confirm import ConfirmScreen
from .screens.help import HelpScreen
from .screens.jobs import JobsScreen
from .screens.submit import SubmitScreen
from .shown import tell

SCREENS = ("submit", "jobs", "checkpoint")


def _rerun_command(record_path: str) -> str:
    """What runs a stopped run's rest again, by `hyperion-jobs watch`'s rule (`usable_retry_command`):
    a Resubmit's run names `hyperion-checkpoint retry CKPT --submit RECORD`, which finds what is
    still missing; `hyperion-jobs retry RECORD` would rerun that attempt's shard windows as they were.
    A site file deleted since the run began leaves no retry that could run, so none is offered."""
    try:
        record = cached_record(record_path)
    except Exception:                  # not written yet, or unreadable: the plain rule
        return shell_join(("hyperion-jobs", "retry", record_path))
    return usable_retry_command(record) or printable(f"no retry can run it: its site file {record.cfg} is gone")


@dataclass(frozen=True)
class Settings:
    """What the console was started on (command line or test)."""

    cfg_dir: Path
    checkpoint: Path | None = None
    record: Path | None = None
    search_dirs: tuple[Path, ...] = ()
    submit_defaults: dict = field(default_factory=dict)
    start: str = "submit"


# A kill and a closed terminal: what would end the process with a local run's task left running.
ENDING_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class HyperionConsole(App[None]):
    CSS_PATH = "console.tcss"
    TITLE = "Hyperion Console"
    COMMANDS = App.COMMANDS | {ConsoleCommands}
    BINDINGS = [
        Binding("1", "show('submit')", "Submit"),
        Binding("2", "show('jobs')", "Jobs"),
        Binding("3", "show('checkpoint')", "Ckpt"),
        Binding("question_mark", "help", "Help"),
        Binding("q", "quit", "Quit"),
        # Textual runs a non-priority binding only once its key has bubbled back up to the App;
        # keys read in the same burst are already on their way to the old focus by then, so
        # `Tab 4` typed the 4 into the field being left (or lost it). Priority: focus moves first.
        Binding("tab", "focus_next", "Focus Next", show=False, priority=True),
        Binding("shift+tab", "focus_previous", "Focus Previous", show=False, priority=True),
    ]

    def __init__(self, settings: Settings) -> None:
        super().__init__()
        self.settings = settings
        self.local_runs = LocalRuns()
        # one face, one budget: the Jobs screen's watch and the Checkpoint screen's asks whether a
        # record's tasks still run (a second budget each would let the console make twice the calls)
        self.query_budget = QueryBudget()
        self.ended_by: int | None = None          # the signal that ended the console, if one did
        self._signals: dict[int, object] = {}    # signal -> its handler before the app's
        self.submit_screen = SubmitScreen(settings.cfg_dir, settings.submit_defaults)
        self.jobs_screen = JobsScreen(settings.search_dirs, settings.record)
        self.checkpoint_screen = CheckpointScreen(settings.checkpoint, settings.record)

    def get_driver_class(self):
        """Textual's driver, made to survive a closed terminal (see `driver`)."""
        return surviving(super().get_driver_class())

    def on_mount(self) -> None:
        for name in SCREENS:
            self.install_screen(self.screen_named(name), name)
        self.push_screen(self.settings.start)
        if signal.getsignal(signal.SIGCHLD) is signal.SIG_IGN:
            # inherited as ignored, the kernel reaps a local run's tasks and their statuses are lost
            # (a failed task read COMPLETED 0); the runner, in a worker thread, cannot reset it
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        loop = asyncio.get_running_loop()
        for signum in ENDING_SIGNALS:
            previous = signal.getsignal(signum)
            if previous is not signal.SIG_IGN:     # under nohup a hangup stays ignored
                loop.add_signal_handler(signum, self._ended_by_signal, signum)
                self._signals[signum] = previous

    def _ended_by_signal(self, signum: int) -> None:
        """A `kill` or a closed terminal ends the console as "Stop and quit" does: Python's default
        ended the process at once, and a local run's task ran on unwatched, to be recorded LOST."""
        if self.local_runs.stopping:     # a closing terminal sends SIGHUP twice: the grace stays 10 s
            return
        self.ended_by = signum
        self.local_runs.close()
        if not self.local_runs.active():
            self.exit(return_code=128 + signum)
            return
        self.set_interval(0.2, self._exit_once_stopped)

    def screen_named(self, name: str):
        return {"submit": self.submit_screen, "jobs": self.jobs_screen,
                "checkpoint": self.checkpoint_screen}[name]

    def action_show(self, name: str) -> None:
        if isinstance(self.screen, ModalScreen) or self.screen is self.screen_named(name):
            return
        self.switch_screen(name)

    def action_help(self) -> None:
        if not isinstance(self.screen, ModalScreen):
            self.push_screen(HelpScreen())

    def run_screen_action(self, screen: str | None, action: str) -> None:
        """Palette entry point: go to the action's screen, then run it there."""
        if screen is None:
            self.call_later(self.run_action, action)
            return
        self.action_show(screen)
        self.call_later(self.run_action, action, self.screen_named(screen))

    def action_command_palette(self) -> None:
        """ctrl+p: Textual's palette, its query drawn as the fields draw text (see palette.py)."""
        if self.use_command_palette and not Palette.is_open(self):
            self.push_screen(Palette(id="--command-palette"))

    def search_themes(self) -> None:
        """The palette's Theme command: the list of themes, searched in the same Palette."""
        self.push_screen(Palette(providers=[ThemeProvider], placeholder="Search for themes…"))

    def search_commands(self, commands, placeholder: str = "Search for commands…"):
        """Textual's list of given commands (none of ours shows one yet), in the same Palette: any
        list searched in this app draws its query as the fields draw text."""
        return self.push_screen(Palette(providers=[SimpleProvider(self.screen, commands)], placeholder=placeholder))

    def notify(self, message: str, *, title: str = "", severity="information",
               timeout: float | None = None, markup: bool = True) -> None:
        """Every notification, whoever raises it, is plain printable text: a `[/]` or an ESC
        from a record, a path or a form field can neither crash the toast nor reach the terminal."""
        super().notify(printable(str(message)), title=printable(str(title)), severity=severity,
                       timeout=timeout, markup=False)

    def action_quit(self) -> None:
        """Quit; a local run in progress lives in this process, so it is stopped first, after a
        confirmation, and the console ends once its task has ended (q again: SIGKILL it now)."""
        active = self.local_runs.active()
        if not active:
            self._quit_leaving_windows()
            return
        if self.local_runs.stopping:
            self.local_runs.stop.kill.set()
            tell(self, "killing the local run's task now (SIGKILL)", severity="warning")
            return
        if isinstance(self.screen, ConfirmScreen):
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.local_runs.close()
                tell(self, "stopping the local run: its task got Ctrl-C (SIGINT), SIGKILL in 10 s or at q; "
                     "the console quits once it ended", severity="warning", timeout=15)
                self.set_interval(0.2, self._exit_once_stopped)

        runs = "\n".join(f"{path}\n  {_rerun_command(path)}" for path in active)
        self.push_screen(ConfirmScreen(
            "Stop the local run and quit?",
            f"A local run goes on in this console and cannot outlive it. Quitting stops its running task as "
            f"Ctrl-C would (recorded with the code it ends with, 130 if it obeys) and runs none of the rest "
            f"(NOT_RUN); the command under the run runs them again.\n{runs}", yes="Stop and quit"), answered)

    def _quit_leaving_windows(self) -> None:
        """No local run: quit, but first ask when the Jobs screen's watch is what moves the slots of
        a --max-jobs-run shared by array windows (a held window waited for ever after a quit); not
        while another process's watch moves them too (`JobsScreen.unwatched_line`)."""
        line = self.jobs_screen.unwatched_line()
        if not line:
            self.exit()
            return
        if isinstance(self.screen, ConfirmScreen):
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.exit()

        self.push_screen(ConfirmScreen(
            "Quit and leave the array windows unwatched?",
            f"The Slurm jobs go on after the console quits, but {line}", yes="Quit"), answered)

    def on_unmount(self) -> None:
        self.local_runs.close()
        loop = asyncio.get_running_loop()
        for signum, previous in self._signals.items():
            loop.remove_signal_handler(signum)
            signal.signal(signum, previous if previous is not None else signal.SIG_DFL)

    def _exit_once_stopped(self) -> None:
        if not self.local_runs.active():
            self.exit(return_code=128 + self.ended_by if self.ended_by else 0)

    def action_help_quit(self) -> None:
        """Ctrl+C's hint: Textual's own holds markup, which `notify` above shows as it is."""
        keys = [key for key, active in self.active_bindings.items() if active.binding.action in ("quit", "app.quit")]
        if keys:
            tell(self, f"Press {' or '.join(keys)} to quit the app", title="Do you want to quit?")

    def on_submitted(self, message: Submitted) -> None:
        self.action_show("jobs")
        self.jobs_screen.open_record(Path(message.record_path))

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """Failures of the app's own workers (screens report theirs) become notifications."""
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            tell(self, describe_error(event.worker.error), title=event.worker.name or "error",
                 severity="error", timeout=10)


def make_app(cfg_dir: str | Path = "conf", checkpoint: str | Path | None = None,
             record: str | Path | None = None, demo: bool = False,
             demo_dir: str | Path | None = None,
             search_dirs: list[Path] | None = None) -> HyperionConsole:
    """Build the console. With `demo`, first prepare the demo checkpoint (local backend).

    `search_dirs` (default: the working directory) is where the Jobs screen looks
    for recent q/*.submit.json records; the record's and the demo's own
    directories are added. The console opens on the Checkpoint screen when given
    one, else on the Jobs screen when given a record or when those folders hold
    one, else on the Submit screen.
    """
    cfg = Path(cfg_dir).absolute()
    search = [Path.cwd()] if search_dirs is None else [Path(d) for d in search_dirs]
    if demo:
        from .demo import prepare_demo
        paths = prepare_demo(Path(demo_dir) if demo_dir else None, cfg)
        checkpoint, record = paths.checkpoint, paths.record
        search.append(paths.root)
    ckpt = Path(checkpoint).absolute() if checkpoint else None
    rec = Path(record).absolute() if record else None
    if rec is not None:
        search.append(rec.parent.parent)
    # A user coming back to a folder of runs expects them, not an empty form: the Jobs screen (which
    # opens the newest) when the folders it lists hold a record; the Submit screen when none do.
    start = "checkpoint" if ckpt else "jobs" if rec or any_record(search) else "submit"
    return HyperionConsole(Settings(cfg_dir=cfg, checkpoint=ckpt, record=rec,
                                    search_dirs=tuple(search), start=start))
