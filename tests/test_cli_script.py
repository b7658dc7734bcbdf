"""The installed `telha` console script is the same program as `python manage.py`
(CONTRACT §2): same commands, same output, same exit codes."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

BASE_DIR = Path(__file__).resolve().parent.parent


def _telha_script() -> str:
    """The console script installed beside the interpreter running the tests (the
    project's .venv under `make test`), else one on PATH."""
    beside = Path(sys.executable).parent / "telha"
    if beside.exists():
        return str(beside)
    found = shutil.which("telha")
    if found is None:
        pytest.fail("the `telha` console script is not installed (pip install -e .)")
    return found


TELHA = _telha_script()

# Keep the test run's database and settings out of the child processes.
_SCRUB = {"DJANGO_SETTINGS_MODULE", "DATABASE_URL", "SECRET_KEY", "DEBUG"}


def run(args: list[str], db: Path, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in _SCRUB}
    env.update(DEBUG="1", DATABASE_URL=f"sqlite:///{db}")
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=180)


@pytest.fixture(scope="module")
def migrated(tmp_path_factory) -> Path:
    """A database migrated by `telha migrate` (once for the module)."""
    db = tmp_path_factory.mktemp("cli") / "cli.sqlite3"
    result = run([TELHA, "migrate", "--noinput"], db, cwd=db.parent)
    assert result.returncode == 0, result.stderr
    return db


def test_the_script_is_the_project_entry_point():
    text = Path(TELHA).read_text()
    assert "from telha.cli import main" in text


def test_telha_check_works_from_any_directory(tmp_path):
    """Unlike `python manage.py`, the script needs no working directory."""
    result = run([TELHA, "check"], tmp_path / "db.sqlite3", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "System check identified no issues" in result.stdout


def test_telha_help_lists_the_same_commands_as_manage_py(tmp_path):
    db = tmp_path / "db.sqlite3"
    script = run([TELHA, "help", "--commands"], db, cwd=BASE_DIR)
    manage = run([sys.executable, "manage.py", "help", "--commands"], db, cwd=BASE_DIR)
    assert script.returncode == manage.returncode == 0, script.stderr + manage.stderr
    commands = set(script.stdout.split())
    assert commands == set(manage.stdout.split())
    assert {"load_workspace", "api_key", "clarify", "jobs", "migrate", "qcluster"} <= commands


def test_telha_runs_a_project_command_end_to_end(migrated, tmp_path):
    """`telha load_workspace FILE --json` on the database `telha migrate` made: the
    product's own commands run through the script."""
    workspace = tmp_path / "ws.json"
    workspace.write_text(
        '{"tenant": "cli", "people": [{"name": "Cli Person", "email": "cli@example.test"}]}'
    )
    result = run([TELHA, "load_workspace", str(workspace), "--json"], migrated, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert '"created": 1' in result.stdout


def test_telha_exit_codes_match_manage_py(migrated, tmp_path):
    """A refused operation exits 1 with its code on stderr, exactly as manage.py does."""
    bad = tmp_path / "bad.json"
    bad.write_text('{"tenant": "Not A Slug!"}')
    script = run([TELHA, "load_workspace", str(bad)], migrated, cwd=tmp_path)
    manage = run([sys.executable, "manage.py", "load_workspace", str(bad)], migrated, BASE_DIR)
    assert script.returncode == manage.returncode == 1
    assert "WORKSPACE_INVALID" in script.stderr
    assert script.stderr == manage.stderr
    unknown = run([TELHA, "no_such_command"], migrated, cwd=tmp_path)
    assert unknown.returncode == 1 and "Unknown command" in unknown.stderr
