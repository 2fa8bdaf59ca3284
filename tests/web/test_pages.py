"""The web pages in Debian's Chromium (headless, driven by Playwright) against a real
`kjudge serve` with its embedded broker and worker. Screenshots land in build/screenshots/."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import PROBLEMS, ROOT
from tests.server.stack import Stack

pytestmark = pytest.mark.slow
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
SHOTS = ROOT / "build" / "screenshots"
VA = PROBLEMS / "vector_add"


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    stack = Stack(tmp_path_factory.mktemp("web"), None, "embedded")
    stack.serve()
    yield stack
    stack.close()


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed")
        pytest.skip("chromium is not installed")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync"])
        yield browser
        browser.close()


def shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def sign_in(browser, stack, token, width=1280):
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.errors = []
    page.on("pageerror", lambda exc: page.errors.append(str(exc)))
    page.goto(stack.url + "/")
    page.wait_for_selector("#token")
    page.fill("#token", token)
    page.click("#signin button[type=submit]")
    page.wait_for_selector("h1:has-text('Problems')")
    return page


def submit(page, stack, source: str, language: str) -> None:
    page.goto(stack.url + "/#/problems/vector_add")
    page.wait_for_selector("#source")
    page.select_option("#language", language)
    page.fill("#source", source)
    page.click("#submit button[type=submit]")


def test_sign_in_rejects_a_bad_token(browser, stack):
    page = browser.new_page()
    page.goto(stack.url + "/")
    page.fill("#token", "kj_wrong")
    page.click("#signin button[type=submit]")
    page.wait_for_selector("#signin-error:has-text('not valid')")
    page.close()


def test_contestant_submits_and_reads_the_reports(browser, stack):
    alice = stack.token_for("alice")
    page = sign_in(browser, stack, alice)
    assert "Vector add" in page.inner_text("main")
    shot(page, "problems")
    page.click("text=Vector add")
    page.wait_for_selector("#signature")
    assert 'extern "C" void run_kernel' in page.inner_text("#signature")
    assert "matched_ratio" in page.inner_text("main")
    # the editor keeps indentation and turns Tab into spaces
    page.fill("#source", "")
    page.click("#source")
    page.keyboard.type("int x;")
    page.keyboard.press("Tab")
    assert page.input_value("#source") == "int x;    "
    shot(page, "problem")
    # a 4xx answer appears next to the form and the source stays
    page.fill("#source", "   ")
    page.click("#submit button[type=submit]")
    page.wait_for_selector("#submit-error:has-text('empty')")
    assert page.input_value("#source") == "   "
    # an accepted submission: the page follows it to its verdict
    submit(page, stack, (VA / "solutions/AC/loop.cpp").read_text(), "cpp")
    page.wait_for_selector(".card .v-AC", timeout=180_000)
    assert "Special judge report" in page.inner_text("main")
    assert "How it ran" not in page.inner_text("main")  # organizers only
    assert page.locator("svg.chart rect").count() >= 1
    shot(page, "submission")
    # the leaderboard shows alice, highlighted, with her rank on top
    page.goto(stack.url + "/#/leaderboard")
    page.wait_for_selector("tr.me")
    assert "alice" in page.inner_text("tr.me") and "my rank" in page.inner_text("main")
    shot(page, "leaderboard")
    # a wrong answer and a rule violation show their reports
    submit(page, stack, (VA / "solutions/WA/off_by_one.cpp").read_text(), "cpp")
    page.wait_for_selector(".card .v-WA", timeout=180_000)
    assert "≠" in page.inner_text("main")  # worst mismatches
    submit(page, stack, (VA / "solutions/RV/torch_add.py").read_text(), "triton")
    page.wait_for_selector(".card .v-RV", timeout=180_000)
    assert "no_torch_add" in page.inner_text("main")
    # my submissions, newest first, all judged
    page.goto(stack.url + "/#/submissions")
    page.wait_for_selector("#subs .v-RV")
    assert page.locator("#subs tr[data-id]").count() == 3
    shot(page, "submissions")
    # compare the accepted and the wrong submission test point by test point
    ids = [page.locator("#subs tr[data-id]").nth(i).get_attribute("data-id") for i in (1, 2)]
    page.goto(stack.url + f"/#/compare/{ids[1]}/{ids[0]}")
    page.wait_for_selector("h1:has-text('vs')")
    assert "n1048576" in page.inner_text("main") and "WA" in page.inner_text("main")
    assert page.errors == []
    page.close()


def test_organizer_rejudges_and_sees_the_history(browser, stack):
    page = sign_in(browser, stack, stack.admin)
    page.goto(stack.url + "/#/admin")
    page.wait_for_selector("#queue table")
    page.fill("#rejudge input[name=problem]", "vector_add")
    page.fill("#rejudge input[name=reason]", "baseline fixed")
    page.click("#rejudge button[type=submit]")
    page.wait_for_selector("#rejudge-progress")
    page.wait_for_function(
        "() => /(\\d+) of \\1 done/.test(document.querySelector('#rejudge-progress').innerText)",
        timeout=300_000)
    shot(page, "organizer")
    page.goto(stack.url + "/#/submissions")
    page.wait_for_selector("#subs tr[data-id]")
    first = page.locator("#subs tr[data-id] a").last.get_attribute("href")
    page.goto(stack.url + "/" + first)
    page.wait_for_selector("text=baseline fixed")
    applied = page.inner_text("table.applied")  # what actually ran, for organizers
    assert "sandbox" in applied and "cache flush" in applied and "MiB" in applied
    assert "where the time went" in applied and "timing" in applied
    assert "harnesses started" in applied  # from a warm slot, or for this judging
    page.goto(stack.url + "/#/admin")
    page.wait_for_selector("#reload")
    page.click("#reload")
    page.wait_for_selector("#reload-result:has-text('vector_add')")
    assert page.errors == []
    page.close()


def test_phone_width_contest_clock_and_error_pages(browser, stack):
    created = stack.call("POST", "/api/contests", stack.admin, json={
        "slug": "cup", "title": "Kernel Cup", "problems": ["vector_add"],
        "ends_at": "2099-01-01T00:00:00Z"})
    assert created.status_code == 201
    page = sign_in(browser, stack, stack.admin, width=390)
    page.wait_for_selector("#clock:has-text('Kernel Cup: running')")
    page.goto(stack.url + "/#/leaderboard")
    page.wait_for_selector("#board")
    shot(page, "leaderboard-phone")
    page.goto(stack.url + "/#/problems/no_such_problem")
    page.wait_for_selector("h1:has-text('Not found')")
    page.goto(stack.url + "/#/nowhere")
    page.wait_for_selector("h1:has-text('Not found')")
    assert page.errors == []
    page.close()
