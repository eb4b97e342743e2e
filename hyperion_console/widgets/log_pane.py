"""The log pane of the Jobs screen: a title naming the file, and the log followed as it grows.

Reading is the core's: `backends.watch.tail.last_lines_read` for what the file
holds when the pane opens it, then a `Follower` that reads only the bytes
added since (tail -f), in a thread worker. Lines are shown as a terminal shows
them (`line_screen`): a progress bar is its last redraw, and the one still
being written is shown last and replaced as it moves. New lines wait in a buffer; each
read posts a LogUpdated that replaces one still queued (toolong style), and
the handler takes everything buffered, so a fast writer never floods the UI.
"""
from __future__ import annotations

import threading

from rich.cells import cell_len
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.worker import get_current_worker

from backends.logheader import parse_ended
from backends.printable import printable
from backends.watch.line_screen import same_line, shown_line
from backends.watch.tail import (NO_FILE, Follower, complete_end, empty_words, last_lines_read, log_problem,
                                 not_read_note, tail_start)

from ..errors import guarded
from ..messages import LogAppended, LogUpdated
from .fit_line import FitLine, fit_text
from .log_view import MAX_LINE, MAX_LINES, LogView

LOG_SOURCES: tuple[str, ...] = ("log", "err", "out")
INITIAL_LINES = 1000       # what the pane shows of a file it opens
POLL_SECONDS = 0.3
SKIP_AHEAD = 1024 * 1024   # unread bytes beyond which the pane opens the log again at its end


def task_log_path(task, source: str) -> str | None:
    """The task's program log, or Slurm's own .err / .out file."""
    return {"log": task.log, "err": task.slurm_err, "out": task.slurm_out}[source]


def _open_at_end(path: str, end: int | None = None) -> tuple[Follower, list[str], str | None, int]:
    """A Follower from the log's last complete line (`end`, when the caller found it already), the
    last lines before it, why the path cannot be read (None: it can), and the bytes above the
    lines that were left unread (a line of over MAX_TAIL: `last_lines_read`; 0 when none were)."""
    end = complete_end(path) if end is None else end
    # made before the last lines are read: it holds the file they come from, so one moved
    # aside and written anew meanwhile is a restart (made after, a log missing for that
    # instant gave it no file, and the new log's lines came as if appended to the old)
    follower = Follower(path, end, keep=MAX_LINE)   # the view shows no more of a line
    problem = log_problem(path)
    lines, left = last_lines_read(path, INITIAL_LINES, end=end)
    return follower, [shown_line(line, MAX_LINE) for line in lines], problem, left


# How the task shown ended, in one or more wordings, fullest first (`JobsScreen.end_note`)
EndNote = tuple[str, ...]
PATH_ROOM = 8              # cells of the path a title keeps at least (`…t.1.log`) before its words give way


class LogTitle(FitLine):
    """`log [SOURCE]: PATH · following` (`· ended FAILED (exit 3)` once the task ended); a cut
    shortens the path from its start, and takes a shorter wording of the end before the path is
    down to PATH_ROOM cells."""

    def __init__(self, **kwargs) -> None:
        super().__init__(Text(""), **kwargs)
        self.parts: tuple[str, str, tuple[str, ...]] = ("", "", ("",))

    def show(self, prefix: str, path: str = "", *suffixes: str) -> None:
        """`suffixes`: what follows the path, fullest first (the content, read by tests, is the fullest)."""
        self.parts = (prefix, printable(path), suffixes or ("",))
        self.update(Text(prefix + self.parts[1] + self.parts[2][0]))

    def render(self) -> Text:
        prefix, path, suffixes = self.parts
        return title_text(prefix, path, suffixes, self.size.width)


def title_text(prefix: str, path: str, suffixes: tuple[str, ...], width: int) -> Text:
    """The title within `width` cells: the fullest suffix that leaves the path PATH_ROOM cells (or all
    of it), the path cut from its start; else the shortest, cut at its end. A title whose end words
    were longer than the line lost them: `log [log]: /a/long/path/… ` said nothing of how it ended."""
    whole = Text(prefix + path + suffixes[0])
    if whole.cell_len <= width or not path:
        return fit_text(whole, width)
    for suffix in suffixes:
        room = width - cell_len(prefix) - cell_len(suffix)
        if room >= min(PATH_ROOM, cell_len(path)):
            return Text(prefix) + fit_text(Text(path), room, cut_start=True) + Text(suffix, style="bold")
    return fit_text(Text(prefix + path + suffixes[-1]), width)


