"""A clean first start and a working second shell (issue 18): `make run` writes
`var/dev.env` once (DEBUG=1, a generated SECRET_KEY), every process started in the
project folder reads it — the web server and the job cluster of `make run`, and any
`.venv/bin/telha` typed in a second shell with nothing exported — and an explicit
`DEBUG=0` never uses it.

The end-to-end test runs in a copy of the project with its own virtualenv (the project
installed into it with pip, editable, as `make venv` does; its packages are this
environment's), so `var/dev.env` and the SQLite database are the copy's, never this
checkout's.
"""

import contextlib
import json
import os
import signal
import stat
import subprocess
import sys
import sysconfig
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from telha import devenv
from tests.test_faults import free_port, stop_group, tail

REPO = Path(__file__).resolve().parent.parent
WALKTHROUGH = "## A walk through the loop with `curl`"  # docs/api.md
TOUR = "**5.** Programs see the same loop through the API."  # README.md
ANSWER_LINE = "curl -s -X POST http://127.0.0.1:8000/v1/clarifications/<id>/answer"


# --- the file and the rule --------------------------------------------------------------


def test_the_dev_env_is_written_once_and_private(tmp_path: Path) -> None:
    path = tmp_path / "var" / "dev.env"
    assert devenv.dev_env_write(path) is True
    first = path.read_text()
    assert "DEBUG=1\n" in first
    [key] = [line for line in first.splitlines() if line.startswith("SECRET_KEY=")]
    assert len(key.removeprefix("SECRET_KEY=")) >= 50
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert devenv.dev_env_write(path) is False  # once: a second `make run` keeps it
    assert path.read_text() == first


@pytest.mark.parametrize(
    "debug, read",
    [(None, True), ("1", True), ("true", True), ("0", False), ("false", False), ("no", False)],
)
def test_the_dev_env_is_read_unless_debug_is_explicitly_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, debug: str | None, read: bool
) -> None:
    path = tmp_path / "dev.env"
    path.write_text("DEBUG=1\nSECRET_KEY=from-the-file\nTELHA_DEVENV_PROBE=yes\n")
    monkeypatch.delenv("TELHA_DEVENV_PROBE", raising=False)
    monkeypatch.setenv("SECRET_KEY", "from-the-environment")
    if debug is None:
        monkeypatch.delenv("DEBUG", raising=False)
    else:
        monkeypatch.setenv("DEBUG", debug)
    assert devenv.dev_env_load(path) is read
    assert (os.environ.get("TELHA_DEVENV_PROBE") == "yes") is read
    assert os.environ["SECRET_KEY"] == "from-the-environment"  # the environment wins
    monkeypatch.delenv("TELHA_DEVENV_PROBE", raising=False)


def test_no_dev_env_is_no_dev_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DEBUG", raising=False)
    assert devenv.dev_env_load(tmp_path / "absent.env") is False


# --- the public URL: links point at the port `make run` serves (issue 28 item 7) ------------


class FakeProcess:
    """A child of serve_all that has already exited (serve_all then stops at once)."""

    started: list[tuple[list[str], dict[str, str]]] = []

    def __init__(self, cmd: list[str], env: dict[str, str]) -> None:
        self.started.append((cmd, env))

    def poll(self) -> int:
        return 0

    def wait(self, timeout: float | None = None) -> int:
        return 0


