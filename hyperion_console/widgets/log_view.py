"""A log viewer that follows the end while it grows and stays put once the user scrolls up.

A Line API widget (as toolong's LogLines): it keeps the last MAX_LINES lines
and draws only the lines on screen. Below them, the line still being written
(a progress bar's last redraw) is shown and replaced as it changes. Lines come without their colour and cursor
sequences (`line_screen`) and are made printable when they arrive (`printable(layout=True)`: an
OSC 52 in a log is shown as ``\\x1b]52;...``, never sent to the terminal) and drawn as rich Text, never
markup. "Following" is simply "the view is at its last line": scrolling up
stops it, End (or scrolling back down) resumes it.
"""
from __future__ import annotations

from typing import Iterable

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from backends.printable import printable
from backends.watch.line_screen import CutLine

from ..shown import ELLIPSIS

MAX_LINES = 10_000
TAB = 8


MAX_LINE = 4096       # characters kept of one line (a progress bar without newlines can be megabytes)


def clean(line: str) -> str:
    """What one log line shows: controls as escapes, tabs as spaces, at most MAX_LINE characters.

    A CutLine (the Follower kept only its start) counts what it dropped too, so the
    note gives the line's real length beyond what is shown.
    """
    more = max(0, len(line) - MAX_LINE) + (line.more if isinstance(line, CutLine) else 0)
    line = line[:MAX_LINE]
    shown = printable(line, layout=True).expandtabs(TAB)
    return f"{shown} … ({more} more characters)" if more > 0 else shown


