"""`make test` leaves the tree clean (issue 28 item 9): the guard that fails a run which
wrote into the git tree, and the browser tests' screenshots kept out of it."""

import subprocess
from pathlib import Path

import pytest

from tests.browser import REPO, screenshots_folder
from tests.tree_guard import tree_changes, tree_state


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    git(tmp_path, "init", "-q")
    git(tmp_path, "config", "user.email", "t@example.test")
    git(tmp_path, "config", "user.name", "T")
    (tmp_path / ".gitignore").write_text("var/\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "shot.png").write_bytes(b"picture one")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "start")
    return tmp_path


def test_the_guard_names_every_file_a_run_wrote_into_the_tree(repo: Path) -> None:
    before = tree_state(repo)
    assert before == {}
    (repo / "var").mkdir()
    (repo / "var" / "ignored.png").write_bytes(b"fine: ignored")
    assert tree_changes(before, tree_state(repo) or {}) == []

    (repo / "docs" / "shot.png").write_bytes(b"picture two")  # a tracked file rewritten
    (repo / "docs" / "new.png").write_bytes(b"an untracked file")
    assert tree_changes(before, tree_state(repo) or {}) == ["docs/new.png", "docs/shot.png"]


def test_a_file_already_changed_counts_only_when_the_run_changes_it_again(repo: Path) -> None:
    (repo / "docs" / "shot.png").write_bytes(b"being edited")
    before = tree_state(repo) or {}
    assert list(before) == ["docs/shot.png"]
    assert tree_changes(before, tree_state(repo) or {}) == []
    (repo / "docs" / "shot.png").write_bytes(b"rewritten by a test")
    assert tree_changes(before, tree_state(repo) or {}) == ["docs/shot.png"]
    (repo / "docs" / "shot.png").unlink()
    assert tree_changes(before, tree_state(repo) or {}) == ["docs/shot.png"]


def test_outside_a_work_tree_there_is_nothing_to_guard(tmp_path: Path) -> None:
    assert tree_state(tmp_path / "missing") is None


def test_screenshots_go_to_a_temporary_folder_unless_make_screenshots_asks(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SCREENSHOTS_DIR", raising=False)
    folder = screenshots_folder(tmp_path_factory)
    assert folder.is_dir() and not folder.resolve().is_relative_to(REPO)

    asked = tmp_path_factory.mktemp("asked")
    monkeypatch.setenv("SCREENSHOTS_DIR", str(asked / "docs" / "screenshots"))
    assert screenshots_folder(tmp_path_factory) == asked / "docs" / "screenshots"
    assert (asked / "docs" / "screenshots").is_dir()
    monkeypatch.setenv("SCREENSHOTS_DIR", "docs/screenshots")
    assert screenshots_folder(tmp_path_factory) == REPO / "docs" / "screenshots"


def test_make_screenshots_regenerates_the_docs_pictures_and_make_test_guards_the_tree() -> None:
    makefile = (REPO / "Makefile").read_text()
    assert "SCREENSHOTS_DIR=docs/screenshots" in makefile
    test_recipe = makefile.split("\ntest: venv\n", 1)[1].split("\n\n", 1)[0]
    assert "CHECK_TREE_CLEAN=1" in test_recipe and "SCREENSHOTS_DIR" not in test_recipe
