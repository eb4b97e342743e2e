"""The console's text field: an Input whose editing keys act in order with the typed characters.

Textual types a character in Input._on_key, but runs a bound key (backspace, the
arrows, enter...) only once it has bubbled back up to the App. Keys read in one
burst (a fast typist, tmux send-keys, an expect script, input coalesced over a
slow ssh link) are all routed before that: `ab<backspace>c` gave `ab`, and a
backspace just before Tab erased a character of the next field
(textual#6605). Field runs its own bindings as the key arrives, in order.

A value holding control or bidi characters (a record path the Checkpoint screen
fills in, a pasted line) is drawn as `printable` spells it, as every other widget
draws such text: Input drew it raw, an OSC 0 in a folder's name set the window
title. The value itself stays as it is (the path is opened, the command run).
"""
from __future__ import annotations

import os

from rich.cells import cell_len
from rich.segment import Segment
from rich.text import Text
from textual import events
from textual.strip import Strip
from textual.widgets import Input
from textual.widgets.input import Selection

from backends.printable import printable

ELLIPSIS = "…"


def fit_path(text: str, path: str, width: int) -> str:
    """`text` in `width` characters by giving up the start of the `path` it holds (from a folder
    boundary where it can): a hint naming a site file under a long absolute path was cut at its end,
    the file name lost. Unchanged when it fits, holds no path or `width` is not known (0). When even
    the file name does not fit after the words before it, those words give way too, a whole word at a
    time and never the first (the limit itself); the file name and what follows it stay whole, even if
    the text then stays too long."""
    at = text.rfind(path) if path else -1
    if width <= 0 or len(text) <= width or at < 0:
        return text
    name = path.rsplit(os.sep, 1)[-1]
    room = len(path) - (len(text) - width) - len(ELLIPSIS)      # characters of the path kept
    tail = path[-room:] if room > 0 else ""
    boundary = tail.find(os.sep)
    if boundary >= 0 and len(tail) - boundary > len(name):
        tail = tail[boundary:]                                    # from a folder, not mid-name
    if len(tail) <= len(name):
        tail = os.sep + name if os.sep in path else name
    suffix = tail + text[at + len(path):]
    if at + len(ELLIPSIS) + len(suffix) > width:     # the words before the path give way too
        return _words_before(text[:at], width - len(ELLIPSIS) - len(suffix)) + ELLIPSIS + suffix
    return text[:at] + ELLIPSIS + suffix


def _words_before(words: str, keep: int) -> str:
    """The first `keep` characters of the `words` before a path, cut after a whole word, and never
    less than the first word (the limit the hint gives): cut a character at a time, a narrow field
    read `100…/submit_test_cluster.yaml)` for 1001, a limit of 100."""
    first = words.split(" ", 1)[0]
    if keep >= len(words) or not first:
        return words.rstrip()
    cut = words[:max(keep, 0)]
    if words[len(cut)] != " " and " " in cut:      # mid-word: back to the word before it
        cut = cut[:cut.rfind(" ")]
    elif words[len(cut)] != " ":
        cut = ""
    return cut.rstrip() if len(cut.rstrip()) >= len(first) else first


