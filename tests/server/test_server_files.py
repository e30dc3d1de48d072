"""``lmc serve`` carries the files chunk of a block that changed files (the page draws it)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.wait import WebDriverWait
from support.server_testing import TOKEN, Served, code, final

from lmc.messages import assemble, validate_chunk

Serve = Callable[..., Served]
WAIT = 120  # seconds: the shared CI cores start a kernel slowly


def chromium(profile: Path) -> webdriver.Chrome:
    """Debian's chromium through its chromedriver (as tests/server/test_page.py drives it)."""
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        f"--user-data-dir={profile / 'profile'}",
    ):
        options.add_argument(argument)  # fmt: skip
    service = Service(executable_path="/usr/bin/chromedriver", log_output=str(profile / "log"))
    return webdriver.Chrome(service=service, options=options)


def test_a_block_that_changes_files_is_followed_by_a_files_chunk(
    serve: Serve, tmp_path: Path
) -> None:
    served = serve(code("open('made.txt', 'w').write('hi\\n')"), final("Made."), auto_run=True)
    client = served.client()
    client.say("make a file")
    chunks = client.turn()
    steps = [(c["type"], "start" if c.get("start") else "end" if c.get("end") else "content")
             for c in chunks if c["role"] == "computer"]  # fmt: skip
    at = steps.index(("files", "start"))
    assert steps[at - 1] == ("console", "end")
    assert steps[at : at + 3] == [("files", "start"), ("files", "content"), ("files", "end")]
    files = next(c for c in chunks if c["type"] == "files" and "content" in c)
    assert files == {
        "role": "computer",
        "type": "files",
        "format": "changes",
        "content": [{"path": "made.txt", "change": "added", "added": 1, "removed": 0}],
    }
    assert (tmp_path / "made.txt").read_text() == "hi\n"
    lmc_chunks = [validate_chunk(c) for c in chunks if c["role"] != "server"]
    assert assemble(lmc_chunks) == served.interpreters[0].messages[1:]  # stored as shown
    client.close()


def test_the_page_draws_the_changed_files(
    serve: Serve, tmp_path_factory: pytest.TempPathFactory
) -> None:
    served = serve(code("open('made.txt', 'w').write('hi\\n')"), final("Made."), auto_run=True)
    profile = tmp_path_factory.mktemp("browser")  # not in the working directory (tmp_path)
    driver = chromium(profile)
    try:
        wait = WebDriverWait(driver, WAIT)
        driver.get(f"{served.live.http}/?token={TOKEN}")
        wait.until(ec.element_to_be_clickable((By.ID, "send")))
        driver.find_element(By.ID, "input").send_keys("make a file")
        driver.find_element(By.ID, "send").click()
        drawn = wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, ".msg.files")))
        assert drawn.text == "files changed\n  added  made.txt  +1 -0"
    finally:
        driver.quit()


#: A name that, drawn as it is, paints an entry lmc did not write (and reads backwards).
FORGED = "notes\n  deleted  app.py  +0 -120\nz\u202etxt.exe"
#: The page's line for a file before names were drawn on one line.
OLD_LINE = """
const c = arguments[0];
const el = document.createElement("div");
el.className = "msg note files";
const line = `  ${c.change}  ${c.path}  +${c.added} -${c.removed}`;
el.textContent = ["files changed", line].join("\\n");
document.getElementById("log").appendChild(el);
return el.innerText;
"""


def test_a_file_name_cannot_paint_a_line_of_its_own_in_the_page(
    serve: Serve, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The code, in the sandbox lmc serve runs it in, makes a file with a line feed and a
    bidi override in its name; the page draws it on its one line, both visibly. The page's
    line as it was built before draws the forged entry."""
    served = serve(code(f"open({FORGED!r}, 'w').write('x\\n')"), final("Made."), auto_run=True)
    profile = tmp_path_factory.mktemp("browser")
    driver = chromium(profile)
    try:
        wait = WebDriverWait(driver, WAIT)
        driver.get(f"{served.live.http}/?token={TOKEN}")
        wait.until(ec.element_to_be_clickable((By.ID, "send")))
        driver.find_element(By.ID, "input").send_keys("make a file")
        driver.find_element(By.ID, "send").click()
        drawn = wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, ".msg.files")))
        assert drawn.text == (
            "files changed\n  added  notes^J  deleted  app.py  +0 -120^Jz<U+202E>txt.exe  +1 -0"
        )
        change = {"change": "added", "path": FORGED, "added": 1, "removed": 0}
        old = driver.execute_script(OLD_LINE, change)
        assert "\n  deleted  app.py  +0 -120\n" in old  # the forged entry, on a line of its own
    finally:
        driver.quit()
