"""Background looks (record list, checkpoint change notice) spaced to their own length."""
from __future__ import annotations

import time

from hyperion_console.pacing import CUT_SHORT_LOOKS, LOOK_PAUSE, LOOK_SPACING, LookPacer


def test_looks_cut_short_in_a_row_stop_the_background_looks_until_a_user_listing() -> None:
    """A hung NFS folder: each look ran out of time; after a few in a row the console stops
    piling up walks, and an action's listing (which finished) lets them begin again."""
    pacer = LookPacer()
    assert pacer.ready()
    for _ in range(CUT_SHORT_LOOKS):
        pacer.looked(2.0, finished=False)
        assert pacer.after >= time.monotonic() + LOOK_PAUSE - 1
        pacer.after = 0.0                        # as if the pause had passed
    assert not pacer.ready()
    pacer.reset()
    assert pacer.ready()


def test_a_look_that_finished_waits_its_length_times_the_spacing() -> None:
    pacer = LookPacer()
    pacer.looked(0.5, finished=False)
    pacer.looked(0.5)
    assert pacer.cut_short == 0 and not pacer.ready()
    assert time.monotonic() + LOOK_SPACING * 0.5 - 1 <= pacer.after <= time.monotonic() + LOOK_SPACING * 0.5
