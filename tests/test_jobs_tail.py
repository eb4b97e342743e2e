"""Log tailing: last lines from the end, following appends, truncation, missing files."""
from __future__ import annotations

import io
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from backends.watch import tail
from backends.watch.line_screen import CutLine
from backends.watch.tail import Follower, last_lines


def expected_last(data: bytes, n: int) -> list[str]:
    text = data.decode()
    if not text:
        return []
    if text.endswith("\n"):
        text = text[:-1]
    return text.split("\n")[-n:] if n > 0 else []


@settings(max_examples=200, deadline=None)
@given(lines=st.lists(st.text(alphabet="ab\n", max_size=12), max_size=30), n=st.integers(0, 12))
def test_last_lines_matches_reading_everything(tmp_path_factory, lines, n):
    path = tmp_path_factory.mktemp("t") / "log"
    data = "".join(lines).encode()
    path.write_bytes(data)
    old = tail.BLOCK
    tail.BLOCK = 5   # many block boundaries in a small file
    try:
        assert last_lines(path, n) == expected_last(data, n)
    finally:
        tail.BLOCK = old


def test_last_lines_agrees_with_tail(tmp_path):
    path = tmp_path / "big.log"
    with open(path, "w") as handle:
        for i in range(50_000):
            handle.write(f"line {i} " + "x" * (i % 97) + "\n")
    ours = last_lines(path, 100)
    theirs = subprocess.run(["tail", "-n", "100", str(path)], capture_output=True, text=True).stdout
    assert ours == theirs.splitlines()
    assert ours[-1].startswith("line 49999 ")


def test_missing_log_gives_nothing(tmp_path):
    assert last_lines(tmp_path / "nope.log", 10) == []


def test_follower_waits_for_file_then_follows_appends_and_partial_lines(tmp_path):
    path = tmp_path / "task.log"
    follower = Follower(path)
    assert follower.read_new() == []
    path.write_text("one\ntw")
    assert follower.read_new() == ["one"]
    with open(path, "a") as handle:
        handle.write("o\nthree\n")
    assert follower.read_new() == ["two", "three"]
    assert follower.read_new() == []


def test_follower_restarts_after_truncation_and_replacement(tmp_path):
    path = tmp_path / "task.log"
    path.write_text("a long first line\nsecond\n")
    follower = Follower(path)
    assert follower.read_new() == ["a long first line", "second"]
    assert follower.restarts == 0
    path.write_text("new\n")                       # truncated in place: smaller than before
    assert follower.read_new() == ["new"]
    assert follower.restarts == 1                  # a viewer knows to drop what it showed
    other = tmp_path / "other.log"
    other.write_text("replaced file with more bytes than before\n")
    os.replace(other, path)                        # new inode, larger
    assert follower.read_new() == ["replaced file with more bytes than before"]
    assert follower.restarts == 2


@pytest.mark.parametrize("start", ["start", "end"])
def test_follower_restarts_when_the_log_is_written_anew_on_the_same_inode(tmp_path, start):
    """`rm log; printf ... > log` often gets the freed inode back, with more bytes than before:
    the follower went on at its old offset and showed 'old line one / old line two / line / NEW
    third line'. Written anew in place here, so the inode is surely the same."""
    path = tmp_path / "task.log"
    path.write_bytes(b"old line one\nold line two\n")
    follower = Follower(path) if start == "start" else Follower.from_end(path)
    assert follower.read_new() == (["old line one", "old line two"] if start == "start" else [])
    inode = path.stat().st_ino
    with open(path, "r+b") as handle:
        handle.write(b"NEW first line\nNEW second line\nNEW third line\n")
    assert path.stat().st_ino == inode
    assert follower.read_new() == ["NEW first line", "NEW second line", "NEW third line"]
    assert follower.restarts == 1
    with open(path, "ab") as handle:             # then appended to as usual: no restart
        handle.write(b"NEW fourth line\n")
    assert follower.read_new() == ["NEW fourth line"] and follower.restarts == 1


def test_follow_from_end_skips_existing_and_flush_gives_partial(tmp_path):
    path = tmp_path / "task.log"
    path.write_text("old\nhalf")
    follower = Follower.from_end(path)
    with open(path, "a") as handle:
        handle.write(" done\nnext")
    assert follower.read_new() == ["half done"]
    assert follower.read_new(flush=True) == ["next"]


