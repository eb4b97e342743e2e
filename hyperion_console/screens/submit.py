"""Submit screen: a form over hyperion-submit's portable options with a live dry-run preview.

Every change re-runs the core's own parse_submit_argv + build_plan on the form's
argv (preview.py): at once when the core is quick, in a worker once the keys
pause when it is slow (a big array), so each key shows at once; the preview is
describe_plan's text (what --dry-run prints) and the equivalent command line is
submit_argv's. Submitting plans the form as it is at that moment.
"""
from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.actions import SkipAction
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Input, Label, Select, Static
from textual.worker import Worker, WorkerState, get_current_worker

from backends.client import QueryStopped

from ..errors import describe_error, guarded
from ..form import FormValues
from ..launch import PartlySubmitted, launch, sbatch_teller
from ..messages import PreviewUpdated, SubmitRequested, Submitted
from ..preview import (MAX_PREVIEW_LINES, Preview, build_preview, confirm_question,  # noqa: F401 (re-exported)
                       confirm_windows, preview_text)
from ..shown import shown, tell
from ..widgets.field import Field
from ..widgets.path_text import PathText
from .base import SLOW_TO_PLAN, ConsoleScreen, TypingPause, console_footer, console_header
from .confirm import ConfirmScreen

TEXT_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("num_gpus", "GPUs", "site default"),
    ("num_threads", "threads", "site default"),
    ("mem", "memory", "e.g. 8G"),
    ("time", "time", "e.g. 01:00:00"),
    ("array", "array", "JOB=1:10"),
    ("max_jobs_run", "max running", "e.g. 4"),
    ("output_file", "log path", "exp/log/run.JOB.log"),
    ("env", "extra env", "NAME=VALUE ..."),
    ("command", "command", "words after --"),
)


SLOW_PREVIEW = SLOW_TO_PLAN     # the benches set it to infinity: the code before, a plan at every key
UPDATING = "updating… (the preview below is of the form before your last keys)"


# A site folder is a handful of files; one of hostile size (a million entries, a mistyped --cfg-dir
# of a data folder) is looked at this far only, since it is listed again every few seconds.
MAX_SITE_ENTRIES = 10_000
SITES_CHECK_SECONDS = 2.0    # how often the site folder is listed again while the Submit screen shows


def site_files(cfg_dir: Path, max_entries: int = MAX_SITE_ENTRIES) -> list[Path]:
    """The site files to pick from (see `scan_sites`)."""
    return scan_sites(cfg_dir, max_entries)[0]


def scan_sites(cfg_dir: Path, max_entries: int = MAX_SITE_ENTRIES) -> tuple[list[Path], str]:
    """The site files to pick from: regular files only (a stat, never opened). A FIFO named like
    one, held open by a writer that sends nothing, froze the form for 10 s on every keystroke while
    the preview read it. Of a folder with more than `max_entries` entries, those first read. With
    none, why not (`no such folder`...): the form says it where it would have said the site's
    problem, found in this one look (the folder may be on a hung file server)."""
    found: list[Path] = []
    try:
        with os.scandir(cfg_dir) as entries:
            for count, entry in enumerate(entries):
                if count >= max_entries:
                    break
                if (not entry.name.startswith(".") and os.path.splitext(entry.name)[1] in {".yaml", ".yml"}
                        and entry.is_file()):
                    found.append(Path(cfg_dir, entry.name))
    except FileNotFoundError:
        return [], "no such folder"
    except NotADirectoryError:
        return [], "not a folder"
    except OSError as exc:      # unreadable: nothing to pick
        return [], f"cannot list it: {exc.strerror or exc}"
    return sorted(found), "" if found else "no .yaml or .yml file in it"


def no_site_message(cfg_dir: Path, why: str) -> str:
    """The form's line when there is no site file to pick: where the console looked, why it found
    none and how to name the folder. With an empty `site` the core said `--cfg: expected a site
    YAML path, got ''`, which named neither (`hyperion-submit` without --cfg names the option)."""
    return (f"--cfg: no site file in {cfg_dir} ({why}): start the console with --cfg-dir DIR, "
            "the folder of your site YAML files")