class LogView(ScrollView, can_focus=True):
    COMPONENT_CLASSES = {"log-view--match", "log-view--match-line"}
    DEFAULT_CSS = """
    LogView {
        background: $surface;
        overflow-x: hidden;
        overflow-y: auto;
        scrollbar-size-vertical: 1;
        & > .log-view--match { background: $warning 60%; color: $text; text-style: bold; }
        & > .log-view--match-line { background: $accent 25%; }
        &:focus { background-tint: $foreground 4%; }
    }
    """
    BINDINGS = [
        Binding("up,k", "scroll_lines(-1)", "Up", show=False),
        Binding("down,j", "scroll_lines(1)", "Down", show=False),
        Binding("pageup,ctrl+b", "scroll_pages(-1)", "Page up", show=False),
        Binding("pagedown,ctrl+f", "scroll_pages(1)", "Page down", show=False),
        Binding("home,g", "top", "Top", show=False),
        Binding("end,G", "follow", "Follow", show=False),
        Binding("left,h", "pan(-8)", "Left", show=False),
        Binding("right", "pan(8)", "Right", show=False),
    ]

    class FollowChanged(Message):
        """The view started or stopped following the end."""

        def __init__(self, following: bool) -> None:
            super().__init__()
            self.following = following

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._lines: list[str] = []
        self._open: str | None = None   # the line still being written, shown last
        self._width = 0
        self._following = True
        self.find_text = ""
        self.match_line: int | None = None
        # said dim on the first row while no line is held and the file was read: an empty file is
        # not a pane that failed to load (None: nothing said)
        self.empty_note: str | None = None

    @property
    def following(self) -> bool:
        return self._following

    @following.setter
    def following(self, value: bool) -> None:
        if value != self._following:
            self._following = value
            self.post_message(self.FollowChanged(value))

    @property
    def lines(self) -> list[str]:
        """The lines held, as shown (printable), the line still being written last."""
        return self._lines + ([self._open] if self._open is not None else [])

    @property
    def line_count(self) -> int:
        return len(self._lines) + (self._open is not None)

    @property
    def last_line(self) -> str | None:
        """The last line held (the one still being written, if any); None when none is."""
        return self._line(self.line_count - 1) if self.line_count else None

    def _line(self, index: int) -> str:
        return self._lines[index] if index < len(self._lines) else self._open or ""

    def clear(self) -> None:
        self._lines, self._open, self._width, self.match_line = [], None, 0, None
        self.empty_note = None
        self.following = True
        self._resize_virtual()
        self.scroll_to(0, 0, animate=False, force=True)
        self.refresh()

    def append(self, lines: Iterable[str], open_line: str | None = None) -> int:
        """Add lines at the end and show `open_line` after them; follow them if following.

        Returns how many lines were added (the open line does not count: it is
        replaced by the next call's lines or open line).
        """
        new = [clean(line) for line in lines]
        shown_open = None if open_line is None else clean(open_line)
        if not new and shown_open == self._open:
            return 0
        self._open = shown_open
        self._width = max(self._width, *(cell_len(line) for line in new), cell_len(shown_open or ""))
        self._lines.extend(new)
        dropped = len(self._lines) - MAX_LINES
        if dropped > 0:
            del self._lines[:dropped]
            if self.match_line is not None:
                self.match_line = self.match_line - dropped if self.match_line >= dropped else None
        self._resize_virtual()
        if self.following:
            self.scroll_to(y=self.max_scroll_y, animate=False, force=True)
        elif dropped > 0:            # keep the same lines under the user's eyes
            self.scroll_to(y=max(0, self.scroll_y - dropped), animate=False, force=True)
        self.refresh()
        return len(new)

    def _resize_virtual(self) -> None:
        self.virtual_size = Size(max(self._width, self.size.width), self.line_count)

    def watch_scroll_y(self, old: float, new: float) -> None:
        super().watch_scroll_y(old, new)
        self.following = round(new) >= self.max_scroll_y

    def on_resize(self) -> None:
        self._resize_virtual()
        if self.following:
            self.scroll_to(y=self.max_scroll_y, animate=False, force=True)

    # -- keys -------------------------------------------------------------------
    def action_scroll_lines(self, lines: int) -> None:
        self.scroll_to(y=self.scroll_y + lines, animate=False, force=True)

    def action_scroll_pages(self, pages: int) -> None:
        self.scroll_to(y=self.scroll_y + pages * max(1, self.size.height - 1), animate=False, force=True)

    def action_top(self) -> None:
        self.scroll_to(y=0, animate=False, force=True)

    def action_follow(self) -> None:
        """Back to the end, and stay there while the log grows."""
        self.following = True
        self.scroll_to(y=self.max_scroll_y, animate=False, force=True)

    def action_pan(self, cells: int) -> None:
        self.scroll_to(x=max(0, self.scroll_x + cells), animate=False, force=True)

    # -- search -------------------------------------------------------------------
    def find(self, text: str, forward: bool = True) -> bool:
        """Show the next line (from the match or the top line shown) containing `text`."""
        self.find_text = text
        needle = text.casefold()
        count = self.line_count
        if not needle or not count:
            self.refresh()
            return False
        start = self.match_line if self.match_line is not None else int(self.scroll_y) - (1 if forward else 0)
        step = 1 if forward else -1
        for offset in range(1, count + 1):
            index = (start + step * offset) % count
            if needle in self._line(index).casefold():
                self.match_line = index
                top = max(0, index - self.size.height // 2)
                self.scroll_to(y=min(top, self.max_scroll_y), animate=False, force=True)
                self.following = False     # the user looks at the match: new lines must not move it
                self.refresh()
                return True
        self.refresh()
        return False

    # -- drawing -------------------------------------------------------------------
    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        base = self.rich_style
        index = int(self.scroll_y) + y
        if index >= self.line_count:
            if index == 0 and self.empty_note:     # text, never markup: it names no file's content
                note = Text(self.empty_note, style=base + Style(dim=True))
                return Strip(note.render(self.app.console), note.cell_len).crop_extend(0, width, base)
            return Strip.blank(width, base)
        line = self._line(index)
        text = Text(line)
        text.stylize_before(base)
        if index == self.match_line:
            text.stylize(self.get_component_rich_style("log-view--match-line"))
        if self.find_text:
            text.highlight_words([self.find_text], self.get_component_rich_style("log-view--match"),
                                 case_sensitive=False)
        left = int(self.scroll_x)
        strip = Strip(text.render(self.app.console), text.cell_len).crop_extend(left, left + width, base)
        return self._mark_cuts(strip, cell_len(line), left, width, base)

    @staticmethod
    def _mark_cuts(strip: Strip, length: int, left: int, width: int, base: Style) -> Strip:
        """An ellipsis where the line goes on beyond the view (either side)."""
        if width < 2:
            return strip
        mark = Strip([Segment(ELLIPSIS, base + Style(dim=True))])
        if length > left + width:
            strip = Strip.join([strip.crop(0, width - 1), mark])
        if left > 0 and length > 0:
            strip = Strip.join([mark, strip.crop(1, width)])
        return strip
