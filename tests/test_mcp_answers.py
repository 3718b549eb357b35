"""Answers sized for an agent's context, over the 200-record store of
``bench/answers.py``: a default ``search`` at most 6,000 bytes and
``tools/list`` at most 10,000, as the MCP SDK's own client receives them."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import answers

if not os.environ.get("CI"):  # CI installs the [mcp] extra: there, a missing SDK fails
    pytest.importorskip("mcp", reason="the [mcp] extra is not installed")


@pytest.fixture(scope="module")
def sizes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[int, int]]:
    root = tmp_path_factory.mktemp("answers") / "repo"
    answers.build(root)
    command = [sys.executable, "-m", "roteiro_memory", "mcp"]
    return anyio.run(answers.mcp_sizes, root, command)


def test_a_default_search_over_200_records_is_at_most_6000_bytes(
    sizes: dict[str, tuple[int, int]],
) -> None:
    whole, text = sizes["search"]
    assert whole <= answers.SEARCH_BOUND, whole
    assert 0 < text < whole


def test_the_tool_list_is_at_most_10000_bytes(sizes: dict[str, tuple[int, int]]) -> None:
    assert sizes["tools/list"][0] <= answers.TOOLS_BOUND, sizes["tools/list"]


def test_a_default_list_is_no_bigger_than_a_default_search_allows(
    sizes: dict[str, tuple[int, int]],
) -> None:
    assert sizes["list"][0] <= answers.SEARCH_BOUND, sizes["list"]
