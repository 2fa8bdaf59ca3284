"""The web pages in Debian's Chromium (headless, driven by Playwright) against a real
`kjudge serve` with its embedded broker and worker. Screenshots land in build/screenshots/."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import PROBLEMS, ROOT
from tests.server.stack import Stack, wait_for
from tests.test_guard import TIMER_SWAP

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


def new_page(browser, width=1280):
    """A page in a context of its own: its own cookies, as another person's browser."""
    page = browser.new_context(viewport={"width": width, "height": 900}).new_page()
    page.errors = []
    page.on("pageerror", lambda exc: page.errors.append(str(exc)))
    return page


def sign_in(browser, stack, token, width=1280):
    """Signed in with an API token (the form's alternative to a password)."""
    page = new_page(browser, width)
    page.goto(stack.url + "/#/signin")
    page.click("summary:has-text('API token')")
    page.fill("#token", token)
    page.click("#token-signin button[type=submit]")
    page.wait_for_selector("h1:has-text('Problems')")
    return page


def sign_in_with_password(browser, stack, name, password):
    page = new_page(browser)
    page.goto(stack.url + "/#/signin")
    page.fill("#name", name)
    page.fill("#password", password)
    page.click("#signin button[type=submit]")
    page.wait_for_selector("h1:has-text('Problems')")
    return page


def set_source(page, text: str) -> None:
    """Select all in the code editor and paste `text` over it, as a contestant would."""
    page.click(".cm-content")
    page.keyboard.press("Control+a")
    page.keyboard.press("Delete")
    if text:
        page.keyboard.insert_text(text)


def submit(page, stack, source: str, language: str) -> None:
    page.goto(stack.url + "/#/problems/vector_add")
    page.wait_for_selector(".cm-content")
    page.select_option("#language", language)
    set_source(page, source)
    page.click("#submit button[type=submit]")


def test_sign_in_rejects_a_wrong_password_and_a_bad_token(browser, stack):
    page = new_page(browser)
    page.goto(stack.url + "/")
    page.fill("#name", "admin")
    page.fill("#password", "not the password")
    page.click("#signin button[type=submit]")
    page.wait_for_selector("#signin-error:has-text('Wrong name or password')")
    page.click("summary:has-text('API token')")
    page.fill("#token", "kj_wrong")
    page.click("#token-signin button[type=submit]")
    page.wait_for_selector("#token-error:has-text('not valid')")
    assert page.errors == []
    page.close()


def test_accounts_imported_from_csv_sign_in_make_tokens_and_are_reset(browser, stack):
    password = (stack.tmp / "data" / "admin-password").read_text().strip()
    organizer = sign_in_with_password(browser, stack, "admin", password)
    organizer.goto(stack.url + "/#/admin")
    organizer.click("summary:has-text('Import users')")
    organizer.fill("#import-text", "name,team\nbad name,blue\n")
    organizer.click("#import-form button[type=submit]")
    organizer.wait_for_selector("#import-result .error:has-text('line 2')")
    organizer.fill("#import-text", "name,team\nzoe,blue\nyuri,blue\n")
    organizer.click("#import-form button[type=submit]")
    organizer.wait_for_selector("#imported")
    row = organizer.locator("#imported tr:has-text('zoe') code")
    zoe_password = row.inner_text().strip()
    assert len(zoe_password) == 14 and organizer.locator("a[download='passwords.csv']").count()
    shot(organizer, "import")
    # zoe, in a browser of her own
    zoe = sign_in_with_password(browser, stack, "zoe", zoe_password)
    assert "kj_session" not in zoe.evaluate("document.cookie")  # HttpOnly: no script reads it
    zoe.click("#account")
    zoe.wait_for_selector("#tokens")
    zoe.fill("#token-name", "laptop")
    zoe.click("#token-form button[type=submit]")
    token = zoe.locator("#new-token").inner_text().strip()
    assert stack.call("GET", "/api/me", token).json()["name"] == "zoe"
    zoe.click("tr:has-text('laptop') [data-revoke]")
    zoe.wait_for_selector("tr:has-text('laptop')", state="detached")
    assert stack.call("GET", "/api/me", token).status_code == 401
    shot(zoe, "account")
    # the organizer resets her password: her session ends at her next request
    organizer.reload()
    organizer.wait_for_selector("[data-reset='zoe']")
    organizer.click("[data-reset='zoe']")
    organizer.wait_for_selector("#user-result code.password")
    zoe.goto(stack.url + "/#/problems")
    zoe.reload()
    zoe.wait_for_selector("#signin")
    organizer.click("#signout")
    organizer.wait_for_selector("#signin")
    organizer.goto(stack.url + "/#/admin")
    organizer.wait_for_selector("#signin")  # signed out: the page asks to sign in again
    assert zoe.errors == [] and organizer.errors == []


