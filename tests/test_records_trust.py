"""Whether a record may say what runs as you: yours alone, or refused unless trusted."""
from __future__ import annotations

import os

import pytest

from backends.errors import InputError
from backends.records.trust import check_trusted, trust_problem

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")


def test_your_own_record_that_only_you_may_write_is_trusted(tmp_path):
    record = tmp_path / "x.submit.json"
    record.write_text("{}")
    record.chmod(0o644)
    assert trust_problem(record) is None
    check_trusted(record)


@needs_root
def test_a_symlink_of_yours_to_someone_elses_record_is_judged_by_the_record(tmp_path):
    target = tmp_path / "theirs.submit.json"
    target.write_text("{}")
    os.chown(target, 65534, 65534)
    link = tmp_path / "mine.submit.json"
    link.symlink_to(target)
    with pytest.raises(InputError) as err:
        check_trusted(link)
    assert err.value.field == "record"
    assert "is owned by nobody (uid 65534), not by you" in err.value.problem
    assert "--trust-record" in err.value.problem
    check_trusted(link, trust=True)            # said explicitly: no question asked


@needs_root
def test_every_reason_is_named(tmp_path):
    record = tmp_path / "x.submit.json"
    record.write_text("{}")
    os.chown(record, 65534, 65534)
    record.chmod(0o666)
    assert trust_problem(record) == ("is owned by nobody (uid 65534), not by you and may be changed by its group "
                                     "and other users (mode 0666)")


def test_a_missing_record_is_an_input_error(tmp_path):
    with pytest.raises(InputError) as err:
        check_trusted(tmp_path / "nowhere.submit.json")
    assert err.value.field == "record" and "No such file or directory" in err.value.problem
