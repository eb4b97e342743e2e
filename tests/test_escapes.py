"""Colours and progress-bar cursor sequences in a log are dropped, not shown as escapes (`escapes`,
`line_screen`); other controls and sequences cut short still reach `printable` and show as escapes."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from backends.printable import printable
from backends.watch.escapes import PARAMS_MAX, split_open, strip_sequences
from backends.watch.line_screen import CutLine, LineScreen, shown_line

LOGURU = ("\x1b[32m2026-12-05 10:15:01.123\x1b[0m | \x1b[1mINFO    \x1b[0m | "
          "\x1b[36mtrain\x1b[0m:\x1b[36mmain\x1b[0m:\x1b[36m42\x1b[0m - \x1b[1mepoch 3 loss 0.51\x1b[0m")


def shown(text: str, keep: int = 400) -> str:
    """What a terminal face prints of one log line."""
    return printable(shown_line(text, keep), layout=True)


def test_a_coloured_log_line_reads_as_its_text():
    """It read '\\x1b[32m2026-12-05 ...\\x1b[0m | \\x1b[1mINFO ...' on a terminal and in the console."""
    assert shown(LOGURU) == "2026-12-05 10:15:01.123 | INFO     | train:main:42 - epoch 3 loss 0.51"
    assert shown("\x1b[38;5;208mwarm\x1b[38;2;255;128;0m true\x1b[48;2;0;0;0;1;4m bg\x1b[m") == "warm true bg"
    assert shown("\x1b[1;31mTraceback (most recent call last):\x1b[0m") == "Traceback (most recent call last):"
    assert shown("\x1b(B\x1b[m after tput sgr0") == " after tput sgr0"


def test_rich_markup_in_a_coloured_line_stays_literal_text():
    assert shown("\x1b[1m[bold red]not bold[/]\x1b[0m [link=x]y[/link]") == "[bold red]not bold[/] [link=x]y[/link]"


def test_a_progress_bar_that_erases_what_it_redraws_shows_its_last_redraw():
    """tqdm, pip and rich write `\\r`, an erase in line (ESC[K, ESC[2K) and hide the cursor: the old
    view showed '\\x1b[?25l\\x1b[2K 100%...' or the overwrite of a longer redraw."""
    bar = "".join(f"\r\x1b[32m{i:3d}%|{'#' * (i // 10):<10}|\x1b[0m {i}/100 [00:0{i // 20}<00:05]\x1b[K"
                  for i in range(0, 101, 5))
    assert shown("\x1b[?25l" + bar + "\x1b[?25h") == "100%|##########| 100/100 [00:05<00:05]"
    assert shown("Downloading 1 GB, very long line\r\x1b[2KDone") == "Done"
    assert shown("Downloading 1 GB\x1b[1G\x1b[2KDone") == "Done"              # column 1 is a return
    assert shown("Downloading 1 GB\x1b[GDone") == "Doneloading 1 GB"           # no erase: overwritten
    assert shown("epoch 1\x1b[A\x1b[2K\repoch 2") == "epoch 2"                # up a line: dropped


def test_osc_controls_and_sequences_cut_short_are_still_escapes():
    """Only complete CSI sequences go; nothing else of ESC's reaches the terminal."""
    assert shown("\x1b[31mcopy\x1b[0m \x1b]52;c;cm0gLXJmIH4vKg==\x07 me") == "copy \\x1b]52;c;cm0gLXJmIH4vKg==\\x07 me"
    assert shown("\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\") == "\\x1b]8;;http://x\\x1b\\link\\x1b]8;;\\x1b\\"
    assert shown("cut \x1b[31") == "cut \\x1b[31"
    assert shown("bell \x1b[31\x07m in it") == "bell \\x1b[31\\x07m in it"
    assert shown("c1 \x9b31m") == "c1 \\x9b31m"
    too_long = "\x1b[" + "1;" * PARAMS_MAX + "m"
    assert shown(too_long) == "\\x1b" + too_long[1:]


def test_strip_sequences_and_split_open():
    assert strip_sequences("a\x1b[0Kb") == strip_sequences("a\x1b[Kb")
    assert strip_sequences("a\x1b[0Kb").erases and strip_sequences("a\x1b[0Kb").text == "ab"
    assert not strip_sequences("\x1b[31mred\x1b[0m").erases
    assert strip_sequences("x\x1b[1Gy").text == "x\ry"
    assert split_open("text \x1b[38;5") == ("text ", "\x1b[38;5")
    assert split_open("text \x1b") == ("text ", "\x1b")
    assert split_open("text \x1b]52") == ("text \x1b]52", "")
    assert split_open("\x1b[31mdone") == ("\x1b[31mdone", "")


@settings(max_examples=400, deadline=None)
@given(pieces=st.lists(st.sampled_from(["a", "b", "\r", "\x1b", "[", "3", "1", ";", "m", "K", "2", "G", "]", "\x07"]),
                       max_size=40),
       cuts=st.lists(st.integers(0, 40), max_size=6), keep=st.integers(1, 12))
def test_a_line_written_in_any_chunks_shows_what_it_shows_written_at_once(pieces, cuts, keep):
    """A sequence split between two reads of a followed log is dropped as when read whole."""
    split = LineScreen(keep)
    for chunk in ("\x1b", "[3", "1m", "a\x1b[0", "m"):
        split.write(chunk)
    assert split.line() == "a"[:keep]
    text = "".join(pieces)
    whole = LineScreen(keep)
    whole.write(text)
    chunked = LineScreen(keep)
    start = 0
    for cut in sorted(set(cuts)):
        chunked.write(text[start:cut])
        start = max(start, cut)
    chunked.write(text[start:])
    assert chunked.line() == whole.line() and chunked.blank == whole.blank
    assert getattr(chunked.line(), "more", 0) == getattr(whole.line(), "more", 0)


def test_a_mebibyte_of_sequences_costs_linear_time():
    """A line of 1 MiB of ESC[ (or of colour and erase redraws) is read in pieces as `logs -f` reads it."""
    screen = LineScreen(2 << 20)
    garbage = "\x1b[" * (1 << 19)
    for start in range(0, len(garbage), 65536):
        screen.write(garbage[start:start + 65536])
    screen.write("\x1b[31mok")
    assert screen.line() == garbage + "ok"
    screen = LineScreen(1 << 20)
    redraws = "".join(f"\r\x1b[2K\x1b[31m{i}%\x1b[0m" for i in range(200_000))
    for start in range(0, len(redraws), 65536):
        screen.write(redraws[start:start + 65536])
    assert screen.line() == "199999%" and not isinstance(screen.line(), CutLine)