@pytest.mark.quiet  # the board must show her timed result
def test_contestant_submits_and_reads_the_reports(browser, stack):
    alice = stack.token_for("alice")
    page = sign_in(browser, stack, alice)
    assert "Vector add" in page.inner_text("main")
    shot(page, "problems")
    page.click("text=Vector add")
    page.wait_for_selector("#signature")
    assert 'extern "C" void run_kernel' in page.inner_text("#signature")
    assert "matched_ratio" in page.inner_text("main")
    # the code editor (CodeMirror, built by make editor): the template is loaded, brackets
    # close and match, a new line in a block is indented, C++ is highlighted
    assert page.locator("#source").is_hidden() and "run_kernel" in page.input_value("#source")
    set_source(page, "")
    page.keyboard.type("void f() {")
    page.keyboard.press("Enter")
    page.keyboard.type("x;")
    assert page.input_value("#source") == "void f() {\n    x;\n}"
    assert page.locator(".cm-line span").count() >= 1  # "void" as a keyword
    page.keyboard.press("ArrowDown")
    page.keyboard.press("End")
    assert page.locator(".cm-matchingBracket").count() == 2
    shot(page, "problem")
    # one click back to the template; switching language on it loads that language's
    page.click("#use-template")
    assert 'extern "C"' in page.input_value("#source")
    page.select_option("#language", "triton")
    assert "@triton.jit" in page.input_value("#source")
    # a 4xx answer appears next to the form and the source stays, across a reload too
    set_source(page, "   ")
    page.click("#submit button[type=submit]")
    page.wait_for_selector("#submit-error:has-text('empty')")
    assert page.input_value("#source") == "   "
    page.reload()
    page.wait_for_selector(".cm-content")
    assert page.input_value("#source") == "   "
    # an accepted submission: the page follows it to its verdict
    submit(page, stack, (VA / "solutions/AC/loop.cpp").read_text(), "cpp")
    page.wait_for_selector(".card .v-AC", timeout=180_000)
    assert "Special judge report" in page.inner_text("main")
    assert "How it ran" not in page.inner_text("main")  # organizers only
    assert page.locator("svg.chart rect").count() >= 1
    shot(page, "submission")
    # the leaderboard shows alice, highlighted, with her rank on top
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page.goto(stack.url + "/#/leaderboard")
    try:
        page.wait_for_selector("tr.me")
    except PlaywrightTimeout:  # held for review, most likely: the failure says by what
        review = stack.call("GET", "/api/review", stack.admin).json()
        raise AssertionError(f"alice is not on the board; the review list: {review}") from None
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
    assert page.locator("#side-by-side th:has-text('speedup')").count() == 2
    assert f"kjudge status {ids[1]} --compare {ids[0]}" in page.inner_text("main")
    # the accepted one's results, downloaded as CSV (the cookie signs the download in)
    page.goto(stack.url + f"/#/submissions/{ids[1]}")
    page.wait_for_selector("#csv")
    with page.expect_download() as download:
        page.click("#csv")
    text = Path(download.value.path()).read_text()
    assert text.startswith("schema_version,") and "n1048576" in text and ",ok," in text
    assert page.errors == []
    page.close()


def test_organizer_rejudges_and_sees_the_history(browser, stack):
    dee = stack.token_for("dee")  # a submission of its own to rejudge (tests run apart)
    sid = stack.submit(dee, (VA / "solutions/AC/loop.cpp").read_text())
    assert stack.verdict(dee, sid, timeout=240)["verdict"] == "AC"
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
    page.wait_for_selector(f"#subs tr[data-id='{sid}']")
    page.goto(stack.url + "/" + page.locator(f"#subs tr[data-id='{sid}'] a").get_attribute("href"))
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


