"""`acm view`'s page in a real headless browser (Debian's chromium, software WebGL): it loads,
draws a non-blank canvas, and moving the time slider changes the picture."""

import json
import re
import shutil
import subprocess

import pytest

from conftest import REPO

BROWSER = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(BROWSER is None, reason="no chromium here (.ci/run installs Debian's)")
def test_the_page_draws_the_frames_and_the_slider_changes_the_picture(acm_bin, tmp_path):
    subprocess.run([acm_bin, "run", REPO / "profiles" / "pinned_sheet.toml", "--frames", "6",
                    "--out", tmp_path / "o"], check=True, capture_output=True)
    subprocess.run([acm_bin, "view", tmp_path / "o"], check=True, capture_output=True)
    page = tmp_path / "o" / "view.html"
    # `#selftest` makes the page read its own canvas back, move the slider to the last frame
    # as a user would (an `input` event), and read it again.
    dom = subprocess.run(
        [BROWSER, "--headless", "--no-sandbox", "--use-angle=swiftshader",
         "--enable-unsafe-swiftshader", "--window-size=800,600", "--virtual-time-budget=10000",
         "--dump-dom", page.as_uri() + "#selftest"],
        check=True, capture_output=True, text=True, timeout=120,
    ).stdout
    found = re.search(r'<pre id="selftest">(.*?)</pre>', dom)
    assert found, dom[-2000:]
    report = json.loads(found.group(1))
    assert report["pixels"] > 100_000
    # The sheet covers a few percent of the canvas at least, and swinging moves it.
    assert report["drawn"] > report["pixels"] // 50, report
    assert report["changed"] > report["pixels"] // 200, report
    assert report["frame"] == 5 and report["label"].startswith("frame 5 of 5, t = 0.2000 s")
