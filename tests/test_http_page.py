"""The live page in a real headless browser (Chromium driven by Selenium): it loads from the
daemon, shows the top-k and follows new batches without a reload, its charts draw, and a vertex
search answers. Skipped where Chromium, chromedriver or Selenium is missing (CI installs them)."""

from __future__ import annotations

import os
import shutil
import time

import pytest
from http_helpers import get, wait_http
from kafka_broker import DaemonProcess, free_port, make_events

pytestmark = pytest.mark.browser

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
EVENTS = make_events(31, 2000, 150)
READ_TABLE = """const t = document.getElementById("top-table");
return {seq: t.dataset.seq, vertices: Array.from(t.tBodies[0].rows, (r) => r.cells[1].textContent)};"""


def _write(directory, name: str, events) -> None:
    op = {True: "+", False: "-"}
    tmp = directory / f".{name}.part"
    tmp.write_text("src,dst,op\n" + "".join(f"{a},{b},{op[i]}\n" for a, b, i in events))
    os.replace(tmp, directory / name)


@pytest.fixture
def browser():
    if CHROMIUM is None or DRIVER is None:
        pytest.skip("chromium and chromedriver are not installed (apt-get install chromium chromium-driver)")
    webdriver = pytest.importorskip("selenium.webdriver")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,860"):
        opts.add_argument(a)
    drv = webdriver.Chrome(options=opts, service=webdriver.ChromeService(executable_path=DRIVER))
    yield drv
    drv.quit()


def _wait(predicate, *, timeout: float = 30.0, what: str = ""):
    deadline = time.monotonic() + timeout
    while True:
        v = predicate()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def test_live_page_shows_top_k_follows_batches_and_searches(browser, tmp_path):
    from selenium.webdriver.common.by import By

    (tmp_path / "in").mkdir()
    _write(tmp_path / "in", "a.csv", EVENTS[:1000])
    port = free_port()
    d = DaemonProcess(["--input-dir", tmp_path / "in", "--checkpoint-dir", tmp_path / "ckpt", "--batch-size", 100,
                       "--batch-wait-ms", 10, "--warm-up", "on", "--http-port", port], tmp_path)
    try:
        wait_http(port, d)
        d.wait_edges(1000)
        browser.get(f"http://127.0.0.1:{port}/")
        assert browser.title == "streamrank live"
        seq1 = int(_wait(lambda: browser.find_element(By.ID, "top-table").get_attribute("data-seq"), what="top-k"))
        shown = browser.execute_script(READ_TABLE)  # one read: the page redraws the table every second
        assert len(shown["vertices"]) == 20
        st, top = get(port, "/ranks/top?k=20")
        assert top["seq"] == int(shown["seq"]) >= seq1  # ingest has ended: the page and the API agree
        assert shown["vertices"] == [str(x["vertex"]) for x in top["top"]]
        assert browser.find_element(By.ID, "seq").text == shown["seq"]
        # charts drew (uPlot canvases)
        assert len(browser.find_elements(By.CSS_SELECTOR, "#charts canvas")) >= 3
        # new batches arrive: the page follows without a reload
        marker = browser.execute_script("window.__noReload = 42; return window.__noReload;")
        _write(tmp_path / "in", "b.csv", EVENTS[1000:])
        d.wait_edges(len(EVENTS))
        final = d.events()[-1]["seq"] if d.events()[-1]["event"] == "apply" else None
        seq2 = int(_wait(lambda: (int(browser.find_element(By.ID, "top-table").get_attribute("data-seq")) > seq1
                                  and browser.find_element(By.ID, "top-table").get_attribute("data-seq")),
                         what="a newer batch on the page"))
        assert seq2 > seq1 and (final is None or seq2 <= final)
        assert browser.execute_script("return window.__noReload;") == marker
        # vertex search
        st, top = get(port, "/ranks/top?k=1")
        v = top["top"][0]["vertex"]
        box = browser.find_element(By.ID, "vertex-input")
        box.send_keys(str(v))
        browser.find_element(By.ID, "vertex-search").click()
        text = _wait(lambda: (lambda t: t if t.startswith("vertex ") else "")(
            browser.find_element(By.ID, "vertex-result").text), what="the search result")
        st, one = get(port, f"/ranks/{v}")
        assert text.startswith(f"vertex {v}: rank {one['rank']:.6g}"[:len(f"vertex {v}: rank ")]), text
        box.clear()
        box.send_keys("123456789")
        browser.find_element(By.ID, "vertex-search").click()
        _wait(lambda: "unknown vertex 123456789" in browser.find_element(By.ID, "vertex-result").text,
              what="the unknown-vertex answer")
        box.clear()
        box.send_keys("not-a-number")
        browser.find_element(By.ID, "vertex-search").click()
        _wait(lambda: "malformed vertex id" in browser.find_element(By.ID, "vertex-result").text,
              what="the malformed-id answer")
        shot = os.environ.get("STREAMRANK_PAGE_SCREENSHOT")
        browser.save_screenshot(shot or str(tmp_path / "page.png"))
    finally:
        assert d.terminate() == 0, d.log_tail()