@pytest.mark.parametrize("n", [1, 3])
def test_last_lines_without_final_newline(tmp_path, n):
    path = tmp_path / "log"
    path.write_text("a\nb\nc")
    assert last_lines(path, n) == ["a", "b", "c"][-n:]


def test_last_lines_reads_a_bounded_amount_of_a_huge_line(tmp_path, monkeypatch):
    monkeypatch.setattr(tail, "MAX_TAIL", 1000)
    path = tmp_path / "progress.log"
    path.write_bytes(b"start\n" + b"\r 50%" * 10_000 + b"\ndone\n")
    lines = last_lines(path, 3)
    assert lines[-1] == "done" and len(lines) == 2 and len(lines[0]) < 1000


def _streamed(path, n: int, end: int | None = None) -> list[str]:
    """stream_last_lines' pieces joined back into lines."""
    lines, current = [], ""
    for text, ends in tail.stream_last_lines(path, n, end):
        current += text
        if ends:
            lines.append(current)
            current = ""
    assert current == ""
    return lines


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(st.text(alphabet="ab\n\ré", max_size=12), max_size=30), n=st.integers(0, 40))
def test_streamed_last_lines_match_reading_everything_across_blocks_and_pieces(tmp_path_factory, lines, n):
    """Blocks of 5 bytes and pieces of 3 split lines, newlines and two-byte characters at every place."""
    path = tmp_path_factory.mktemp("t") / "log"
    data = "".join(lines).encode()
    path.write_bytes(data)
    old = tail.BLOCK, tail.PIECE
    tail.BLOCK, tail.PIECE = 5, 3
    try:
        assert _streamed(path, n) == [line.rstrip("\r") for line in expected_last(data, n)]
    finally:
        tail.BLOCK, tail.PIECE = old


def test_logs_n_beyond_32_mib_gives_every_line_asked_for_whole(tmp_path, cli_env):
    """`logs -n 60000` of a 50 MiB log printed only the last 32 MiB, starting inside a line, exit 0, no word."""
    log = tmp_path / "exp" / "big.log"
    log.parent.mkdir()
    with open(log, "w") as handle:
        handle.write("# Running: python big.py\n")
        for i in range(51_200):
            handle.write(f"line {i} " + "x" * 1010 + "\n")
    assert log.stat().st_size > 48 * 1024 * 1024
    from conftest import run_cli

    from backends.records.record import JobRecord, SubmitRecord, TaskRecord, save_record
    record = tmp_path / "exp" / "q" / "big.submit.json"
    save_record(SubmitRecord(str(record), "local", ("hyperion-submit",), "site.yaml", {}, None, None,
                             (JobRecord("local", 0, None),), (TaskRecord(None, "local", None, str(log), None, None),),
                             "2026-12-03T00:00:00+00:00", str(tmp_path)))
    shown = run_cli("hyperion-jobs", "logs", str(record), "-n", "60000", env=cli_env, timeout=120)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == log.read_text()
    tail_part = run_cli("hyperion-jobs", "logs", str(record), "-n", "2", env=cli_env)
    assert tail_part.stdout.splitlines() == [f"line {i} " + "x" * 1010 for i in (51_198, 51_199)]


def test_a_line_that_never_ends_is_held_bounded_and_shown_as_its_last_redraw(tmp_path, monkeypatch):
    """A `\\r` progress bar without a newline: the Follower held all of it (RSS 61 -> 429 MB in 40 s),
    showed nothing of it while it ran and then 100 characters of `\\r 50% é` redraws."""
    monkeypatch.setattr(tail, "PIECE", 1000)
    path = tmp_path / "progress.log"
    path.write_bytes(b"")
    follower = Follower(path, keep=100)
    assert follower.open_line is None
    for percent in range(50):
        with open(path, "ab") as handle:
            handle.write("".join(f"\r {percent}% é{i % 10}" for i in range(2000)).encode())
        assert follower.read_new() == []
        assert follower.open_line == f" {percent}% é9"             # what the terminal shows now
        assert follower.held <= tail.PIECE + 100                     # not the megabyte written so far
    with open(path, "ab") as handle:
        handle.write(b" done\nnext\n")
    line, after = follower.read_new()
    assert (line, after) == (" 49% é9 done", "next") and not isinstance(line, CutLine)
    assert follower.held == 0 and follower.open_line is None