@pytest.mark.quiet  # timed results on a board
def test_a_frozen_board_seen_by_a_visitor_a_contestant_and_the_organizer(browser, stack):
    from datetime import datetime, timedelta, timezone

    now = datetime.now(timezone.utc)
    made = stack.call("POST", "/api/contests", stack.admin, json={
        "slug": "frozen", "title": "Frozen Cup", "problems": ["vector_add"], "public": True,
        "starts_at": (now - timedelta(hours=1)).isoformat(),
        "ends_at": (now + timedelta(hours=2)).isoformat()})
    assert made.status_code == 201, made.text
    ann, ben = stack.token_for("ann"), stack.token_for("ben")
    source = (VA / "solutions/AC/loop.cpp").read_text()

    def submit_to_contest(token):
        response = stack.call("POST", "/api/submissions", token, json={
            "problem": "vector_add", "language": "cpp", "source": source, "contest": "frozen"})
        assert response.status_code == 202, response.text
        return stack.verdict(token, response.json()["id"], timeout=240)

    assert submit_to_contest(ann)["verdict"] == "AC" and submit_to_contest(ben)["verdict"] == "AC"
    frozen = stack.call("PATCH", "/api/contests/frozen", stack.admin, json={
        "freeze_at": datetime.now(timezone.utc).isoformat()})
    assert frozen.status_code == 200 and frozen.json()["frozen"], frozen.text
    submit_to_contest(ben)  # after the freeze
    visitor = new_page(browser)
    visitor.goto(stack.url + "/#/leaderboard")
    visitor.wait_for_selector("#frozen-note")
    assert visitor.locator("#board tr:has-text('ben') .pending").inner_text() == "+1?"
    assert visitor.locator("#score-chart path.series").count() == 2
    assert "Sign in" in visitor.inner_text("#who")
    shot(visitor, "leaderboard-frozen")
    contestant = sign_in(browser, stack, ben)
    contestant.goto(stack.url + "/#/leaderboard?contest=frozen")
    contestant.wait_for_selector("#my-live")
    organizer = sign_in(browser, stack, stack.admin)
    organizer.goto(stack.url + "/#/leaderboard?contest=frozen")
    organizer.wait_for_selector("#live-note")
    assert organizer.locator("#board .pending").count() == 0
    organizer.goto(stack.url + "/#/admin")
    organizer.click("[data-unfreeze='frozen']")
    organizer.wait_for_selector("[data-unfreeze='frozen']", state="detached")
    visitor.reload()
    visitor.wait_for_selector("#board tr:has-text('ben')")
    assert visitor.locator("#frozen-note").count() == 0
    assert visitor.errors == [] and contestant.errors == [] and organizer.errors == []


@pytest.mark.quiet  # holds and a board
def test_an_organizer_clears_a_held_result_and_system_tests_the_contest(browser, stack):
    """A timer swap KernelGuard holds: off the public board, "held" to its author; the review
    list says what and at which line, one click clears it; then the contest's system test
    judges it again (the clearance carries: the same source finding) and shows before/after."""
    made = stack.call("POST", "/api/contests", stack.admin, json={
        "slug": "held", "title": "Held Cup", "problems": ["vector_add"], "public": True})
    assert made.status_code == 201, made.text
    cal = stack.token_for("cal")
    sent = stack.call("POST", "/api/submissions", cal, json={
        "problem": "vector_add", "language": "torch", "source": TIMER_SWAP, "contest": "held"})
    assert sent.status_code == 202, sent.text
    sid = sent.json()["id"]
    assert stack.verdict(cal, sid, timeout=240)["verdict"] == "AC"
    visitor = new_page(browser)
    visitor.goto(stack.url + "/#/leaderboard?contest=held")
    visitor.wait_for_selector("#board")
    assert visitor.locator("#board tr:has-text('cal')").count() == 0  # held
    author = sign_in(browser, stack, cal)
    author.goto(stack.url + f"/#/submissions/{sid}")
    author.wait_for_selector("#held")
    organizer = sign_in(browser, stack, stack.admin)
    organizer.goto(stack.url + "/#/admin")
    row = organizer.locator(f"#review tr[data-id='{sid}']")
    row.wait_for()
    assert "line 15" in row.locator(".holds").inner_text()  # torch.cuda.Event = FakeEvent
    shot(organizer, "review-list")
    row.locator("[data-decide='cleared']").click()
    organizer.wait_for_selector(f"#review tr[data-id='{sid}'] .decision")
    visitor.reload()
    visitor.wait_for_selector("#board tr:has-text('cal')")
    organizer.click("[data-systest='held']")
    organizer.wait_for_selector("#systest table")

    def tested():
        organizer.click("[data-systest-show='held']")
        organizer.wait_for_timeout(500)
        return "1 of 1 judgings done" in organizer.inner_text("#systest")

    wait_for(tested, 240, "the system test")
    cells = organizer.locator("#systest tr:has-text('cal') td").all_inner_texts()
    assert cells[1] == "1" and cells[2] == "1", cells  # rank before and after: the same
    shot(organizer, "system-test")
    visitor.reload()
    visitor.wait_for_selector("#board tr:has-text('cal')")
    assert visitor.errors == [] and author.errors == [] and organizer.errors == []


