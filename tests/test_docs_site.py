"""The documentation a newcomer reads: the MkDocs site builds strictly, the README stays short.

The site build needs the ``docs`` extra (MkDocs, Material, mkdocstrings); without it that test is
skipped. The README checks need nothing.
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from extras import needs

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
README_MAX_BYTES = 15 * 1024

#: a time of day such as "22:57 UTC" or "at 14:26": results live in benchmarks/results/*.json
CLOCK_TIME = re.compile(r"\b\d{1,2}:\d{2}(?::\d{2})? ?(?:UTC|GMT|CET|CEST|Z)\b|\bat \d{1,2}:\d{2}\b")


def _prose(markdown: str) -> str:
    """The README without its fenced code blocks (example output may hold anything)."""
    return re.sub(r"^```.*?^```", "", markdown, flags=re.S | re.M)


def test_readme_is_at_most_15_kib():
    size = len(README.read_bytes())
    assert size <= README_MAX_BYTES, f"README.md is {size} bytes; move detail into docs/ (limit {README_MAX_BYTES})"


def test_readme_prose_has_no_times_of_day():
    hits = CLOCK_TIME.findall(_prose(README.read_text(encoding="utf-8")))
    assert not hits, f"README.md prose names times of day {hits}: a result is its JSON and its generated table"


def test_readme_has_one_results_region():
    text = README.read_text(encoding="utf-8")
    assert text.count("<!-- results:start -->") == 1 and text.count("<!-- results:end -->") == 1
    assert text.index("<!-- results:start -->") < text.index("<!-- results:end -->")


def test_readme_first_bash_block_is_the_two_setup_lines():
    """.ci/run executes exactly these two lines."""
    block = re.search(r"^```bash\n(.*?)^```", README.read_text(encoding="utf-8"), flags=re.S | re.M)
    assert block is not None
    lines = [line for line in block.group(1).splitlines() if line.strip()]
    assert len(lines) == 2
    assert "pip install" in lines[0] and "hetcc compile" in lines[0]
    assert "pytest" in lines[1]


@pytest.mark.docs
@pytest.mark.slow
def test_docs_site_builds_strictly(tmp_path):
    needs("docs", "mkdocs", "material", "mkdocstrings")
    out = tmp_path / "site"
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"),
                           "-d", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stdout}\n{proc.stderr}"
    assert (out / "index.html").is_file()
    assert (out / "reference" / "index.html").is_file()
