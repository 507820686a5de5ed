"""The play page in a real browser (Playwright driving the system's Chromium): a whole hand
against a bot, a dig with its confirmation, an illegal move and the engine's reason, a reload
in the middle of a hand, a new game, a recorded game replayed, and a phone-sized screen.

Skipped, saying why, where Playwright or Chromium is missing (CI installs both: .ci/run).
Never run ``playwright install``: the browser comes from the system (apt's ``chromium``), or
from ``RUMMY500_CHROMIUM`` naming its executable.
"""

from __future__ import annotations

import os
import random
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("playwright", reason="playwright is not installed (pip install -e '.[test]')")
uvicorn = pytest.importorskip("uvicorn", reason="the play extra is not installed")
CHROMIUM = (
    os.environ.get("RUMMY500_CHROMIUM")
    or shutil.which("chromium")
    or shutil.which("chromium-browser")
)
if not CHROMIUM:
    pytest.skip(
        "no Chromium found: apt-get install chromium (or set RUMMY500_CHROMIUM to a Chromium "
        "executable) to run the browser tests",
        allow_module_level=True,
    )

from playwright.sync_api import Page, expect  # noqa: E402

from rummy500_env import Rules  # noqa: E402
from rummy500_env.engine.records import Recorder  # noqa: E402
from rummy500_env.play.server import create_app, create_replay_app  # noqa: E402
from rummy500_env.play.table import Computers, Setup, Table  # noqa: E402

SETUP = Setup(Rules(), "greedy")
pytestmark = [
    pytest.mark.slow,  # a browser per module: see docs/contributing.md
    pytest.mark.filterwarnings(
        # pytest-playwright's own base_url fixture, not this project's code
        "ignore:Session-scoped fixtures defined as instance methods:pytest.PytestRemovedIn10Warning"
    ),
]


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
    """Launch the system's Chromium (pytest-playwright has no option for a browser path)."""
    return {**browser_type_launch_args, "executable_path": CHROMIUM}


@contextmanager
def serving(app: Any) -> Iterator[str]:
    """Serve `app` on a free port of 127.0.0.1 in a thread; yields its address."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    if not server.started:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
        pytest.fail("the play server did not start within 20 s (see its log above)")
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


@pytest.fixture
def play_url(tmp_path: Path) -> Iterator[str]:
    """The play page against greedy, dealt from seed 1, the computer's moves without pauses."""
    with serving(create_app(SETUP, tmp_path, seed=1)) as url:
        yield url + "?pace=0"


@pytest.fixture(autouse=True)
def _patient_and_strict(page: Page) -> Iterator[None]:
    """Wait long enough on a busy machine; fail on any error in the page's script."""
    page.set_default_timeout(20_000)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    yield
    assert errors == [], f"the page's script failed: {errors}"


def hand_cards(page: Page) -> list[str]:
    return (
        page.get_by_test_id("hand")
        .locator(".card")
        .evaluate_all("cards => cards.map(c => c.dataset.card)")
    )


def draw(page: Page) -> None:
    """Tap the stock and wait for the drawn card (a tap on the hand before it would be lost
    when the page redraws the hand)."""
    count = len(hand_cards(page))
    page.get_by_test_id("stock").click()
    expect(page.get_by_test_id("hand").locator(".card")).to_have_count(count + 1)


def wait_for_my_draw_or_the_end(page: Page) -> bool:
    """Wait until the human may draw (True) or the hand is over (False)."""
    page.wait_for_function(
        "document.querySelector('[data-testid=stock]').classList.contains('can-take')"
        " || !document.querySelector('[data-testid=result]').hidden"
    )
    return page.get_by_test_id("result").is_hidden()