def test_an_organizer_ignores_a_submission_bans_a_user_and_reads_the_audit_log(browser,
                                                                                 stack):
    """Each sanction from the pages, its reason read by its subject (the notice on her
    submission, the refusal of a new one), lifted from the organizer's table, and the audit
    log's page listing them newest first."""
    eve = stack.token_for("eve")
    source = (VA / "solutions/AC/loop.cpp").read_text()
    sid = stack.submit(eve, source)
    organizer = sign_in(browser, stack, stack.admin)
    organizer.goto(stack.url + f"/#/submissions/{sid}")
    organizer.fill("#ignore input[name=reason]", "copied from a forum")
    organizer.click("#ignore button[type=submit]")
    organizer.wait_for_selector("#sanction:has-text('Ignored by the organizers: copied from')")
    author = sign_in(browser, stack, eve)
    author.goto(stack.url + f"/#/submissions/{sid}")
    author.wait_for_selector("#sanction:has-text('copied from a forum')")
    assert author.locator("#ignore").count() == 0  # the organizer's form only
    organizer.goto(stack.url + "/#/admin")
    organizer.wait_for_selector("#sanctions tr:has-text('copied from a forum')")
    organizer.select_option("#sanction select[name=kind]", "ban")
    organizer.fill("#sanction input[name=user]", "eve")
    organizer.fill("#sanction input[name=reason]", "spam in the statement's comments")
    organizer.click("#sanction button[type=submit]")
    organizer.wait_for_selector("#sanction-result:has-text('in force')")
    banned = organizer.locator("#sanctions tr:has-text('spam in the')")
    banned.wait_for()
    shot(organizer, "sanctions")
    submit(author, stack, source, "cpp")
    author.wait_for_selector("#submit-error:has-text('banned from submitting: spam')")
    banned.locator("input[name=reason]").fill("apologised")
    banned.locator("button[type=submit]").click()
    organizer.wait_for_selector("#sanctions tr:has-text('spam in the')", state="detached")
    organizer.click("nav a:has-text('Audit log')")
    organizer.fill("#audit-filter input[name=action]", "sanction")
    organizer.click("#audit-filter button[type=submit]")
    # the other tests' actions are in the log too: wait for the filter's answer
    # (an empty table, the page between two renders, passes every() too)
    organizer.wait_for_function("((cells) => cells.length > 0 && cells.every("
                                "(cell) => cell.innerText.startsWith('sanction')))"
                                "([...document.querySelectorAll('#audit .action')])")
    actions = organizer.locator("#audit .action").all_inner_texts()
    assert actions == ["sanction.lift", "sanction.ban", "sanction.ignore"], actions
    assert "apologised" in organizer.inner_text("#audit tr[data-entry] >> nth=0")
    shot(organizer, "audit-log")
    assert organizer.errors == [] and author.errors == []


def test_an_organizer_stages_a_rejudge_reads_its_diff_and_applies_it(browser, stack):
    fay = stack.token_for("fay")
    sid = stack.submit(fay, (VA / "solutions/AC/loop.cpp").read_text())
    assert stack.verdict(fay, sid, timeout=240)["verdict"] == "AC"
    organizer = sign_in(browser, stack, stack.admin)
    organizer.goto(stack.url + "/#/admin")
    organizer.fill("#rejudge input[name=submission_ids]", str(sid))
    organizer.fill("#rejudge input[name=reason]", "check the new timer")
    organizer.check("#rejudge input[name=staged]")
    organizer.click("#rejudge button[type=submit]")
    organizer.wait_for_selector("#rejudge-diff .rejudge-state:has-text('staged')",
                                timeout=240_000)
    assert "Board: all submissions" in organizer.inner_text("#rejudge-diff")
    shot(organizer, "staged-rejudge")
    # its author's history shows no staged judging; the organizer's marks it
    author = sign_in(browser, stack, fay)
    author.goto(stack.url + f"/#/submissions/{sid}")
    author.wait_for_selector("h2:has-text('Judging history')")
    assert "check the new timer" not in author.inner_text("#view")
    organizer.click("#rejudge-apply")
    organizer.wait_for_selector("#rejudge-diff .rejudge-state:has-text('applied')")
    organizer.wait_for_selector("#rejudges tr:has-text('check the new timer'):has-text('applied')")
    author.reload()
    author.wait_for_selector("text=check the new timer")
    assert organizer.errors == [] and author.errors == []


