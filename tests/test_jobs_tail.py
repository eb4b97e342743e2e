"""Log tailing: last lines from the end, following appends, truncation, missing files."""
from __future__ import annotations

import os
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from backends.watch import tail
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