def test_a_whole_hand_against_a_bot(page: Page, play_url: str):
    page.goto(play_url)
    for _ in range(80):
        if not wait_for_my_draw_or_the_end(page):
            break
        draw(page)
        put_down = page.get_by_test_id("put-down-all")
        if "ready" in (put_down.get_attribute("class") or ""):
            count = len(hand_cards(page))
            put_down.click()
            page.wait_for_function(
                "n => document.querySelectorAll('[data-testid=hand] .card').length < n", arg=count
            )
            if page.get_by_test_id("result").is_visible():
                break
        page.get_by_test_id("hand").locator(".card").last.click()
        page.get_by_test_id("discard").click()
    else:
        pytest.fail("the hand did not end")
    result = page.get_by_test_id("result")
    expect(result).to_contain_text("Hand 1 is over")
    expect(result.locator("tbody tr")).to_have_count(2)
    page.get_by_test_id("next-hand").click()
    expect(page.get_by_test_id("scores")).to_contain_text("Hand 2")
    expect(result).to_be_hidden()


def find_a_dig(computers: Computers) -> tuple[int, str, int]:
    """A seed where, after drawing and discarding the last card of the hand, the human can dig
    on the next turn: (seed, the card, cards picked up)."""
    for seed in range(300):
        table = Table.new("search", SETUP, computers, seed)
        table.act(["draw"])
        table.act([f"discard {table.view()['hand'][-1]}"])
        while table.waiting == "computer":
            table.advance()
        view = table.view()
        for i, action in enumerate(view["pile_actions"]):
            if action.startswith("dig") and action in view["legal"]:
                return seed, view["pile"][i], len(view["pile"]) - i
    raise AssertionError("no seed gives a dig")


def test_a_dig_asks_to_confirm_how_many_cards_then_the_card_goes_down(page: Page, tmp_path):
    seed, card, count = find_a_dig(Computers(SETUP))
    with serving(create_app(SETUP, tmp_path, seed=seed)) as url:
        page.goto(url + "?pace=0")
        wait_for_my_draw_or_the_end(page)
        draw(page)
        page.get_by_test_id("hand").locator(".card").last.click()
        page.get_by_test_id("discard").click()
        wait_for_my_draw_or_the_end(page)
        pile = page.get_by_test_id("pile")
        pile.locator(f'[data-card="{card}"]').click()
        dialog = page.locator(".dialog")
        expect(dialog).to_contain_text(f"You will pick up {count} cards")
        expect(dialog).to_contain_text(f"{card} must go on the table this turn")
        page.get_by_test_id("cancel").click()  # nothing happens on cancel
        expect(dialog).to_be_hidden()
        assert card not in hand_cards(page)
        pile.locator(f'[data-card="{card}"]').click()
        page.get_by_test_id("confirm").click()
        expect(page.get_by_test_id("hand").locator(f'[data-card="{card}"]')).to_have_count(1)
        expect(page.get_by_test_id("status")).to_contain_text(f"Put {card} on the table")
        page.get_by_test_id("put-down-all").click()
        expect(page.locator(f'#melds [data-card="{card}"]')).to_have_count(1)


def test_an_illegal_move_shows_the_engines_reason(page: Page, play_url: str):
    page.goto(play_url)
    wait_for_my_draw_or_the_end(page)
    page.get_by_test_id("hand").locator(".card").first.click()
    page.get_by_test_id("discard").click()  # before drawing
    message = page.get_by_test_id("message")
    expect(message).to_be_visible()
    expect(message).to_contain_text("is not allowed")
    expect(message).to_contain_text("draw")
    # Pile cards that may not be dug are offered as such, and tapping one says why.
    draw(page)
    expect(message).to_be_hidden()
    cards = page.get_by_test_id("hand").locator(".card")
    for i in (0, 1, 2):
        cards.nth(i).click()
    page.get_by_test_id("meld").click()
    expect(message).to_contain_text("is not allowed")


