#!/usr/bin/env python3
"""The head unit's screen in a real browser (Debian's chromium, headless,
driven by Selenium through chromium-driver).

A phone (`iapctl phone`) and a head unit with its screen (`iapctl head-unit
--ui`) run as two programs over TCP on this machine; the browser opens the
page, sees the tabs and the album covers, opens an album, plays a track, sees the now-playing
title, its artwork and the progress move, opens up next and plays the interlude (an item outside
the browse tree) from it, changes shuffle and sees the value change, then
the media library tab lists the phone's albums and an album's songs and plays
one (Media Library Access), then
the phone is unplugged (its program ends, closing the transport) and the page
shows the head unit disconnected. It runs twice: at desktop size (1280×800)
and at a real head unit's (800×480), where the header must stay on one line
and the transport buttons within the screen. A screenshot of each step is
kept in the artifacts directory (given, or a temporary one; one directory per
size) and named on failure; the browser's console must stay free of errors.

Usage: scripts/check-screen.py [path/to/iapctl] [artifacts-dir]
Exits 1 naming the first step that failed."""
import os
import random
import subprocess
import sys
import tempfile
import time

from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.chrome.service import Service

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
iapctl = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, ".build", "debug", "iapctl")
artifacts = sys.argv[2] if len(sys.argv) > 2 else tempfile.mkdtemp(prefix="screen-")
os.makedirs(artifacts, exist_ok=True)
home = tempfile.mkdtemp()
environment = dict(os.environ, HOME=home)
browser = None
programs = []
logs = None
shots = artifacts
step_number = 0


def finish(code):
    if browser is not None:
        browser.quit()
    for program in programs:
        if program.poll() is None:
            program.kill()
    if logs is not None:
        logs.close()
    if code != 0:
        sys.exit(code)


def step(name, condition, timeout=15, press=None):
    """Clicks the element named `press` once (retrying until it is on the page), then waits until
    `condition()` is true (re-finding elements each time: the page redraws), then screenshots.
    The click is never repeated: a second click would act on the page the first one opened."""
    global step_number
    step_number += 1
    deadline = time.time() + timeout
    last_error = None
    pressed = press is None
    while time.time() < deadline:
        try:
            if not pressed:
                click(press)
                pressed = True
            done = condition()
        except Exception as error:  # a redraw between find and read: try again
            done, last_error = False, error
        if done:
            browser.save_screenshot(os.path.join(shots, f"{step_number:02d}-{name.replace(' ', '-')}.png"))
            print(f"ok   {name}", flush=True)
            return
        time.sleep(0.2)
    shot = os.path.join(shots, f"{step_number:02d}-FAILED-{name.replace(' ', '-')}.png")
    browser.save_screenshot(shot)
    print(f"FAIL {name}" + (f" ({last_error})" if last_error else ""))
    print(f"     screenshot: {shot}; program logs: {os.path.join(shots, 'programs.log')}")
    finish(1)


def test(name):
    return browser.find_element(By.CSS_SELECTOR, f"[data-test='{name}']")


def click(name):
    test(name).click()


def text(name):
    return test(name).text


def seconds(clock):
    minutes, secs = clock.split(":")
    return int(minutes) * 60 + int(secs)


def settled(read, attempts=20):
    """`read()`, tried again when a redraw replaced the element between finding and reading it."""
    for _ in range(attempts - 1):
        try:
            return read()
        except Exception:
            time.sleep(0.1)
    return read()


def in_view(names):
    """Every element named is wholly within the window."""
    return browser.execute_script("""
        return arguments[0].every((name) => {
          const node = document.querySelector(`[data-test='${name}']`);
          if (!node) return false;
          const box = node.getBoundingClientRect();
          return box.top >= 0 && box.left >= 0 && box.bottom <= window.innerHeight && box.right <= window.innerWidth;
        });""", names)


def header_on_one_line():
    return browser.execute_script("""
        const header = document.querySelector('header');
        return [...header.children].every((child) => child.getBoundingClientRect().height <= 40) && header.getBoundingClientRect().height <= 56;""")