class Field(Input):
    """Input, with its own bindings run where its characters are typed: in arrival order; a hint
    holding a path fits the field's width (see `show_hint`)."""

    _hint: tuple[str, str] | None = None     # (whole hint, the path in it) while one is shown

    def __init__(self, *args, start_shown: bool = False, **kwargs) -> None:
        """`start_shown`: focused, the field selects its whole value as Input does, but with the cursor
        at its start, so a value wider than the field shows its beginning. Input's select-on-focus put
        the cursor at the end: a list of values showed its tail from mid-number (`7,207,227` of
        `...,187,207,227`), which reads as another valid list."""
        if start_shown:
            kwargs["select_on_focus"] = False
        super().__init__(*args, **kwargs)
        self._start_shown = start_shown

    def on_focus(self, event: events.Focus) -> None:
        if self._start_shown and not event.from_app_focus:
            # Selection(end, start): the whole value selected (typing replaces it), the cursor at 0
            self.selection = Selection(len(self.value), 0)

    def show_hint(self, text: str, path: str = "") -> None:
        """Show `text` as the placeholder; when it is wider than the field, `path` in it gives up its
        start, now and whenever the field is resized (a placeholder too long is cut at its end, or
        wrapped at a space with the rest out of sight)."""
        self._hint = (text, path)
        self._fit_hint()

    def _fit_hint(self) -> None:
        if self._hint is not None:
            text, path = self._hint
            # the last column is the cursor's when the field is empty
            self.placeholder = fit_path(text, path, self.content_size.width - 1 if self.content_size.width else 0)

    def on_resize(self, event: events.Resize) -> None:
        self._fit_hint()

    async def _on_key(self, event: events.Key) -> None:
        for binding in self._bindings.key_to_bindings.get(event.key, ()):
            if not binding.priority and await self.app.run_action(binding.action, self):
                event.stop()
                event.prevent_default()
                return
        await super()._on_key(event)

    # -- a value with controls, drawn as its escapes (the cursor and a selection over them) --------
    def _escaped(self) -> bool:
        return not self.password and printable(self.value) != self.value

    def _shown_index(self, position: int) -> int:
        """Where the character at `position` of the value starts in the text drawn."""
        return len(printable(self.value[:position]))

    @property
    def _value(self) -> Text:
        if not self._escaped():
            return super()._value
        return Text(printable(self.value), no_wrap=True, overflow="ignore", end="")

    def _position_to_cell(self, position: int) -> int:
        if not self._escaped():
            return super()._position_to_cell(position)
        return cell_len(printable(self.value[:position]))

    def _cell_offset_to_index(self, offset: int) -> int:
        """A click on any cell of an escape lands on the character it spells."""
        if not self._escaped():
            return super()._cell_offset_to_index(offset)
        offset += self.scroll_offset.x
        start = 0
        for index, char in enumerate(self.value):
            start += cell_len(printable(char))
            if offset < start:
                return index
        return len(self.value)

    def render_line(self, y: int) -> Strip:
        """Input's line, with the value's escapes drawn and the cursor and selection placed over them,
        and a value wider than the field marked `…` where it is cut (see `_mark_cuts`)."""
        if y != 0 or not self.value:
            return super().render_line(y)
        return self._mark_cuts(super().render_line(y) if not self._escaped() else self._escaped_line())

    def _mark_cuts(self, strip: Strip) -> Strip:
        """`…` over the first and the last cell the field shows when the value goes on beyond them: a
        Retry's values `1-3,5,7,9-12,14,17-18,20-21,...` showed `1-3,5,7,9-12,14,17-18,` at the
        field's edge, a whole list to the eye, the rest out of sight. Not over the cursor's cell."""
        shown_cells = self._position_to_cell(len(self.value))
        start = self.scroll_offset.x
        last = min(strip.cell_length, self.scrollable_content_region.width) - 1   # the last cell on screen
        cursor = self._position_to_cell(self.cursor_position) - start if self.has_focus else -1
        cut_left = start > 0 and cursor != 0
        cut_right = shown_cells > start + last + 1 and cursor != last
        if not (cut_left or cut_right) or last < 2:
            return strip
        parts = strip.divide([1, last, strip.cell_length])
        if cut_left:
            parts[0] = _ellipsis_over(parts[0])
        if cut_right:
            parts[2] = _ellipsis_over(parts[2])
        return Strip.join(parts)

    def _escaped_line(self) -> Strip:
        result = self._value
        if self.has_focus:
            if not self.selection.is_empty:
                start, end = sorted(self.selection)
                result.stylize_before(self.get_component_rich_style("input--selection"),
                                      self._shown_index(start), self._shown_index(end))
            if self._cursor_visible:
                cursor = self.cursor_position
                if self.cursor_at_end:
                    result.pad_right(1)
                result.stylize(self.get_component_rich_style("input--cursor"), self._shown_index(cursor),
                               self._shown_index(cursor + 1) if cursor < len(self.value) else len(result))
        width = self.scrollable_content_region.width
        strip = Strip(list(self.app.console.render(result, self.app.console_options.update_width(self.content_width))))
        strip = strip.crop(self.scroll_offset.x, self.scroll_offset.x + width + 1).extend_cell_length(width + 1)
        return strip.apply_style(self.rich_style)


def _ellipsis_over(cell: Strip) -> Strip:
    """The one cell `cell` holds, drawn as `…` in its style."""
    segments = [segment for segment in cell if segment.text]
    return Strip([Segment(ELLIPSIS, segments[0].style if segments else None)], 1)
