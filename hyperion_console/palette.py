"""The command palette (ctrl+p, and Theme's list of themes), its query drawn as every field draws text.

Textual's CommandPalette types into an Input of its own, which drew a pasted ESC, 8-bit CSI or
bidi override raw on the terminal (a colour sequence took effect, a right-to-left override
reversed the line), while the console's own fields (widgets/field.py) draw their escapes.
`Palette` is Textual's palette with a Field there instead: the query keeps what was typed
(the match ignores what it cannot find), and is drawn as `printable` spells it.
"""
from __future__ import annotations

from textual.app import ComposeResult
from textual.command import CommandInput, CommandPalette

from .widgets.field import Field


class PaletteInput(CommandInput, Field):
    """The palette's query: CommandInput's look and name (Textual's CSS and queries follow the first
    base), Field's drawing and keys (CommandInput overrides none of them)."""


class Palette(CommandPalette):
    """Textual's command palette, composing a PaletteInput where it composes its CommandInput."""

    def compose(self) -> ComposeResult:
        for widget in super().compose():
            if type(widget) is CommandInput:
                widget = PaletteInput(placeholder=widget.placeholder, select_on_focus=False)
            yield widget
