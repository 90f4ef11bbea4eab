#!/usr/bin/env python3
"""The head unit's screen in a real browser (Debian's chromium, headless,
driven by Selenium through chromium-driver).

A phone (`iapctl phone`) and a head unit with its screen (`iapctl head-unit
--ui`) run as two programs over TCP on this machine; the browser opens the
page, sees the tabs and the album covers, opens an album, plays a track, sees the now-playing
title, its artwork and the progress move, opens up next and plays the interlude (an item outside
the browse tree) from it, changes shuffle and sees the value change, then
the phone is unplugged (its program ends, closing the transport) and the page
shows the head unit disconnected. A screenshot of each step is kept in the
artifacts directory (given, or a temporary one) and named on failure.

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
link_port = random.randint(20000, 40000)
screen_port = link_port + 1
home = tempfile.mkdtemp()
environment = dict(os.environ, HOME=home)
logs = open(os.path.join(artifacts, "programs.log"), "w")

phone = subprocess.Popen([iapctl, "phone", "--once", "--transport", f"tcp-listen:127.0.0.1:{link_port}"],
                         stdin=subprocess.DEVNULL, stdout=logs, stderr=logs, env=environment)
time.sleep(0.5)
head_unit = subprocess.Popen([iapctl, "head-unit", "--transport", f"tcp:127.0.0.1:{link_port}", "--ui", f"127.0.0.1:{screen_port}"],
                             stdin=subprocess.DEVNULL, stdout=logs, stderr=logs, env=environment)

options = webdriver.ChromeOptions()
for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,800"):
    options.add_argument(argument)
options.binary_location = "/usr/bin/chromium"
browser = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
step_number = 0


def finish(code):
    browser.quit()
    for program in (phone, head_unit):
        if program.poll() is None:
            program.kill()
    logs.close()
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
            browser.save_screenshot(os.path.join(artifacts, f"{step_number:02d}-{name.replace(' ', '-')}.png"))
            print(f"ok   {name}", flush=True)
            return
        time.sleep(0.2)
    shot = os.path.join(artifacts, f"{step_number:02d}-FAILED-{name.replace(' ', '-')}.png")
    browser.save_screenshot(shot)
    print(f"FAIL {name}" + (f" ({last_error})" if last_error else ""))
    print(f"     screenshot: {shot}; program logs: {os.path.join(artifacts, 'programs.log')}")
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


step("the screen answers", lambda: browser.get(f"http://127.0.0.1:{screen_port}/") or True, timeout=20)
step("the head unit is identified", lambda: text("state").startswith("identified as"), timeout=30)
step("the tabs are shown", lambda: text("tab-0") == "Library" and "Podcasts" in text("tab-3"))
step("the library opens", lambda: "Kind of Blue" in text("row-album:kind-of-blue"), press="tab-0")
step("the album covers show", lambda: browser.execute_script(
    "return [...document.querySelectorAll('.tile img')].filter((image) => image.complete && image.naturalWidth > 0).length") == 3)
step("an album opens", lambda: text("title") == "Kind of Blue" and "Blue in Green" in text("row-kind-of-blue:3"), press="row-album:kind-of-blue")
step("a track plays", lambda: text("status").startswith("play kind-of-blue:3: success"), press="row-kind-of-blue:3")
step("now playing shows the title", lambda: text("np-title") == "Blue in Green" and text("np-artist") == "Miles Davis", press="tab-now-playing")
first = seconds(text("np-elapsed"))
step("the progress moves", lambda: seconds(text("np-elapsed")) >= first + 2, timeout=10)
step("the album artwork shows on now playing, at the screen's scale", lambda: browser.execute_script(
    "const image = document.querySelector('.np .art img'); return image !== null && image.complete ? image.naturalWidth : 0") == 120)
step("up next lists the queue, the interlude outside the tree included", lambda: "Station interlude" in text("row-interlude"), press="up-next")
step("an up-next item plays", lambda: text("status").startswith("play interlude: success"), press="row-interlude")
step("now playing shows it", lambda: text("np-title") == "Station interlude", press="tab-now-playing")
step("shuffle shows its value", lambda: text("value-change_shuffle_mode") == "off")
step("shuffle changes", lambda: text("value-change_shuffle_mode") == "songs", press="control-change_shuffle_mode")
phone.terminate()
step("unplugged: the page shows the head unit disconnected", lambda: "disconnected" in test("state").get_attribute("class"), timeout=20)
print(f"screenshots: {artifacts}")
finish(0)
