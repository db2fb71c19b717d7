"""Helpers shared by the command-line tests: run ``uqx`` in-process and read its streams."""

from __future__ import annotations

import re

from uqx.cli.app import main


def run(capsys, *argv):
    """Run ``uqx ARGV`` in-process; return ``(status, stdout, stderr)``."""
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def refused(capsys, *argv, needles=()):
    """Run a command that must fail cleanly: status 2, ``uqx: error:``, no traceback."""
    rc, out, err = run(capsys, *argv)
    assert rc == 2, (argv, out, err)
    assert re.search(r"^uqx: error: ", err, re.M) and "Traceback" not in err, err
    for n in needles:
        assert n in err, (n, err)
    return err
