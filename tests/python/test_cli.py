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


def run_isa(isa, *args):
    env = dict(os.environ, SQUEEZE_ISA=isa)
    return subprocess.run([SQ, *args], capture_output=True, text=True, timeout=60, env=env)


def test_squeeze_isa_accepts_only_the_tables_that_exist():
    r = run_isa("scalar", "info")
    assert r.returncode == 0, r.stderr
    assert "kernels: scalar" in r.stdout
    # Every table this CPU runs can be forced, and then runs (info names it).
    isas = run_isa("scalar", "info", "--isas").stdout.split()
    assert isas[0] == "scalar" and set(isas) <= {"scalar", "avx2", "avx512"}, isas
    for isa in isas:
        r = run_isa(isa, "info")
        assert r.returncode == 0, r.stderr
        assert f"kernels: {isa}" in r.stdout, r.stdout
    # A table the CPU cannot run, a prefix, a feature name and junk: one line naming the
    # value, for any command, before any work starts (not a crash on whichever thread
    # first touches the kernels).
    for bad in ["avx", "avx512f", "neon", ""] + [t for t in ("avx2", "avx512") if t not in isas]:
        for cmd in (["info"], ["plan", "glimmer-tiny"]):
            r = run_isa(bad, *cmd)
            assert r.returncode != 0, (bad, cmd)
            lines = r.stderr.strip().splitlines()
            assert len(lines) == 1, r.stderr
            assert f"SQUEEZE_ISA={bad}" in lines[0], lines[0]
            assert "(valid: scalar, avx2, avx512)" in lines[0] or "cannot run" in lines[0], lines[0]