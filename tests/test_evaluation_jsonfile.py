"""``eval`` on a dataset file that is not what its adapter reads: one line
naming the file, the element and what was wrong, exit status 2, never a
traceback (issue 22, item 9)."""

from __future__ import annotations

import codecs
import json
from pathlib import Path

import pytest

from roteiro_memory.cli.main import main
from roteiro_memory.evaluation.__main__ import main as evaluation_main
from roteiro_memory.exitcodes import ExitCode

DATASETS = ("locomo", "longmemeval")


def _refused(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    status = main(["eval", *argv])
    _out, err = capsys.readouterr()
    assert status == ExitCode.USAGE, err
    assert err.count("\n") == 1, err
    assert "please report it as a bug" not in err
    return err


@pytest.mark.parametrize("dataset", DATASETS)
def test_eval_an_array_of_scalars_names_the_element(
    dataset: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "d.json"
    path.write_text("[1, 2, 3]")
    assert "element 0 of the array is a number, expected an object" in _refused(
        capsys, dataset, str(path)
    )


@pytest.mark.parametrize("dataset", DATASETS)
def test_eval_an_element_of_the_wrong_shape_names_it(
    dataset: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "d.json"
    path.write_text(
        '[{"conversation": {"session_1": [1]}, "qa": [],'
        ' "haystack_sessions": [[1]], "haystack_session_ids": ["s"], "question_id": "q"}]'
    )
    said = _refused(capsys, dataset, str(path))
    if dataset == "locomo":  # its turns are read by name
        assert "element 0: 'session_1' turn 0 is a number, expected an object" in said
    else:
        assert "element 0 is not the shape of" in said


def test_eval_deep_nesting_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "d.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    assert "nests arrays or objects too deeply" in _refused(capsys, "locomo", str(path))


def test_eval_utf16_is_named_and_a_utf8_mark_is_passed_over(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wide = tmp_path / "wide.json"
    wide.write_bytes(codecs.BOM_UTF16_LE + "[]".encode("utf-16-le"))
    assert "UTF-16 text" in _refused(capsys, "locomo", str(wide))
    marked = tmp_path / "marked.json"
    marked.write_bytes(codecs.BOM_UTF8 + json.dumps(_locomo()).encode())
    assert main(["eval", "locomo", str(marked), "--no-timing"]) == ExitCode.OK
    capsys.readouterr()


def test_eval_bytes_that_are_not_utf8_are_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "d.json"
    path.write_bytes(b'[{"conversation": "\xff"}]')
    assert "not UTF-8 text" in _refused(capsys, "locomo", str(path))


def test_eval_a_folder_is_named_as_a_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert "is a folder" in _refused(capsys, "locomo", str(tmp_path))


@pytest.mark.parametrize("sample", ["-1", "0", "x"])
def test_eval_sample_must_be_positive(sample: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert "expected a positive whole number" in _refused(capsys, "coding", "--sample", sample)


@pytest.mark.parametrize("option", ["--plot", "--output"])
def test_eval_a_file_in_a_missing_folder_is_refused_before_running(
    option: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "absent" / "out"
    assert "does not exist" in _refused(capsys, "coding", option, str(target))
    assert not target.parent.exists()


def test_eval_the_module_command_line_says_the_same_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "d.json"
    path.write_text('["x"]')
    assert evaluation_main(["locomo", str(path)]) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "element 0 of the array is a string" in err


@pytest.mark.parametrize("name", ["x.txt", "x.svg", "x.jpg"])
def test_eval_a_plot_in_a_format_other_than_png_is_refused_before_running(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / name
    err = _refused(capsys, "coding", "--no-timing", "--plot", str(target))
    assert f"--plot {target}: cannot draw a '{target.suffix[1:]}' file" in err
    assert "FILE.png" in err
    assert not target.exists()


def test_eval_a_plot_refusal_is_bad_request_under_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    status = main(["eval", "coding", "--json", "--plot", str(tmp_path / "x.txt")])
    assert status == ExitCode.USAGE
    assert json.loads(capsys.readouterr().out)["error"]["kind"] == "BadRequest"


@pytest.mark.parametrize(
    ("argv", "takers"),
    [
        (["coding", "--sample", "1"], "locomo and longmemeval"),
        (["codebase", "--sample", "1"], "locomo and longmemeval"),
        (["coding", "--granularity", "turn"], "longmemeval"),
        (["locomo", "PATH", "--granularity", "turn"], "longmemeval"),
        (["locomo", "PATH", "--seed", "3"], "coding and codebase"),
    ],
)
def test_eval_an_option_for_other_datasets_is_refused_not_ignored(
    argv: list[str], takers: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "d.json"
    path.write_text("[]")
    argv = [str(path) if word == "PATH" else word for word in argv]
    err = _refused(capsys, *argv)
    verb = "take" if " and " in takers else "takes"
    assert f"{argv[-2]} does not apply to {argv[0]}: only {takers} {verb} it" in err


_ELEMENT = (
    '{"sample_id": "c", "conversation": {"session_1": [{"speaker": "A", "dia_id": "D1:1",'
    ' "text": "cat"}]}, "qa": [{"question": "cat", "evidence": ["D1:1"], "category": 4}]}'
)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (f"[{_ELEMENT} {_ELEMENT}]", "expected ',' or ']' after element 0"),
        (f"[{_ELEMENT},]", "a ',' with no element after it"),
        (f"[,{_ELEMENT}]", "element 0 is not JSON"),
        (f"[{_ELEMENT},,{_ELEMENT}]", "element 1 is not JSON"),
        (f"[{_ELEMENT}] this is not json", "text after the array's closing ']'"),
        (f"[{_ELEMENT}][]", "text after the array's closing ']'"),
        ('[{"n": NaN}]', "NaN, which is not JSON"),
        ('[{"n": -Infinity}]', "-Infinity, which is not JSON"),
        (f"\x0b[{_ELEMENT}]", "expected a JSON array"),
    ],
    ids=[
        "missing comma",
        "trailing comma",
        "leading comma",
        "two commas",
        "words after",
        "second array",
        "NaN",
        "Infinity",
        "not JSON space",
    ],
)
def test_eval_reads_json_only_text_that_is_not_a_json_array_is_refused(
    text: str, said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The reader takes what a JSON parser takes, element by element, and
    nothing more: ``json.load``, strict, refuses every one of these files."""
    import json

    def no_constant(name: str) -> object:
        raise json.JSONDecodeError(f"{name}, which is not JSON", text, 0)

    path = tmp_path / "d.json"
    path.write_text(text)
    with pytest.raises(json.JSONDecodeError):
        json.loads(text, parse_constant=no_constant)
    err = _refused(capsys, "locomo", str(path), "--no-timing")
    assert said in err
    assert str(path) in err


def test_eval_a_malformed_element_is_named_at_its_offset_and_the_rest_is_not_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An element that is not JSON is said to be so where it fails, as soon
    as it does: the file is not read to its end (bytes that are not UTF-8
    far after it are never reached) and it is not called truncated."""
    from roteiro_memory.evaluation.datasets import jsonfile

    monkeypatch.setattr(jsonfile, "_CHUNK", 64)
    path = tmp_path / "d.json"
    path.write_bytes(f'[{{"a": }}, {_ELEMENT}, '.encode() + _ELEMENT.encode() * 200 + b"\xff]")
    err = _refused(capsys, "locomo", str(path), "--no-timing")
    assert "element 0 is not JSON at character 7: Expecting value" in err
    assert "truncated" not in err


@pytest.mark.parametrize(
    "text",
    ["[", f"[{_ELEMENT}", f"[{_ELEMENT},", f"[{_ELEMENT}, ", f"[{_ELEMENT[:40]}", '[{"a": "b'],
)
def test_eval_only_a_file_that_ends_early_is_truncated(
    text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "d.json"
    path.write_text(text)
    assert "the JSON array is truncated" in _refused(capsys, "locomo", str(path), "--no-timing")


@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 7, 64])
def test_eval_reads_every_array_the_same_however_the_file_is_cut_into_chunks(
    chunk: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A value that ends where a chunk ends -- a number, a literal, an
    escape, a surrogate pair -- is read whole, never cut short there."""
    import json

    from roteiro_memory.evaluation.datasets import jsonfile

    monkeypatch.setattr(jsonfile, "_CHUNK", chunk)
    text = (
        '[12345, -6.25e+3, true, false, null, "a\\"b\\\\c\\u00e9\\ud83d\\ude00", '
        '{"k": [1, {"v": 1e-2}], "x": "y"}\n,\t[] , {}, "\u00e9\U0001f600", 7 ]  \n'
    )
    path = tmp_path / "d.json"
    path.write_text(text, encoding="utf-8")
    assert list(jsonfile.iter_array(path)) == json.loads(text)


def _locomo(text: object = "cat", question: object = "cat", speaker: object = "A") -> object:
    turn = {"speaker": speaker, "dia_id": "D1:1", "text": text, "blip_caption": "a cat"}
    qa = [{"question": question, "evidence": ["D1:1"], "category": 4}]
    return [{"sample_id": "c", "conversation": {"session_1": [turn]}, "qa": qa}]


def _longmemeval(
    content: object = "cat", question: object = "cat", style: object = "multi"
) -> object:
    turn = {"role": "user", "content": content, "has_answer": True}
    return [
        {
            "question_id": "q1",
            "question_type": style,
            "question": question,
            "haystack_session_ids": ["answer_1"],
            "haystack_sessions": [[turn]],
        }
    ]


@pytest.mark.parametrize(
    ("dataset", "data", "field"),
    [
        ("locomo", _locomo(text="cat \ud800 named"), "turn 'D1:1' 'text'"),
        ("locomo", _locomo(speaker="\udfff"), "turn 'D1:1' 'speaker'"),
        ("locomo", _locomo(question="cat \ud800"), "question 0 'question'"),
        ("longmemeval", _longmemeval(content="x \ud800"), "session 'answer_1' turn 0 'content'"),
        ("longmemeval", _longmemeval(question="\ud800"), "'question'"),
        ("longmemeval", _longmemeval(style="multi\ud800"), "'question_type'"),
    ],
)
@pytest.mark.parametrize("command", ["roteiro-memory", "python -m"])
def test_eval_a_lone_surrogate_in_a_text_read_is_refused_naming_its_field(
    dataset: str,
    data: object,
    field: str,
    command: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A JSON escape of half a surrogate pair (``\\ud800``) is valid JSON and
    no character: no store can hold it, no result print it.  A text the
    adapters read holding one is refused naming the element and the field,
    in one line under either command."""
    import json

    path = tmp_path / "d.json"
    path.write_text(json.dumps(data))
    if command == "python -m":
        assert evaluation_main([dataset, str(path), "--no-timing"]) == ExitCode.USAGE
        err = capsys.readouterr().err
        assert err.count("\n") == 1, err
    else:
        err = _refused(capsys, dataset, str(path), "--no-timing")
    assert f"{path}: element 0: {field} holds the escape \\u" in err
    assert "half a surrogate pair" in err


def _locomo_evidence(evidence: object) -> object:
    data = _locomo()
    assert isinstance(data, list)
    data[0]["qa"][0]["evidence"] = evidence
    return data


def _locomo_turns(turns: object) -> object:
    data = _locomo()
    assert isinstance(data, list)
    data[0]["conversation"]["session_1"] = turns
    return data


def _locomo_qa(qa: object) -> object:
    data = _locomo()
    assert isinstance(data, list)
    data[0]["qa"] = [qa]
    return data


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (_locomo_turns("D1:1 hello"), "'session_1' is a string, expected an array of turns"),
        (_locomo_turns(["hello"]), "'session_1' turn 0 is a string, expected an object with"),
        (_locomo_turns([{"speaker": "A", "text": "hi"}]), "'session_1' turn 0 has no 'dia_id'"),
        (_locomo_qa("what?"), "question 0 is a string, expected an object with 'question'"),
        (_locomo_qa({"evidence": ["D1:1"]}), "question 0 has no 'question', its text"),
    ],
)
def test_eval_a_locomo_turn_or_question_of_the_wrong_shape_is_refused_naming_it(
    data: object, said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A session that is no array, a turn or question that is no object, a
    turn with no id and a question with no text are refused naming where,
    never in Python's words (``KeyError: 'dia_id'``)."""
    import json

    path = tmp_path / "d.json"
    path.write_text(json.dumps(data))
    err = _refused(capsys, "locomo", str(path), "--no-timing")
    assert f"{path}: element 0: {said}" in err, err
    assert "Error" not in err, err


@pytest.mark.parametrize(
    ("dataset", "data", "said"),
    [
        ("locomo", _locomo(question=5), "question 0 'question' is a number, expected a string"),
        ("locomo", _locomo(question=None), "question 0 'question' is null, expected a string"),
        ("locomo", _locomo(text=["cat"]), "turn 'D1:1' 'text' is an array, expected a string"),
        ("locomo", _locomo(speaker={"a": 1}), "turn 'D1:1' 'speaker' is an object, expected"),
        (
            "locomo",
            _locomo_evidence("D1:1"),
            "question 0 'evidence' is a string, expected an array of turn ids",
        ),
        (
            "longmemeval",
            _longmemeval(content=None),
            "session 'answer_1' turn 0 'content' is null, expected a string",
        ),
        ("longmemeval", _longmemeval(question=7), "'question' is a number, expected a string"),
        ("longmemeval", _longmemeval(style=True), "'question_type' is a boolean, expected"),
    ],
)
def test_eval_a_text_field_that_is_no_string_is_refused_naming_it_never_read_as_its_repr(
    dataset: str, data: object, said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A question of ``null`` would be searched as ``None``, a turn's text
    of a number stored as its digits, an evidence string read a character
    at a time: each is refused, naming the element and the field."""
    import json

    path = tmp_path / "d.json"
    path.write_text(json.dumps(data))
    assert f"{path}: element 0: {said}" in _refused(capsys, dataset, str(path), "--no-timing")


def test_eval_a_lone_surrogate_in_a_field_not_read_is_passed_over(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """LongMemEval's assistant turns and answers are not indexed: what they
    hold refuses nothing."""
    import json

    data = _longmemeval()
    assert isinstance(data, list)
    data[0]["answer"] = "\ud800"
    data[0]["haystack_sessions"][0].append({"role": "assistant", "content": "\ud800"})
    path = tmp_path / "d.json"
    path.write_text(json.dumps(data))
    assert main(["eval", "longmemeval", str(path), "--no-timing"]) == ExitCode.OK
    capsys.readouterr()


@pytest.mark.parametrize("command", ["roteiro-memory", "python -m"])
def test_eval_an_integer_longer_than_python_reads_is_refused_naming_the_element(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "d.json"
    path.write_text('[{"sample_id": "c", "conversation": {}, "qa": [], "n": %s}]' % ("1" * 5000))
    if command == "python -m":
        assert evaluation_main(["locomo", str(path), "--no-timing"]) == ExitCode.USAGE
        err = capsys.readouterr().err
        assert err.count("\n") == 1, err
    else:
        err = _refused(capsys, "locomo", str(path), "--no-timing")
    assert f"{path}: element 0 holds an integer of 5,000 digits" in err


@pytest.mark.parametrize(
    ("arms", "said"),
    [
        ("", "--arms '': names no arm; expected some of filter, search, bm25s"),
        (",", "--arms ',': names no arm; expected some of filter, search, bm25s"),
        (" , ", "--arms ' , ': names no arm; expected some of filter, search, bm25s"),
        ("search,search", "--arms 'search,search': names 'search' twice"),
    ],
)
@pytest.mark.parametrize("command", ["roteiro-memory", "python -m"])
def test_eval_runs_each_arm_named_once_and_at_least_one(
    arms: str, said: str, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """No arm gave an empty table and exit 0; an arm named twice counted
    every query twice (n 162 of 81 queries)."""
    if command == "python -m":
        with pytest.raises(SystemExit) as exited:
            evaluation_main(["coding", "--no-timing", "--arms", arms])
        assert exited.value.code == ExitCode.USAGE
        err = capsys.readouterr().err
    else:
        err = _refused(capsys, "coding", "--no-timing", "--arms", arms)
    assert said in err


@pytest.mark.parametrize(
    ("dataset", "data", "said"),
    [
        ("locomo", [], "no question to measure in 0 haystacks; is it the locomo file?"),
        ("longmemeval", [], "no question to measure in 0 haystacks; is it the longmemeval file?"),
        (
            "locomo",
            _locomo_evidence(["D9:9"]),
            "no question to measure in 1 haystack (left out: evidence ids naming no turn: 1; "
            "no resolvable evidence: 1)",
        ),
    ],
)
def test_eval_a_dataset_with_no_question_to_measure_is_refused_and_writes_nothing(
    dataset: str, data: object, said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An empty array, or a file whose every question is left out, measures
    nothing: a table of no rows exiting 0 would read as a pass.  It is
    refused in one line, saying what was left out, and no --output is written."""
    import json

    path, output = tmp_path / "d.json", tmp_path / "out.json"
    path.write_text(json.dumps(data))
    err = _refused(capsys, dataset, str(path), "--no-timing", "--output", str(output))
    assert f"{path}: {said}" in err
    assert not output.exists()


@pytest.mark.parametrize("as_json", [False, True], ids=["line", "json"])
def test_eval_the_bm25s_arm_without_its_package_is_refused_before_running_as_a_usage_error(
    as_json: bool, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """bm25s is an optional extra and a default arm: without it, eval
    raised SystemExit with a bare line -- exit 1 ("nothing found"), no
    ``roteiro-memory: error:``, no envelope under --json.  It is refused
    before anything runs, as a usage error, saying how to install it or
    leave it out."""
    import sys

    from roteiro_memory.evaluation import __main__ as command

    def not_run(*args: object, **kwargs: object) -> None:
        raise AssertionError("the evaluation ran")

    monkeypatch.setattr(command, "evaluate", not_run)
    monkeypatch.setitem(sys.modules, "bm25s", None)  # as if it were not installed
    status = main([*(["--json"] if as_json else []), "eval", "coding"])
    out, err = capsys.readouterr()
    assert status == ExitCode.USAGE
    said = (
        "the bm25s yardstick needs the optional 'bm25s' package: "
        "pip install 'roteiro-memory[eval]'; or leave it out: --arms filter,search"
    )
    if as_json:
        assert json.loads(out)["error"] == {"kind": "BadRequest", "message": said}
    else:
        assert err == f"roteiro-memory: error: {said}\n"