class LogPane(Vertical):
    """Title and lines always change together: a stale log under another title would be
    read as the wrong task's."""

    ALLOW_MAXIMIZE = True      # `z` on the Jobs screen: the whole pane, title and all, zoomed

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.source = "log"
        self.path: str | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._pending: list[str] = []
        self._pending_open: str | None = None   # the line still being written, as last read
        self._restart = False
        self._following = threading.Event()     # the view follows the end (a skip ahead may move it)
        self._following.set()
        self._problem: str | None = None   # why the log cannot be read (shown in the title)
        self.shown_task = None             # the task whose log is shown (None: none)
        self.end_note: EndNote | None = None   # how the task ended (`ended FAILED (exit 3)`), None while it runs

    def compose(self) -> ComposeResult:
        yield LogTitle(id="log-title")
        yield LogView(id="log")

    @property
    def view(self) -> LogView:
        return self.query_one("#log", LogView)

    def on_unmount(self) -> None:
        self._stop.set()

    def footer_code(self, task) -> int | None:
        """The code of the `# Ended (code N)` footer when it is the last line shown of `task`'s program
        log (the program ran to its end), else None (another task's lines, or .err, are shown): what
        `hyperion-jobs logs` reads at the file's end, from the lines read."""
        if task is None or task is not self.shown_task or self.source != "log" or self.path != task.log:
            return None
        last = self.view.last_line
        ended = None if last is None else parse_ended(last)
        return None if ended is None else ended[0]

    def cycle_source(self) -> None:
        self.source = LOG_SOURCES[(LOG_SOURCES.index(self.source) + 1) % len(LOG_SOURCES)]

    def show_task(self, task, not_run: str | None = None, ended: EndNote | None = None) -> None:
        """Point the pane at the task's chosen log; without one (or no task), show nothing.
        `not_run`: why a task its ended local run never reached has none (nothing to wait for);
        `ended`: how the task ended, for the title instead of `following` (None: it may write more)."""
        self.shown_task = task
        path = None if task is None or not_run else task_log_path(task, self.source)
        if path and path == self.path:
            self.note_end(ended)
            return
        self.end_note = ended
        self._stop.set()
        with self._lock:      # an old worker's last read must not land in the new file's buffer
            self.path = path
            self._pending, self._pending_open, self._restart = [], None, False
        self.view.clear()
        title = self.query_one("#log-title", LogTitle)
        if task is None:
            title.show(f"log [{self.source}]: (select a task)")
        elif not_run:
            title.show(f"log [{self.source}]: none: {not_run}")
        elif not path:
            title.show(f"log [{self.source}]: none for this task")
        else:
            self._stop = threading.Event()
            self._problem = None
            self.update_title()
            self.follow(path, self._stop)

    def note_end(self, note: EndNote | None) -> None:
        """Say in the title how the task shown ended (or no longer say it: Slurm requeued it).

        The file is still read after the end: a late flush (stdout buffered to the exit, a network
        file system's delay, Slurm's `CANCELLED AT ... DUE TO TIME LIMIT` in .err) lands after the
        state that ended it, and `logs -f` reads what is left too. The pane just stops saying
        `following`: nothing more is coming from the task."""
        if note != self.end_note:
            self.end_note = note
            self.update_title()

    def update_title(self) -> None:
        if not self.path:
            return
        following = self.view.following
        if self._problem == NO_FILE and self.end_note:   # as `logs` says it: it never came
            suffix = " · left no log"
        elif self._problem:
            suffix = f" · {self._problem}"
        elif self.end_note:           # nothing to follow: where the log stands is all it says
            suffix = "" if following else " · scrolled (End: last line)"
        else:
            suffix = " · following" if following else " · scrolled (End: follow)"
        suffixes = tuple(f" · {note}{suffix}" for note in self.end_note) if self.end_note else (suffix,)
        self.query_one("#log-title", LogTitle).show(f"log [{self.source}]: ", self.path, *suffixes)

    # -- reading (thread) ------------------------------------------------------------
    @work(thread=True, exclusive=True, group="log", exit_on_error=False)
    def follow(self, path: str, stop: threading.Event) -> None:
        """The file's last lines, then only what is appended (the core's Follower).

        A path that is not a regular file (a FIFO, /dev/zero, a folder) is never
        read; its problem goes to the title, and the Follower starts over once a
        regular file replaces it.
        """
        follower, lines, problem, left = _open_at_end(path)
        # the bytes above a line too long to read whole, said where they are missing (the cut line
        # read as the log's start, its lines above gone without a word)
        noted = [not_read_note(left, path)] if left else []
        self._deliver(path, stop, [*noted, *lines], None, restart=True, problem=problem)
        restarts, open_line = follower.restarts, None
        worker = get_current_worker()
        while not stop.wait(POLL_SECONDS) and not worker.is_cancelled:
            if follower.unread() > SKIP_AHEAD:
                # far behind (a burst of short lines): reading through split every line in Python,
                # and the pane said `ended` over lines minutes old while a core was busy. Followed,
                # its last lines, as on opening it, under a line saying what was left out; scrolled
                # back (a search's match), nothing moves until End follows again.
                if not self._following.is_set():
                    continue
                # complete lines far ahead only: a tail that is one long unfinished line (a `\r`
                # progress bar) is read on as it comes, or each look would open it again
                start, end = follower.position, complete_end(path)
                if end - start > SKIP_AHEAD:
                    follower, lines, problem, _ = _open_at_end(path, end)   # the note below counts them
                    restarts, open_line = follower.restarts, None
                    # all above the lines now shown: the lines shown between two skips went with the view
                    left = f"… {tail_start(path, INITIAL_LINES, end) / 1e6:.1f} MB of the log not shown " \
                           "(written faster than shown): hyperion-jobs logs shows every line"
                    self._deliver(path, stop, [left, *lines], None, restart=True, problem=problem)
                    continue
            lines = follower.read_new()
            restarted = follower.restarts != restarts
            restarts = follower.restarts
            now_open = follower.open_line
            if lines or restarted or not same_line(now_open, open_line) or follower.problem != problem:
                problem, open_line = follower.problem, now_open
                self._deliver(path, stop, lines, open_line, restart=restarted, problem=problem)

    def _deliver(self, path: str, stop: threading.Event, lines: list[str], open_line: str | None,
                 restart: bool, problem: str | None) -> None:
        """Hand read lines to the interface thread, unless the pane moved on. A worker the pane left
        (`stop` set) is dropped even when the pane came back to its path: leaving a log and coming
        back while its first read was slow (a big log, NFS), that read landed after the new
        worker's lines and cleared them, and the lines between the two reads were never shown."""
        with self._lock:
            if path != self.path or stop.is_set():
                return
            if restart:
                self._pending, self._restart = [], True
            self._pending.extend(lines)
            self._pending_open = open_line
            if len(self._pending) > MAX_LINES:
                del self._pending[:-MAX_LINES]
        try:
            self.app.call_from_thread(self._post_update, path, problem)
        except RuntimeError:       # the app is closing
            pass

    def _post_update(self, path: str, problem: str | None) -> None:
        if path == self.path:
            self._problem = problem
        self.post_message(LogUpdated(path))

    @guarded
    def on_log_updated(self, message: LogUpdated) -> None:
        if message.path != self.path:
            return
        with self._lock:
            lines, open_line, restart = self._pending, self._pending_open, self._restart
            self._pending, self._restart = [], False
        view = self.view
        if restart:
            view.clear()
        added = view.append(lines, open_line)
        # read, and not a byte in it: said (as `hyperion-jobs logs` says it), not a blank pane
        empty = view.line_count == 0 and self._problem is None
        note = f"(empty: 0 bytes, {empty_words('the task', self.source)})" if empty else None
        if note != view.empty_note:
            view.empty_note = note
            view.refresh()
        self.update_title()
        self.post_message(LogAppended(message.path, added, view.following, restart))

    def on_descendant_focus(self) -> None:
        """The title lights up while the log has the focus (keys scroll it then, not the table)."""
        self.add_class("-focused")

    def on_descendant_blur(self) -> None:
        self.remove_class("-focused")

    def on_log_view_follow_changed(self, event: LogView.FollowChanged) -> None:
        event.stop()
        (self._following.set if event.following else self._following.clear)()    # the reader's thread asks
        self.update_title()