def test_a_question_answered_to_everyone_and_an_announcement_show_on_every_page(browser,
                                                                                  stack):
    gus = sign_in(browser, stack, stack.token_for("gus"))
    hal = sign_in(browser, stack, stack.token_for("hal"))
    gus.click("nav a:has-text('Clarifications')")
    gus.select_option("#ask select[name=problem]", "vector_add")
    gus.fill("#ask textarea[name=text]", "Can n be odd?")
    gus.click("#ask button[type=submit]")
    gus.wait_for_selector(".clar:has-text('Can n be odd?'):has-text('not answered yet')")
    organizer = sign_in(browser, stack, stack.admin)
    organizer.wait_for_selector("#unread:has-text('1 question waiting for an answer')")
    organizer.click("#unread a")
    question = organizer.locator(".clar:has-text('Can n be odd?')")
    assert "from gus" in question.inner_text()
    question.locator("textarea[name=text]").fill("Yes: n100003 is odd.")
    question.locator("input[name=public]").check()
    question.locator("button[type=submit]").click()
    organizer.wait_for_selector(".clar:has-text('answered to everyone')")
    organizer.wait_for_selector("#unread", state="hidden")
    organizer.fill("#ask textarea[name=text]", "The board freezes an hour before the end.")
    organizer.click("#ask button[type=submit]")
    organizer.wait_for_selector(".clar:has-text('The board freezes')")
    # on whatever page they are, the others see what is new for them, until they read it
    hal.goto(stack.url + "/#/leaderboard")
    hal.wait_for_selector("#unread:has-text('Announcement: The board freezes')")
    assert "Yes: n100003 is odd." in hal.inner_text("#unread")
    assert "gus" not in hal.inner_text("#unread")
    shot(hal, "unread-clarifications")
    hal.click("#mark-read")
    hal.wait_for_selector("#unread", state="hidden")
    hal.reload()
    hal.wait_for_selector("#board, h1")
    assert hal.locator("#unread").is_hidden()
    gus.goto(stack.url + "/#/problems")
    gus.wait_for_selector("#unread:has-text('Yes: n100003 is odd.')")
    gus.click("#unread a:has-text('All clarifications')")
    gus.wait_for_selector(".clar.is-unread:has-text('Can n be odd?')")
    gus.wait_for_selector("#unread", state="hidden")  # read on that page
    assert gus.errors == [] and hal.errors == [] and organizer.errors == []


def test_a_contestant_picks_the_contest_and_mode_and_reads_the_quota(browser, stack):
    made = stack.call("POST", "/api/contests", stack.admin, json={
        "slug": "quota-cup", "title": "Quota Cup", "problems": ["vector_add"],
        "quotas": {"ranked": {"per_hour": 1}}})
    assert made.status_code == 201, made.text
    page = sign_in(browser, stack, stack.token_for("ivy"))
    source = (VA / "solutions/AC/loop.cpp").read_text()

    def send(mode: str) -> None:
        page.goto(stack.url + "/#/problems/vector_add")
        page.wait_for_selector(".cm-content")
        page.select_option("#language", "cpp")
        set_source(page, source)
        page.select_option("#contest", "quota-cup")
        page.select_option("#mode", mode)
        if mode == "ranked":
            page.wait_for_selector("#quota:has-text('ranked submissions left')")
        page.click("#submit button[type=submit]")

    send("ranked")
    page.wait_for_selector("#mode-card:has-text('counts on the boards')")
    send("ranked")
    assert "0 this hour" in page.inner_text("#quota")
    page.wait_for_selector("#submit-error:has-text('at most 1 ranked submissions to vector_add "
                           "in quota-cup an hour; the next at')")
    send("test")
    page.wait_for_selector("#mode-card:has-text('samples only, counted nowhere')")
    shot(page, "test-submission")
    assert page.errors == []


