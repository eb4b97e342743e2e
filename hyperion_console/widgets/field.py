"""The console's text field: an Input whose editing keys act in order with the typed characters.

Textual types a character in Input._on_key, but runs a bound key (backspace, the
arrows, enter...) only once it has bubbled back up to the App. Keys read in one
burst (a fast typist, tmux send-keys, an expect script, input coalesced over a
slow ssh link) are all routed before that: `ab<backspace>c` gave `ab`, and a
backspace just before Tab erased a character of the next field
(textual#6605). Field runs its own bindings as the key arrives, in order.
"""
from __future__ import annotations

from textual import events
from textual.widgets import Input


class Field(Input):
    """Input, with its own bindings run where its characters are typed: in arrival order."""

    async def _on_key(self, event: events.Key) -> None:
        for binding in self._bindings.key_to_bindings.get(event.key, ()):
            if not binding.priority and await self.app.run_action(binding.action, self):
                event.stop()
                event.prevent_default()
                return
        await super()._on_key(event)
