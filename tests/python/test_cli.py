"""tests/python/test_cli.py — the CLI's contract: help, subcommand help, bad input."""
import os
import subprocess

SQ = os.environ.get("SQUEEZE_BIN", "build/release/tools/squeeze")


def run(*args):
    return subprocess.run([SQ, *args], capture_output=True, text=True, timeout=60)


def test_help_lists_commands():
    r = run("--help")
    assert r.returncode == 0
    assert "info" in r.stdout


def test_each_command_has_help():
    listed = [line.split()[0] for line in run("--help").stdout.splitlines()
              if line.startswith("  ") and line.strip()]
    assert listed, "no commands listed"
    for cmd in listed:
        r = run(cmd, "--help")
        assert r.returncode == 0, cmd
        assert "usage: squeeze" in r.stdout, cmd


def test_unknown_command_and_option_fail_with_one_line():
    r = run("no-such-command")
    assert r.returncode != 0
    assert len(r.stderr.strip().splitlines()) == 1
    r = run("info", "--bogus")
    assert r.returncode != 0
    assert len(r.stderr.strip().splitlines()) == 1
    assert "--bogus" in r.stderr