def test_a_reload_mid_hand_carries_on(page: Page, play_url: str):
    page.goto(play_url)
    wait_for_my_draw_or_the_end(page)
    draw(page)
    before = hand_cards(page)
    page.reload()
    expect(page.get_by_test_id("hand").locator(".card")).to_have_count(len(before))
    assert hand_cards(page) == before
    expect(page.get_by_test_id("status")).to_contain_text("then discard")
    page.get_by_test_id("hand").locator(".card").last.click()
    page.get_by_test_id("discard").click()
    assert wait_for_my_draw_or_the_end(page)  # the computer played, and it is our turn again
    # New game: asks first, then deals another hand.
    page.get_by_test_id("new-game").click()
    page.get_by_test_id("confirm").click()
    expect(page.get_by_test_id("log")).to_be_empty()
    expect(page.get_by_test_id("scores")).to_contain_text("Hand 1")


def test_a_recorded_game_replays_step_by_step_with_every_hand(page: Page, tmp_path):
    rng = random.Random(7)
    r = Recorder(Rules(target=150), seed=7, players=["random", "expert"])
    while r.game.phase != "game_over":
        if r.game.phase == "hand_over":
            r.next_hand()
        else:
            r.play(rng.choice(r.game.legal_actions()))
    with serving(create_replay_app(r.record, "game.json")) as url:
        page.goto(url)
        step = page.get_by_test_id("replay-step")
        expect(step).to_contain_text("step 0 of")
        for _ in range(5):
            page.get_by_test_id("replay-next").click()
        expect(step).to_contain_text("move 5 of")
        fifth_player = r.record.hands[0].actions[4][0]
        expect(page.get_by_test_id("status")).to_contain_text(f"(seat {fifth_player})")
        for seat in (0, 1):  # every hand is shown, card by card
            cards = page.get_by_test_id(f"hand-{seat}").locator(".card")
            size = page.get_by_test_id(f"player-{seat}").locator(".count").inner_text()
            expect(cards).to_have_count(int(size.split()[0]))
        page.get_by_test_id("replay-end").click()
        result = page.get_by_test_id("result")
        for total in r.record.final_totals or []:
            expect(result).to_contain_text(str(total))
        page.get_by_test_id("replay-prev").click()
        expect(result).to_be_hidden()


def test_the_table_fits_a_phone_screen(browser: Any, play_url: str):
    context = browser.new_context(viewport={"width": 375, "height": 740})
    page = context.new_page()
    page.goto(play_url)
    wait_for_my_draw_or_the_end(page)
    assert page.evaluate("document.documentElement.scrollWidth") <= 375
    box = page.get_by_test_id("hand").locator(".card").first.bounding_box()
    assert box is not None and box["width"] >= 36  # big enough to tap
    context.close()


# --- jokers and "Rummy!" calls (issue 20) ---------------------------------------------------------


JOKERS = Setup(Rules(jokers=2), "greedy")
CALLS = Setup(Rules(rummy_calls=True), "greedy")


def joker_step(view: dict[str, Any]) -> tuple[str, str] | None:
    """The joker move the test's human makes after drawing, if any: a meld with a joker in
    it, else a joker's lay-off (the first the engine lists)."""
    melds = [a for a in view["legal"] if a.startswith("meld ") and "JK=" in a]
    if melds:
        return "meld", melds[0]
    layoffs = [a for a in view["legal"] if a.startswith("layoff JK=")]
    return ("layoff", layoffs[0]) if layoffs else None


def joker_discard(view: dict[str, Any]) -> str:
    """The card the test's human discards: the last one shown that is no joker."""
    cards = [c for c in view["hand"] if f"discard {c}" in view["legal"]]
    return ([c for c in cards if c != "JK"] or cards)[-1]


def find_joker_hand(computers: Computers) -> int:
    """A seed whose first hand, played as the browser test plays it, melds a joker and lays
    one off (the same moves through `Table`, without a browser)."""
    for seed in range(300):
        table, done = Table.new("search", JOKERS, computers, seed), set()
        while table.waiting in ("you", "computer"):
            if table.waiting == "computer":
                table.advance()
                continue
            table.act(["draw"])
            step = joker_step(table.view())
            if step:
                done.add(step[0])
                table.act([step[1]])
            elif table.view()["plan"]:
                table.act(table.view()["plan"])
            if table.waiting == "you":
                table.act([f"discard {joker_discard(table.view())}"])
        if done == {"meld", "layoff"}:
            return seed
    raise AssertionError("no seed melds and lays off a joker")


