"""The Python examples of the README and of docs/python.md, run as written from the repository
root."""

import re
import subprocess
import sys

import pytest

from conftest import REPO

PAGES = [REPO / "README.md", REPO / "docs" / "python.md"]
BLOCKS = [block for page in PAGES for block in re.findall(r"```python\n(.*?)```", page.read_text(), re.S)]


def test_the_pages_have_python_examples():
    assert len(BLOCKS) >= 2


@pytest.mark.parametrize("code", BLOCKS)
def test_an_example_runs_and_prints_what_it_computed(code):
    run = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip(), "it prints what it computed"