def run(width, height):
    global browser, programs, logs, shots, step_number
    shots = os.path.join(artifacts, f"{width}x{height}")
    os.makedirs(shots, exist_ok=True)
    step_number = 0
    print(f"--- at {width}×{height}", flush=True)
    logs = open(os.path.join(shots, "programs.log"), "w")
    link_port = random.randint(20000, 40000)
    screen_port = link_port + 1
    phone = subprocess.Popen([iapctl, "phone", "--once", "--transport", f"tcp-listen:127.0.0.1:{link_port}"],
                             stdin=subprocess.DEVNULL, stdout=logs, stderr=logs, env=environment)
    time.sleep(0.5)
    head_unit = subprocess.Popen([iapctl, "head-unit", "--transport", f"tcp:127.0.0.1:{link_port}", "--ui", f"127.0.0.1:{screen_port}"],
                                 stdin=subprocess.DEVNULL, stdout=logs, stderr=logs, env=environment)
    programs = [phone, head_unit]

    options = webdriver.ChromeOptions()
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", f"--window-size={width},{height}"):
        options.add_argument(argument)
    options.binary_location = "/usr/bin/chromium"
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    browser = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    # --window-size is the window's outer size: make the page itself (the viewport) the size asked for.
    inner = browser.execute_script("return [window.innerWidth, window.innerHeight]")
    browser.set_window_size(2 * width - inner[0], 2 * height - inner[1])

    step("the screen answers", lambda: browser.get(f"http://127.0.0.1:{screen_port}/") or True, timeout=20)
    step("the page is the size asked for", lambda: browser.execute_script("return [window.innerWidth, window.innerHeight]") == [width, height])
    step("the head unit is identified", lambda: text("state").startswith("identified as"), timeout=30)
    step("the tabs are shown", lambda: text("tab-0") == "Library" and "Podcasts" in text("tab-3"))
    step("the first tab opens by itself", lambda: text("title") == "Library" and "Kind of Blue" in text("row-album:kind-of-blue"))
    step("the header stays on one line", header_on_one_line)
    step("the album covers show", lambda: browser.execute_script(
        "return [...document.querySelectorAll('.tile img')].filter((image) => image.complete && image.naturalWidth > 0).length") == 3)
    step("an album opens", lambda: text("title") == "Kind of Blue" and "Blue in Green" in text("row-kind-of-blue:3"), press="row-album:kind-of-blue")
    step("a track plays, named by its title", lambda: text("status") == "Playing “Blue in Green”", press="row-kind-of-blue:3")
    step("the playing track is marked in its album", lambda: "playing" in test("row-kind-of-blue:3").get_attribute("class")
         and "playing" not in test("row-kind-of-blue:1").get_attribute("class"))
    step("now playing shows the title", lambda: text("np-title") == "Blue in Green" and text("np-artist") == "Miles Davis", press="tab-now-playing")
    step("leaving the screen cleared the status", lambda: text("status") == "")
    step("the transport buttons are on the screen", lambda: in_view(["control-previous_track", "control-toggle_play_pause", "control-next_track"]))
    first = settled(lambda: seconds(text("np-elapsed")))
    step("the progress moves", lambda: seconds(text("np-elapsed")) >= first + 2, timeout=10)
    step("the album artwork shows on now playing, at the screen's scale", lambda: browser.execute_script(
        "const image = document.querySelector('.np .art img'); return image !== null && image.complete ? image.naturalWidth : 0") == 120)
    step("up next lists the queue, the interlude outside the tree included", lambda: "Station interlude" in text("row-interlude"), press="up-next")
    step("an up-next item plays", lambda: text("status") == "Playing “Station interlude”", press="row-interlude")
    step("now playing shows it", lambda: text("np-title") == "Station interlude", press="tab-now-playing")
    step("shuffle shows its value", lambda: text("value-change_shuffle_mode") == "off")
    step("shuffle changes, and the status says so in words", lambda: text("value-change_shuffle_mode") == "songs" and text("status") == "Shuffle: songs",
         press="control-change_shuffle_mode")
    step("the media library tab shows the phone's library (Media Library Access)", lambda: text("library-title") == "iap-devkit Music"
         and text("library-row-2").startswith("Albums"), press="tab-library")
    step("its albums list by name", lambda: text("library-title") == "Albums" and text("library-row-2").startswith("Kind of Blue"), press="library-row-2")
    step("an album lists its songs in track order", lambda: text("library-title") == "Kind of Blue" and text("library-row-1").startswith("So What")
         and text("library-row-3").startswith("Blue in Green"), press="library-row-2")
    click("library-row-2")
    step("now playing names the song played from the library", lambda: text("np-title") == "Freddie Freeloader", press="tab-now-playing")
    errors = [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
    step("the console has no errors (the favicon included)", lambda: not errors or print(f"     {errors}"), timeout=1)
    phone.terminate()
    step("unplugged: the page shows the head unit disconnected", lambda: "disconnected" in test("state").get_attribute("class"), timeout=20)
    finish(0)
    browser = None


run(1280, 800)
run(800, 480)
print(f"screenshots: {artifacts}")
