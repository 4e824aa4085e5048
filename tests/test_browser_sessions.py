"""Browser sessions shared by two `transcriber serve` processes, in a real headless Chromium
(they are kept in PostgreSQL). Skipped where no Chromium is installed, as tests/test_browser.py is."""
from __future__ import annotations

from conftest import add_record
from test_browser import browser, pytestmark  # noqa: F401  (fixture; the same skip)
from test_shared_sessions import two_serves  # noqa: F401  (fixture)


def test_a_browser_signed_in_on_one_serve_works_through_another_and_across_restarts(
        store, owner, two_serves, browser):  # noqa: F811
    """Sign in on one `serve`, keep working through a second `serve` on
    another port with the same cookie (the browser sends 127.0.0.1's cookies to every port),
    restart both, still signed in; sign out on one ends it on both."""
    token = store.new_token("alice")
    record = add_record(store, owner, title="shared")
    first, second = (serve.start() for serve in two_serves)
    context = browser.new_context()
    context.set_default_timeout(60_000)
    page = context.new_page()
    page.goto(first.base + "/")
    page.fill("#token", token)
    page.click("#sign-in button[type=submit]")
    page.wait_for_selector(f"#record-{record}")
    page.goto(second.base + "/")
    page.wait_for_selector(f"#record-{record}")

    for serve in (first, second):
        serve.stop()
        serve.start()
    for serve in (first, second):
        page.goto(serve.base + "/")
        page.wait_for_selector(f"#record-{record}")

    page.click("#sign-out")  # on the second
    page.wait_for_selector("#sign-in")
    page.goto(first.base + "/")
    page.wait_for_selector("#sign-in")
    context.close()