def site_labels(sites: list[Path]) -> list[str]:
    """Each file's stem (.yaml made the selector too wide), its full name where another file has
    the same stem: a.yaml and a.yml were both "a"."""
    stems = Counter(p.stem for p in sites)
    return [p.stem if stems[p.stem] == 1 else p.name for p in sites]


class SubmitScreen(ConsoleScreen):
    """Form on the left, preview on the right; ctrl+s submits after a confirmation."""

    SUB_TITLE = "Submit"
    AUTO_FOCUS = ""        # nothing focused at first (None is the app's "*"): the first Tab goes to the site
    # Narrower than 80 columns (a split tmux pane) the preview goes under the form: beside it,
    # it had 18 columns (console.tcss).
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (80, "-wide")]
    BINDINGS = [
        Binding("ctrl+s", "submit", "Submit job", priority=True),   # "1 Submit" is the screen
        # The same key once more, not priority: a ctrl+s read in the burst of a `y` answering the
        # confirmation passes the priority check while the dialog is up (not this screen's key
        # there) and reaches the bindings again only as the dialog is gone: it was lost unsaid.
        Binding("ctrl+s", "submit", "Submit job", show=False),
        # Enter in a field or on the button asks at once, before the keys read behind it are routed:
        # as the field's (or button's) own binding it ran only after them, so `enter n` typed the `n`
        # into the field and left the dialog waiting (textual#6605). Elsewhere (a selector) it passes.
        Binding("enter", "submit_from_form", "Submit job", show=False, priority=True),
    ]

    def __init__(self, cfg_dir: Path, defaults: dict[str, str] | None = None) -> None:
        super().__init__(id="submit")
        self.cfg_dir = cfg_dir
        self.defaults = defaults or {}
        self.plan = None
        self.ran_before: str | None = None     # the preview's: this output file ran before
        self.argv: list[str] | None = None
        self.sending = False      # a submission answered yes and not yet recorded
        self.sites: list[Path] = []     # the site files the selector offers
        self.no_sites = ""              # with none: why (the folder's problem), said by the form
        self._listing: Worker | None = None   # the periodic look at the site folder
        self._asking: ConfirmScreen | None = None   # the confirmation shown, until its answer is acted on
        self._announced = False   # the submission being sent has its record (the Jobs screen opens it)
        self._generation = 0                   # bumped at every change: only its preview is shown
        self._pause = TypingPause(self, self._keys_paused)
        self._building = False                 # a worker plans the form (see SLOW_PREVIEW)
        self._seconds = 0.0                    # how long the last preview took the core
        self._planned: FormValues | None = None   # the form of the preview shown or being built

    def compose(self) -> ComposeResult:
        yield console_header()
        sites, self.no_sites = scan_sites(self.cfg_dir)
        self.sites = sites
        default_site = self.default_site(sites) or Select.NULL
        with Horizontal(id="submit-body"):
            # Not focusable itself: a Tab after Escape landed on it, showing no focus anywhere.
            with VerticalScroll(id="submit-form", can_focus=False):
                with Horizontal(classes="form-row"):
                    yield Label("site", classes="form-label")
                    yield Select([(shown(label), str(p)) for label, p in zip(site_labels(sites), sites)],
                                 value=default_site,
                                 allow_blank=not sites, id="cfg", compact=True,
                                 prompt="no site file" if not sites else "Select")
                with Horizontal(classes="form-row"):
                    yield Label("backend", classes="form-label")
                    yield Select([("local", "local"), ("slurm", "slurm")], id="backend",
                                 value=self.defaults.get("backend", "slurm"),
                                 allow_blank=False, compact=True)
                for field, label, hint in TEXT_FIELDS:
                    with Horizontal(classes="form-row"):
                        yield Label(label, classes="form-label")
                        yield Field(self.defaults.get(field, ""), placeholder=hint, id=field,
                                    compact=True)
                    if field == "mem":
                        with Horizontal(classes="form-row"):
                            yield Label("mem scope", classes="form-label")
                            yield Select([("per node (--mem)", "node"),
                                          ("per CPU (--mem-per-cpu)", "cpu")],
                                         value=self.defaults.get("mem_scope", "node"),
                                         allow_blank=False, id="mem_scope", compact=True)
                yield Button("Submit", id="submit-button", variant="primary", compact=True)
            with Vertical(id="submit-preview-pane"):
                yield Static("", id="submit-error")
                with VerticalScroll(id="submit-preview-scroll"):
                    # a path wraps after a `/`, not in the middle of a name (PathText)
                    yield PathText("", id="submit-command")
                    yield PathText("", id="submit-preview")
        yield console_footer()

    def default_site(self, sites: list[Path]) -> str:
        """The site the selector starts on ("" for none)."""
        return self.defaults.get("cfg") or next(
            (str(p) for p in sites if p.name == "submit_test_cluster.yaml"), str(sites[0]) if sites else "")

    def selected_site(self) -> str:
        """The site file selected ("" for none); before the screen was first shown, the one it will
        start on (the Checkpoint screen's retry windows start from its max_array_size)."""
        if not self.is_mounted:
            return self.default_site(site_files(self.cfg_dir))
        value = self.query_one("#cfg", Select).value
        return value if isinstance(value, str) else ""

    def on_mount(self) -> None:
        self.refresh_preview()
        self._seconds = 0.0    # the first plan also loaded jsonargparse (60 ms): not what a key costs
        self.set_interval(SITES_CHECK_SECONDS, self._check_sites)

    def _check_sites(self) -> None:
        """Every few seconds on this screen; never a second look while one is still under way (a
        folder on a hung file server would pile up a thread per tick)."""
        if self.is_current and (self._listing is None or self._listing.is_finished):
            self._listing = self.list_sites()

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        """About to pick a site: a file written meanwhile in another terminal is listed now, in a
        worker as the timer's look (a hung NFS folder froze the console at the focus)."""
        if event.widget.id == "cfg" and (self._listing is None or self._listing.is_finished):
            self._listing = self.list_sites()

    @work(thread=True, group="sites", exit_on_error=False)
    def list_sites(self) -> None:
        """The site folder listed again, off the interface thread (a hung NFS folder never freezes it)."""
        sites, why = scan_sites(self.cfg_dir)
        if not get_current_worker().is_cancelled:     # the console quit meanwhile
            self.app.call_from_thread(self.show_sites, sites, why)

    def show_sites(self, sites: list[Path], why: str = "") -> None:
        """Offer `sites` in the selector, the chosen one kept (listed even once gone from the folder:
        the preview then says what is wrong with it); nothing is redrawn while the list is open.
        None chosen yet (there was none), the one the screen would have started on is chosen; still
        none, the form says why now (the folder made unreadable, its last file removed)."""
        select = self.query_one("#cfg", Select)
        current = select.value
        chosen = isinstance(current, str)
        if chosen and Path(current) not in sites:
            sites = sorted([*sites, Path(current)])
        if not chosen and why != self.no_sites:
            self.no_sites = why
            if not sites:       # with sites, one is chosen below and planned
                self.refresh_preview()
        if select.expanded or not sites or sites == self.sites:
            return
        self.sites = sites
        with select.prevent(Select.Changed):
            select.set_options([(shown(label), str(p)) for label, p in zip(site_labels(sites), sites)])
            default = current if chosen else self.default_site(sites)
            select.value = default if Path(default) in sites else current
        if not chosen:
            self.refresh_preview()

    def form(self) -> FormValues:
        values = {f: self.query_one(f"#{f}", Input).value for f, _, _ in TEXT_FIELDS}
        cfg = self.query_one("#cfg", Select).value
        backend = self.query_one("#backend", Select).value
        scope = self.query_one("#mem_scope", Select).value
        return FormValues(backend=str(backend), cfg=cfg if isinstance(cfg, str) else "",
                          mem_scope=str(scope), **values)

    def set_field(self, field: str, value: str) -> None:
        """Fill one field (tests and the palette use it), planned at once: nobody types it key by key."""
        widget = self.query_one(f"#{field}")
        if isinstance(widget, Select):
            widget.value = value
        else:
            widget.value = value
        self.refresh_preview()

    @on(Input.Changed)
    @on(Select.Changed)
    def _changed(self) -> None:
        """A quick form is planned at once; a slow one once the keys pause, in a worker, and the
        preview is marked out of date until then (a plan of the form before is never used)."""
        if not self.updating and self.form() == self._planned:    # already planned (set_field, mount)
            return
        self._generation += 1
        if self._seconds < SLOW_PREVIEW and not self._pause.pending and not self._building:
            self.refresh_preview()
            return
        self.plan, self.argv = None, None
        self.query_one("#submit-error", Static).update(Text(UPDATING, style="yellow"))
        self._pause.restart()

    @property
    def updating(self) -> bool:
        """The form changed since the preview on screen was built (it is being rebuilt)."""
        return self._pause.pending or self._building

    def _keys_paused(self) -> None:
        self._building = True
        self._planned = self.form()
        self.build_in_worker(self._planned, self._generation)

    @work(thread=True, exclusive=True, group="preview", exit_on_error=False, name="preview failed")
    def build_in_worker(self, form: FormValues, generation: int) -> None:
        """The core plans the form off the interface thread; a newer change drops the result."""
        preview = build_preview(form, self.no_site_text())
        if not get_current_worker().is_cancelled:
            self.app.call_from_thread(self._built, preview, generation)

    def _built(self, preview: Preview, generation: int) -> None:
        if generation != self._generation:     # keys came after it: their own pause builds theirs
            return
        self._building = False
        self.show_preview(preview)

    def no_site_text(self) -> str:
        """What the form says when it names no site file: why there is none to pick, or to pick one."""
        if self.no_sites:
            return no_site_message(self.cfg_dir, self.no_sites)
        return "--cfg: no site file chosen: pick one in the site selector"

    def refresh_preview(self) -> None:
        """Plan the form as it is now through the core, here, and show it (a rebuild under way or
        waiting for the keys to pause is dropped: this one is of the latest form)."""
        self._generation += 1
        self._pause.cancel()
        self._building = False
        self._planned = self.form()
        self.show_preview(build_preview(self._planned, self.no_site_text()))

    def show_preview(self, preview: Preview) -> None:
        """The core's preview of the form, or its one-line error with the field marked."""
        self._seconds = preview.seconds
        for widget in self.query(".invalid"):
            widget.remove_class("invalid")
        error_box = self.query_one("#submit-error", Static)
        if preview.error is not None or preview.plan is None:
            self.plan, self.argv = None, None
            message = preview.error or "no plan"
            error_box.update(shown(message, "bold red"))
            self.query_one("#submit-command", Static).update("")
            self.query_one("#submit-preview", Static).update(
                Text("(no preview until the form is valid)", style="dim"))
            if preview.field:
                self.query_one(f"#{preview.field}").add_class("invalid")
            self.post_message(PreviewUpdated(None, message))
            return
        self.plan, self.argv = preview.plan, list(preview.argv or ())
        self.ran_before = preview.ran_before
        valid = Text("✓ valid", style="green")
        # under a long command the preview's warnings are below the fold: said here, where it shows
        said = ["torchrun will not start this command"] if preview.warning else []
        if preview.substitution and preview.plan.options.array is not None:
            said.append(f"--array replaces {preview.plan.options.array.name} after $ or inside a longer name")
        if said:
            many = bool(preview.warning) + len(preview.substitution) > 1
            valid.append(shown(f" · ⚠ {' · ⚠ '.join(said)}: see the warning{'s' if many else ''} under it",
                               "bold yellow"))
        error_box.update(valid)
        self.query_one("#submit-command", Static).update(shown("$ " + preview.command, "bold"))
        self.query_one("#submit-preview", Static).update(preview.text or "")
        self.post_message(PreviewUpdated(preview.command, None))

    @on(Button.Pressed, "#submit-button")
    @on(Input.Submitted)
    def _pressed(self) -> None:
        """The button, and Enter in any field: the key a form is sent with (it asks first)."""
        self.action_submit()

    def action_submit_from_form(self) -> None:
        """Enter: submit when the focus is in a text field or on the Submit button (what Enter there
        did), so the dialog is up before the next key is routed; any other focus keeps its Enter."""
        focused = self.focused
        if not (isinstance(focused, Input) or (isinstance(focused, Button) and focused.id == "submit-button")):
            raise SkipAction()
        self.action_submit()

    @guarded
    def action_submit(self) -> None:
        if self._asking is not None and self._asking.answer is None:
            # Asked already, not yet answered: a ctrl+s read before that dialog was up (Enter in a
            # field, then ctrl+s in one burst) stacked a second one, and both yeses submitted.
            return
        if self.sending or (self._asking is not None and self._asking.answer):
            tell(self, "a submission is already being sent (the Jobs screen opens it once it is recorded): "
                 "this ctrl+s submitted nothing", title="not submitted twice", severity="warning")
            return
        self.refresh_preview()
        if self.plan is None:
            tell(self, str(self.query_one("#submit-error", Static).content), title="cannot submit",
                 severity="error")
            return
        plan, argv = self.plan, list(self.argv or [])
        detail = str(self.query_one("#submit-command", Static).content)
        windows = confirm_windows(plan)
        if windows:
            detail = f"{windows}\n\n{detail}"
        if self.ran_before:       # the CLI says it once the run begins: here before the yes
            detail = f"{self.ran_before}\n\n{detail}"

        def answered(yes: bool | None) -> None:
            if self._asking is not dialog:     # a stale dialog's answer (a newer one asks): never submits
                return
            self._asking = None
            if yes:
                self.sending, self._announced = True, False
                self.post_message(SubmitRequested(argv))
                self.run_submission(plan, argv[0])

        # The yes is known as soon as it is given, the callback runs later: a ctrl+s in between (read
        # in the same burst) is told a submission is being sent, not shown a second dialog.
        self._asking = dialog = ConfirmScreen(confirm_question(plan), detail, yes="Submit")
        self.app.push_screen(dialog, answered)

    @work(thread=True, exclusive=True, group="submit", exit_on_error=False, name="submit failed")  # its error's title
    def run_submission(self, plan, backend: str) -> None:
        """The core submits (slurm) or runs (local) the plan; the Jobs screen watches it."""
        def announce(path: str) -> None:
            self.app.call_from_thread(self._sent, path)

        try:
            status = launch(plan, announce, local_runs=self.app.local_runs, warn=sbatch_teller(self.app, self.app))
        except QueryStopped:               # the console closed while Slurm was asked: nothing was submitted
            return
        except PartlySubmitted as exc:     # jobs went in and the Jobs screen watches them: not "submit failed"
            self.app.call_from_thread(tell, self, describe_error(exc), title="partly submitted",
                                      severity="error", timeout=10)
            return
        if status is not None:
            severity = "information" if status == 0 else "error"
            self.app.call_from_thread(tell, self.app, f"local run finished: exit status {status}",
                                      severity=severity)

    def _sent(self, record_path: str) -> None:
        """The submission is recorded (a local run has begun): the Jobs screen opens it. Keys read in
        the burst of the yes may still reach this screen first, so ctrl+s submits again only once
        the screen was left or shown again."""
        self._announced = True
        self.app.post_message(Submitted(record_path))

    def on_screen_suspend(self) -> None:
        if self._announced:
            self.sending = False

    def on_screen_resume(self) -> None:
        if self._announced:
            self.sending = False

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A submission that failed before it was recorded sends nothing more: ctrl+s works again."""
        if (event.worker.group == "submit" and not self._announced
                and event.state in (WorkerState.SUCCESS, WorkerState.ERROR, WorkerState.CANCELLED)):
            self.sending = False      # (ConsoleScreen's handler, which tells the error, runs too)
