"""What a terminal shows of a line with carriage returns (progress bars): `line_screen`."""
from __future__ import annotations

from hypothesis import given
from conftest import terminal_row
from hypothesis import strategies as st

from backends.watch.line_screen import CutLine, LineScreen, shown_line, shown_lines


@given(chunks=st.lists(st.text(alphabet="ab\ré", max_size=15), max_size=8), keep=st.integers(1, 12))
def test_a_line_written_in_any_chunks_shows_what_a_terminal_shows(chunks, keep):
    screen = LineScreen(keep)
    for chunk in chunks:
        screen.write(chunk)
    row = terminal_row("".join(chunks))
    text, width = row[:keep], len(row)
    line = screen.line()
    assert line == text
    assert (line.more if isinstance(line, CutLine) else 0) == max(0, width - keep)


def test_a_progress_bar_shows_its_last_redraw():
    bar = "".join(f"\r{i:3d}%|{'#' * (i // 10):<10}|" for i in range(101))
    assert shown_line("epoch 1" + bar + " done", 200) == "100%|##########| done"
    assert shown_line("loss 0.51\r", 200) == "loss 0.51"               # a trailing return shows nothing new
    assert shown_line("downloading 100%\rok", 200) == "okwnloading 100%"    # as a terminal leaves it


def test_a_million_redraws_cost_no_million_copies_of_the_line():
    screen = LineScreen(4096)
    screen.write("x" * 4096)
    screen.write("\r." * 1_000_000)         # each redraw copying the 4096-column line: 4 GB of copies
    assert screen.line() == "." + "x" * 4095


def test_pieces_become_the_lines_a_terminal_shows():
    pieces = [("step 1\r", False), ("step 2", True), ("plain", True), ("a" * 8, False), ("\rb", True)]
    lines = list(shown_lines(pieces, keep=5))
    assert lines == ["step ", "plain", "baaaa"]
    assert [getattr(line, "more", 0) for line in lines] == [1, 0, 3]


def test_what_overwriting_by_characters_would_garble_shows_its_last_redraw_whole():
    """Erases, escapes left, tabs, backspaces and wide characters do not take one column each: the
    overwrite gave 'Doneloading 100 MB' where the terminal erased the line and showed Done."""
    assert shown_line("\r\x1b[2KDownloading 100 MB\r\x1b[2KDone", 200) == "Done"
    assert shown_line("\x1b]0;t\x07green\rred", 200) == "red"
    assert shown_line("\x1b[32mgreen\x1b[0m\rred", 200) == "reden"    # colours take no column
    assert shown_line("Epoch 1/2\t loss 0.5\rEpoch 2/2\t loss 0.4", 200) == "Epoch 2/2\t loss 0.4"
    assert shown_line("进度 50%\r进度 100%", 200) == "进度 100%"
    assert shown_line("12/12 [====]\x08\x08\x08\x08\r", 200) == "12/12 [====]\x08\x08\x08\x08"   # Keras


@given(chunks=st.lists(st.text(alphabet="ab\r\x1b\t", max_size=15), max_size=8), keep=st.integers(1, 12))
def test_a_line_that_is_not_plain_shows_its_last_non_empty_redraw_in_any_chunks(chunks, keep):
    written = "".join(chunks)
    screen = LineScreen(keep)
    for chunk in chunks:
        screen.write(chunk)
    if "\x1b" not in written and "\t" not in written:
        return
    redraw = next((part for part in reversed(written.split("\r")) if part), "")
    line = screen.line()
    assert line == redraw[:keep] and (line.more if isinstance(line, CutLine) else 0) == max(0, len(redraw) - keep)
