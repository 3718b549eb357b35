"""``eval --output FILE`` and ``--plot FILE.png``: written beside the file
and moved into place, as ``export -o`` is, and refused before the run when
they cannot be (a FIFO, a device, the dataset itself)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from roteiro_memory.cli.main import main
from roteiro_memory.evaluation.__main__ import main as evaluation_main
from roteiro_memory.exitcodes import ExitCode

_SMALL_FILES = r"""
import resource, signal, sys
import matplotlib.pyplot  # its caches written before the limit
from roteiro_memory.cli.main import main
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
sys.exit(main(["eval", "coding", "--no-timing", "--store", "memory", *sys.argv[1:]]))
"""


@pytest.mark.parametrize(("option", "name"), [("--output", "result.json"), ("--plot", "r.png")])
def test_eval_an_output_that_fails_half_way_leaves_the_earlier_file_as_it_was(
    option: str, name: str, tmp_path: Path
) -> None:
    """A disk that fills while the result or the plot is written (here a
    file size limit) leaves no partial file, and an earlier one whole."""
    target = tmp_path / name
    for earlier in (None, '{"earlier": "result"}\n'):
        if earlier is not None:
            target.write_text(earlier)
        done = subprocess.run(
            [sys.executable, "-c", _SMALL_FILES, option, str(target)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == ExitCode.USAGE, done.stderr
        said = done.stderr.splitlines()
        assert len(said) == 1, done.stderr
        assert f"cannot write {option} {target}: File too large" in said[0]
        assert "nothing was written there" in said[0]
        if earlier is None:
            assert not target.exists(), "a partial file was left behind"
        else:
            assert target.read_text() == earlier
        assert [p.name for p in tmp_path.iterdir()] == ([] if earlier is None else [name])


def _refused_before_running(
    capsys: pytest.CaptureFixture[str], *argv: str, monkeypatch: pytest.MonkeyPatch
) -> str:
    """The command's one line, checked to come before the evaluation ran."""
    from roteiro_memory.evaluation import __main__ as command

    def not_run(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the evaluation ran")

    monkeypatch.setattr(command, "evaluate", not_run)
    status = main(["eval", *argv])
    err = capsys.readouterr().err
    assert status == ExitCode.USAGE, err
    assert err.count("\n") == 1, err
    return err


@pytest.mark.parametrize(("option", "name"), [("--output", "out.json"), ("--plot", "out.png")])
def test_eval_never_writes_to_a_fifo_and_refuses_it_before_running(
    option: str,
    name: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Opening a FIFO to write waits for a reader for ever, after the whole
    run; it is refused as ``export -o`` refuses it.  (A reader is held open
    here, so that a write would not wait but be seen.)"""
    fifo = tmp_path / name
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        err = _refused_before_running(
            capsys, "coding", "--no-timing", option, str(fifo), monkeypatch=monkeypatch
        )
    finally:
        os.close(reader)
    assert f"{option} {fifo}: it is a FIFO" in err
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


def _dataset(path: Path) -> None:
    turn = {"speaker": "A", "dia_id": "D1:1", "text": "cat"}
    qa = [{"question": "cat", "evidence": ["D1:1"], "category": 4}]
    conversation = {"sample_id": "c", "conversation": {"session_1": [turn]}, "qa": qa}
    path.write_text(json.dumps([conversation]))


@pytest.mark.parametrize("how", ["itself", "a symlink", "a hard link"])
@pytest.mark.parametrize("option", ["--output", "--plot"])
def test_eval_never_writes_over_its_own_dataset(
    how: str,
    option: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    dataset = tmp_path / "locomo10"
    _dataset(dataset)
    before = dataset.read_bytes()
    target = dataset
    if how != "itself":
        target = tmp_path / "other"
        if how == "a symlink":
            target.symlink_to(dataset)
        else:
            os.link(dataset, target)
    err = _refused_before_running(
        capsys, "locomo", str(dataset), "--no-timing", option, str(target), monkeypatch=monkeypatch
    )
    assert f"{option} {target}: that is the dataset file being read" in err
    assert dataset.read_bytes() == before


def test_eval_the_result_and_the_plot_are_two_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    both = tmp_path / "out"
    err = _refused_before_running(
        capsys, "coding", "--output", str(both), "--plot", str(both), monkeypatch=monkeypatch
    )
    assert f"--plot {both}: that is the --output file too" in err


def test_eval_the_module_command_line_refuses_a_fifo_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from roteiro_memory.evaluation import __main__ as command

    def not_run(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the evaluation ran")

    monkeypatch.setattr(command, "evaluate", not_run)
    fifo = tmp_path / "out.json"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        with pytest.raises(SystemExit) as exited:
            evaluation_main(["coding", "--arms", "search", "--output", str(fifo)])
    finally:
        os.close(reader)
    assert exited.value.code == ExitCode.USAGE
    assert "it is a FIFO" in capsys.readouterr().err


def test_eval_a_question_type_holding_control_characters_is_printed_escaped_in_its_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A LongMemEval question type is a style, printed as a cell of the
    table: one holding a line break split its row in two, and an escape
    sequence in it reached the terminal.  Both are escaped, each row one
    line."""
    turn = {"role": "user", "content": "cat", "has_answer": True}
    path = tmp_path / "d.json"
    path.write_text(
        json.dumps(
            [
                {
                    "question_id": "q1",
                    "question_type": "multi\x1b[31m\nX",
                    "question": "cat",
                    "haystack_session_ids": ["answer_1"],
                    "haystack_sessions": [[turn]],
                }
            ]
        )
    )
    argv = ["eval", "longmemeval", str(path), "--no-timing", "--arms", "filter"]
    assert main(argv) == ExitCode.OK
    lines = capsys.readouterr().out.splitlines()
    assert "\x1b" not in "".join(lines)
    assert [line.split()[:2] for line in lines[-2:]] == [
        ["filter", "all"],
        ["filter", "multi\\x1b[31m\\x0aX"],
    ]