def test_a_contestant_starts_their_window_and_an_organizer_gives_extra_time(browser, stack):
    made = stack.call("POST", "/api/contests", stack.admin, json={
        "slug": "cms", "title": "CMS Cup", "problems": ["vector_add"], "window_s": 1800})
    assert made.status_code == 201, made.text
    jay = sign_in(browser, stack, stack.token_for("jay"))
    jay.wait_for_selector("#clock:has-text('CMS Cup: your 30 min') #start-window")
    jay.click("#start-window")
    jay.wait_for_selector("#clock:has-text('CMS Cup: your time, 0h 29m')")
    organizer = sign_in(browser, stack, stack.admin)
    organizer.goto(stack.url + "/#/admin")
    extra = organizer.locator("[data-extra='cms']")
    extra.locator("input[name=user]").fill("jay")
    extra.locator("input[name=minutes]").fill("10")
    extra.locator("button[type=submit]").click()
    organizer.wait_for_selector("#extra-result:has-text('jay in cms: 10 min extra')")
    with organizer.expect_download() as feed:  # the CCS event feed, for the ICPC resolver
        organizer.click("[data-contest='cms'] a.ccs")
    first = Path(feed.value.path()).read_text().splitlines()[0]
    assert '"type":"contest"' in first and '"id":null' in first
    jay.reload()
    jay.wait_for_selector("#clock:has-text('CMS Cup: your time, 0h 39m')")
    assert jay.errors == [] and organizer.errors == []


def test_a_profile_submissions_page_shows_its_kernels_and_the_report(browser, stack):
    """Sent from the problem page to a contest that takes profile submissions; no GPU worker
    serves it here, so its judging is finished as one would (tests/server/test_profiles.py runs
    the worker's profile judging itself)."""
    from judge.judging.record import JudgeResult
    from judge.service import claims, db, worker
    from judge.service.models import JudgingRow
    from judge.settings import Settings
    from judge.verdicts import Verdict

    made = stack.call("POST", "/api/contests", stack.admin, json={
        "slug": "nsight", "title": "Nsight Cup", "problems": ["vector_add"],
        "device": "cuda.h200", "profile": True})
    assert made.status_code == 201, made.text
    page = sign_in(browser, stack, stack.token_for("kim"))
    page.goto(stack.url + "/#/problems/vector_add")
    page.wait_for_selector(".cm-content")
    page.select_option("#language", "cuda")
    set_source(page, (VA / "solutions/AC/hopper_wgmma_fence.cu").read_text())
    page.select_option("#contest", "nsight")
    page.select_option("#mode", "profile")
    page.click("#submit button[type=submit]")
    page.wait_for_selector("#mode-card:has-text('under Nsight Compute')")
    sid = int(page.url.rsplit("/", 1)[1])
    url = f"sqlite:///{stack.tmp}/data/kjudge.db"
    with db.session(url) as s:
        judging = s.query(JudgingRow).filter_by(submission_id=sid).one()
        token = claims.claim(s, judging.id, "gpu-worker")
        claims.finish(s, judging.id, token, JudgeResult("vector_add", language="cuda",
                                                       verdict=Verdict.AC, profile={
            "point": "tiny", "tool": "ncu", "report": "profile.ncu-rep", "report_bytes": 5,
            "kernels": [{"Kernel Name": "vector_add_kernel", "Section Name": "Speed Of Light",
                         "Metric Name": "Duration", "Metric Unit": "usecond",
                         "Average": "2.11"}]}))
        judging_id = judging.id
    worker._store_report(Settings(database_url=url), judging_id, b"NCU!!")
    page.wait_for_selector("#profile td:has-text('vector_add_kernel')")
    with page.expect_download() as download:
        page.click("#profile-report")
    assert Path(download.value.path()).read_bytes() == b"NCU!!"
    shot(page, "profile-submission")
    assert page.errors == []