def state(page: Page) -> dict[str, Any]:
    """The page's own copy of the server's view (what it draws from)."""
    return page.evaluate("ui.state")  # type: ignore[no-any-return]


def select(page: Page, faces: list[str]) -> None:
    """Tap these cards in the hand (a second copy of a face: the next card showing it)."""
    hand = page.get_by_test_id("hand")
    for face in faces:
        hand.locator(f'.card[data-card="{face}"]:not(.selected)').first.click()


def pick_if_asked(page: Page, action: str) -> None:
    """Confirm the choice the page offers when a joker could stand for several cards."""
    if page.locator(".dialog").is_visible():
        page.get_by_test_id("choice").filter(has_text=action.split(" ", 1)[1]).click()


def test_a_whole_hand_with_jokers_melds_and_lays_one_off(page: Page, tmp_path):
    seed = find_joker_hand(Computers(JOKERS))
    with serving(create_app(JOKERS, tmp_path, seed=seed)) as url:
        page.goto(url + "?pace=0")
        done = set()
        for _ in range(80):
            if not wait_for_my_draw_or_the_end(page):
                break
            draw(page)
            s = state(page)
            step = joker_step(s)
            if step is not None:
                kind, action = step
                words = action.split()
                count = len(hand_cards(page))
                if kind == "meld":
                    select(page, [w.split("=")[0] for w in words[1:]])
                    page.get_by_test_id("meld").click()
                else:
                    select(page, ["JK"])
                    page.get_by_test_id(f"meld-{words[2]}").click()
                pick_if_asked(page, action)
                page.wait_for_function(
                    "n => document.querySelectorAll('[data-testid=hand] .card').length < n",
                    arg=count,
                )
                stands = next(w for w in words[1:] if w.startswith("JK=")).split("=")[1]
                joker = page.locator(f'#melds .card.joker[aria-label="joker as {stands}"]')
                expect(joker.first).to_contain_text(stands)  # its face says what it stands for
                done.add(kind)
            elif "ready" in (page.get_by_test_id("put-down-all").get_attribute("class") or ""):
                count = len(hand_cards(page))
                page.get_by_test_id("put-down-all").click()
                page.wait_for_function(
                    "n => document.querySelectorAll('[data-testid=hand] .card').length < n",
                    arg=count,
                )
            if page.get_by_test_id("result").is_visible():
                break
            select(page, [joker_discard(state(page))])
            page.get_by_test_id("discard").click()
        else:
            pytest.fail("the hand did not end")
    assert done == {"meld", "layoff"}
    expect(page.get_by_test_id("result")).to_contain_text("Hand 1 is over")


def calls_seed(computers: Computers) -> int:
    """A seed whose first hand, played as the calls test plays it, offers the human a call
    window to pass and then one to call in."""
    for seed in range(300):
        table, seen = Table.new("search", CALLS, computers, seed), []
        while table.waiting in ("you", "computer") and len(seen) < 2:
            if table.waiting == "computer":
                table.advance()
                continue
            view = table.view()
            calls = [a for a in view["legal"] if a.startswith("call ")]
            if view["phase"] == "call":
                seen.append("call" if calls and seen == ["pass"] else "pass")
                table.act([calls[0] if seen[-1] == "call" else "pass"])
            elif "draw" in view["legal"]:
                table.act(["draw"])
            else:
                if view["plan"]:
                    table.act(view["plan"])
                if table.waiting == "you":
                    discards = [a for a in table.view()["legal"] if a.startswith("discard")]
                    table.act([discards[-1]])
        if seen == ["pass", "call"]:
            return seed
    raise AssertionError("no seed offers a call window to pass and then one to take")


def after(page: Page, tap: Any) -> None:
    """Tap, then wait until the page holds a new view from the server."""
    page.evaluate("window.before = ui.state")
    tap()
    page.wait_for_function("ui.state !== window.before")


