"""Sizes proposed for retrying OUT_OF_MEMORY and TIMEOUT tasks (backends/retry_sizes.py)."""
from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from backends.retry_sizes import mem_spelling, propose_sizes, time_spelling
from backends.submit.resources import check_memory, check_time
from backends.watch.usage import Usage, parse_duration, parse_size, parse_usage

M, G = 1024 ** 2, 1024 ** 3
FIXTURES = Path(__file__).parent / "fixtures" / "sacct"


def test_recorded_oom_under_cgroups_doubles_the_request() -> None:
    """The kernel killed job 160 at its 100M limit before a sample saw the 600 MB."""
    usage = parse_usage((FIXTURES / "ended.txt").read_text())[("160", None)]
    proposal = propose_sizes([("OUT_OF_MEMORY", usage)])
    assert (proposal.mem, proposal.time) == ("200M", None)
    assert proposal.reasons == ("--mem 200M: 1 task(s) OUT_OF_MEMORY; 2x the request 100M "
                                "(1.5x the largest MaxRSS 3.4M is less)",)


def test_a_sampled_peak_above_the_request_wins() -> None:
    tasks = [("OUT_OF_MEMORY", Usage(max_rss_bytes=600 * M, req_mem_bytes=100 * M)),
             ("OUT_OF_MEMORY", Usage(max_rss_bytes=150 * M, req_mem_bytes=100 * M))]
    proposal = propose_sizes(tasks)
    assert proposal.mem == "900M"
    assert proposal.reasons[0] == ("--mem 900M: 2 task(s) OUT_OF_MEMORY; 1.5x the largest MaxRSS 600M "
                                   "(2x the request 100M is less)")


def test_peaks_of_tasks_in_other_states_count_but_only_oom_requests_do() -> None:
    tasks = [("COMPLETED", Usage(max_rss_bytes=3 * G, req_mem_bytes=4 * G)),
             ("OUT_OF_MEMORY", Usage(max_rss_bytes=G, req_mem_bytes=G))]
    assert propose_sizes(tasks).mem == "4608M"          # 1.5 x 3G beats 2 x 1G


def test_timeout_doubles_the_limit_in_minutes_or_days() -> None:
    short = propose_sizes([("TIMEOUT", Usage(time_limit_seconds=600, elapsed_seconds=601))])
    assert (short.mem, short.time) == (None, "00:20:00")
    assert short.reasons == ("--time 00:20:00: 1 task(s) TIMEOUT; 2x the limit 00:10:00",)
    long = propose_sizes([("TIMEOUT", Usage(time_limit_seconds=18 * 3600)),
                          ("TIMEOUT", Usage(time_limit_seconds=3600))])
    assert long.time == "1-12:00:00"


def test_both_at_once_and_nothing_for_other_states() -> None:
    tasks = [("OUT_OF_MEMORY", Usage(req_mem_bytes=G)), ("TIMEOUT", Usage(time_limit_seconds=60)),
             ("FAILED", Usage(max_rss_bytes=10 * M)), ("CANCELLED by 0", Usage())]
    proposal = propose_sizes(tasks)
    assert (proposal.mem, proposal.time, len(proposal.reasons)) == ("2G", "00:02:00", 2)
    assert propose_sizes([("FAILED", Usage(req_mem_bytes=G)), ("COMPLETED", Usage())]).reasons == ()


def test_without_a_measure_the_reason_says_to_choose_by_hand() -> None:
    proposal = propose_sizes([("OUT_OF_MEMORY", Usage()), ("TIMEOUT", Usage(time_limit_seconds=None))])
    assert (proposal.mem, proposal.time) == (None, None)
    assert [r.split(",")[0] for r in proposal.reasons] == ["1 task(s) OUT_OF_MEMORY", "1 task(s) TIMEOUT"]
    assert all(r.endswith("by hand") for r in proposal.reasons)


def test_json() -> None:
    proposal = propose_sizes([("TIMEOUT", Usage(time_limit_seconds=60))])
    assert proposal.to_json() == {"mem": None, "time": "00:02:00", "reasons": [proposal.reasons[0]]}


@given(st.floats(1, 64 * 1024 ** 4))
def test_any_memory_proposal_is_accepted_and_covers_the_need(size: float) -> None:
    text = mem_spelling(size)
    assert check_memory("--mem", text) == text
    assert size <= parse_size(text, "M") < size + M


@given(st.floats(1, 365 * 86400))
def test_any_time_proposal_is_accepted_and_covers_the_need(seconds: float) -> None:
    text = time_spelling(seconds)
    assert check_time("--time", text) == text
    minutes = int(text) * 60 if text.isdigit() else parse_duration(text)
    assert seconds <= minutes < seconds + 60


@pytest.mark.parametrize(("size", "text"), [(200 * M, "200M"), (2 * G, "2G"), (1, "1M"), (G + 1, "1025M")])
def test_memory_spellings(size: int, text: str) -> None:
    assert mem_spelling(size) == text


def test_a_time_proposal_beyond_what_slurm_handles_is_its_longest_limit() -> None:
    proposal = propose_sizes([("TIMEOUT", Usage(time_limit_seconds=300 * 86400))])
    assert proposal.time == "365-00:00:00" and check_time("--time", proposal.time) == proposal.time
    assert "more than Slurm handles" in proposal.reasons[0]


def test_a_retry_with_mem_auto_alone_keeps_the_time_and_says_what_time_auto_would_ask(tmp_path: Path) -> None:
    """`retry --mem auto` of an OUT_OF_MEMORY and a TIMEOUT task listed `sizes: --time 00:12:00: 1
    task(s) TIMEOUT ...` as if the limit were raised, where the retry kept 00:06:00."""
    from test_console_fixtures import build_history

    from backends.records.history import load_history
    from backends.retry import RetryRequest, describe_retry, plan_retry
    from backends.watch.rows import history_rows

    conf = Path(__file__).resolve().parents[1] / "conf" / "submit_test_cluster.yaml"
    record = build_history(tmp_path, conf, n=3, failures={1: ("OUT_OF_MEMORY", None, None),
                                                         2: ("TIMEOUT", None, None)})
    history = load_history(record)
    rows = history_rows(history, {}, {})
    text = describe_retry(plan_retry(history, rows, RetryRequest(mem="auto")))
    assert "\n  sizes: --mem 200M: 1 task(s) OUT_OF_MEMORY; 2x the request 100M\n" in text, text
    assert ("\n  sizes: as before; --time auto would ask for --time 00:12:00: 1 task(s) TIMEOUT; "
            "2x the limit 00:06:00\n") in text, text
    assert text.count("--time 00:12:00") == 1 and "--mem 200M --time 00:06:00" in text, text
    kept = describe_retry(plan_retry(history, rows, RetryRequest(mem="auto", values=(2,))))
    assert "  sizes: no task ran out of memory: --mem as before\n" in kept, kept
