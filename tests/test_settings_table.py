"""Settings are declared once, in service/config.py: the configuration is read through those
declarations, the table of docs/operations.md is printed from them, and no TRANSCRIBER_ variable
is read anywhere that they do not declare."""
from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys

from conftest import ROOT

from service import config

DOCUMENT = ROOT / "docs" / "operations.md"
REGENERATE = ("run `python -m service.config --markdown docs/operations.md` to write it again "
              "(`python -m service.config --markdown` prints it)")

# TRANSCRIBER_ variables that are deliberately not settings of the service, with the reason
NOT_SETTINGS = {
    # set by a worker for the recognizer process it starts, so the child ends with its parent
    "TRANSCRIBER_RECOGNIZER_PARENT",
    # where the benchmarks (bench/) keep the recordings they download
    "TRANSCRIBER_BENCH_CACHE",
    # the tests' own hooks: which PostgreSQL they use, which browser they drive, and where the
    # browser tests write the screenshots the README shows
    "TRANSCRIBER_TEST_PG",
    "TRANSCRIBER_CHROMIUM",
    "TRANSCRIBER_SCREENSHOTS",
}
VARIABLE = re.compile(r"\bTRANSCRIBER_[A-Z][A-Z0-9_]*[A-Z0-9]\b")
CODE_SUFFIXES = (".py", ".sh")


def _code_files():
    """The project's code and scripts: every folder but hidden ones (a virtual environment, git)."""
    for folder, folders, files in os.walk(ROOT):
        folders[:] = [name for name in folders if not name.startswith(".") and name != "node_modules"
                      and not name.endswith(".egg-info")]
        for name in files:
            if name.endswith(CODE_SUFFIXES):
                yield os.path.join(folder, name)


def test_the_operations_table_is_the_declarations():
    """The table an operator reads says what the service does: the same variables, defaults and
    meanings as the declarations the configuration is read with."""
    written = config.table_in(DOCUMENT.read_text())
    assert written == config.markdown_table(), (
        f"the settings table of docs/operations.md (between its marker lines) is not the one the "
        f"declarations in service/config.py give: {REGENERATE}")


def test_the_command_writes_the_table_between_the_markers(tmp_path):
    stale = tmp_path / "operations.md"
    stale.write_text(f"# Operations\n\nbefore\n\n{config.TABLE_BEGIN}\n| an old table |\n{config.TABLE_END}\n\nafter\n")
    command = [sys.executable, "-m", "service.config", "--markdown"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    printed = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert printed.returncode == 0 and printed.stdout.strip() == config.markdown_table(), printed.stderr
    written = subprocess.run([*command, str(stale)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert written.returncode == 0, written.stderr
    assert stale.read_text() == (f"# Operations\n\nbefore\n\n{config.TABLE_BEGIN}\n{config.markdown_table()}\n"
                                 f"{config.TABLE_END}\n\nafter\n")


def test_no_variable_is_read_that_is_not_declared():
    """A TRANSCRIBER_ variable the code names (reads, sets or tells of) is a declared setting,
    so nothing changes the service behind the table's back; or it is one of NOT_SETTINGS."""
    declared = {setting.variable for setting in config.SETTINGS}
    undeclared = {}
    for path in _code_files():
        with open(path, encoding="utf-8", errors="replace") as file:
            for variable in VARIABLE.findall(file.read()):
                if variable not in declared and variable not in NOT_SETTINGS:
                    undeclared.setdefault(variable, os.path.relpath(path, ROOT))
    assert not undeclared, (
        f"declare these in service.config.SETTINGS (then {REGENERATE}), or list them in NOT_SETTINGS "
        f"with the reason: {undeclared}")
    assert not declared & NOT_SETTINGS


def test_each_setting_is_declared_once():
    """One declaration a variable, and each Settings attribute filled by one of them (the step
    policies gather the step settings)."""
    variables = [setting.variable for setting in config.SETTINGS]
    attributes = [setting.attribute for setting in config.SETTINGS if setting.attribute]
    assert len(variables) == len(set(variables)) and len(attributes) == len(set(attributes))
    fields = {field.name for field in dataclasses.fields(config.Settings)}
    assert fields == {*attributes, "policies"}


def test_defaults_are_the_declared_ones():
    """With nothing set, each setting has its declared default, checked as a value given is."""
    settings = config.load({})
    for setting in config.SETTINGS:
        if setting.attribute:
            expected = None if setting.default is None else setting.kind.parse(setting.default)
            assert getattr(settings, setting.attribute) == expected, setting.variable
    assert settings.max_upload_bytes == 512 * 1024 * 1024 and settings.whisper_model == "tiny.en"
    assert settings.policy(config.Step.RECOGNIZE).lease_seconds == 300 and settings.max_audio_seconds == 4 * 3600