def test_a_wide_line_is_kept_by_its_start_with_the_count_of_what_was_dropped(tmp_path):
    path = tmp_path / "wide.log"
    path.write_text("é" * 250 + "\r" + "ab" + "\nshort\n")
    line, short = Follower(path, keep=100).read_new()
    assert isinstance(line, CutLine) and line == "ab" + "é" * 98 and line.more == 150
    assert short == "short"


def test_read_pieces_hands_a_line_that_never_ends_over_whole(tmp_path, monkeypatch):
    """`hyperion-jobs logs -f` prints a never-ending line as it comes, every byte, holding under a piece."""
    monkeypatch.setattr(tail, "PIECE", 1000)
    path = tmp_path / "progress.log"
    written = "".join(f"\r{i}% é" for i in range(3000))
    path.write_text("")
    follower, got = Follower(path), []
    for start in range(0, len(written), 7000):
        with open(path, "a") as handle:
            handle.write(written[start:start + 7000])
        got += follower.read_pieces()
        assert follower.held < tail.PIECE + 4
    assert got and not any(ends for _, ends in got)
    got += follower.read_pieces(flush=True)
    assert "".join(text for text, _ in got) == written and got[-1][1]


def test_complete_end_of_a_huge_line_without_newline_is_the_end_of_the_file(tmp_path, monkeypatch):
    """A 600 MB sparse log had following start at byte 0: the console read all of it into memory."""
    monkeypatch.setattr(tail, "MAX_TAIL", 1000)
    path = tmp_path / "sparse.log"
    path.write_bytes(b"first\n" + b"\0" * 5000)
    assert tail.complete_end(path) == path.stat().st_size
    path.write_bytes(b"first\n" + b"\0" * 500)               # within reach: just past the newline
    assert tail.complete_end(path) == 6
    path.write_bytes(b"\0" * 500)                            # a short file without newline: all of it
    assert tail.complete_end(path) == 0


@pytest.mark.parametrize("kind", ["fifo", "device", "folder"])
def test_follower_says_why_a_log_that_is_not_a_regular_file_is_not_read(tmp_path, kind):
    path = tmp_path / "task.log"
    {"fifo": lambda: os.mkfifo(path), "device": lambda: path.symlink_to("/dev/zero"),
     "folder": lambda: path.mkdir()}[kind]()
    follower = Follower(path)
    assert follower.read_new() == [] and follower.problem == "not a regular file"
    (path.rmdir if kind == "folder" else path.unlink)()
    path.write_text("now a file\n")
    assert follower.read_new() == ["now a file"] and follower.problem is None