def test_rummy_calls_offered_passed_and_taken_in_a_whole_hand(page: Page, tmp_path):
    seed = calls_seed(Computers(CALLS))
    with serving(create_app(CALLS, tmp_path, seed=seed)) as url:
        page.goto(url + "?pace=0")
        seen: list[str] = []
        for _ in range(200):
            page.wait_for_function("ui.state && !ui.busy && (ui.state.waiting !== 'computer')")
            s = state(page)
            if s["waiting"] != "you":
                break
            if s["phase"] == "call":
                expect(page.get_by_test_id("action-pass")).to_be_visible()  # the window
                calls = [a for a in s["legal"] if a.startswith("call ")]
                take = bool(calls) and seen == ["pass"]
                seen.append("call" if take else "pass")
                if take:
                    after(page, page.get_by_test_id("action-call").filter(has_text=calls[0]).click)
                    expect(page.get_by_test_id("log")).to_contain_text("You call Rummy on")
                else:
                    after(page, page.get_by_test_id("action-pass").click)
            elif s["phase"] == "called":
                if s["plan"]:
                    count = len(hand_cards(page))
                    page.get_by_test_id("put-down-all").click()
                    page.wait_for_function(
                        "n => document.querySelectorAll('[data-testid=hand] .card').length < n",
                        arg=count,
                    )
                    if state(page)["waiting"] != "you":
                        seen.append("out")  # the caller's put-down emptied the hand
                        continue
                after(page, page.get_by_test_id("action-done").click)
                seen.append("done")
            elif "draw" in s["legal"]:
                draw(page)
            else:
                if s["plan"]:
                    count = len(hand_cards(page))
                    page.get_by_test_id("put-down-all").click()
                    page.wait_for_function(
                        "n => document.querySelectorAll('[data-testid=hand] .card').length < n",
                        arg=count,
                    )
                    if state(page)["waiting"] != "you":
                        continue
                discards = [a for a in state(page)["legal"] if a.startswith("discard")]
                select(page, [discards[-1].split()[1]])
                after(page, page.get_by_test_id("discard").click)
        else:
            pytest.fail("the hand did not end")
    assert seen[:2] == ["pass", "call"], seen
    assert seen[2:3] in (["done"], ["out"]), seen  # the caller's play ended by the page


# --- small things a player notices (issue 20) -----------------------------------------------------


def test_tapping_the_stock_while_the_computer_plays_skips_ahead_and_draws(page: Page, tmp_path):
    with serving(create_app(SETUP, tmp_path, seed=1)) as url:
        page.goto(url + "?pace=1500")  # the computer's moves shown slowly
        wait_for_my_draw_or_the_end(page)
        draw(page)
        select(page, [hand_cards(page)[-1]])
        page.get_by_test_id("discard").click()
        page.wait_for_function("ui.busy")
        count = len(hand_cards(page))
        page.get_by_test_id("stock").click()  # while the computer's moves are shown
        expect(page.get_by_test_id("message")).to_contain_text("Skipping ahead to your turn")
        expect(page.get_by_test_id("hand").locator(".card")).to_have_count(count + 1)
        assert state(page)["phase"] == "play" and state(page)["waiting"] == "you"


def test_the_move_list_has_room_for_two_digit_numbers(page: Page, play_url: str):
    page.goto(play_url)
    wait_for_my_draw_or_the_end(page)
    room = page.evaluate(
        """() => {
        const log = document.getElementById('log');
        const probe = document.createElement('span');
        probe.textContent = '40. ';  // the widest marker: LOG_LENGTH moves
        probe.style.font = getComputedStyle(log).font;
        probe.style.position = 'absolute';
        probe.style.whiteSpace = 'pre';  // the marker's trailing space counts
        document.body.append(probe);
        const need = probe.getBoundingClientRect().width;
        probe.remove();
        return [parseFloat(getComputedStyle(log).paddingLeft), need];
    }"""
    )
    padding, need = room
    assert padding >= need, f"the list's {padding}px margin cuts '40.' ({need}px)"