def serve_all(monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[list[str], str]:
    """`telha serve_all ARGS` with its two children faked: the PUBLIC_BASE_URL each was
    started with, and what it printed."""
    from io import StringIO

    from django.core.management import call_command

    from telha.management.commands import serve_all as command

    FakeProcess.started = []
    monkeypatch.setattr(command.subprocess, "Popen", FakeProcess)
    monkeypatch.setattr(command.signal, "signal", lambda *_: None)
    out = StringIO()
    call_command("serve_all", *args, stdout=out)
    assert [cmd[2] for cmd, _ in FakeProcess.started] == ["runserver", "qcluster"]
    return [env["PUBLIC_BASE_URL"] for _, env in FakeProcess.started], out.getvalue()


def test_make_run_links_to_the_port_it_serves(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PUBLIC_BASE_URL", raising=False)
    urls, said = serve_all(monkeypatch, "--host", "127.0.0.1", "--port", "8100")
    assert urls == ["http://127.0.0.1:8100"] * 2  # the web server and the job cluster
    assert "point at http://127.0.0.1:8100 (PUBLIC_BASE_URL)" in said
    urls, _ = serve_all(monkeypatch, "--host", "0.0.0.0", "--port", "8200")
    assert urls == ["http://127.0.0.1:8200"] * 2
    makefile = (REPO / "Makefile").read_text()
    assert "serve_all --host $(HOST) --port $(PORT)" in makefile


def test_an_explicit_public_url_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PUBLIC_BASE_URL", "https://telha.example.test/")
    urls, said = serve_all(monkeypatch, "--port", "8100")
    assert urls == ["https://telha.example.test"] * 2
    assert "point at https://telha.example.test (PUBLIC_BASE_URL)" in said


# --- a copy of the project, as a newcomer has it after `make run` -------------------------


def _files() -> list[str]:
    """The project's files (tracked, and new ones not ignored), code and data only."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode()
    # The product's packages as pyproject.toml installs them, and the templates.
    include = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"][
        "packages"
    ]["find"]["include"]
    wanted = (*(f"{name.rstrip('*')}/" for name in include), "templates/")
    return [
        f
        for f in listed.split("\0")
        if f.startswith(wanted) or f in ("manage.py", "pyproject.toml")
    ]


def _run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float = 300) -> str:
    done = subprocess.run(
        cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, f"{cmd} exited {done.returncode}:\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project copied, installed into a virtualenv of its own with pip (editable, no
    dependencies: those are this environment's packages, on its path)."""
    root = tmp_path_factory.mktemp("newcomer") / "telha-clarify"
    for name in _files():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes((REPO / name).read_bytes())
    base = getattr(sys, "_base_executable", sys.executable)
    _run([base, "-m", "venv", "--without-pip", str(root / ".venv")], root, dict(os.environ))
    venv_python = root / ".venv" / "bin" / "python"
    purelib = _run(
        [str(venv_python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        root,
        dict(os.environ),
    ).strip()
    (Path(purelib) / "telha-test-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    install = ["-m", "pip", "--python", str(venv_python), "install", "-q"]
    install += ["--disable-pip-version-check", "--no-deps", "--no-build-isolation", "-e", "."]
    _run([sys.executable, *install], root, dict(os.environ))
    assert (root / ".venv" / "bin" / "telha").exists()
    return root


def second_shell() -> dict[str, str]:
    """A new terminal: the user's PATH and HOME, nothing of the project exported."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/root"),
        "LANG": "C.UTF-8",
    }


@pytest.fixture(scope="module")
def dev_stack(project: Path) -> Iterator[tuple[int, Path]]:
    """What `make run` does in the copy — the dev env written (by the command `make run`
    runs), migrations, the demo workspace, `telha serve_all` (runserver and the job
    cluster) — with nothing exported."""
    env = second_shell()
    python = str(project / ".venv" / "bin" / "python")
    _run([python, "-m", "telha.devenv", "var/dev.env"], project, env)
    _run([python, "manage.py", "migrate", "--noinput", "-v0"], project, env)
    _run([python, "manage.py", "load_workspace", "demo/workspace.json"], project, env)
    port = free_port()
    log = project / "serve_all.log"
    cmd = [python, "manage.py", "serve_all", "--host", "127.0.0.1", "--port", str(port)]
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            cmd, cwd=project, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        deadline = time.monotonic() + 120
        while " running." not in log.read_text(errors="replace") or not _listening(port):
            assert proc.poll() is None, tail(log)
            assert time.monotonic() < deadline, f"serve_all did not start\n{tail(log)}"
            time.sleep(0.3)
        yield port, log
    finally:
        with_interrupt(proc)
        stop_group(proc, grace=5)


def _listening(port: int) -> bool:
    import socket

    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def with_interrupt(proc: subprocess.Popen[bytes]) -> None:
    """Ctrl-C, as `make run` is stopped."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGINT)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=15)


def shell_block(page: str, after: str) -> str:
    """The first shell block on `page` after the text `after`."""
    text = (REPO / page).read_text()
    assert after in text, (page, after)
    return text.split(after, 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]


def walkthrough() -> tuple[str, str]:
    """docs/api.md's curl walkthrough: (everything up to the answer, the answer)."""
    block = shell_block("docs/api.md", WALKTHROUGH)
    assert ANSWER_LINE in block
    before, answer = block.split(ANSWER_LINE, 1)
    return before, ANSWER_LINE + answer


def json_documents(text: str) -> list[object]:
    decoder = json.JSONDecoder()
    docs, i = [], text.find("{")
    while 0 <= i < len(text):
        doc, end = decoder.raw_decode(text, i)
        docs.append(doc)
        i = text.find("{", end)
    return docs


@pytest.mark.slow
def test_the_walkthrough_works_verbatim_from_a_second_shell(
    project: Path, dev_stack: tuple[int, Path]
) -> None:
    """Every command of the docs' curl walkthrough and of the README tour's second-shell
    step, in a second shell in the project folder with nothing exported (only the port
    differs: 8000 is not ours to take), against the stack `make run` starts; the stack's
    log has no traceback, BadSignature or ERROR."""
    port, log = dev_stack
    env = second_shell()
    here = f"127.0.0.1:{port}"
    before, answer = walkthrough()
    script = before.replace("127.0.0.1:8000", here) + '\necho; echo "KEYS $ALICE"\n'
    out = _run(["bash", "-c", script], project, env, timeout=120)
    created, found = json_documents(out.split("\nKEYS ")[0])[:2]
    alice = out.rsplit("KEYS ", 1)[1].strip()
    assert isinstance(created, dict) and isinstance(found, dict), out
    [clarification] = created["clarifications"]
    [record] = found["records"]
    assert record["pendingClarification"]["state"] == "open", record
    answer_script = f"ALICE={alice}\n" + answer.replace("127.0.0.1:8000", here).replace(
        "<id>", clarification["id"]
    )
    bound = json_documents(_run(["bash", "-c", answer_script], project, env, timeout=60))
    assert bound and bound[0]["outcome"] == "bound", bound  # type: ignore[index]
    # The README tour's step: a key for Alice, the NDA's term (bound by now).
    tour = shell_block("README.md", TOUR).replace("127.0.0.1:8000", here)
    [found] = json_documents(_run(["bash", "-c", tour], project, env, timeout=120))
    assert isinstance(found, dict), found
    [nda] = found["records"]
    assert nda["pendingClarification"] is None and nda["evidenceClass"] == "human_clarification"
    # The same key in every process: the second shell's, the dev env's.
    show = "from django.conf import settings; print(settings.SECRET_KEY)"
    key = _run([".venv/bin/telha", "shell", "-c", show], project, env).strip().splitlines()[-1]
    assert f"SECRET_KEY={key}\n" in (project / "var" / "dev.env").read_text()
    # The cluster ran what the web process queued (the submission's kick), signed alike.
    deadline = time.monotonic() + 60
    while "Processed" not in log.read_text(errors="replace"):
        assert time.monotonic() < deadline, f"the cluster ran nothing\n{tail(log)}"
        time.sleep(0.5)
    output = log.read_text(errors="replace")
    assert f"point at http://127.0.0.1:{port} (PUBLIC_BASE_URL)" in output
    for bad in ("Traceback", "BadSignature", " ERROR "):
        assert bad not in output, f"{bad}:\n{tail(log, 80)}"


@pytest.mark.slow
def test_an_explicit_debug_0_never_uses_the_dev_env(project: Path) -> None:
    """With var/dev.env present, `DEBUG=0` without a SECRET_KEY still refuses to start."""
    env = second_shell()
    _run([str(project / ".venv" / "bin" / "python"), "-m", "telha.devenv"], project, env)
    assert (project / "var" / "dev.env").exists()
    done = subprocess.run(
        [".venv/bin/telha", "check"],
        cwd=project,
        env={**env, "DEBUG": "0"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert "SECRET_KEY must be set when DEBUG=0." in done.stderr
    ok = subprocess.run(
        [".venv/bin/telha", "check"], cwd=project, env=env, capture_output=True, text=True
    )
    assert ok.returncode == 0, ok.stderr  # the control: the dev env makes it start