def test_logs_follow_prints_a_line_that_never_ends_as_it_comes(tmp_path, cli_env):
    """`logs -f` held a line without newline until it ended: nothing printed, memory growing."""
    import select
    import time

    from test_jobs_core import NEVER_JOB, make_record

    record = make_record(tmp_path, job=NEVER_JOB)
    log = record.tasks[0].log
    open(log, "w").close()
    proc = subprocess.Popen(["hyperion-jobs", "logs", f"{record.path}:1", "-f", "-n", "0"], env=cli_env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    try:
        written = b"\r 50%" * 600_000                      # 3 MB, no newline
        with open(log, "ab") as handle:
            handle.write(written)
        out, deadline = b"", time.monotonic() + 30
        while len(out) < 2 * tail.PIECE and time.monotonic() < deadline:
            if select.select([proc.stdout], [], [], 0.5)[0]:
                out += os.read(proc.stdout.fileno(), 1 << 20)
        assert len(out) >= 2 * tail.PIECE and written.startswith(out)
    finally:
        proc.kill()
        proc.wait()


def _reader(proc: subprocess.Popen, seconds: float = 30) -> Callable[[bytes], bytes]:
    """`read_until(want)`: what `proc` printed so far, read until it ends with `want` (or time is up)."""
    import select
    import time

    out, deadline = b"", time.monotonic() + seconds

    def read_until(want: bytes) -> bytes:
        nonlocal out
        while not out.endswith(want) and time.monotonic() < deadline:
            if select.select([proc.stdout], [], [], 0.2)[0]:
                out += os.read(proc.stdout.fileno(), 1 << 16)
        return out

    return read_until


@pytest.mark.parametrize("raw", [False, True], ids=["piped", "raw"])
def test_logs_follow_piped_or_raw_prints_a_running_progress_bar_as_it_comes(tmp_path, cli_env, raw):
    """A tqdm bar of short redraws (no newline yet): `logs -f | cat` and `logs -f --raw` on a terminal
    showed nothing of it until its line ended or 1 MiB of redraws had gathered (20,000 redraws, minutes
    of a real bar), where `tail -f` shows it as it comes. The bytes read go out once the log is read
    to its end, an é cut between two writes whole."""
    from test_jobs_core import NEVER_JOB, make_record

    record = make_record(tmp_path, job=NEVER_JOB)
    log = record.tasks[0].log
    Path(log).write_bytes(b"start\n")
    proc = subprocess.Popen(["hyperion-jobs", "logs", f"{record.path}:1", "-f", *(["--raw"] if raw else [])],
                            env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    try:
        read_until = _reader(proc)
        assert read_until(b"start\n") == b"start\n"
        with open(log, "ab") as handle:
            handle.write(b"\rtrain   1%|\xe2\x96\x88 | 1/100 caf\xc3")      # é cut after its first byte
        assert read_until(b"caf") == b"start\n\rtrain   1%|\xe2\x96\x88 | 1/100 caf"
        with open(log, "ab") as handle:
            handle.write(b"\xa9\rtrain   2%|\xe2\x96\x88 | 2/100")
        assert read_until(b"2/100") == b"start\n\rtrain   1%|\xe2\x96\x88 | 1/100 caf\xc3\xa9\rtrain   2%|\xe2\x96\x88 | 2/100"
        with open(log, "ab") as handle:
            handle.write(b" done\nnext\n")
        assert read_until(b"next\n").endswith(b"2/100 done\nnext\n")
    finally:
        proc.kill()
        proc.wait()


def test_logs_follow_piped_of_a_log_written_anew_under_an_open_bar_starts_its_first_line_apart(
        tmp_path, cli_env):
    """The bar's bytes go out as they come (no newline yet); a rerun then wrote the log anew: its first
    line was glued to the old bar (`\rtrain 50%|#####attempt 2 line 1`)."""
    from test_jobs_core import NEVER_JOB, make_record

    record = make_record(tmp_path, job=NEVER_JOB)
    log = Path(record.tasks[0].log)
    log.write_bytes(b"start\n\rtrain 50%|#####")
    proc = subprocess.Popen(["hyperion-jobs", "logs", f"{record.path}:1", "-f"], env=cli_env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    try:
        read_until = _reader(proc)
        assert read_until(b"#####") == b"start\n\rtrain 50%|#####"
        anew = log.with_name(log.name + ".new")
        anew.write_bytes(b"attempt 2 line 1\n")
        os.replace(anew, log)                          # a new file at the path
        assert read_until(b"attempt 2 line 1\n") == b"start\n\rtrain 50%|#####\nattempt 2 line 1\n"
    finally:
        proc.kill()
        proc.wait()


def test_logs_follow_says_when_the_log_starts_over(tmp_path, cli_env):
    """A log written anew was followed from its start again with no word: into a pipe, the whole
    log came a second time as if appended."""
    import select
    import time

    from test_jobs_core import NEVER_JOB, make_record

    record = make_record(tmp_path, job=NEVER_JOB)
    log = Path(record.tasks[0].log)
    log.write_text("old line one\nold line two\n")
    proc = subprocess.Popen(["hyperion-jobs", "logs", f"{record.path}:1", "-f", "-n", "5"], env=cli_env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        out, err, deadline = b"", b"", time.monotonic() + 30
        while b"old line two" not in out and time.monotonic() < deadline:
            if select.select([proc.stdout], [], [], 0.2)[0]:
                out += os.read(proc.stdout.fileno(), 1 << 16)
        with open(log, "r+b") as handle:               # the same inode, other bytes
            handle.write(b"NEW first line\nNEW second line\nNEW third line\n")
        while b"starts over" not in err and b"from its start" not in err and time.monotonic() < deadline:
            ready = select.select([proc.stdout, proc.stderr], [], [], 0.2)[0]
            if proc.stderr in ready:
                err += os.read(proc.stderr.fileno(), 1 << 16)
            if proc.stdout in ready:
                out += os.read(proc.stdout.fileno(), 1 << 16)
        assert err.decode().strip() == f"hyperion-jobs: {log} was truncated or written anew; following it from its start"
    finally:
        proc.kill()
        proc.wait()


def test_a_log_written_anew_while_its_last_lines_print_is_said_to_start_over(tmp_path, capsys):
    """The follower was made after the last lines were printed: a log written anew in between gave
    it the new bytes as its mark, and it followed the new log from the old one's length, saying
    nothing (from the middle of a line of the new log)."""
    from backends.cli.jobs.log_output import follow

    log = tmp_path / "x.log"
    log.write_text("old line one\nold line two\n")

    class Seen(Exception):
        pass

    class Out(io.StringIO):
        rewritten = False

        def flush(self) -> None:          # the last lines are out: the task writes its log anew
            if not self.rewritten:
                self.rewritten = True
                with open(log, "r+b") as handle:
                    handle.write(b"NEW first line\nNEW second line\nNEW third line\n")

        def write(self, text: str) -> int:
            if self.rewritten:                # the first text followed: from where?
                raise Seen(text)
            return super().write(text)

    with pytest.raises(Seen) as seen:
        follow(str(log), 5, raw=False, out=Out())
    assert str(seen.value) == "NEW first line\n"
    assert capsys.readouterr().err == f"hyperion-jobs: {log} was truncated or written anew; following it from its start\n"


# --- what a terminal shows of a line that never ends ------------------------------------------------

class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _counting_reads(monkeypatch, limit: int) -> list[int]:
    """Opened logs count the bytes read, and fail once over `limit` (reading a 4 GB line took 45 s)."""
    read = [0]

    class Counting(io.BufferedReader):
        def read(self, size: int | None = -1) -> bytes:
            data = super().read(size)
            read[0] += len(data)
            assert read[0] <= limit, f"read more than {limit} bytes"
            return data

    monkeypatch.setattr(tail, "open_log", lambda path: Counting(io.FileIO(path, "rb")))
    return read


def test_a_terminal_shows_the_last_redraw_of_a_4_gb_line_reading_only_its_end(tmp_path, monkeypatch):
    """`logs` on a terminal of one multi-GB line that never ends read all of it: 11 s per GB."""
    from backends.cli.jobs.log_output import print_last
    path = tmp_path / "progress.log"
    with open(path, "wb") as handle:
        handle.truncate(4 * 1024 ** 3)                       # sparse: 4 GB of NULs cost no disk
        handle.seek(0, os.SEEK_END)
        handle.write(b"\repoch 1  50% \x1b]52;c;aGk=\x07\repoch 1 100%")
    read = _counting_reads(monkeypatch, 34 * 1024 ** 2)       # looking back 32 MiB, then its last 512 KiB
    out = _Terminal()
    print_last(str(path), 20, raw=False, out=out)
    assert out.getvalue() == "epoch 1 100%\n"
    assert read[0] > 0


def test_a_terminal_shows_the_end_of_a_long_line_without_redraws_after_a_note(tmp_path, monkeypatch):
    from backends.cli.jobs.log_output import print_last
    monkeypatch.setattr(tail, "LONG_LINE", 1000)
    monkeypatch.setattr(tail, "LONG_LINE_END", 100)
    monkeypatch.setattr(tail, "BLOCK", 64)                   # lines are measured a block at a time
    path = tmp_path / "wide.log"
    path.write_bytes(b"first\n" + b"x" * 5000 + "é".encode() * 60 + b"\x1b[2J\x07end\nlast\n")
    out = _Terminal()
    print_last(str(path), 3, raw=False, out=out)             # looking back stops at the long line
    shown = "é" * 46 + "\x1b[2J\x07end\nlast\n"
    left = path.stat().st_size - len(shown.encode())             # the bytes above what is shown
    note = f"… {left / 1e6:.1f} MB of the log above not shown (only about its last 100 bytes are read): less {path}"
    assert out.getvalue() == note + "\n…" + "é" * 46 + "\\x07end\nlast\n"   # the clear dropped, the bell an escape
    piped = io.StringIO()
    print_last(str(path), 3, raw=False, out=piped)           # piped: every line asked for, whole
    assert piped.getvalue() == path.read_text()


def _streamed_on_terminal(path, n: int) -> list[str]:
    lines, current = [], ""
    for text, ends in tail.stream_last_lines(path, n, whole=False):
        current += "<unread>" if isinstance(text, tail.Unread) else text
        if ends:
            lines.append(current)
            current = ""
    return lines


def _expected_on_terminal(data: bytes, n: int, longest: int, end_bytes: int) -> list[str]:
    """The last `n` lines, looking back no further than a line longer than `longest` bytes,
    of which only what follows the first \\r in its last `end_bytes` bytes is given."""
    if not data or n <= 0:
        return []
    lines = (data[:-1] if data.endswith(b"\n") else data).split(b"\n")[-n:]
    for index in range(len(lines) - 1, -1, -1):
        if len(lines[index]) > longest:
            lines = lines[index:]
            end = lines[0][-end_bytes:]
            if b"\r" in end:
                lines[0] = end[end.index(b"\r"):]
            else:
                skip = 0
                while skip < min(3, len(end)) and 0x80 <= end[skip] < 0xC0:
                    skip += 1
                lines[0] = b"<unread>" + end[skip:]
            break
    return [line.decode(errors="replace").rstrip("\r") for line in lines]


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(st.text(alphabet="ab\n\ré", max_size=12), max_size=30), n=st.integers(0, 40))
def test_a_terminal_reads_lines_up_to_the_first_long_one_and_that_one_by_its_end(tmp_path_factory, lines, n):
    """Lines no longer than LONG_LINE come as when read whole; blocks, pieces and limits are tiny."""
    path = tmp_path_factory.mktemp("t") / "log"
    data = "".join(lines).encode()
    path.write_bytes(data)
    old = tail.BLOCK, tail.PIECE, tail.LONG_LINE, tail.LONG_LINE_END
    tail.BLOCK, tail.PIECE, tail.LONG_LINE, tail.LONG_LINE_END = 5, 3, 9, 4
    try:
        assert _streamed_on_terminal(path, n) == _expected_on_terminal(data, n, 9, 4)
    finally:
        tail.BLOCK, tail.PIECE, tail.LONG_LINE, tail.LONG_LINE_END = old


def test_on_a_terminal_the_start_over_is_said_before_the_new_log_s_lines(tmp_path, cli_env):
    """A rerun moves the old log aside and writes the task's log anew: on a terminal, `logs -f` showed
    the new log's first lines and only then `... was truncated or written anew`, so they read as
    more of the old run. The notice now comes first (the piped output had it right)."""
    import pty
    import select
    import time

    from test_jobs_core import NEVER_JOB, make_record

    record = make_record(tmp_path, job=NEVER_JOB)
    log = Path(record.tasks[0].log)
    log.write_text("old line one\nold line two\nold line three, longer than the new log\n")
    master, slave = pty.openpty()
    proc = subprocess.Popen(["hyperion-jobs", "logs", f"{record.path}:1", "-f"], env=cli_env,
                            stdout=slave, stderr=slave, stdin=subprocess.DEVNULL)
    os.close(slave)
    try:
        out, deadline = b"", time.monotonic() + 30
        while b"old line three" not in out and time.monotonic() < deadline:
            if select.select([master], [], [], 0.2)[0]:
                out += os.read(master, 1 << 16)
        log.rename(tmp_path / "moved.log")          # as a rerun moves it into q/attempts/N/
        log.write_text("NEW first line\n")
        while b"NEW first line" not in out or b"from its start" not in out:
            assert time.monotonic() < deadline, out
            if select.select([master], [], [], 0.2)[0]:
                out += os.read(master, 1 << 16)
        shown = out.decode()
        assert shown.index("from its start") < shown.index("NEW first line"), shown
    finally:
        proc.kill()
        proc.wait()
        os.close(master)


def _on_a_terminal(argv: list[str], env: dict[str, str]) -> tuple[int, bytes]:
    """Exit status and every byte `argv` wrote to a terminal (a pty as its stdout and stderr)."""
    import pty
    import select
    import time

    master, slave = pty.openpty()
    proc = subprocess.Popen(argv, env=env, stdout=slave, stderr=slave, stdin=subprocess.DEVNULL)
    os.close(slave)
    out, deadline = b"", time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            if select.select([master], [], [], 0.2)[0]:
                try:
                    data = os.read(master, 1 << 16)
                except OSError:          # EIO: the program ended and closed its side
                    break
                if not data:
                    break
                out += data
            elif proc.poll() is not None:
                break
        return proc.wait(timeout=30), out
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)


COLOURED_LOG = (b"\x1b[32m2026-12-05 10:15:01\x1b[0m | \x1b[1mINFO    \x1b[0m | \x1b[36mtrain:42\x1b[0m - start [bold]x[/]\n"
                b"\x1b[?25l\r  0%|          | 0/10\x1b[K\r 50%|#####     | 5/10\x1b[K\r100%|##########| 10/10\x1b[K\x1b[?25h\n"
                b"\x1b[1;31mValueError: bad input 7\x1b[0m \x1b]52;c;aGk=\x07\n")


def test_logs_on_a_terminal_shows_a_coloured_log_and_a_progress_bar_as_text(tmp_path, cli_env):
    """`hyperion-jobs logs` on a terminal printed loguru's colours as '\\x1b[32m2026-...\\x1b[0m' and a
    tqdm bar that erases with ESC[K as '\\x1b[K' escapes; it now prints the text a terminal showed,
    an OSC 52 still as an escape. Piped and --raw give the bytes as they are."""
    from test_jobs_core import make_record

    record = make_record(tmp_path)
    Path(record.tasks[0].log).write_bytes(COLOURED_LOG)
    status, out = _on_a_terminal(["hyperion-jobs", "logs", f"{record.path}:1"], cli_env)
    assert status == 0, out
    assert out.decode().replace("\r\n", "\n") == (
        "2026-12-05 10:15:01 | INFO     | train:42 - start [bold]x[/]\n"
        "100%|##########| 10/10\n"
        "ValueError: bad input 7 \\x1b]52;c;aGk=\\x07\n")
    status, out = _on_a_terminal(["hyperion-jobs", "logs", "--raw", f"{record.path}:1"], cli_env)
    assert status == 0 and out.replace(b"\r\n", b"\n") == COLOURED_LOG.replace(b"\r\n", b"\n")
    piped = subprocess.run(["hyperion-jobs", "logs", f"{record.path}:1"], env=cli_env, capture_output=True)
    assert piped.returncode == 0 and piped.stdout == COLOURED_LOG


def test_logs_follow_on_a_terminal_draws_a_coloured_bar_still_running_as_text(tmp_path, cli_env):
    """The open line of `logs -f` (a bar still being drawn, its colour sequence split between two
    writes) is its last redraw without escapes: it was '\\x1b[32m 60%|...\\x1b[K'."""
    import pty
    import select
    import time

    from test_jobs_core import NEVER_JOB, make_record

    record = make_record(tmp_path, job=NEVER_JOB)  # never ends: -f goes on
    log = Path(record.tasks[0].log)
    log.write_bytes(b"\x1b[1mepoch 1\x1b[0m\n\r\x1b[32m 10%|#         |\x1b[0m\x1b[K")
    master, slave = pty.openpty()
    proc = subprocess.Popen(["hyperion-jobs", "logs", f"{record.path}:1", "-f"], env=cli_env,
                            stdout=slave, stderr=slave, stdin=subprocess.DEVNULL)
    os.close(slave)
    try:
        out, deadline = b"", time.monotonic() + 30
        while b"10%" not in out:
            assert time.monotonic() < deadline, out
            if select.select([master], [], [], 0.2)[0]:
                out += os.read(master, 1 << 16)
        with open(log, "ab") as handle:
            handle.write(b"\r\x1b[3")            # the sequence cut by a flush, its rest read later
            handle.flush()
            time.sleep(1)
            handle.write(b"2m 60%|######    |\x1b[0m\x1b[K")
        while b"60%" not in out:
            assert time.monotonic() < deadline, out
            if select.select([master], [], [], 0.2)[0]:
                out += os.read(master, 1 << 16)
        time.sleep(0.5)
        while select.select([master], [], [], 0.2)[0]:
            out += os.read(master, 1 << 16)
        shown = out.decode()
        assert "epoch 1\r\n" in shown and "\r 60%|######    |" in shown, shown
        assert "\x1b" not in shown and "\\x1b" not in shown, shown
    finally:
        proc.kill()
        proc.wait()
        os.close(master)


HOSTILE_BYTES = (b"# Started\n"
                 b"bad utf8: \xff\xfe\xc3\x28 end\n"                       # not UTF-8: was U+FFFD three times
                 b"\x1b[1;31mERROR\x1b[0m final \x1b]52;c;aGk=\x07 line\r\n"   # its CR was dropped
                 b"bar 10%\rbar 100%\r\r\n"
                 b"latin-1 caf\xe9 \xe9t\xe9\n")


def test_logs_piped_or_raw_prints_bytes_that_are_not_utf8_and_carriage_returns_as_written(tmp_path, cli_env):
    """README: `logs` piped or with --raw prints the bytes as written. A log holding bytes that are
    not UTF-8 (a latin-1 file name, binary data) came out with U+FFFD in their place, and a line's
    trailing carriage returns (CRLF) were dropped, so `logs TASK > saved.log` was not the log."""
    from test_jobs_core import make_record

    record = make_record(tmp_path)
    Path(record.tasks[0].log).write_bytes(HOSTILE_BYTES)
    piped = subprocess.run(["hyperion-jobs", "logs", f"{record.path}:1", "-n", "4"], env=cli_env,
                           capture_output=True)
    assert piped.returncode == 0 and piped.stdout == HOSTILE_BYTES.split(b"\n", 1)[1], piped.stdout
    whole = subprocess.run(["hyperion-jobs", "logs", f"{record.path}:1", "--raw"], env=cli_env, capture_output=True)
    assert whole.returncode == 0 and whole.stdout == HOSTILE_BYTES
    status, out = _on_a_terminal(["hyperion-jobs", "logs", f"{record.path}:1"], cli_env)
    assert status == 0 and b"\x1b]52" not in out and b"\\x1b]52;c;aGk=\\x07" in out   # a terminal: still escaped


def test_a_raw_follower_gives_appended_bytes_as_written(tmp_path):
    """`logs -f` piped follows with a raw Follower: appended bytes that are not UTF-8 (one split between
    two reads) and carriage returns come back as written once encoded with surrogateescape."""
    path = tmp_path / "t.log"
    path.write_bytes(b"")
    follower, got = Follower(path, raw=True), []
    for part in (b"caf\xc3", b"\xa9 \xff\r\n", b"bar 1%\r", b"bar 2%\r\n"):
        with open(path, "ab") as handle:
            handle.write(part)
        got += follower.read_pieces()
    text = "".join(piece + ("\n" if ends else "") for piece, ends in got)
    assert text.encode("utf-8", "surrogateescape") == b"caf\xc3\xa9 \xff\r\nbar 1%\rbar 2%\r\n"
    assert "".join(p for p, _ in Follower(path).read_pieces(flush=True)) == "café \ufffdbar 1%\rbar 2%"  # not raw: as before


def test_logs_piped_adds_no_newline_a_log_did_not_end_with(tmp_path, cli_env):
    """A task killed mid-redraw leaves a log whose last line (a progress bar) has no newline:
    `logs TASK > saved.log` and `logs -f` piped wrote one after it, so the copy was not the log."""
    from test_jobs_core import make_record

    record = make_record(tmp_path)
    unended = b"# Started\nepoch 1\r\nbar 10%\rbar 20%\r"
    Path(record.tasks[0].log).write_bytes(unended)
    whole = subprocess.run(["hyperion-jobs", "logs", f"{record.path}:1", "--raw"], env=cli_env, capture_output=True)
    assert whole.returncode == 0 and whole.stdout == unended, whole.stdout
    last = subprocess.run(["hyperion-jobs", "logs", f"{record.path}:1", "-n", "1"], env=cli_env, capture_output=True)
    assert last.returncode == 0 and last.stdout == b"bar 10%\rbar 20%\r", last.stdout
    follower = Follower(Path(record.tasks[0].log), raw=True)
    pieces = follower.read_pieces(flush=True)
    assert "".join(p + ("\n" if ends else "") for p, ends in pieces).encode("utf-8", "surrogateescape") == unended
