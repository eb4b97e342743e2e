"""Controls and bidi overrides from files and users never reach the terminal as themselves."""
from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from backends.printable import printable, quoted


def test_escape_sequences_become_visible_text() -> None:
    osc52 = "\x1b]52;c;cm0gLXJmIH4vKg==\x07"
    assert printable(f"ok {osc52} done") == "ok \\x1b]52;c;cm0gLXJmIH4vKg==\\x07 done"
    assert printable("\x1b[2J\x9b31m") == "\\x1b[2J\\x9b31m"


def test_bidi_overrides_are_spelled_out() -> None:
    assert printable("invoice\u202efdp.exe") == "invoice\\u202efdp.exe"
    assert printable("a\u2066b\u2069") == "a\\u2066b\\u2069"


def test_layout_keeps_tabs_and_newlines_only_when_asked() -> None:
    assert printable("a\tb\nc\r") == "a\\x09b\\x0ac\\x0d"
    assert printable("a\tb\nc\r", layout=True) == "a\tb\nc\\x0d"


@given(st.text())
def test_output_has_no_control_or_bidi_character(text: str) -> None:
    shown = printable(text)
    assert not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F or c in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c\u2028\u2029"
                   for c in shown)


@given(st.text(alphabet=st.characters(blacklist_categories=("Cc", "Cf", "Zl", "Zp", "Cs"))))
def test_plain_text_is_unchanged(text: str) -> None:
    assert printable(text) == text


def test_a_byte_that_is_not_utf8_is_shown_as_that_byte_never_sent_as_it() -> None:
    """os.fsdecode keeps a path's 0x9b as U+DC9B, and stdout wrote the byte back: a CSI on an
    8-bit terminal. Every such stand-in is spelled as its byte, and the text encodes strictly."""
    path = "log/\udc9b31m/caf\udce9.log"              # os.fsdecode(b"log/\x9b31m/caf\xe9.log")
    assert printable(path) == "log/\\x9b31m/caf\\xe9.log"
    assert printable("lone \ud800", layout=True).encode("utf-8") == b"lone \\ud800"


def test_invisible_characters_that_hide_text_are_spelled_out_and_joiners_stay() -> None:
    """A zero-width space or a BOM in a path reads as nothing on a terminal: two names looked alike."""
    assert printable("run\u200b1/\ufefflog\u2060") == "run\\u200b1/\\ufefflog\\u2060"
    assert printable("\u200c\u200d") == "\u200c\u200d"      # Persian, Indic and emoji need the joiners


@given(st.text())
def test_json_output_holds_no_surrogate_and_keeps_other_text(text: str) -> None:
    """`jsontext.dumps` of any string (a non-UTF-8 name's U+DCxx, a lone U+D800) is JSON of Unicode text."""
    from backends.jsontext import dumps
    loaded = json.loads(dumps({text: [text]}, ensure_ascii=False).encode("utf-8").decode("utf-8"))
    assert all(not 0xD800 <= ord(c) <= 0xDFFF for c in next(iter(loaded)))
    if not any(0xD800 <= ord(c) <= 0xDFFF for c in text):
        assert loaded == {text: [text]}


def test_a_terminal_that_is_not_utf8_gets_escapes_not_a_traceback(tmp_path) -> None:
    """Under LANG=en_US.ISO-8859-1 or PYTHONIOENCODING=ascii, a path or log line holding "é" or "✓" made
    status, list, logs and the dry run trace back with UnicodeEncodeError (and hyperion-submit local's lines
    vanish); each such character is now printed as printable spells a byte, as ``\\xe9``."""
    import os
    import sys
    from pathlib import Path

    from conftest import TEST_SITE, run_cli

    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "PYTHONIOENCODING": "ascii"}
    submit = ["hyperion-submit", "local", "--cfg", str(TEST_SITE), "--array", "J=1:2", "--output-file", "lé/x.J.log",
              "--", "sh", "-c", "echo 'part ✓ J'; exit 1"]
    ran = run_cli(*submit, cwd=tmp_path, env=env, timeout=60)
    assert ran.returncode == 1 and "l\\xe9/x.1.log" in ran.stdout + ran.stderr, ran.stderr
    record = "lé/q/x.J.submit.json"
    for argv, shown in ((["hyperion-jobs", "status", record], "l\\xe9/x.1.log"),
                        (["hyperion-jobs", "status", record, "--failures"], "part \\u2713 1"),
                        (["hyperion-jobs", "list", "."], "l\\xe9/q/x.J.submit.json"),
                        # piped, a log is its bytes as written (README), whatever the encoding
                        (["hyperion-jobs", "logs", f"{record}:1"], "part ✓ 1"),
                        ([*submit[:-4], "--dry-run", *submit[-4:]], "l\\xe9/x.1.log")):
        result = run_cli(*argv, cwd=tmp_path, env=env, timeout=60)
        assert result.returncode == 0 and "Traceback" not in result.stderr, (argv, result.stderr)
        assert shown in result.stdout, (argv, result.stdout)
    from sharding.store import Checkpoint, RunConfig

    Checkpoint(tmp_path / "cké").ensure_run(RunConfig(1, 2))
    shown = run_cli("hyperion-checkpoint", "show", "cké", cwd=tmp_path, env=env, timeout=60)
    assert shown.returncode == 0 and "ck\\xe9" in shown.stdout, shown.stderr


def test_quoted_spells_a_byte_that_is_not_utf8_as_printable_does():
    """A message quoting a word with byte 0xff says '\\xff', as the paths and logs beside it do; a
    backslash the user typed before 'udcff' stays theirs."""
    assert quoted("sl\udcff") == "'sl\\xff'"
    assert quoted("a\\udcff\udce9") == "'a\\\\udcff\\xe9'"
    assert quoted("é\ud800") == "'é\\ud800'"     # a lone surrogate that no byte stands for keeps its name