def test_a_page_left_while_it_loads_does_not_draw_over_the_next(browser, stack):
    """The submission page's load still in flight when the organizer moves on (its history
    request held back 1.5 s here) draws nothing over the page that came next."""
    sid = stack.submit(stack.token_for("lea"), (VA / "solutions/AC/loop.cpp").read_text())
    organizer = sign_in(browser, stack, stack.admin)
    organizer.evaluate("""() => {
        const fetchNow = window.fetch;
        window.fetch = (url, options) => String(url).includes("/judgings")
            ? new Promise((done) => setTimeout(done, 1500)).then(() => fetchNow(url, options))
            : fetchNow(url, options);
    }""")
    organizer.evaluate(f"() => {{ location.hash = '#/submissions/{sid}'; }}")
    organizer.wait_for_timeout(200)
    organizer.evaluate("() => { location.hash = '#/admin'; }")
    organizer.wait_for_selector("h1:has-text('Organizer')")
    organizer.wait_for_timeout(2500)  # the held request has long come back by now
    assert organizer.inner_text("h1") == "Organizer"
    assert organizer.errors == []


def test_a_queued_submission_shows_its_place_in_the_queue(browser, stack):
    """Last in this module: its judging stays queued (no worker serves a CUDA queue here)."""
    made = stack.call("POST", "/api/contests", stack.admin, json={
        "slug": "gpu", "title": "GPU Cup", "problems": ["vector_add"], "device": "cuda.h200"})
    assert made.status_code == 201, made.text
    dan = stack.token_for("dan")
    source = (VA / "solutions/AC/hopper_wgmma_fence.cu").read_text()
    ids = []
    for _ in range(2):
        sent = stack.call("POST", "/api/submissions", dan, json={
            "problem": "vector_add", "language": "cuda", "source": source, "contest": "gpu"})
        assert sent.status_code == 202, sent.text
        ids.append(sent.json()["id"])
    page = sign_in(browser, stack, dan)
    page.goto(stack.url + f"/#/submissions/{ids[1]}")
    page.wait_for_selector("#queue-place")
    assert "place in the queue\n2" in page.inner_text("#queue-place")
    assert "0 running" in page.inner_text("#queue-place")
    assert page.errors == []


def test_organizer_creates_and_edits_a_contest_with_the_form(browser, stack):
    page = sign_in(browser, stack, stack.admin)
    page.goto(stack.url + "/#/admin")
    page.wait_for_selector("#contests")
    page.click("#contest-editor summary")
    page.fill("#contest-form input[name=slug]", "spring")
    page.fill("#contest-form input[name=title]", "Spring round")
    page.fill("#contest-form input[name=problems]", "vector_add")
    page.fill("#contest-form input[name=languages]", "cuda")
    page.fill("#contest-form input[name=starts_at]", "2098-03-01T10:00")
    page.fill("#contest-form input[name=ends_at]", "2098-03-01T13:00")
    page.fill("#contest-form input[name=freeze_at]", "2098-03-01T14:00")
    page.click("#contest-save")
    # refused by field: the language first (the device is the CPU), then the freeze
    page.wait_for_selector("#contest-result .error:has-text('languages: cuda runs on cuda')")
    page.fill("#contest-form input[name=languages]", "cpp, torch")
    page.click("#contest-save")
    page.wait_for_selector("#contest-result .error:has-text('ends_at must come after freeze_at')")
    page.fill("#contest-form input[name=freeze_at]", "2098-03-01T12:00")
    page.fill("#contest-form input[name=per_hour]", "6")
    page.click("#contest-save")
    page.wait_for_selector("#contest-saved")
    page.wait_for_selector("tr[data-contest='spring']:has-text('Spring round')")
    made = stack.call("GET", "/api/contests/spring", stack.admin).json()
    assert made["languages"] == ["cpp", "torch"] and made["quotas"] == {
        "ranked": {"per_hour": 6}}
    assert made["state"] == "not_started" and made["freeze_at"] < made["ends_at"]
    page.click("[data-edit='spring']")  # the form filled with its fields, changed, saved
    assert page.input_value("#contest-form input[name=freeze_at]") == "2098-03-01T12:00"
    page.fill("#contest-form input[name=title]", "Spring round (final)")
    page.click("#contest-save")
    page.wait_for_selector("tr[data-contest='spring']:has-text('Spring round (final)')")
    edited = stack.call("GET", "/api/contests/spring", stack.admin).json()
    assert edited["ends_at"] == made["ends_at"] and edited["quotas"] == made["quotas"]
    shot(page, "contest-form")
    assert page.errors == []
    page.close()
