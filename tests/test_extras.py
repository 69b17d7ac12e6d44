"""Optional dependencies: a command that needs a missing extra says which one, in one line."""

from __future__ import annotations

import subprocess
import sys

import pytest

from hlotune.errors import HlotuneError
from hlotune.extras import require


def without(module: str, *argv: str) -> subprocess.CompletedProcess:
    """`hlotune ARGV` in a process where importing `module` fails, as if it were not installed."""
    code = (f"import sys; sys.modules[{module!r}] = None; from hlotune.cli import main; "
            f"sys.exit(main({list(argv)!r}))")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)


def test_require_returns_the_module_or_names_the_extra():
    assert require("json", "dev", "a test").dumps([]) == "[]"
    with pytest.raises(HlotuneError) as raised:
        require("hlotune_no_such_package", "opt", "GO")
    assert str(raised.value) == ('GO needs hlotune_no_such_package, which is not installed: '
                                 'pip install "hlotune[opt]"')


@pytest.mark.parametrize("module, extra, argv", [
    ("gymnasium", "opt", ["opt", "place", "zoo:mlp@tiny", "--devices", "2"]),
    ("optuna", "optuna", ["tune", "zoo:mlp@tiny", "--strategy", "optuna", "--db", "{db}"]),
    ("ray", "ray", ["tune", "zoo:mlp@tiny", "--runner", "ray", "--db", "{db}"]),
    ("lightgbm", "gbdt", ["eval", "--model", "baseline:gbdt", "--data", "builtin:flags/valid"]),
    ("transformers", "corpus", ["featurize", "corpus:hf-bert@tiny"]),
    ("mujoco", "corpus", ["featurize", "corpus:mjx-bodies@tiny"]),
])
def test_a_command_without_its_extra_fails_in_one_line(tmp_path, module, extra, argv):
    result = without(module, *(a.format(db=tmp_path / "t.sqlite") for a in argv))
    assert result.returncode == 1 and result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith("hlotune: error: ")
    assert line.endswith(f'needs {module}, which is not installed: pip install "hlotune[{extra}]"')
